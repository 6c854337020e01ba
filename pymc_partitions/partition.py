"""Partitions of ``n`` items as integer label vectors.

A partition is stored as an int64 vector of length ``n``; item ``i`` belongs to block
``labels[i]``. The *canonical* labelling numbers blocks in order of first appearance
(0, 1, 2, ...), so two label vectors describe the same partition exactly when their
canonical forms are equal arrays. Nothing here knows about PyMC.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "canonicalize",
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
    """Write the canonical labels of ``labels`` into ``out``; return the number of blocks."""
    n = labels.shape[0]
    lo = 0
    hi = 0
    for i in range(n):
        v = labels[i]
        if i == 0 or v < lo:
            lo = v
        if i == 0 or v > hi:
            hi = v
    new = np.full(hi - lo + 1, -1, np.int64)
    k = 0
    for i in range(n):
        j = labels[i] - lo
        if new[j] < 0:
            new[j] = k
            k += 1
        out[i] = new[j]
    return k


def canonicalize(labels) -> np.ndarray:
    """Relabel blocks in order of first appearance (0, 1, 2, ...); returns a new int64 array."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be a 1-d vector, got shape {labels.shape}")
    if labels.size and not np.issubdtype(labels.dtype, np.integer):
        if not np.all(np.equal(np.mod(labels, 1), 0)):
            raise ValueError("labels must be integers")
    out = np.empty(labels.shape[0], np.int64)
    if labels.size:
        canonicalize_into(labels.astype(np.int64), out)
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
    labels = np.asarray(labels)
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
    (seed 000, eq. 2), computed here in O(n + K^2) from the contingency table.
    """
    c = contingency(a, b)
    return int((c.sum(1) ** 2).sum() + (c.sum(0) ** 2).sum() - 2 * (c**2).sum())


def bell_number(n: int) -> int:
    """Number of partitions of a set of ``n`` items."""
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
    if not isinstance(n, (int, np.integer)) or n < 1:
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
