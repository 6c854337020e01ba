"""sample_unbiased under hostile conditions: Ctrl-C in every mode, worker processes killed, a hung
pair, functions h that return NaN or change shape, and every argument checked at the call.

The fault tests are real: a real SIGINT sent to this process from a timer thread (as a terminal's
Ctrl-C reaches the parent), real SIGKILLs of the worker processes, a pair that sleeps forever.
They use a 7-item model and a slow h (it sleeps a few ms per call) so that runs are long enough
to be interrupted, while an uninterrupted reference with a fast h gives every pair's value.
"""

import concurrent.futures as cf
import math
import multiprocessing
import os
import re
import signal
import threading
import time
from contextlib import contextmanager

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from limits import CHILD_PYTHON_TIMEOUT
from models import PRIORS, pack
from pymc_partitions.coupling.parallel import UnbiasedJob, run_pairs
from pymc_partitions.coupling.sweep import GibbsSweeps
from pymc_partitions.coupling.unbiased import PairStopped, run_pair, suggest_k_m

psutil = pytest.importorskip("psutil")  # installed with the "dask" extra (CI)

# forking the workers while the test's timer / killer thread sleeps is safe; Python 3.12 warns anyway
pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")

N = 7
Y = np.array([-2.1, -1.7, -1.9, 0.1, 1.8, 2.2, 1.9])
# Seconds from SIGINT to return, in this process's modes (cores=1, processes, threads): measured well
# under 0.5 s on an idle machine; the bound has the headroom of a 2-core machine at load 10 (see
# limits.py), and each run it stops would go on far longer (the tests check that it stopped early).
STOP_WITHIN = 10.0
# Seconds for a run whose pairs hang (forever) to give them up after pair_timeout: about 1-2 s idle.
GIVE_UP_WITHIN = 60.0


@pytest.fixture(scope="module")
def model():
    with pm.Model() as mdl:
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=Y)
    return mdl


class SlowK:
    """The number of clusters, after sleeping ``delay`` seconds: the same values as a fast h."""

    __name__ = "k"

    def __init__(self, delay=0.0):
        self.delay = delay

    def __call__(self, labels):
        if self.delay:
            time.sleep(self.delay)
        return labels.max() + 1.0


def pair_id(rng):
    """The pair a Generator belongs to: pair i of a fixed-size run uses child i of the run's seed."""
    return rng.bit_generator.seed_seq.spawn_key[-1]


class Singletons:
    """init: all singletons, except that for the pairs in ``bad`` it does something hostile."""

    def __init__(self, bad=(), action="hang", seconds=1e6):
        self.bad, self.action, self.seconds = set(bad), action, seconds

    def __call__(self, rng):
        if pair_id(rng) in self.bad:
            if self.action == "hang":
                time.sleep(self.seconds)
            elif self.action == "hold":  # in this process only: until the test lets it go
                HELD.append("held")
                RELEASE.wait(self.seconds)
                HELD.append("let go")
            elif self.action == "die":
                os.kill(os.getpid(), signal.SIGKILL)
            elif self.action == "exit":
                raise SystemExit(3)
            elif self.action == "interrupt":
                raise KeyboardInterrupt
        return np.arange(N)


FIXED = dict(k=1, m=20, random_seed=3, progressbar=False)
HELD, RELEASE = [], threading.Event()  # the "hold" action of Singletons (threads of this process)


def values(result):
    """{pair id: estimate} of the pairs that met."""
    meeting = result["meeting"]
    est = result["unbiased"]["k"].values
    return {int(p): float(v) for p, v, s in zip(meeting["pair"].values, est, meeting["status"].values) if s == "met"}


def new_children(before):
    """Processes started by this test that still run (not zombies), except multiprocessing's own
    helpers (the resource tracker and the fork server, which live as long as this process)."""
    out = []
    for child in psutil.Process().children(recursive=True):
        try:
            helper = any("resource_tracker" in part or "forkserver" in part for part in child.cmdline())
            if child.pid not in before and child.status() != psutil.STATUS_ZOMBIE and not helper:
                out.append(child)
        except psutil.NoSuchProcess:
            pass
    return out


@contextmanager
def no_workers_left():
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    assert not new_children(before), "worker processes are still running after sample_unbiased returned"
    assert not [p for p in multiprocessing.active_children() if p.name == "pymc_partitions pair worker"]


