"""Time limits of the tests that need one.

A test asserts behaviour, not speed (speed is measured in benchmarks/). Where a test must bound a
wait -- a child Python that could hang, a run that must stop when told -- the bound is a guard with
the headroom of a 2-core machine at load 10 (about five times slower than idle, more with cold
numba caches), far above the time measured on an idle machine. Each bound below says what it
guards and what was measured.
"""

# A child Python running an example, the demo or a small script (cold numba cache included):
# at most about 2 min on an idle 2-core machine.
CHILD_PYTHON_TIMEOUT = 3600.0

# The kernel tests run again in a child pytest with NUMBA_BOUNDSCHECK=1 and an empty numba cache
# (test_boundscheck): everything is compiled anew with bounds checks. A hang guard only: measured
# 375 s of CPU (676 s wall) on Python 3.11 and 386 s of CPU (708 s wall) on Python 3.12, at load 6-11;
# at load 6-14 it once took more than 30 min.
BOUNDSCHECK_TIMEOUT = 4 * 3600.0
