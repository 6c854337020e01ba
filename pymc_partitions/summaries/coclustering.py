"""Posterior similarity (co-clustering) probabilities: P(items i and j in one block | data),
estimated by the weighted fraction of draws in which their labels are equal.

The full matrix is computed row by row in compiled code on threads: for every draw, the items of
each block are listed in ascending order once (a counting sort), and row i adds the draw's weight
at every later item of i's block. The work is Σ_draws Σ_blocks size²/2 additions (n²/2 per draw
at worst, far less with many blocks), the upper triangle is mirrored in tiles, and nothing but
the output and two int32 (draws, n) index arrays is allocated.

Memory: the output is n² · 8 bytes (float64) or n² · 4 (float32): 800 MB at n = 10⁴ in float64.
:func:`check_matrix_size` refuses matrices above ``max_bytes`` (default
:data:`DEFAULT_MAX_BYTES` = 1 GiB: float64 up to n = 11,585, float32 up to n = 16,384) and points
to the probabilities of chosen items (``items=``) or pairs (``pairs=``), which cost O(draws · k²)
and O(draws · pairs).
"""

from __future__ import annotations

import numba
import numpy as np

from .._checks import integer
from ._threads import cpu_threads, run_chunks
from .draws import LabelDraws

__all__ = ["DEFAULT_MAX_BYTES", "coclustering_matrix", "coclustering_pairs", "check_items", "check_pairs",
           "check_matrix_size"]

#: Largest similarity matrix (in bytes) computed without ``max_bytes=`` being raised: 1 GiB, about
#: a twentieth of this 23 GB machine and a few percent of a workstation; n = 10⁴ in float64 fits.
DEFAULT_MAX_BYTES = 2**30
_TILE = 64


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2f} GiB" if nbytes >= 2**27 else f"{nbytes / 2**20:.1f} MiB"


def check_matrix_size(m: int, dtype, max_bytes, owner: str) -> None:
    """Refuse an m x m matrix of ``dtype`` above ``max_bytes`` bytes, naming the alternatives."""
    max_bytes = integer("max_bytes", max_bytes, low=1, owner=owner)
    need = m * m * np.dtype(dtype).itemsize
    if need > max_bytes:
        raise MemoryError(
            f"{owner}: the {m} x {m} co-clustering matrix would take {_gib(need)} ({np.dtype(dtype).name}), "
            f"above max_bytes = {_gib(max_bytes)}. Ask for what you need instead: items=[...] (the matrix of "
            "chosen items), pairs=[(i, j), ...] (chosen pairs), or dtype='float32' (half the memory); or raise "
            "max_bytes if the memory is there.")


def check_items(items, n: int, owner: str) -> np.ndarray:
    """Distinct item indices in [0, n), as int64 (order kept)."""
    a = np.asarray(items)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{owner}: items must be a non-empty 1-d list of item indices, got shape {a.shape}")
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{owner}: items must be integer item indices, got dtype {a.dtype}")
    if a.min() < 0 or a.max() >= n:
        raise ValueError(f"{owner}: items must lie in [0, {n}), got values from {a.min()} to {a.max()}")
    if np.unique(a).size != a.size:
        raise ValueError(f"{owner}: items holds repeated indices")
    return a.astype(np.int64)


def check_pairs(pairs, n: int, owner: str) -> np.ndarray:
    """Item pairs as an (m, 2) int64 array with entries in [0, n)."""
    a = np.asarray(pairs)
    if a.ndim == 1 and a.size == 2:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != 2 or a.shape[0] == 0:
        raise ValueError(f"{owner}: pairs must have shape (m, 2), m >= 1, got {a.shape}")
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{owner}: pairs must be integer item indices, got dtype {a.dtype}")
    if a.min() < 0 or a.max() >= n:
        raise ValueError(f"{owner}: pairs must hold item indices in [0, {n}), got values from {a.min()} to {a.max()}")
    return a.astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _block_lists(labels, k, order, pos, end, lo, hi):
    """For draws s in [lo, hi): items grouped by block in ascending order (``order[s]``), where
    each item stands in it (``pos[s]``) and where each block ends (``end[s]``)."""
    m = labels.shape[1]
    for s in range(lo, hi):
        for b in range(k[s]):
            end[s, b] = 0
        for i in range(m):
            end[s, labels[s, i]] += 1
        acc = 0
        for b in range(k[s]):
            acc += end[s, b]
            end[s, b] = acc - end[s, b]  # the start of block b, advanced while filling
        for i in range(m):
            b = labels[s, i]
            order[s, end[s, b]] = i
            pos[s, i] = end[s, b]
            end[s, b] += 1  # ends at the end of block b


