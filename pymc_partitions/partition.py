"""Partitions of ``n`` items as integer label vectors.

A partition is stored as an int64 vector of length ``n``; item ``i`` belongs to block
``labels[i]``. The *canonical* labelling numbers blocks in order of first appearance
(0, 1, 2, ...), so two label vectors describe the same partition exactly when their
canonical forms are equal arrays. Nothing here knows about PyMC.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from . import _checks

__all__ = [
    "canonicalize",
    "canonicalize_into",
    "as_labels",
    "integer_labels",
    "index_array",
    "is_canonical",
    "block_sizes",
    "n_blocks",
    "contingency",
    "mirkin_distance",
    "bell_number",
    "enumerate_partitions",
    "partition_index",
]


@numba.njit(cache=True)
def canonicalize_into(labels, out):
    """Write the canonical labels of ``labels`` into ``out``; return the number of blocks.

    A lookup table over the label range when that range is at most a few times n (every use in
    the kernels), else a stable sort: memory O(n) for any int64 labels (no 10^15-entry table)."""
    n = labels.shape[0]
    if n == 0:
        return 0
    lo = labels[0]
    hi = labels[0]
    for i in range(n):
        v = labels[i]
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    # hi - lo could overflow int64 when lo < 0 <= hi: compare without forming it
    dense = (hi < lo + 4 * n + 64) if (lo < 0 <= hi) else (hi - lo < 4 * n + 64)
    if not dense:
        return _canonicalize_sorted(labels, out)
    new = np.full(hi - lo + 1, -1, np.int64)
    k = 0
    for i in range(n):
        j = labels[i] - lo
        if new[j] < 0:
            new[j] = k
            k += 1
        out[i] = new[j]
    return k


@numba.njit(cache=True)
def canonicalize_dense_into(labels, bound, out):
    """:func:`canonicalize_into` for labels known to lie in [0, bound) (slot numbers, validated
    labels): one lookup table and no sorting fallback, whose compilation (numba's sorts) costs
    seconds on a cold cache. Labels outside [0, bound) are the caller's error (not checked)."""
    new = np.full(bound, -1, np.int64)
    k = 0
    for i in range(labels.shape[0]):
        j = labels[i]
        if new[j] < 0:
            new[j] = k
            k += 1
        out[i] = new[j]
    return k


@numba.njit(cache=True)
def _canonicalize_sorted(labels, out):
    """:func:`canonicalize_into` by a stable sort: equal labels form runs, whose first members are
    their first appearances; blocks are then numbered in order of first appearance."""
    n = labels.shape[0]
    order = np.argsort(labels, kind="mergesort")
    block = np.empty(n, np.int64)  # run number of each item
    first = np.empty(n, np.int64)  # first appearance of each run
    k = 0
    for t in range(n):
        i = order[t]
        if t == 0 or labels[i] != labels[order[t - 1]]:
            first[k] = i
            k += 1
        block[i] = k - 1
    rank = np.empty(k, np.int64)
    by_first = np.argsort(first[:k])
    for r in range(k):
        rank[by_first[r]] = r
    for i in range(n):
        out[i] = rank[block[i]]
    return k


@numba.njit(cache=True)
def _first_outside(values, low, high):
    """Index of the first of ``values`` (int64, 1-d) outside [low, high), or -1."""
    for i in range(values.shape[0]):
        if values[i] < low or values[i] >= high:
            return i
    return -1


@numba.njit(cache=True)
def _first_non_integral(values):
    """Index of the first of ``values`` (float64, 1-d) that is not an integer of int64's range, or -1."""
    for i in range(values.shape[0]):
        v = values[i]
        if not (abs(v) < 9.223372036854775808e18 and v == math.floor(v)):  # NaN and inf fail too
            return i
    return -1


def integer_labels(labels, n=None, *, name="labels", owner=None) -> np.ndarray:
    """``labels`` as a contiguous int64 vector, checked: 1-d (of length ``n`` if given) with
    integral values (integral floats are accepted; 0.5, NaN, bools and strings are not)."""
    prefix = f"{owner}: " if owner else ""
    arr = np.asarray(labels)
    kind = arr.dtype.kind
    if kind not in "iuf":
        raise TypeError(f"{prefix}{name} must be integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{prefix}{name} must be a 1-d vector, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{prefix}{name} must have length {n}, got {arr.shape[0]}")
    if kind == "f":
        if _first_non_integral(np.ascontiguousarray(arr, dtype=np.float64)) >= 0:
            raise ValueError(f"{prefix}{name} must be integers, got non-integral values")
    elif arr.dtype == np.uint64 and arr.size and arr.max() >= 2**63:
        raise ValueError(f"{prefix}{name} must fit in int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _in_range(values, n, name, owner):
    """Raise unless the int64 vector ``values`` lies in [0, n)."""
    if _first_outside(values, 0, n) >= 0:
        prefix = f"{owner}: " if owner else ""
        raise ValueError(f"{prefix}{name} must lie in [0, {n}), got [{values.min()}, {values.max()}]")


def index_array(values, n, *, name, owner=None) -> np.ndarray:
    """``values`` (any shape) as a contiguous int64 array, checked: integral values in [0, n)."""
    arr = np.asarray(values)
    flat = integer_labels(arr.reshape(-1), name=name, owner=owner)
    _in_range(flat, n, name, owner)
    return flat.reshape(arr.shape)


def as_labels(labels, n, *, name="labels", owner=None) -> np.ndarray:
    """Labels a kernel can take: a contiguous int64 vector of length ``n`` with values in [0, n)."""
    out = integer_labels(labels, n, name=name, owner=owner)
    _in_range(out, n, name, owner)
    return out


def canonicalize(labels) -> np.ndarray:
    """Relabel blocks in order of first appearance (0, 1, 2, ...); returns a new int64 array.

    Any integer labels (any range; integral floats too); 0.5, NaN and 2-d input are refused."""
    labels = integer_labels(labels)
    out = np.empty(labels.shape[0], np.int64)
    canonicalize_into(labels, out)
    return out


def is_canonical(labels) -> bool:
    """True if ``labels`` is already in first-appearance order."""
    labels = np.asarray(labels)
    return bool(np.array_equal(labels, canonicalize(labels)))


def block_sizes(labels) -> np.ndarray:
    """Sizes of the blocks, indexed by canonical label."""
    return np.bincount(canonicalize(labels)).astype(np.int64)


def n_blocks(labels) -> int:
    """Number of blocks (clusters)."""
    labels = integer_labels(labels)
    return int(np.unique(labels).size)


def contingency(a, b) -> np.ndarray:
    """Contingency table ``C[k, l] = |A_k ∩ B_l|`` of two partitions (canonical block order)."""
    a = canonicalize(a)
    b = canonicalize(b)
    if a.shape != b.shape:
        raise ValueError(f"partitions have different lengths {a.shape[0]} and {b.shape[0]}")
    ka = int(a.max()) + 1 if a.size else 0
    kb = int(b.max()) + 1 if b.size else 0
    return np.bincount(a * kb + b, minlength=ka * kb).reshape(ka, kb).astype(np.int64)


def mirkin_distance(a, b) -> int:
    """Mirkin (Hamming on co-clustering) distance: sum |A|^2 + sum |B|^2 - 2 sum |A∩B|^2.

    It equals the squared Euclidean distance between the two n×n co-clustering matrices
    (seed 000, eq. 2), computed here in O(n log n) from the nonzero cells of the contingency
    table (never the K_a x K_b table, which for two partitions into singletons is n x n).
    """
    a = canonicalize(a)
    b = canonicalize(b)
    if a.shape != b.shape:
        raise ValueError(f"partitions have different lengths {a.shape[0]} and {b.shape[0]}")
    if a.size == 0:
        return 0
    kb = int(b.max()) + 1
    cells = np.unique(a * kb + b, return_counts=True)[1]
    return int((np.bincount(a) ** 2).sum() + (np.bincount(b) ** 2).sum() - 2 * (cells**2).sum())


def bell_number(n: int) -> int:
    """Number of partitions of a set of ``n`` items."""
    n = _checks.integer("n", n, low=0, owner="bell_number")
    row = [1]
    for _ in range(n):
        nxt = [row[-1]]
        for v in row:
            nxt.append(nxt[-1] + v)
        row = nxt
    return row[0]


def enumerate_partitions(n: int) -> np.ndarray:
    """All partitions of ``n`` items as canonical label vectors, shape (Bell(n), n).

    Restricted growth strings in lexicographic order. Limited to n <= 10 (115,975 rows).
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if n > 10:
        raise ValueError(f"enumeration is limited to n <= 10, got n={n}")
    out = np.zeros((bell_number(n), n), np.int64)
    rows = [[0]]
    for _ in range(1, n):
        rows = [r + [v] for r in rows for v in range(max(r) + 2)]
    out[:] = np.array(rows, np.int64)
    return out


def partition_index(n: int):
    """Map from canonical label tuples to their row in :func:`enumerate_partitions` (n)."""
    return {tuple(row): i for i, row in enumerate(enumerate_partitions(n).tolist())}