@contextmanager
def sigint_after(seconds):
    """SIGINT to this process after ``seconds``, from a timer thread (what a terminal Ctrl-C does to
    the parent). Yields a dict with the time it was sent. A SIGINT that arrives after the call
    returned is caught here and fails the test instead of stopping pytest."""
    sent = {}
    fallback = lambda *args: sent.setdefault("late", time.perf_counter())  # noqa: E731
    old = signal.signal(signal.SIGINT, fallback)
    stop = threading.Event()

    def fire():
        # The clock starts when the run has put in its own handler: on a loaded machine setting
        # up the run can take longer than ``seconds``, and a signal sent before would be lost.
        while signal.getsignal(signal.SIGINT) is fallback:
            if stop.wait(0.01):
                return
        if stop.wait(seconds):
            return
        sent["at"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Thread(target=fire, daemon=True)
    timer.start()
    try:
        yield sent
    finally:
        stop.set()
        timer.join()
        signal.signal(signal.SIGINT, old)
    assert "at" in sent and "late" not in sent, "the run ended before the interrupt: make it longer"


def kill_workers_at(times, before):
    """A thread that SIGKILLs one worker process (a child started after ``before``) at each time."""
    killed = []

    def run():
        t0 = time.perf_counter()
        for t in times:
            time.sleep(max(0.0, t - (time.perf_counter() - t0)))
            children = new_children(before)
            if children:
                os.kill(children[0].pid, signal.SIGKILL)
                killed.append(children[0].pid)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, killed


@pytest.fixture(scope="module")
def reference(model):
    """Every pair's value, uninterrupted, in this process, with a fast h."""
    return values(pmp.sample_unbiased(model, h=SlowK(), n_pairs=400, cores=1, **FIXED))


# --------------------------------------------------------------------------------------------
# Ctrl-C


@pytest.mark.parametrize("mode", ["cores=1", "processes", "threads"])
def test_ctrl_c_returns_the_finished_pairs_at_once(model, reference, mode):
    run = dict(FIXED, h=SlowK(0.002), n_pairs=400)
    pool = cf.ThreadPoolExecutor(2) if mode == "threads" else None
    run.update({"cores=1": dict(cores=1), "processes": dict(cores=2), "threads": dict(executor=pool)}[mode])
    with no_workers_left(), sigint_after(1.5) as sent:
        with pytest.warns(UserWarning, match="interrupted"):
            result = pmp.sample_unbiased(model, **run)
        returned = time.perf_counter()
    if pool is not None:
        pool.shutdown(wait=True)
    assert returned - sent["at"] < STOP_WITHIN
    attrs = result["unbiased"].attrs
    assert attrs["interrupted"] == 1 and attrs["interrupted_during"] == "main"
    got = values(result)
    assert 5 <= len(got) < 400
    assert len(got) == result["meeting"].sizes["pair"]  # no failed pair: a stopped pair is dropped, not failed
    assert all(got[p] == reference[p] for p in got)  # each finished pair as in the uninterrupted run


def test_ctrl_c_inside_compiled_code_with_cores_1():
    """Pairs that spend their time inside numba kernels (n = 120, 50 dimensions): the signal
    arrives inside compiled code, and must neither be lost nor turn into a failed pair."""
    y = pmp.datasets.load_gene()[:120]
    with pm.Model() as big:
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(y))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=0.5, sigma=1.3, observed=y)
    run = dict(h={"k": pmp.h.n_clusters}, k=5, m=300, cores=1, random_seed=1, progressbar=False)
    with sigint_after(1.5) as sent, pytest.warns(UserWarning, match="interrupted"):
        result = pmp.sample_unbiased(big, n_pairs=10_000, **run)
    assert time.perf_counter() - sent["at"] < STOP_WITHIN
    status = result["meeting"]["status"].values
    assert result["unbiased"].attrs["interrupted"] == 1 and len(status) >= 1
    assert (status == "met").all(), status  # no "failed: SystemError ..."
    again = pmp.sample_unbiased(big, n_pairs=len(status), **run)  # cores=1 runs pairs in order
    assert np.array_equal(result["unbiased"]["k"].values, again["unbiased"]["k"].values)


@pytest.mark.parametrize("cores", [1, 2])
def test_ctrl_c_with_a_time_budget_returns_the_pairs_so_far(model, cores):
    run = dict(h=SlowK(0.002), time_budget=60.0, cores=cores, k=1, m=20, random_seed=3, progressbar=False)
    with no_workers_left(), sigint_after(1.5) as sent, pytest.warns(UserWarning, match="interrupted"):
        result = pmp.sample_unbiased(model, **run)
    assert time.perf_counter() - sent["at"] < STOP_WITHIN
    got = result["unbiased"]["k"].values
    assert result["unbiased"].attrs["interrupted"] == 1 and len(got) >= 5 and np.isfinite(got).all()
    if cores == 1:  # one lane: its pairs in order, as in an uninterrupted budgeted run
        fast = pmp.sample_unbiased(model, **dict(run, h=SlowK(), time_budget=0.5))["unbiased"]["k"].values
        size = min(len(fast), len(got))
        assert size >= 5 and np.array_equal(fast[:size], got[:size])


