"""Running many independent pairs of coupled chains: in this process, on the package's own worker
processes, on any ``concurrent.futures.Executor`` or on a Dask cluster.

Every pair draws its random numbers from its own child of one ``SeedSequence``, so the pairs'
results do not depend on the executor, the number of workers or the order of completion. The job
(model, kernel settings, functions h) travels to the workers pickled with cloudpickle, so h may
be a lambda.

Faults, measured in ``tests/test_hostile_unbiased.py`` and described in ``docs/unbiased.md``:

* Results stream back **one pair at a time** (two pairs queued per worker, more for pairs under
  10 ms), so a fault loses at most the pairs in flight, never a finished one.
* **Ctrl-C** (SIGINT) sets a flag instead of raising inside compiled code (:class:`Interrupts`).
  Pairs running in this process stop at their next iteration; the package's worker processes
  ignore SIGINT and are terminated at once by the parent; queued tasks of other executors are
  cancelled (a Dask task already running cannot be stopped: its result is dropped). The finished
  pairs are returned with ``interrupted=True``. A second Ctrl-C raises KeyboardInterrupt at once.
  An exception the pair's own code raises (SystemExit and KeyboardInterrupt included) fails that
  pair only.
* A **worker process that dies** costs only the pair it was running: a fresh process takes its
  place and the pair is run again, up to ``retries`` times, then reported failed. Pairs queued
  behind it are resubmitted and not blamed. On Dask (:class:`_Dask`) each task announces its
  start, so a death is blamed on the pair that was running there, whatever Dask's
  allowed-failures is.
* ``pair_timeout``: a pair running longer is stopped (between iterations in every mode; a pair
  stuck inside one iteration, e.g. in h, by ending its worker process, or restarting its Dask
  worker) and reported failed.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import itertools
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import sys
import threading
import time
import warnings
from collections import deque
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import cloudpickle
import numpy as np

from .._checks import boolean, choice, integer, probability, real
from ..families.kernels import FamilyPack
from ..priors import sample_sequential
from .split_merge import GibbsPGSM
from .sweep import COUPLINGS, GibbsSweeps
from .unbiased import PairResult, PairStopped, check_k_m, run_pair

__all__ = ["Interrupts", "UnbiasedJob", "RunReport", "run_pairs", "check_init", "check_mp_ctx", "check_seed",
           "check_timeout"]

INITS = ("prior", "singletons", "one_block")
POLL = 0.05  # seconds between two looks at the stop flag, the deadline and the running pairs' clocks
GRACE = 0.5  # a pair stuck inside one iteration is stopped this long after pair_timeout, by ending its worker
INTERRUPTED, DEADLINE = "interrupted", "deadline"  # reasons to stop a pair that discard it (not a failure)


@dataclass
class UnbiasedJob:
    """Everything one pair needs; ``h`` maps canonical labels to a flat float vector. ``pgsm``:
    None (Gibbs sweeps only) or settings of :func:`.split_merge.pgsm_settings` (then each
    iteration adds CRN-coupled PGSM moves, :class:`.split_merge.GibbsPGSM`). ``init``: one of
    :data:`INITS` or a callable ``init(rng) -> labels`` whose output is checked for every pair."""

    pack: FamilyPack
    prior_code: int
    prior_params: np.ndarray
    h: object
    k: int
    m: int
    lag: int = 1
    max_iter: int = 10_000
    coupling: str = "ot"
    eps: float = 0.0
    init: object = "prior"
    record_distance: bool = False
    pgsm: dict | None = None

    def __post_init__(self):
        owner = "UnbiasedJob"
        if not callable(self.h):
            raise TypeError(f"{owner}: h must be callable, got {self.h!r}")
        self.k, self.m, self.lag, self.max_iter = check_k_m(self.k, self.m, self.lag, self.max_iter, owner)
        self.coupling = choice("coupling", self.coupling, tuple(COUPLINGS), owner=owner)
        self.eps = probability("eps", self.eps, owner=owner)
        self.init = check_init(self.init, owner)
        self.record_distance = boolean("record_distance", self.record_distance, owner=owner)

    def initial_labels(self, rng):
        n = self.pack.data.shape[0]
        if callable(self.init):
            return _checked_labels(self.init(rng), n)
        if self.init == "prior":
            return sample_sequential(self.prior_code, self.prior_params, rng.random(n))
        if self.init == "singletons":
            return np.arange(n)
        return np.zeros(n, np.int64)

    def kernel(self):
        kernel = GibbsSweeps(self.pack, self.prior_code, self.prior_params, self.coupling, self.eps)
        return kernel if self.pgsm is None else GibbsPGSM(kernel, **self.pgsm)

    def warm_up(self):
        """Load (or compile) the compiled code a pair uses, calling no user code (h, a callable
        init), so it cannot hang: workers do this before the clock of their first pair starts
        (``pair_timeout`` measures pairs, not numba's cache)."""
        try:
            n, rng, kernel = self.pack.data.shape[0], np.random.default_rng(0), self.kernel()
            sample_sequential(self.prior_code, self.prior_params, rng.random(n))
            x, y = kernel.start(np.arange(n)), kernel.start(np.zeros(n, np.int64))
            kernel.sweep(x, kernel.random_numbers(rng))
            inter = kernel.coupled_sweep(x, y, kernel.intersections(x, y), kernel.random_numbers(rng))
            kernel.distance(x, y, inter)
            x.labels()
        except Exception:  # the pairs report their own errors
            pass

    def run(self, seed: np.random.SeedSequence, should_stop=None) -> PairResult:
        rng = np.random.default_rng(seed)
        kernel = self.kernel()
        x0, y0 = self.initial_labels(rng), self.initial_labels(rng)
        return run_pair(kernel, self.h, x0, y0, rng, self.k, self.m, self.lag, self.max_iter, self.record_distance,
                        should_stop)


def check_init(init, owner=None):
    """``init`` is one of :data:`INITS` or a callable."""
    if callable(init) or (isinstance(init, str) and init in INITS):
        return init
    raise ValueError(f"{owner + ': ' if owner else ''}init must be one of {INITS} or a callable, got {init!r}")


def _checked_labels(value, n):
    """What a callable ``init`` returned, as n int64 labels in [0, n); anything else is an error of the pair."""
    labels = np.asarray(value)
    if labels.shape != (n,):
        raise ValueError(f"init(rng) must return {n} labels, got shape {labels.shape}")
    if labels.dtype.kind not in "iu":
        integral = labels.dtype.kind == "f" and np.isfinite(labels).all() and (labels == np.floor(labels)).all()
        if not integral:
            raise ValueError(f"init(rng) must return integer labels, got dtype {labels.dtype}: {labels[:8]}")
    if labels.min() < 0 or labels.max() >= n:
        raise ValueError(f"init(rng) must return labels in [0, {n}), got values from {labels.min()} to {labels.max()}")
    return labels.astype(np.int64)


def check_seed(random_seed, owner=None) -> np.random.SeedSequence:
    """None, a non-negative int (or a sequence of them) or a ``SeedSequence``, as a SeedSequence."""
    if isinstance(random_seed, np.random.SeedSequence):
        return random_seed
    if isinstance(random_seed, (bool, np.bool_, float, np.floating, str, bytes)):
        raise TypeError(f"{owner + ': ' if owner else ''}random_seed must be None, a non-negative integer or a "
                        f"SeedSequence, got {random_seed!r}")
    try:
        return np.random.SeedSequence(random_seed)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{owner + ': ' if owner else ''}random_seed must be None, a non-negative integer or a "
                        f"SeedSequence, got {random_seed!r} ({err})") from None


