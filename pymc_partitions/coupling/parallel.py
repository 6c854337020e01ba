"""Running many independent pairs of coupled chains: in this process, on a process pool, on any
``concurrent.futures.Executor`` or on a Dask cluster.

Every pair draws its random numbers from its own child of one ``SeedSequence``, so the pairs'
results do not depend on the executor, the number of workers or the order of completion. The job
(model, kernel settings, functions h) travels to the workers pickled with cloudpickle, so h may
be a lambda. Ctrl-C returns the pairs completed so far. A pair that raises is reported with its
error; a chunk whose worker dies is rerun once (on a fresh pool when the pool is ours) and then
reported per pair. Nothing is silently dropped.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import time
import warnings
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

import cloudpickle
import numpy as np

from ..families.kernels import FamilyPack
from ..priors import sample_sequential
from .split_merge import GibbsPGSM
from .sweep import GibbsSweeps
from .unbiased import PairResult, run_pair

__all__ = ["UnbiasedJob", "RunReport", "run_pairs"]

INITS = ("prior", "singletons", "one_block")


@dataclass
class UnbiasedJob:
    """Everything one pair needs; ``h`` maps canonical labels to a flat float vector. ``pgsm``:
    None (Gibbs sweeps only) or settings of :func:`.split_merge.pgsm_settings` (then each
    iteration adds CRN-coupled PGSM moves, :class:`.split_merge.GibbsPGSM`)."""

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

    def initial_labels(self, rng):
        n = self.pack.data.shape[0]
        if callable(self.init):
            return np.asarray(self.init(rng), np.int64)
        if self.init == "prior":
            return sample_sequential(self.prior_code, self.prior_params, rng.random(n))
        if self.init == "singletons":
            return np.arange(n)
        return np.zeros(n, np.int64)

    def run(self, seed: np.random.SeedSequence) -> PairResult:
        rng = np.random.default_rng(seed)
        kernel = GibbsSweeps(self.pack, self.prior_code, self.prior_params, self.coupling, self.eps)
        if self.pgsm is not None:
            kernel = GibbsPGSM(kernel, **self.pgsm)
        x0, y0 = self.initial_labels(rng), self.initial_labels(rng)
        return run_pair(kernel, self.h, x0, y0, rng, self.k, self.m, self.lag, self.max_iter, self.record_distance)


def _run_one(job, pair_id, seed, report):
    """Run one pair into ``report``; an error in the pair is recorded for that pair only."""
    try:
        report.results[int(pair_id)] = job.run(seed)
    except Exception as err:
        report.failed[int(pair_id)] = f"{type(err).__name__}: {err}"


def _run_chunk(job_bytes: bytes, pair_ids, seeds):
    job = cloudpickle.loads(job_bytes)
    report = RunReport()
    for p, s in zip(pair_ids, seeds):
        _run_one(job, p, s, report)
    return report.results, report.failed


def _run_budget(job_bytes: bytes, seed: np.random.SeedSequence, seconds: float):
    """Pairs run one after another until ``seconds`` have passed; the pair in flight at the
    deadline does not count (seed 000, Sec. 3.3)."""
    job = cloudpickle.loads(job_bytes)
    deadline = time.perf_counter() + seconds
    done = []
    while True:
        result = job.run(seed.spawn(1)[0])
        if time.perf_counter() > deadline:
            return done
        done.append(result)


@dataclass
class RunReport:
    """Results by pair id, plus what happened on the way."""

    results: dict = field(default_factory=dict)
    failed: dict = field(default_factory=dict)  # pair id -> error message
    interrupted: bool = False
    seconds: float = 0.0
    workers: int = 1


def _new_pool(broken: cf.ProcessPoolExecutor) -> cf.ProcessPoolExecutor:
    """A fresh process pool like ``broken``."""
    pool = cf.ProcessPoolExecutor(max_workers=broken._max_workers, mp_context=broken._mp_context)
    pool._owned = True
    return pool


def _resolve_executor(executor, cores, mp_ctx=None):
    """(executor, owned?, number of workers). A ``dask.distributed.Client`` becomes its
    concurrent.futures view."""
    if executor is None:
        cores = (os.cpu_count() or 1) if cores is None else int(cores)
        if cores < 1:
            raise ValueError(f"cores must be >= 1, got {cores}")
        if cores == 1:
            return None, False, 1
        if isinstance(mp_ctx, str):
            mp_ctx = multiprocessing.get_context(mp_ctx)
        pool = cf.ProcessPoolExecutor(max_workers=cores, mp_context=mp_ctx)
        pool._owned = True
        return pool, True, cores
    if type(executor).__module__.startswith("distributed") and hasattr(executor, "get_executor"):
        workers = max(1, sum(w.get("nthreads", 1) for w in executor.scheduler_info()["workers"].values()))
        return executor.get_executor(pure=False), False, workers  # pure=False: a retry really reruns
    if not isinstance(executor, cf.Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor or a dask Client, got {type(executor)}")
    return executor, False, int(getattr(executor, "_max_workers", cores or 1) or 1)


def run_pairs(job: UnbiasedJob, n_pairs: int | None = None, random_seed=None, cores: int | None = None,
              executor=None, time_budget: float | None = None, progress=None, mp_ctx=None) -> RunReport:
    """Run ``n_pairs`` pairs (or, with ``time_budget`` seconds, as many as fit per worker).

    ``progress(report)`` is called after every completed chunk. ``mp_ctx`` is the
    multiprocessing context (or its name) of the process pool made when no executor is given;
    None is Python's default, as in ``pm.sample``. With "spawn" or "forkserver" a script must
    guard its entry point with ``if __name__ == "__main__":``.
    """
    if (n_pairs is None) == (time_budget is None):
        raise ValueError("give exactly one of n_pairs and time_budget")
    root = random_seed if isinstance(random_seed, np.random.SeedSequence) else np.random.SeedSequence(random_seed)
    job_bytes = cloudpickle.dumps(job)
    pool, owned, workers = _resolve_executor(executor, cores, mp_ctx)
    pools = [pool]
    report = RunReport(workers=workers)
    start = time.perf_counter()
    try:
        if time_budget is not None:
            _budget(report, pool, workers, job_bytes, root, float(time_budget), progress)
        else:
            _fixed(report, pools, workers, job_bytes, root, int(n_pairs), progress)
    except KeyboardInterrupt:
        report.interrupted = True
        warnings.warn(f"interrupted: returning the {len(report.results)} completed pairs", stacklevel=2)
    finally:
        if owned:
            pools[0].shutdown(wait=not report.interrupted, cancel_futures=True)
    report.seconds = time.perf_counter() - start
    return report


def _fixed(report, pools, workers, job_bytes, root, n_pairs, progress):
    """Fixed number of pairs. ``pools`` is a one-element list holding the executor; a process
    pool we own that breaks (a worker died) is replaced there, and its chunks are retried."""
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    seeds = root.spawn(n_pairs)
    ids = np.arange(n_pairs)
    if pools[0] is None:
        job = cloudpickle.loads(job_bytes)  # a copy, as a worker would have
        for p in ids:
            _run_one(job, p, seeds[p], report)
            if progress:
                progress(report)
        return
    size = max(1, min(16, n_pairs // (4 * workers)))
    chunks = [ids[i:i + size] for i in range(0, n_pairs, size)]
    attempts = dict.fromkeys(range(len(chunks)), 0)

    def submit(j):
        try:
            return pools[0].submit(_run_chunk, job_bytes, list(chunks[j]), [seeds[p] for p in chunks[j]])
        except BrokenProcessPool:
            if not isinstance(pools[0], cf.ProcessPoolExecutor) or not getattr(pools[0], "_owned", False):
                raise
            pools[0].shutdown(wait=False, cancel_futures=True)
            pools[0] = _new_pool(pools[0])
            return pools[0].submit(_run_chunk, job_bytes, list(chunks[j]), [seeds[p] for p in chunks[j]])

    futures = {submit(j): j for j in range(len(chunks))}
    while futures:
        finished, _ = cf.wait(list(futures), return_when=cf.FIRST_COMPLETED)
        for fut in finished:
            j = futures.pop(fut)
            try:
                results, failed = fut.result()
                report.results.update(results)
                report.failed.update(failed)
            except Exception as err:  # the worker failed: retry the chunk once, then report its pairs
                attempts[j] += 1
                if attempts[j] <= 1:
                    try:
                        futures[submit(j)] = j
                        continue
                    except Exception:
                        pass
                for p in chunks[j]:
                    report.failed[int(p)] = f"{type(err).__name__}: {err}"
            if progress:
                progress(report)


def _budget(report, pool, workers, job_bytes, root, seconds, progress):
    if seconds <= 0:
        raise ValueError(f"time_budget must be positive, got {seconds}")
    worker_seeds = root.spawn(workers)
    if pool is None:
        outputs = [_run_budget(job_bytes, worker_seeds[0], seconds)]
    else:
        futures = [pool.submit(_run_budget, job_bytes, s, seconds) for s in worker_seeds]
        outputs = []
        for fut in futures:
            try:
                outputs.append(fut.result())
            except Exception as err:
                warnings.warn(f"a time-budgeted worker failed ({type(err).__name__}: {err}); its pairs are lost",
                              stacklevel=3)
    for result in (r for out in outputs for r in out):
        report.results[len(report.results)] = result
    if progress:
        progress(report)