def test_ctrl_c_during_the_pilot_does_not_start_the_main_run(model):
    run = dict(h=SlowK(0.002), n_pairs=50, pilot_pairs=2000, cores=2, random_seed=3, progressbar=False)
    with no_workers_left(), sigint_after(1.0) as sent, pytest.warns(UserWarning, match="during the pilot"):
        result = pmp.sample_unbiased(model, **run)
    assert time.perf_counter() - sent["at"] < STOP_WITHIN
    attrs = result["unbiased"].attrs
    assert attrs["interrupted"] == 1 and attrs["interrupted_during"] == "pilot" and attrs["k"] == "none"
    assert result["meeting"].sizes["pair"] == 0


class SleepyAfterProbe:
    """h that sleeps ``seconds`` at every call but the first (the probe at the call)."""

    def __init__(self, seconds):
        self.seconds, self.calls = seconds, 0

    def __call__(self, labels):
        self.calls += 1
        if self.calls > 1:
            time.sleep(self.seconds)
        return labels.max() + 1.0


def test_a_second_ctrl_c_raises_at_once(model):
    """The first Ctrl-C waits for the pair's next iteration (here 60 s away, inside h); a second
    one does not wait."""
    sent = []
    old = signal.signal(signal.SIGINT, lambda *args: None)

    def fire_twice():
        for _ in range(2):
            time.sleep(1.0 if not sent else 0.5)
            sent.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=fire_twice)
    thread.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            pmp.sample_unbiased(model, h=SleepyAfterProbe(60.0), n_pairs=2, k=0, m=2, cores=1, progressbar=False)
        assert time.perf_counter() - sent[1] < STOP_WITHIN
    finally:
        thread.join()
        signal.signal(signal.SIGINT, old)


def test_the_sigint_handler_is_restored(model):
    before = signal.getsignal(signal.SIGINT)
    pmp.sample_unbiased(model, h=SlowK(), n_pairs=3, k=0, m=1, cores=1, progressbar=False)
    assert signal.getsignal(signal.SIGINT) is before


# --------------------------------------------------------------------------------------------
# Worker processes that die or hang


@pytest.mark.parametrize("times", [[1.0], [0.6, 1.2, 1.8]], ids=["one death", "three deaths"])
def test_killed_workers_lose_nothing(model, reference, times):
    run = dict(FIXED, h=SlowK(0.002), n_pairs=150, cores=2)
    with no_workers_left():
        before = {p.pid for p in psutil.Process().children(recursive=True)}
        thread, killed = kill_workers_at(times, before)
        result = pmp.sample_unbiased(model, **run)
        thread.join()
    assert len(killed) == len(times)
    attrs = result["unbiased"].attrs
    assert attrs["worker_failures"] == len(times) and attrs["retries"] == 2
    got = values(result)
    assert len(got) == 150 and all(got[p] == reference[p] for p in got)


def test_killed_worker_under_a_time_budget(model):
    run = dict(h=SlowK(0.002), time_budget=3.0, cores=2, k=1, m=20, random_seed=3, progressbar=False)
    with no_workers_left():
        before = {p.pid for p in psutil.Process().children(recursive=True)}
        thread, killed = kill_workers_at([1.0], before)
        result = pmp.sample_unbiased(model, **run)
        thread.join()
    assert killed and result["unbiased"].attrs["worker_failures"] == 1
    status = result["meeting"]["status"].values
    assert len(status) >= 10 and (status == "met").all()


@pytest.mark.parametrize("retries", [0, 2])
def test_a_pair_that_kills_its_worker_fails_after_its_retries(model, reference, retries):
    run = dict(FIXED, h=SlowK(), n_pairs=12, cores=2, init=Singletons({4}, "die"), retries=retries)
    with no_workers_left(), pytest.warns(UserWarning, match="1 failed: WorkerDied"):
        result = pmp.sample_unbiased(model, **run)
    status = dict(zip(result["meeting"]["pair"].values, result["meeting"]["status"].values))
    assert status[4].startswith(f"failed: WorkerDied: its worker failed while running it, {retries + 1} times")
    assert "SIGKILL" in status[4]
    assert sum(s == "met" for s in status.values()) == 11
    assert result["unbiased"].attrs["worker_failures"] == retries + 1
    # the others, started from singletons, equal an in-process run
    fine = values(pmp.sample_unbiased(model, **dict(run, cores=1, init=Singletons())))
    assert all(fine[p] == v for p, v in values(result).items())


