import os
import signal
import sys

sys.path.insert(0, os.path.dirname(__file__))

# The Ctrl-C tests send real SIGINTs and expect a terminal's default: a shell without job control
# (`cmd &` in a script, CI runners) starts background jobs with SIGINT ignored, which the package
# rightly leaves ignored. Give the test processes (and the Pythons they start) the default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