def check_timeout(name, value, owner=None):
    """None or a finite number of seconds > 0."""
    return None if value is None else real(name, value, low=0.0, low_open=True, owner=owner)


def _child(root: np.random.SeedSequence, i: int) -> np.random.SeedSequence:
    """The i-th child ``root.spawn`` would make, without making the others (n_pairs may be large)."""
    return np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (int(i),), pool_size=root.pool_size)


@dataclass
class RunReport:
    """Results by pair id, plus what happened on the way."""

    results: dict = field(default_factory=dict)
    failed: dict = field(default_factory=dict)  # pair id -> error message
    interrupted: bool = False
    seconds: float = 0.0
    workers: int = 1
    worker_failures: int = 0  # worker processes that died (or executor tasks that failed) while running a pair


# ---------------------------------------------------------------------------------------------
# Ctrl-C


class Interrupts:
    """For the duration of a ``with`` block, Ctrl-C (SIGINT) sets :attr:`event` instead of raising
    KeyboardInterrupt (which, inside compiled code, surfaces as a SystemError or is lost). A second
    Ctrl-C raises KeyboardInterrupt at once. Only the main thread can install signal handlers;
    elsewhere this does nothing (SIGINT reaches the main thread only anyway), and an ignored
    SIGINT (``nohup``) stays ignored."""

    def __init__(self):
        self.event = threading.Event()
        self.forced = False
        self._old = None
        self._installed = False

    def _handler(self, signum, frame):
        if self.event.is_set():
            self.forced = True
            raise KeyboardInterrupt
        self.event.set()

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
            try:
                self._old = signal.signal(signal.SIGINT, self._handler)
                self._installed = True
            except ValueError:  # not the main interpreter
                pass
        return self

    def __exit__(self, *exc):
        if self._installed:
            signal.signal(signal.SIGINT, self._old if self._old is not None else signal.default_int_handler)
            self._installed = False
        return False


def _is_interrupt(err: BaseException) -> bool:
    """A KeyboardInterrupt, or an error raised because of one (numba and C extensions turn a Ctrl-C
    inside them into ``SystemError: ... returned a result with an exception set``)."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


@contextmanager
def _sigint_blocked():
    """SIGINT held back while worker processes start (they inherit the mask and then ignore SIGINT)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


# ---------------------------------------------------------------------------------------------
# One pair, wherever it runs


def _timeout_message(seconds):
    return f"timeout after {seconds:g} s"


def _attempt(job, seed, pair_timeout=None, stop=None):
    """Run one pair: ("done", PairResult), ("failed", message) or ("stopped", reason). ``stop``:
    the run's :class:`_Stop` when the pair runs in the parent's process (an interrupt or the
    deadline then discards the pair at its next iteration)."""
    started = time.perf_counter()

    def should_stop():
        reason = stop.why() if stop is not None else None
        if reason:
            return reason
        if pair_timeout is not None and time.perf_counter() - started > pair_timeout:
            return _timeout_message(pair_timeout)
        return None

    try:
        return "done", job.run(seed, should_stop)
    except PairStopped as err:
        return ("stopped" if err.reason in (INTERRUPTED, DEADLINE) else "failed"), err.reason
    except SystemExit as err:  # sys.exit in h: that pair fails, the others go on (as in every mode)
        return "failed", f"SystemExit raised inside the pair (code {err.code!r})"
    except (Exception, KeyboardInterrupt) as err:
        if _is_interrupt(err) and (stop is None or stop.forced()):
            raise KeyboardInterrupt from err  # a second Ctrl-C: stop at once
        if _is_interrupt(err):  # raised by the pair's own code: the first Ctrl-C only sets a flag
            return "failed", f"KeyboardInterrupt raised inside the pair{_detail(err)}"
        return "failed", f"{type(err).__name__}: {err}"