def test_a_hung_pair_is_stopped_by_pair_timeout(model):
    run = dict(FIXED, h=SlowK(), n_pairs=40, init=Singletons({2, 30}), pair_timeout=1.0)
    start = time.perf_counter()
    with no_workers_left(), pytest.warns(UserWarning, match="2 failed: timeout after 1 s"):
        result = pmp.sample_unbiased(model, cores=2, **run)
    assert time.perf_counter() - start < GIVE_UP_WITHIN
    status = dict(zip(result["meeting"]["pair"].values, result["meeting"]["status"].values))
    assert status[2] == status[30] == "failed: timeout after 1 s"
    fine = values(pmp.sample_unbiased(model, cores=1, **dict(run, init=Singletons(), pair_timeout=None)))
    got = values(result)
    assert len(got) == 38 and all(fine[p] == v for p, v in got.items())
    assert result["unbiased"].attrs["pair_timeout"] == 1.0


def test_pair_timeout_in_this_process_stops_between_iterations(model):
    """cores=1: pairs of 10^8 iterations are stopped after 0.3 s."""
    with pytest.warns(UserWarning, match="timeout after 0.3 s"):
        result = pmp.sample_unbiased(model, h=SlowK(), n_pairs=2, k=0, m=10**8, max_iter=10**9, cores=1,
                                     progressbar=False, pair_timeout=0.3, random_seed=0)
    assert (result["meeting"]["status"].values == "failed: timeout after 0.3 s").all()


def test_a_hung_pair_on_a_thread_pool_is_given_up(model):
    """A thread cannot be stopped: the pair is reported failed and the run goes on, and returns while
    that pair still hangs (it is held until the run has returned, then let go so the pool can close)."""
    run = dict(FIXED, h=SlowK(), n_pairs=8, init=Singletons({1}, "hold", seconds=600.0), pair_timeout=0.5)
    HELD.clear()
    RELEASE.clear()
    with cf.ThreadPoolExecutor(2) as pool, pytest.warns(UserWarning, match="could not be stopped"):
        try:
            result = pmp.sample_unbiased(model, executor=pool, **run)
            still_held = list(HELD)
        finally:
            RELEASE.set()
    assert still_held == ["held"]  # the run returned while the pair still hung
    status = result["meeting"]["status"].values
    assert status[1].startswith("failed: timeout after 0.5 s") and (np.delete(status, 1) == "met").all()


@pytest.mark.parametrize("mode", ["cores=1", "processes", "threads"])
@pytest.mark.parametrize("action, message", [("exit", "SystemExit raised inside the pair (code 3)"),
                                             ("interrupt", "KeyboardInterrupt raised inside the pair")])
def test_system_exit_or_keyboard_interrupt_raised_by_a_pair_fails_that_pair_only(model, mode, action, message):
    """sys.exit or KeyboardInterrupt from the user's code in one pair: with cores=1 the first used
    to end the call and lose every finished pair. In every mode that pair fails, the others run,
    and the run is not marked interrupted."""
    run = dict(FIXED, h=SlowK(), n_pairs=8, init=Singletons({4}, action))
    pool = cf.ThreadPoolExecutor(2) if mode == "threads" else None
    run.update({"cores=1": dict(cores=1), "processes": dict(cores=2), "threads": dict(executor=pool)}[mode])
    try:
        with no_workers_left(), pytest.warns(UserWarning, match=re.escape(f"1 failed: {message}")):
            result = pmp.sample_unbiased(model, **run)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    status = result["meeting"]["status"].values
    assert status[4] == f"failed: {message}" and (np.delete(status, 4) == "met").all()
    assert result["unbiased"].attrs["interrupted"] == 0


# --------------------------------------------------------------------------------------------
# h checked for every pair


class NaNAtSixClusters:
    """NaN for the partitions with 6 blocks (a few pairs visit one), the number of blocks otherwise."""

    def __call__(self, labels):
        return math.nan if labels.max() == 5 else labels.max() + 1.0


class ShapeChangesAtSixClusters:
    def __call__(self, labels):
        return np.ones(2) if labels.max() == 5 else labels.max() + 1.0


@pytest.mark.parametrize("h, message", [(NaNAtSixClusters(), re.escape("h['k'] returned NaN")),
                                        (ShapeChangesAtSixClusters(),
                                         re.escape("h['k'] changed shape from () to (2,)"))])
@pytest.mark.parametrize("cores", [1, 2])
def test_a_bad_value_of_h_fails_that_pair_only(model, h, message, cores):
    with pytest.warns(UserWarning, match=message):
        result = pmp.sample_unbiased(model, h={"k": h, "n": pmp.h.n_clusters}, n_pairs=30, cores=cores, **FIXED)
    status = result["meeting"]["status"].values
    assert result["meeting"].sizes["pair"] == 30
    bad = np.char.startswith(status.astype(str), "failed: ValueError: h['k']")
    assert 1 <= bad.sum() < 30 and (status[~bad] == "met").all()
    assert np.isnan(result["unbiased"]["k"].values[bad]).all()
    assert np.isfinite(result["unbiased"]["k"].values[~bad]).all()


