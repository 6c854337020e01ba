"""The kernel-level tests again, compiled with numba's bounds checking (``NUMBA_BOUNDSCHECK=1``).

Numba does not check array indices by default: an out-of-bounds read returns garbage and a write
corrupts memory. With bounds checking every index is checked and raises ``IndexError``, so a
kernel that indexes out of bounds anywhere in these tests fails them instead of passing by luck.

Numba's on-disk cache does not key on the bounds-check flag (its index holds the signature, the
target machine and the bytecode's hash): a run sharing the default cache would load the unchecked
machine code, and would leave checked (slower) code behind for the normal runs. So the run gets a
fresh temporary ``NUMBA_CACHE_DIR``, which also makes it compile everything it uses with checks.
No PyMC sampling here (slow); the files are the compiled kernels' own tests.

Marked ``boundscheck``: the default run leaves it out (it is ~15 CPU minutes on the project's 2-core
machine, nearly all of it compiling every kernel anew); ``python -m pytest -q -m boundscheck`` runs
it (and the summaries' bounds-checked run in test_summaries_hostile.py), and CI's ``.ci/run`` runs
them once per CI run, beside the Python 3.11 stage.
"""

import os
import resource
import subprocess
import sys
import time

import pytest
from limits import BOUNDSCHECK_TIMEOUT

pytestmark = pytest.mark.boundscheck

FILES = [
    "test_hostile_kernels.py",
    "test_families_kernels.py",
    "test_gibbs_enumeration.py",
    "test_pgsm_enumeration.py",
    "test_sams_enumeration.py",
    "test_gibbs_sams_enumeration.py",
    "test_subclusters_enumeration.py::test_subcluster_moves_alone_match_enumeration",
    "test_subclusters_enumeration.py::test_edge_cases_stay_in_bounds",
    "test_subclusters_enumeration.py::test_gibbs_with_subcluster_moves_samples_uniform_colourings",
    "test_subclusters_enumeration.py::test_deterministic_in_its_random_numbers_and_the_table_grows",
    "test_coupled_gibbs.py",
    "test_aligned_coupling.py",
    "test_transport.py",
    "test_counter_uniforms.py",
    "test_colouring.py",
    "test_predictive_families.py",
    "test_network_enumeration.py",
    "test_network_cache.py",
    "test_counts_kernels.py",
    "test_counts_predictive.py",
    "test_set_statistics.py",
    "test_arm_hostile.py",
    "test_algorithm8.py",
    "test_compiled_slots.py",
    "test_slot_metropolis.py",
    "test_slot_split_merge.py::test_newton_step_is_its_definition_and_refuses_wrong_shapes",
    "test_linear_regression_kernels.py",
    "test_metric_plan.py",
    # ARM and Jain-Neal: the enumerations that walk every proposal of every family and prior,
    # and the sampled-proposal checks (the chains built on them add run time, not code paths).
    "test_arm_enumeration.py::test_detailed_balance_and_the_reported_log_ratio",
    "test_arm_enumeration.py::test_sampled_proposals_follow_the_forced_probabilities",
    "test_jain_neal_enumeration.py::test_fixed_launch_detailed_balance",
    "test_jain_neal_enumeration.py::test_sampled_splits_follow_the_final_scan",
]


def test_kernel_tests_pass_with_bounds_checking(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"),
               PYTHONDONTWRITEBYTECODE="1")
    # One process (-n 0, overriding pyproject's -n auto): the child's xdist workers would each compile
    # the kernels both need before either has cached them, and the run already shares the machine
    # with the outer run's other worker.
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
           *[os.path.join(here, f) for f in FILES]]
    start, cpu_start = time.perf_counter(), _children_cpu()
    proc = subprocess.run(cmd, cwd=os.path.dirname(here), env=env, capture_output=True, text=True,
                          timeout=BOUNDSCHECK_TIMEOUT)
    took = f"{time.perf_counter() - start:.0f} s, CPU {_children_cpu() - cpu_start:.0f} s, load {os.getloadavg()[0]:.1f}"
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
    assert proc.returncode == 0, f"kernel tests failed with NUMBA_BOUNDSCHECK=1 ({took}):\n{tail}"
    print(f"kernel tests with NUMBA_BOUNDSCHECK=1: {took}")


def _children_cpu():
    """CPU seconds used by this process's finished children (the child pytest and its workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