@numba.njit(cache=True, nogil=True)
def _fill_rows(labels, weights, order, pos, end, out, first, stride):
    """Upper triangle of rows first, first + stride, ...: row i adds each draw's weight at the
    items after i in i's block."""
    s_count, m = labels.shape
    buf = np.zeros(m)
    for i in range(first, m, stride):
        for s in range(s_count):
            ws = weights[s]
            stop = end[s, labels[s, i]]
            for idx in range(pos[s, i] + 1, stop):
                buf[order[s, idx]] += ws
        out[i, i] = 1.0
        for j in range(i + 1, m):
            out[i, j] = min(buf[j], 1.0)
            buf[j] = 0.0


@numba.njit(cache=True, nogil=True)
def _mirror(out, lo, hi):
    """Copy the upper triangle of tile rows [lo, hi) to the lower triangle."""
    m = out.shape[0]
    tiles = (m + _TILE - 1) // _TILE
    for bi in range(lo, hi):
        for bj in range(bi, tiles):
            for i in range(bi * _TILE, min((bi + 1) * _TILE, m)):
                for j in range(max(bj * _TILE, i + 1), min((bj + 1) * _TILE, m)):
                    out[j, i] = out[i, j]


@numba.njit(cache=True, nogil=True)
def _pairs(by_item, weights, first, second, lo, hi, out):
    for p in range(lo, hi):
        a = by_item[first[p]]
        b = by_item[second[p]]
        acc = 0.0
        for s in range(a.shape[0]):
            if a[s] == b[s]:
                acc += weights[s]
        out[p] = min(acc, 1.0)


def coclustering_matrix(draws: LabelDraws, items: np.ndarray | None = None, dtype=np.float64,
                        threads: int | None = None) -> np.ndarray:
    """The (n, n) similarity matrix (or (k, k) for ``items``), diagonal exactly 1.

    >>> from pymc_partitions.summaries import coclustering_matrix, label_draws
    >>> coclustering_matrix(label_draws([[0, 0, 1], [0, 1, 1]])).tolist()
    [[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]]
    """
    labels = draws.labels if items is None else np.ascontiguousarray(draws.labels[:, items])
    s_count, m = labels.shape
    k = draws.n_clusters
    order = np.empty((s_count, m), np.int32)
    pos = np.empty((s_count, m), np.int32)
    end = np.empty((s_count, max(1, int(k.max()))), np.int32)
    run_chunks(lambda lo, hi: _block_lists(labels, k, order, pos, end, lo, hi), s_count, float(labels.size),
               threads=threads)
    out = np.empty((m, m), dtype=dtype)
    # work: Σ_draws Σ_blocks size² / 2, estimated from the mean block count
    work = float(s_count) * m * m / (2.0 * max(1.0, float(k.mean()))) + float(m) * m
    strides = max(1, min(m, 8 * (threads or cpu_threads())))
    run_chunks(lambda lo, hi: [_fill_rows(labels, draws.weights, order, pos, end, out, f, strides)
                               for f in range(lo, hi)], strides, work, threads=threads)
    tiles = (m + _TILE - 1) // _TILE
    run_chunks(lambda lo, hi: _mirror(out, lo, hi), tiles, float(m) * m, threads=threads)
    return out


def coclustering_pairs(draws: LabelDraws, pairs: np.ndarray, threads: int | None = None) -> np.ndarray:
    """Similarity of each (i, j) row of ``pairs``.

    >>> import numpy as np
    >>> from pymc_partitions.summaries import coclustering_pairs, label_draws
    >>> coclustering_pairs(label_draws([[0, 0, 1], [0, 1, 1]]), np.array([[0, 1], [0, 2]])).tolist()
    [0.5, 0.0]
    """
    used = np.unique(pairs)
    by_item = np.ascontiguousarray(draws.labels[:, used].T)  # (items used, draws): one row per item
    where = np.searchsorted(used, pairs)
    first = np.ascontiguousarray(where[:, 0])
    second = np.ascontiguousarray(where[:, 1])
    out = np.empty(len(pairs))
    run_chunks(lambda lo, hi: _pairs(by_item, draws.weights, first, second, lo, hi, out), len(pairs),
               float(len(pairs)) * draws.n_draws, threads=threads)
    return out