@pytest.mark.parametrize("h, message", [
    (lambda z: math.nan, r"h\['h'\] returned NaN on the all-singletons partition"),
    (lambda z: None, "returned None"),
    (lambda z: [1.0, math.inf], "returned"),
    (lambda z: "three", "not a number"),
])
def test_a_bad_value_of_h_at_the_probe_is_refused_at_the_call(model, h, message):
    with pytest.raises(ValueError, match=message):
        pmp.sample_unbiased(model, h=h, n_pairs=2, k=0, m=1, cores=1, progressbar=False)


class WithCoords:
    dims = ("x",)
    coords = {"x": [1, 2]}

    def __call__(self, labels):
        return np.zeros(3)


@pytest.mark.parametrize("h, message", [
    ({"pair": pmp.h.n_clusters}, "also a dimension"),
    ({"rank": pmp.h.n_clusters, "top": pmp.h.LargestProportions(2)}, "also a dimension"),
    ({"w": WithCoords()}, r"coords\['x'\] has 2 values"),
])
def test_output_names_that_would_clash_are_refused_at_the_call(model, h, message):
    with pytest.raises(ValueError, match=message):
        pmp.sample_unbiased(model, h=h, n_pairs=2, k=0, m=1, cores=1, progressbar=False)


def test_h_keys_must_be_strings(model):
    with pytest.raises(TypeError, match="non-empty strings"):
        pmp.sample_unbiased(model, h={1: pmp.h.n_clusters}, n_pairs=2, k=0, m=1, cores=1, progressbar=False)


@pytest.mark.parametrize("init, message", [
    (lambda rng: np.arange(N - 1), "must return 7 labels"),
    (lambda rng: np.full(N, 0.5), "integer labels"),
    (lambda rng: np.arange(N) + 1, r"labels in \[0, 7\)"),
    (lambda rng: None, "must return 7 labels"),
])
def test_a_callable_init_is_checked_for_every_pair(model, init, message):
    with pytest.warns(UserWarning, match="did not meet or failed"):
        result = pmp.sample_unbiased(model, init=init, n_pairs=3, k=0, m=1, cores=1, progressbar=False)
    status = result["meeting"]["status"].values
    assert all(s.startswith("failed: ValueError: init(rng)") for s in status)
    assert re.search(message, status[0]), status[0]


def test_every_pilot_pair_failing_is_an_error_naming_the_failure(model):
    with pytest.raises(RuntimeError, match="every pilot pair failed, e.g. ValueError: h\\['k'\\] returned NaN"):
        pmp.sample_unbiased(model, h={"k": lambda z: 1.0 if z.max() == N - 1 else math.nan}, n_pairs=2,
                            pilot_pairs=3, cores=1, init="one_block", progressbar=False)


# --------------------------------------------------------------------------------------------
# Arguments: checked at the call, by type and range; nothing hangs, nothing is coerced


BAD_ARGUMENTS = [
    ("time_budget", math.nan, ValueError), ("time_budget", math.inf, ValueError), ("time_budget", 0, ValueError),
    ("time_budget", -1.0, ValueError), ("time_budget", "1", TypeError),
    ("k", 2.5, ValueError), ("m", 10.7, ValueError), ("k", True, TypeError), ("k", -1, ValueError),
    ("eps", 1.5, ValueError), ("eps", -0.1, ValueError), ("eps", math.nan, ValueError),
    ("n_pairs", 0, ValueError), ("n_pairs", 2.5, ValueError), ("n_pairs", True, TypeError), ("n_pairs", "3", TypeError),
    ("lag", 0, ValueError), ("lag", 1.5, ValueError), ("max_iter", 0, ValueError), ("max_iter", 3, ValueError),
    ("cores", 0, ValueError), ("cores", 1.5, ValueError), ("cores", "2", TypeError),
    ("retries", -1, ValueError), ("retries", 0.5, ValueError),
    ("pair_timeout", 0, ValueError), ("pair_timeout", math.nan, ValueError), ("pair_timeout", "5", TypeError),
    ("pilot_pairs", 0, ValueError), ("record_distance", "no", TypeError), ("progressbar", 1, TypeError),
    ("init", "bogus", ValueError), ("coupling", "OT", ValueError), ("coupling", None, ValueError),
    ("random_seed", -1, ValueError), ("random_seed", 1.5, TypeError), ("random_seed", True, TypeError),
    ("random_seed", "x", TypeError), ("mp_ctx", "bogus", ValueError), ("mp_ctx", 3, TypeError),
]