def _detail(err):
    return f": {err}" if str(err) else ""


class _Stop:
    """Why the pairs of a run that execute in the parent's process must stop: Ctrl-C (the
    :class:`Interrupts` event), the time budget's deadline, or ``reason`` set by the driver.
    ``guard``: the run's :class:`Interrupts`, which tells a second Ctrl-C (stop at once) from a
    KeyboardInterrupt raised by a pair's own code (that pair fails)."""

    def __init__(self, event, deadline, guard=None):
        self.event, self.deadline, self.reason, self.guard = event, deadline, None, guard

    def forced(self):
        """True for a KeyboardInterrupt that is a second Ctrl-C (the first one never raises while
        the guard is installed, and without it SIGINT cannot raise in this run's pairs)."""
        return self.guard is None or self.guard.forced

    def why(self):
        if self.reason:
            return self.reason
        if self.event.is_set():
            return INTERRUPTED
        if self.deadline is not None and time.perf_counter() > self.deadline:
            return DEADLINE
        return None


# ---------------------------------------------------------------------------------------------
# Where pairs run. A backend has lanes (a worker process, a time-budget slot); the driver hands
# out pairs while a lane has room and collects events (lane, key, kind, payload), where kind is
# "done", "failed", "stopped" (discarded), "lost" (its worker died: maybe retry) or "requeue"
# (queued on a worker that died, never started: resubmit, not blamed).


class _InProcess:
    """Pairs run one at a time in this thread (cores=1)."""

    lanes = 1

    def __init__(self, job_bytes, pair_timeout, stop):
        self.job = cloudpickle.loads(job_bytes)  # a copy, as a worker would have
        self.job.warm_up()
        self.pair_timeout, self.stop = pair_timeout, stop
        self.events = []

    def room(self, lane):
        return 0 if self.events else 1

    def submit(self, lane, key, seed):
        kind, payload = _attempt(self.job, seed, self.pair_timeout, self.stop)
        self.events.append((lane, key, kind, payload))

    def busy(self):
        return bool(self.events)

    def wait(self, timeout):
        events, self.events = self.events, []
        return events

    def overdue(self, limit):
        return []

    def close(self):
        pass


def _die_with_parent():
    """Linux: the kernel ends this process when its parent dies, even by SIGKILL and mid-pair
    (elsewhere a worker notices within a second once its current pair is done)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes  # noqa: PLC0415

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        except Exception:  # best effort
            pass


def _worker(conn, job_bytes, pair_timeout, parent_pid):
    """Main loop of one of the package's worker processes: pairs in, one message per pair out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it ends the workers itself
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with_parent()
    try:
        job, broken = cloudpickle.loads(job_bytes), None
    except Exception as err:  # every pair reports it
        job, broken = None, f"the worker could not load the job: {type(err).__name__}: {err}"
    if job is not None:
        job.warm_up()
    conn.send(("ready",))  # the clock of its first pair starts now (spawn takes seconds to import)
    while True:
        while not conn.poll(1.0):
            if os.getppid() != parent_pid:  # the parent is gone (killed): do not linger
                return
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        key, seed = task
        if broken:
            outcome = ("failed", broken)
        else:
            try:
                outcome = _attempt(job, seed, pair_timeout)
            except KeyboardInterrupt:  # raised by the user's code: SIGINT is ignored here
                outcome = ("failed", "KeyboardInterrupt raised inside the pair")
        conn.send((key,) + outcome)


def _exit_reason(code):
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class _Lane:
    __slots__ = ("proc", "conn", "queue", "started", "ready")

    def __init__(self, proc, conn):
        self.proc, self.conn, self.queue, self.started, self.ready = proc, conn, deque(), 0.0, False


