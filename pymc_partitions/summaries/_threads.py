"""Work split over Python threads running compiled kernels that release the GIL.

numba's ``parallel=True`` regions are avoided on purpose: with the OpenMP threading layer on a
busy machine, waking the thread team cost ~8 ms per call here (2 shared cores), which dominates
small summaries; a thread pool around ``nogil`` kernels costs ~0.1 ms, only when the work is
large enough to be split, and works with any numba threading layer.
"""

from __future__ import annotations

import concurrent.futures
import os

import numpy as np

__all__ = ["cpu_threads", "run_chunks"]


def cpu_threads() -> int:
    """The number of cores this process may use."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def run_chunks(fn, count: int, work: float, *, min_work: float = 2e5, threads: int | None = None) -> None:
    """Call ``fn(lo, hi)`` on consecutive ranges covering [0, count): inline when ``work``
    (a rough operation count for the whole range) is below ``min_work`` or one thread is asked
    for, else in chunks (4 per thread) on a thread pool."""
    threads = threads or cpu_threads()
    chunks = int(min(count, 4 * threads, max(1.0, work / min_work)))
    if threads == 1 or chunks <= 1:
        fn(0, count)
        return
    bounds = np.linspace(0, count, chunks + 1).astype(np.int64)
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        for future in [pool.submit(fn, int(bounds[c]), int(bounds[c + 1])) for c in range(chunks)]:
            future.result()