@pytest.mark.parametrize("name, value, error", BAD_ARGUMENTS, ids=[f"{n}={v!r}" for n, v, _ in BAD_ARGUMENTS])
def test_bad_arguments_are_refused_before_any_pair_runs(model, name, value, error):
    run = dict(h={"k": NaNAtSixClusters()}, n_pairs=4, k=1, m=5, cores=2, progressbar=False)
    if name == "m":
        run["k"] = 1
    if name == "mp_ctx":
        run["cores"] = 2
    run[name] = value
    if name == "time_budget":
        run.pop("n_pairs")
    start = time.perf_counter()
    with no_workers_left(), pytest.raises(error, match=name if name != "m" else "m must be"):
        pmp.sample_unbiased(model, **run)
    assert time.perf_counter() - start < STOP_WITHIN  # no worker started, no pair waited for


def test_a_shut_down_executor_is_an_error_at_the_call(model):
    pool = cf.ThreadPoolExecutor(1)
    pool.shutdown()
    with pytest.raises(RuntimeError, match="refused the first pair"):
        pmp.sample_unbiased(model, n_pairs=2, k=0, m=1, executor=pool, progressbar=False)


def test_a_too_small_time_budget_warns(model):
    with pytest.warns(UserWarning, match="no pair finished within time_budget"):
        result = pmp.sample_unbiased(model, h=SlowK(0.01), time_budget=0.001, k=1, m=20, cores=1, progressbar=False)
    assert result["meeting"].sizes["pair"] == 0


def test_summarize_and_suggest_check_their_arguments(model):
    result = pmp.sample_unbiased(model, n_pairs=3, k=0, m=1, cores=1, progressbar=False, random_seed=0)
    for ci, error in [(1.5, ValueError), (0, ValueError), (math.nan, ValueError), (True, TypeError)]:
        with pytest.raises(error, match="ci must be"):
            pmp.summarize_unbiased(result, ci=ci)
    with pytest.raises(ValueError, match="no estimated quantity named \\['nope'\\]"):
        pmp.summarize_unbiased(result, var_names=["nope"])
    assert list(pmp.summarize_unbiased(result, var_names="n_clusters").index) == ["n_clusters"]
    for kwargs, error, match in [
        (dict(estimator="median"), ValueError, "estimator must be one of"),
        (dict(estimator="median_of_means", n_groups=2), ValueError, "use estimator='mean'"),
        (dict(estimator="median_of_means", n_groups=3.5), ValueError, "n_groups must be an integer"),
        (dict(estimator="median_of_means", n_groups=True), TypeError, "n_groups must be an integer"),
        (dict(estimator="median_of_means", n_groups=4), ValueError, "needs at least 4 pairs that met, got 3"),
        (dict(estimator="median_of_means"), ValueError, "n_groups=24 needs at least 24 pairs"),
        (dict(estimator="trimmed_mean", trim=0.5), ValueError, "trim must be"),
        (dict(estimator="trimmed_mean", trim=math.nan), ValueError, "trim must be"),
        (dict(estimator="trimmed_mean", trim="5%"), TypeError, "trim must be a number"),
    ]:
        with pytest.raises(error, match=match):
            pmp.summarize_unbiased(result, **kwargs)
    robust = pmp.summarize_unbiased(result, estimator="median_of_means", n_groups=3)
    assert list(robust.columns) == ["median_of_means", "se", "ci_lower", "ci_upper", "bias_bound", "n_pairs", "n_met"]
    assert robust.attrs == {"estimator": "median_of_means", "ci": 0.95, "n_groups": 3}
    with pytest.raises(ValueError, match="quantile must be"):
        suggest_k_m([3, 4], quantile=1.5)
    with pytest.raises(ValueError, match="multiple must be"):
        suggest_k_m([3, 4], multiple=2.5)
    with pytest.raises(TypeError, match="meeting_times must be numbers"):
        suggest_k_m(["a"])


def test_the_h_classes_check_their_arguments():
    with pytest.raises(ValueError, match="integer item indices"):
        pmp.h.CoClustering([[0.5, 1]])  # was silently truncated to (0, 1)
    with pytest.raises(ValueError, match="finite"):
        pmp.h.PredictiveDensity([0.0, math.nan])
    with pytest.raises(ValueError, match="non-empty"):
        pmp.h.PredictiveDensity(3.0)
    with pytest.raises(TypeError, match="numbers"):
        pmp.h.PredictiveDensity(["a", "b"])
    with pytest.raises(ValueError, match="positive integer"):
        pmp.h.LargestProportions(2.5)
    with pytest.raises(TypeError, match="r must be an integer"):
        pmp.h.LargestProportions(True)
    assert np.array_equal(pmp.h.CoClustering([[0.0, 2.0]]).pairs, [[0, 2]])