class _Processes:
    """The package's own worker processes: one pipe each, the job shipped once per process, a few
    pairs queued per process (each starts as soon as the one before is done), so the parent knows
    which pair each process is running and since when. Two pairs are queued, more when pairs are
    so short (under 10 ms) that the round trip to the parent would leave the worker idle."""

    QUEUED_SECONDS = 0.02  # keep about this much work queued per worker (2 to 32 pairs)

    def __init__(self, size, job_bytes, ctx, pair_timeout, report):
        self.ctx, self.job_bytes, self.pair_timeout, self.report = ctx, job_bytes, pair_timeout, report
        self.lanes = size
        self.depth, self.seconds, self.done = 2, 0.0, 0
        self.events = []
        self.workers = []
        try:
            for _ in range(size):
                self.workers.append(self._start())
        except BaseException:  # a second Ctrl-C, or no more processes: leave none behind
            self.close()
            raise

    def _start(self):
        here, there = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker, args=(there, self.job_bytes, self.pair_timeout, os.getpid()),
                                name="pymc_partitions pair worker", daemon=True)
        with _sigint_blocked():
            proc.start()
        there.close()
        return _Lane(proc, here)

    def room(self, lane):
        return self.depth - len(self.workers[lane].queue)

    def submit(self, lane, key, seed):
        w = self.workers[lane]
        try:
            w.conn.send((key, seed))
        except (BrokenPipeError, OSError):  # it died: its sentinel will say so; this pair never started
            self.events.append((lane, key, "requeue", None))
            return
        if not w.queue:
            w.started = time.perf_counter()
        w.queue.append(key)

    def busy(self):
        return bool(self.events) or any(w.queue for w in self.workers)

    def _drain(self, lane):
        """The messages waiting on ``lane``'s pipe."""
        w, out = self.workers[lane], []
        try:
            while (w.queue or not w.ready) and w.conn.poll():
                message = w.conn.recv()
                w.started = time.perf_counter()  # the next pair in its queue starts now
                if message == ("ready",):
                    w.ready = True
                    continue
                key, kind, payload = message
                w.queue.popleft()
                out.append((lane, key, kind, payload))
                if kind == "done":
                    self.seconds, self.done = self.seconds + payload.seconds, self.done + 1
                    mean = self.seconds / self.done
                    self.depth = int(min(32, max(2, self.QUEUED_SECONDS // max(mean, 1e-6))))
        except (EOFError, OSError):
            pass
        return out

    def _replace(self, lane, kind, message, events):
        """End the process of ``lane`` (if it still runs), report its pairs and start a fresh one.
        ``events``: what was drained from its pipe just before."""
        w = self.workers[lane]
        if w.proc.is_alive():
            w.proc.kill()
        w.proc.join()
        w.conn.close()
        if w.queue:
            events.append((lane, w.queue.popleft(), kind, message or _exit_reason(w.proc.exitcode)))
            events.extend((lane, key, "requeue", None) for key in w.queue)
        self.workers[lane] = self._start()
        return events

    def wait(self, timeout):
        events, self.events = self.events, []
        if events:
            timeout = 0
        elif self.depth > 2:  # short pairs: let results gather (the workers have enough queued) and
            time.sleep(self.QUEUED_SECONDS / 4)  # wake less often, leaving the cores to the workers
        conns = {w.conn: i for i, w in enumerate(self.workers)}
        sentinels = {w.proc.sentinel: i for i, w in enumerate(self.workers)}
        ready = multiprocessing.connection.wait(list(conns) + list(sentinels), timeout)
        for lane in sorted({conns[r] for r in ready if r in conns}):
            events.extend(self._drain(lane))
        for lane in sorted({sentinels[r] for r in ready if r in sentinels}):
            self.report.worker_failures += 1
            events.extend(self._replace(lane, "lost", None, self._drain(lane)))  # it may have finished some first
        return events

    def overdue(self, limit):
        now = time.perf_counter()
        return [i for i, w in enumerate(self.workers) if w.ready and w.queue and now - w.started > limit]

    def stop_lane(self, lane, message, limit):
        """End the worker of ``lane`` if its pair is still past ``limit`` seconds (it may have just finished)."""
        events = self._drain(lane)
        w = self.workers[lane]
        if w.queue and time.perf_counter() - w.started > limit:
            events += self._replace(lane, "failed", message, [])
        return events

    def close(self):
        """End every worker at once (they hold nothing worth waiting for: finished pairs are in)."""
        for w in self.workers:
            w.proc.terminate()
        for w in self.workers:
            w.proc.join(timeout=1.0)
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join()
            w.conn.close()


_JOBS: dict = {}  # per process: job digest -> deserialized job (tasks of foreign executors carry the bytes)
_STOPS: dict = {}  # run token -> _Stop, for runs whose tasks may execute in this very process (threads)


def _task(job_bytes, digest, token, parent_pid, key, seed, pair_timeout, started=None):
    """One pair on a foreign executor (a thread pool, Dask, ...): the job is loaded once per
    process; ``started()``, if given, is called once it is loaded, as the pair itself starts."""
    here = os.getpid() == parent_pid
    stop = _STOPS.get(token) if here else None
    if here and stop is None:  # the run this task belongs to is over
        return "stopped", INTERRUPTED
    job = _JOBS.get(digest)
    if job is None:
        job = cloudpickle.loads(job_bytes)
        job.warm_up()
        while len(_JOBS) >= 4:
            _JOBS.pop(next(iter(_JOBS)))
        _JOBS[digest] = job
    if started is not None:
        started()
    return _attempt(job, seed, pair_timeout, stop)


class _Foreign:
    """Any concurrent.futures executor (a thread or process pool; Dask has :class:`_Dask`): one
    future per pair, at most ``per_lane`` per lane in flight. Tasks in this process (threads) see
    the run's stop flag; tasks elsewhere cannot be stopped once running: their results are dropped."""

    def __init__(self, executor, lanes, per_lane, job_bytes, pair_timeout, stop, report):
        self.executor, self.lanes, self.per_lane, self.report = executor, lanes, per_lane, report
        self.job_bytes, self.digest = job_bytes, hashlib.sha1(job_bytes).hexdigest()
        self.token = f"{os.getpid()}-{next(_RUNS)}"
        self.pair_timeout, self.stop = pair_timeout, stop
        _STOPS[self.token] = stop
        self.futures = {}  # future -> [lane, key, running since]
        self.events = []
        self.submitted = 0

    def room(self, lane):
        return self.per_lane - sum(1 for f in self.futures.values() if f[0] == lane)

    def submit(self, lane, key, seed):
        try:
            fut = self.executor.submit(_task, self.job_bytes, self.digest, self.token, os.getpid(), key, seed,
                                       self.pair_timeout)
        except Exception as err:
            if not self.submitted:
                raise RuntimeError(f"the executor refused the first pair: {type(err).__name__}: {err}") from err
            self.events.append((lane, key, "failed", f"the executor refused it: {type(err).__name__}: {err}"))
            return
        self.submitted += 1
        self.futures[fut] = [lane, key, None]

    def busy(self):
        return bool(self.events) or bool(self.futures)

    def wait(self, timeout):
        events, self.events = self.events, []
        if self.futures:
            done, _ = cf.wait(list(self.futures), timeout=0 if events else timeout,
                              return_when=cf.FIRST_COMPLETED)
            for fut in done:
                lane, key, _ = self.futures.pop(fut)
                try:
                    kind, payload = fut.result()
                except cf.CancelledError:
                    continue
                except Exception as err:
                    if _is_interrupt(err):
                        raise KeyboardInterrupt from err
                    self.report.worker_failures += 1
                    self.events.append((lane, key, "lost", f"{type(err).__name__}: {err}"))
                    continue
                except KeyboardInterrupt:  # a second Ctrl-C reaching a pair in a thread of this process
                    raise
                events.append((lane, key, kind, payload))
            events.extend(self.events)
            self.events = []
        now = time.perf_counter()
        for fut, entry in self.futures.items():
            if entry[2] is None and fut.running():
                entry[2] = now
        return events

    def overdue(self, limit):
        now = time.perf_counter()
        return [fut for fut, (_, _, since) in self.futures.items() if since is not None and now - since > limit]

    def stop_lane(self, fut, message, limit):
        """A pair stuck past its time limit in a thread or process we cannot stop: given up on."""
        lane, key, _ = self.futures.pop(fut)
        fut.cancel()
        return [(lane, key, "failed", message + " (it could not be stopped and may still be running in the executor)")]

    def close(self):
        """Cancel what has not started; wait a little for pairs running in this process (they see
        the stop flag); drop the rest."""
        for fut in self.futures:
            fut.cancel()
        running = [f for f in self.futures if not f.done()]
        if running:
            cf.wait(running, timeout=1.0)
        _STOPS.pop(self.token, None)
        _JOBS.pop(self.digest, None)


def _announce(topic, attempt, event):
    """Tell the parent, through the Dask scheduler, that ``attempt`` starts or ends (``event``) on
    this worker. The message is waited for (a synchronous call to the scheduler, not the worker's
    batched stream): a start cannot be lost with a worker that the pair then kills, and an end is
    known before the task's result is."""
    try:
        from distributed import get_worker  # noqa: PLC0415
        from distributed.utils import sync  # noqa: PLC0415

        worker = get_worker()
        sync(worker.loop, worker.scheduler.log_event, topic=topic,
             msg={"attempt": attempt, "worker": worker.address, "event": event}, callback_timeout=60)
    except Exception:  # not on a Dask worker, or the scheduler is unreachable: the pair runs untimed
        pass


def _dask_task(job_bytes, digest, token, parent_pid, key, seed, pair_timeout, topic, attempt):
    """One pair on a Dask worker: :func:`_task`, announcing its start once the job is loaded and
    its end (so that a worker dying after the pair ran there is not counted as dying under it)."""
    result = _task(job_bytes, digest, token, parent_pid, key, seed, pair_timeout,
                   lambda: _announce(topic, attempt, "start"))
    _announce(topic, attempt, "end")
    return result


def _deaths_under(started_on, ended_on, restarted):
    """How many worker deaths a task suffered: of the workers it started on (Dask reruns a task
    whose worker died, or whose result was lost with its worker), those it did not end on (had it
    finished there, a later death there was another task's doing) and the run did not restart."""
    return sum(1 for w in started_on if w not in ended_on and w not in restarted)


def _is_dask_client(executor) -> bool:
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "nthreads") \
        and hasattr(executor, "submit")


class _Dask:
    """A ``dask.distributed.Client``, used through its own futures (one task per pair,
    ``Client.submit(pure=False)``), not its concurrent.futures view: those futures never report a
    task running, and a task lost with its worker while its result was being fetched left them
    pending for good (the ``KilledWorker`` was raised inside Dask's callback).

    * Each task announces its start once its worker has loaded the job, and its end (:func:`_announce`,
      received through ``Client.subscribe_topic``); the pair's clock runs from then. A pair stuck
      past ``pair_timeout`` inside one iteration (between iterations it stops itself) is cancelled
      and its worker restarted by its nanny (``Client.restart_workers``), as the package ends its
      own worker processes; a worker without a nanny cannot be restarted and the pair is given up
      on (it may still run there).
    * A worker death under a pair counts once per start of its task on a worker that died before
      the task ended there (Dask itself reruns a task up to
      ``distributed.scheduler.allowed-failures`` times and then raises ``KilledWorker``, and
      reruns a finished task whose result died with its worker), whatever allowed-failures is set
      to. A task that had not started on the worker that died (it was only queued there), or that
      died with a worker this run restarted, is resubmitted and not blamed.
    """

    RESULT_WAIT = 10.0  # seconds to fetch a finished pair's result; past that it was lost with its worker: rerun
    RESTART_WAIT = 120.0  # seconds the run waits at its end for a worker it restarts (about 6 s idle)
    UNBLAMED = 10  # losses without a start a pair may have before they count as deaths (a safeguard)

    def __init__(self, client, lanes, per_lane, job_bytes, pair_timeout, stop, report):
        self.client, self.lanes, self.per_lane, self.report = client, lanes, per_lane, report
        self.job_bytes, self.digest = job_bytes, hashlib.sha1(job_bytes).hexdigest()
        self.token = f"{os.getpid()}-{next(_RUNS)}"
        self.topic = f"pymc_partitions-pair-starts-{self.token}-{os.urandom(4).hex()}"
        self.pair_timeout, self.stop = pair_timeout, stop
        self.futures = {}  # future -> (lane, key, attempt)
        self.finished = queue.SimpleQueue()  # futures whose task ended (Dask calls back in another thread)
        self.lock = threading.Lock()
        self.starts = {}  # attempt -> [(perf_counter when announced, worker address), ...]
        self.ends = {}  # attempt -> addresses of the workers it finished on
        self.restarted = set()  # addresses of workers this run restarted
        self.restarts = []  # their threads (a restart takes seconds; the run goes on meanwhile)
        self.unblamed = {}  # pair key -> losses without a start
        self.attempts = itertools.count()
        self.events = []
        self.submitted = 0
        _STOPS[self.token] = stop
        client.subscribe_topic(self.topic, self._announced)

    def _announced(self, event):
        """A task's start or end (called in the client's event loop)."""
        msg = event[1]
        with self.lock:
            if msg.get("event") == "end":
                self.ends.setdefault(msg["attempt"], set()).add(msg["worker"])
            else:
                self.starts.setdefault(msg["attempt"], []).append((time.perf_counter(), msg["worker"]))

    def room(self, lane):
        return self.per_lane - sum(1 for f in self.futures.values() if f[0] == lane)

    def submit(self, lane, key, seed):
        attempt = next(self.attempts)
        try:
            fut = self.client.submit(_dask_task, self.job_bytes, self.digest, self.token, os.getpid(), key, seed,
                                     self.pair_timeout, self.topic, attempt, pure=False,
                                     key=f"pymc_partitions-pair-{self.token}-{attempt}")
        except Exception as err:
            if not self.submitted:
                raise RuntimeError(f"the Dask client refused the first pair: {type(err).__name__}: {err}") from err
            self.events.append((lane, key, "failed", f"the Dask client refused it: {type(err).__name__}: {err}"))
            return
        self.submitted += 1
        self.futures[fut] = (lane, key, attempt)
        fut.add_done_callback(self.finished.put)

    def busy(self):
        return bool(self.events) or bool(self.futures)

    def _forget(self, fut):
        """(lane, key, the workers it started on, in order, and those it ended on) of a task."""
        lane, key, attempt = self.futures.pop(fut)
        with self.lock:
            starts, ends = self.starts.pop(attempt, []), self.ends.pop(attempt, set())
        return lane, key, [w for _, w in starts], ends

    def _unblamed(self, lane, key, why):
        """A loss that is not the pair's doing: run it again (a pair lost this way again and again
        without ever announcing a start is counted as killing its worker after all)."""
        self.unblamed[key] = self.unblamed.get(key, 0) + 1
        if self.unblamed[key] > self.UNBLAMED:
            self.report.worker_failures += 1
            return lane, key, "killed", (why, 1)
        return lane, key, "requeue", None

    def _outcome(self, fut):
        """The event of a task that ended (``fut`` is forgotten)."""
        lane, key, started_on, ended_on = self._forget(fut)
        status = fut.status
        if status == "finished":  # deaths under it that Dask recovered from (it ended on the last)
            self.report.worker_failures += _deaths_under(started_on[:-1], ended_on, self.restarted)
            try:
                kind, payload = fut.result(timeout=self.RESULT_WAIT)
            except Exception:  # its result was lost with its worker (Dask recomputes it): run it again
                fut.cancel()
                return self._unblamed(lane, key, "its result was lost with its Dask worker")
            return lane, key, kind, payload
        if status == "error":
            err = fut.exception()
            if _is_interrupt(err):
                raise KeyboardInterrupt from err
            if type(err).__name__ != "KilledWorker":
                self.report.worker_failures += 1
                return lane, key, "lost", f"{type(err).__name__}: {err}"
            last = getattr(getattr(err, "last_worker", None), "address", "?")
            died = _deaths_under(started_on, ended_on, self.restarted)
            if not died:  # only queued on the worker(s) that died, or on one this run restarted
                return self._unblamed(lane, key, f"Dask's KilledWorker (last worker {last})")
            self.report.worker_failures += died
            return lane, key, "killed", (f"its Dask worker died while running it (KilledWorker, last worker {last})",
                                         died)
        return self._unblamed(lane, key, f"its Dask task ended with status {status!r}")  # cancelled or lost

    def wait(self, timeout):
        events, self.events = self.events, []
        ended = []
        try:
            ended.append(self.finished.get(timeout=0 if events or not self.futures else timeout))
            while True:
                ended.append(self.finished.get_nowait())
        except queue.Empty:
            pass
        for fut in ended:
            if fut in self.futures:  # not one given up on or cancelled
                events.append(self._outcome(fut))
        events.extend(self.events)
        self.events = []
        return events

    def overdue(self, limit):
        now = time.perf_counter()
        with self.lock:
            late = {attempt for attempt, starts in self.starts.items() if now - starts[-1][0] > limit}
        return [fut for fut, (_, _, attempt) in self.futures.items() if attempt in late and not fut.done()]

    def stop_lane(self, fut, message, limit):
        """Cancel a pair stuck past ``limit`` seconds and restart its worker (without a nanny it
        cannot be: the pair is given up on)."""
        _, _, attempt = self.futures[fut]
        with self.lock:
            worker = self.starts[attempt][-1][1]
        lane, key, _, _ = self._forget(fut)
        fut.cancel()
        try:
            nanny = self.client.scheduler_info()["workers"].get(worker, {}).get("nanny")
        except Exception:  # the cluster is closing
            nanny = None
        if not nanny:
            return [(lane, key, "failed", f"{message} (it could not be stopped: its Dask worker {worker} has no nanny "
                                          "to restart it, and it may still be running there)")]
        self.restarted.add(worker)  # the pairs that die with it are not blamed
        thread = threading.Thread(target=self._restart, args=(worker,), daemon=True,
                                  name="pymc_partitions Dask worker restart")
        thread.start()
        self.restarts.append(thread)
        return [(lane, key, "failed", f"{message} (stuck inside one iteration: its Dask worker was restarted)")]

    def _restart(self, worker):
        try:
            self.client.restart_workers([worker], raise_for_error=False)
        except Exception:  # the cluster is closing, or the worker is already gone
            pass

    def close(self):
        """Cancel every task: queued ones never run; running ones finish in the cluster (Dask cannot
        stop them) and their results are dropped. Wait for the workers being restarted (unless
        Ctrl-C stopped the run), so that the cluster is whole again when the call returns."""
        futures, self.futures = list(self.futures), {}
        try:
            if futures:
                self.client.cancel(futures)
            self.client.unsubscribe_topic(self.topic)
        except Exception:  # the cluster may be gone
            pass
        deadline = time.perf_counter() + self.RESTART_WAIT
        for thread in self.restarts:
            while thread.is_alive() and not self.stop.event.is_set() and time.perf_counter() < deadline:
                thread.join(POLL)
        _STOPS.pop(self.token, None)
        _JOBS.pop(self.digest, None)


_RUNS = itertools.count()


# ---------------------------------------------------------------------------------------------
# Which pairs to run


class _Fixed:
    """Pairs 0..n-1; pair i uses the i-th child of the root seed (made when needed: n may be huge)."""

    def __init__(self, n, root):
        self.root, self.offset, self.n, self.count = root, root.n_children_spawned, n, 0
        self.back = deque()  # pairs to run again

    def next(self, lane):
        if self.back:
            return self.back.popleft()
        if self.count == self.n:
            return None
        self.count += 1
        return self.count - 1

    def give_back(self, key):
        self.back.appendleft(key)

    def seed(self, key):
        return _child(self.root, self.offset + key)


class _Budget:
    """Lane w runs pairs (w, 0), (w, 1), ... one after another: pair (w, i) uses child i of the
    w-th child of the root seed (what ``worker_seed.spawn(1)`` gives on its i-th call)."""

    def __init__(self, lanes, root):
        self.roots = root.spawn(lanes)
        self.count = [0] * lanes
        self.back = [deque() for _ in range(lanes)]

    def next(self, lane):
        if self.back[lane]:
            return self.back[lane].popleft()
        self.count[lane] += 1
        return lane, self.count[lane] - 1

    def give_back(self, key):
        self.back[key[0]].appendleft(key)

    def seed(self, key):
        return _child(self.roots[key[0]], key[1])


# ---------------------------------------------------------------------------------------------


def check_mp_ctx(mp_ctx):
    """None, a start method's name or a multiprocessing context, as a context."""
    if mp_ctx is None or isinstance(mp_ctx, str):
        methods = multiprocessing.get_all_start_methods()
        if isinstance(mp_ctx, str) and mp_ctx not in methods:
            raise ValueError(f"mp_ctx must be None, one of {methods} or a multiprocessing context, got {mp_ctx!r}")
        return multiprocessing.get_context(mp_ctx)
    if not (hasattr(mp_ctx, "Process") and hasattr(mp_ctx, "Pipe")):
        raise TypeError(f"mp_ctx must be None, a start method name or a multiprocessing context, got {mp_ctx!r}")
    return mp_ctx


def _executor_workers(executor, cores):
    """Number of workers (threads) of a foreign executor or a ``dask.distributed.Client``."""
    if _is_dask_client(executor):
        return max(1, sum(executor.nthreads().values()))
    if not isinstance(executor, cf.Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor or a dask Client, got {type(executor)}")
    return int(getattr(executor, "_max_workers", None) or cores or 1)


def run_pairs(job: UnbiasedJob, n_pairs: int | None = None, random_seed=None, cores: int | None = None,
              executor=None, time_budget: float | None = None, progress=None, mp_ctx=None, retries: int = 2,
              pair_timeout: float | None = None, interrupts: Interrupts | None = None) -> RunReport:
    """Run ``n_pairs`` pairs (or, with ``time_budget`` seconds, as many as fit per worker).

    ``progress(report)`` is called as results come in. ``mp_ctx`` is the multiprocessing context
    (or its name) of the worker processes started when no executor is given (``cores`` > 1);
    None is Python's default, as in ``pm.sample``. With "spawn" or "forkserver" a script must
    guard its entry point with ``if __name__ == "__main__":``.

    ``retries``: how many times a pair whose worker died is run again before it is reported failed.
    ``pair_timeout``: seconds after which a running pair is stopped and reported failed.
    ``interrupts``: an active :class:`Interrupts` whose flag stops the run (the caller then handles
    Ctrl-C and warns); by default one is installed for the run and an interrupt warns.

    Time budget: lane w (a worker) runs pairs one after another until ``time_budget`` seconds have
    passed since the workers were started; the pairs in flight then are discarded (seed 000,
    Sec. 3.3).
    """
    owner = "run_pairs"
    if (n_pairs is None) == (time_budget is None):
        raise ValueError(f"{owner}: give exactly one of n_pairs and time_budget")
    n_pairs = None if n_pairs is None else integer("n_pairs", n_pairs, low=1, owner=owner)
    time_budget = check_timeout("time_budget", time_budget, owner)
    pair_timeout = check_timeout("pair_timeout", pair_timeout, owner)
    retries = integer("retries", retries, low=0, owner=owner)
    cores = None if cores is None else integer("cores", cores, low=1, owner=owner)
    root = check_seed(random_seed, owner)
    job_bytes = cloudpickle.dumps(job)
    own_interrupts = interrupts is None
    guard = Interrupts() if own_interrupts else interrupts
    report = RunReport()
    start = time.perf_counter()
    stop = _Stop(guard.event, None, guard)
    backend = None
    with guard if own_interrupts else nullcontext():
        try:
            if executor is not None:
                workers = _executor_workers(executor, cores)
                lanes, per_lane = (workers, 1) if time_budget is not None else (1, 2 * workers)
                foreign = _Dask if _is_dask_client(executor) else _Foreign
                backend = foreign(executor, lanes, per_lane, job_bytes, pair_timeout, stop, report)
            else:
                workers = (os.cpu_count() or 1) if cores is None else cores
                if n_pairs is not None:
                    workers = min(workers, n_pairs)
                if workers == 1:
                    backend = _InProcess(job_bytes, pair_timeout, stop)
                else:
                    backend = _Processes(workers, job_bytes, check_mp_ctx(mp_ctx), pair_timeout, report)
            report.workers = workers
            if time_budget is not None:  # from when the workers are up (and have loaded the compiled code)
                stop.deadline = time.perf_counter() + time_budget
            plan = _Fixed(n_pairs, root) if n_pairs is not None else _Budget(backend.lanes, root)
            _drive(backend, plan, report, stop, retries, pair_timeout, progress)
        except KeyboardInterrupt:
            if guard.forced:
                raise
            report.interrupted = True
            stop.reason = INTERRUPTED
        finally:
            if backend is not None:
                stop.reason = stop.why() or INTERRUPTED
                backend.close()
    if time_budget is not None:  # keys (lane, i) -> 0, 1, ... in lane order
        number = {key: j for j, key in enumerate(sorted(set(report.results) | set(report.failed)))}
        report.results = {number[key]: r for key, r in report.results.items()}
        report.failed = {number[key]: r for key, r in report.failed.items()}
    report.seconds = time.perf_counter() - start
    if report.interrupted and own_interrupts:
        warnings.warn(f"interrupted: returning the {len(report.results)} completed pairs", stacklevel=2)
    return report


def _drive(backend, plan, report, stop, retries, pair_timeout, progress):
    """Hand out pairs while lanes have room; collect results until all are in, the deadline passes
    or Ctrl-C is pressed."""
    deaths = {}
    limit = None if pair_timeout is None else pair_timeout + GRACE
    while True:
        why = stop.why()
        if why:
            report.interrupted = why == INTERRUPTED
            if report.interrupted:  # keep what finished just before
                _collect(backend.wait(0), report, plan, deaths, retries, late=False)
            return
        for lane in range(backend.lanes):
            while backend.room(lane) > 0 and not stop.why():
                key = plan.next(lane)
                if key is None:
                    break
                backend.submit(lane, key, plan.seed(key))
        if not backend.busy():
            return
        events = backend.wait(POLL)
        if limit is not None:
            for lane in backend.overdue(limit):
                events.extend(backend.stop_lane(lane, _timeout_message(pair_timeout), limit))
        _collect(events, report, plan, deaths, retries, late=stop.why() == DEADLINE)
        if progress and events:
            progress(report)


def _collect(events, report, plan, deaths, retries, late):
    """Record the events of :func:`_drive` (``late``: past the deadline, results are discarded)."""
    for _lane, key, kind, payload in events:
        if kind == "stopped" or (late and kind in ("done", "failed")):
            continue  # in flight at the interrupt or the deadline: dropped
        if kind == "done":
            report.results[key] = payload
        elif kind == "failed":
            report.failed[key] = payload
        elif kind in ("lost", "killed"):  # killed: (message, deaths), when Dask already reran it
            message, count = payload if kind == "killed" else (payload, 1)
            deaths[key] = deaths.get(key, 0) + count
            if deaths[key] > retries:
                report.failed[key] = (f"WorkerDied: its worker failed while running it, {deaths[key]} times "
                                      f"(last: {message})")
            else:
                plan.give_back(key)
        else:  # requeue
            plan.give_back(key)