def test_lower_level_pieces_check_too():
    prior = PRIORS["crp"]
    fam = pack("diag", N)
    with pytest.raises(ValueError, match="UnbiasedJob: k must be an integer"):
        UnbiasedJob(fam, prior.code, prior.kernel_params(), SlowK(), 2.5, 10)
    with pytest.raises(ValueError, match="UnbiasedJob: eps"):
        UnbiasedJob(fam, prior.code, prior.kernel_params(), SlowK(), 1, 10, eps=2.0)
    job = UnbiasedJob(fam, prior.code, prior.kernel_params(), SlowK(), 1, 10)
    with pytest.raises(ValueError, match="run_pairs: time_budget"):
        run_pairs(job, time_budget=math.nan)
    with pytest.raises(ValueError, match="run_pairs: retries"):
        run_pairs(job, n_pairs=2, retries=-1)
    # run_pair stops when asked, between iterations
    kernel = GibbsSweeps(fam, prior.code, prior.kernel_params())
    calls = []

    def stop_at_third():
        calls.append(1)
        return "enough" if len(calls) >= 3 else None

    with pytest.raises(PairStopped, match="enough"):
        run_pair(kernel, SlowK(), np.arange(N), np.zeros(N, np.int64), np.random.default_rng(0), 0, 50,
                 should_stop=stop_at_third, max_iter=10**6)
    with pytest.raises(ValueError, match="run_pair: k must be"):
        run_pair(kernel, SlowK(), np.arange(N), np.arange(N), np.random.default_rng(0), 2.5, 5)


def test_spawned_workers_give_the_same_results(model, reference):
    """The start method of macOS and Windows (the job and the pipe travel pickled). Each worker
    takes seconds to import PyMC: that time does not count against pair_timeout."""
    with no_workers_left():
        got = values(pmp.sample_unbiased(model, h=SlowK(), n_pairs=6, cores=2, mp_ctx="spawn", pair_timeout=0.5,
                                         **FIXED))
    assert len(got) == 6 and all(got[p] == reference[p] for p in got)



DASK_RUN = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path[:0] = [{root!r}, {tests!r}]
import pymc as pm, pymc_partitions as pmp
from distributed import Client, LocalCluster
from test_hostile_unbiased import FIXED, N, Y, SlowK, values

if __name__ == "__main__":
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=Y)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster) as client:
        print("ready", flush=True)
        started = time.time()
        result = pmp.sample_unbiased(model, h=SlowK(0.002), n_pairs=3000, executor=client, **FIXED)
        returned = time.time()
        attrs = result["unbiased"].attrs
        print(json.dumps(dict(started=started, returned=returned, values=values(result),
                              interrupted=int(attrs["interrupted"]),
                              during=attrs["interrupted_during"])), flush=True)
"""


def test_ctrl_c_with_a_dask_cluster(reference, tmp_path):
    """In a child Python (a Dask cluster leaves threads behind, and later tests fork): Ctrl-C to
    it returns at once; the (at most 2 per worker) tasks running in the cluster are dropped.

    "At once": within STOP_WITHIN, or -- on a loaded machine, where the cluster's four processes
    share the cores with everything else (77 s was seen at load 6-14) -- within a quarter of the time
    the remaining pairs would have taken at the pace of the pairs before the signal. Measured at
    load 8: 1.1 s (the cancelled tasks are given 1 s to finish)."""
    pytest.importorskip("distributed")
    import json  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    here = os.path.dirname(os.path.abspath(__file__))
    script = tmp_path / "dask_run.py"
    script.write_text(DASK_RUN.format(root=os.path.dirname(here), tests=here))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(3.0)  # the model is built and pairs are running on the cluster
        sent = time.time()
        child.send_signal(signal.SIGINT)
        out = json.loads(child.stdout.readline())
        assert child.wait(timeout=CHILD_PYTHON_TIMEOUT) == 0  # the cluster shut down
    finally:
        if child.poll() is None:
            child.kill()
    got = {int(p): v for p, v in out["values"].items()}
    per_pair = (sent - out["started"]) / max(len(got), 1)
    assert out["returned"] - sent < max(STOP_WITHIN, 0.25 * per_pair * (3000 - len(got)))
    assert out["interrupted"] == 1 and out["during"] == "main"
    assert 5 <= len(got) < 3000 and all(got[p] == reference[p] for p in got if p in reference)


DASK_FAULTS = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path[:0] = [{root!r}, {tests!r}]

if __name__ == "__main__":  # (Dask's worker processes are spawned: they import this file, not run it)
    import dask, pymc as pm, pymc_partitions as pmp
    from distributed import Client, LocalCluster
    from test_hostile_unbiased import FIXED, N, Y, SlowK, Singletons, values
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=Y)
    # allowed-failures 0: Dask gives up on a task at the first death of a worker that holds it
    with dask.config.set({{"distributed.scheduler.allowed-failures": 0}}), \\
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \\
            Client(cluster) as client:
        for name, kwargs in [("hang", dict(init=Singletons({{2}}), pair_timeout=1.0)),
                             ("die", dict(init=Singletons({{4}}, "die"), retries=0)),
                             ("die twice", dict(init=Singletons({{4}}, "die"), retries=1))]:
            started = time.time()
            result = pmp.sample_unbiased(model, h=SlowK(), n_pairs=12, executor=client, **FIXED, **kwargs)
            print(json.dumps(dict(name=name, seconds=time.time() - started, values=values(result),
                                  status=[str(s) for s in result["meeting"]["status"].values],
                                  worker_failures=int(result["unbiased"].attrs["worker_failures"]))), flush=True)
"""


@pytest.fixture(scope="module")
def dask_faults(tmp_path_factory):
    """Runs of 12 pairs on one Dask LocalCluster (2 worker processes, allowed-failures 0), in a child
    Python (a cluster leaves threads behind, and later tests fork): a pair stuck inside one
    iteration with pair_timeout=1, and a pair that kills its worker, with retries 0 and 1."""
    pytest.importorskip("distributed")
    import json  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    here = os.path.dirname(os.path.abspath(__file__))
    script = tmp_path_factory.mktemp("dask") / "dask_faults.py"
    script.write_text(DASK_FAULTS.format(root=os.path.dirname(here), tests=here))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=script.parent,
                          timeout=CHILD_PYTHON_TIMEOUT)
    runs = {r["name"]: r for r in map(json.loads, (line for line in done.stdout.splitlines() if line.startswith("{")))}
    assert done.returncode == 0 and len(runs) == 3, done.stderr[-3000:]
    return runs


def others_as_undisturbed(model, run, bad):
    """The pairs other than ``bad`` all met, with the values of an undisturbed in-process run."""
    fine = values(pmp.sample_unbiased(model, h=SlowK(), n_pairs=12, cores=1, init=Singletons(), **FIXED))
    got = {int(p): v for p, v in run["values"].items()}
    assert sorted(got) == [p for p in range(12) if p not in bad] and all(got[p] == fine[p] for p in got)


def test_a_worker_death_counts_only_under_the_task_that_was_running_there():
    """A pair that finished on worker A, whose result then died with A (killed by another pair),
    is rerun by Dask on B: A's death was the other pair's, not a second one under this pair (it
    used to be counted twice: worker_failures 3 for a pair that killed two workers)."""
    from pymc_partitions.coupling.parallel import _deaths_under  # noqa: PLC0415

    assert _deaths_under(["A"], {"A"}, set()) == 0  # finished on A, rerun elsewhere
    assert _deaths_under(["A"], set(), set()) == 1  # A died while it ran there
    assert _deaths_under(["A", "B"], set(), set()) == 2  # killed both workers
    assert _deaths_under(["A", "B"], {"B"}, set()) == 1  # A died under it, then it finished on B
    assert _deaths_under(["A", "B"], {"A"}, {"B"}) == 0  # B was restarted by the run itself


def test_a_hung_pair_on_dask_is_stopped_by_pair_timeout(model, dask_faults):
    """It used to be never detected (the futures of the client's concurrent.futures view never
    report running): the call waited forever. Now its worker is restarted and the pair fails."""
    hang = dask_faults["hang"]
    assert hang["status"][2] == "failed: timeout after 1 s (stuck inside one iteration: its Dask worker was restarted)"
    others_as_undisturbed(model, hang, {2})


@pytest.mark.parametrize("retries", [0, 1])
def test_a_pair_that_kills_its_dask_worker_fails_after_its_retries(model, dask_faults, retries):
    """Each KilledWorker is a worker death against retries, whatever allowed-failures is; the pairs
    only queued on the worker that died are run again, not blamed (with retries=0 one of them used
    to fail too), and the run returns (with retries=1 it could wait forever: the KilledWorker was
    raised inside a callback of the client's concurrent.futures view)."""
    run = dask_faults["die" if retries == 0 else "die twice"]
    assert run["status"][4].startswith(f"failed: WorkerDied: its worker failed while running it, {retries + 1} times "
                                       "(last: its Dask worker died while running it (KilledWorker")
    assert run["worker_failures"] == retries + 1
    others_as_undisturbed(model, run, {4})
