"""Ground cost for Wasserstein distances between samples of partitions.

The Mirkin (Hamming) distance d(pi, nu) = sum_A |A|^2 + sum_B |B|^2 - 2 sum_{A,B} |A ∩ B|^2
equals the squared Euclidean (Frobenius) distance between the n×n co-clustering matrices of pi
and nu. So W2 on partitions with this cost is Euclidean W2 in that embedding, and every centered
W2 estimator applies unchanged (docs/diagnostics.md, "The estimators").

:func:`mirkin_cost_matrix` computes all pairwise distances between two samples of label vectors
in compiled code (numba, threads over rows), from contingency counts, in O(n + K_a K_b) per pair
and without ever forming an n×n matrix. Each vector is relabelled to compact canonical labels
and its sum of squared block sizes computed once (O(R n)); a pair then costs one counting pass
over its n items into a per-thread K_a×K_b table plus one pass that sums the squared counts and
clears them (over the cells or the items, whichever are fewer), with no allocation. Pairs with
very many blocks (K_a K_b > 16 n) are counted block by block with tables of size K_b instead.
Without ``b`` only the upper triangle is computed.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

__all__ = ["mirkin_cost_matrix"]

# A pair's contingency table is counted densely (2 K_a K_b int32 entries of per-thread scratch) if it
# has at most min(_CELLS_PER_ITEM * n, _TABLE_MAX / 2) cells, else block by block with tables of
# size K_b (same O(n) per pair, O(n) memory). Measured here: dense counting is faster up to about
# 15-30 cells per item, the block-by-block count beyond (many small blocks).
_CELLS_PER_ITEM = 16
_TABLE_MAX = 1 << 18


# ---------------------------------------------------------------------------------------------
# compact relabelling
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _compact_row(x, out, counts):
    """Write first-appearance labels 0..K-1 of ``x`` into ``out`` and the block sizes into
    ``counts[:K]`` (``counts`` has length >= n and is zero on entry); return K."""
    n = x.shape[0]
    lo = x[0]
    hi = x[0]
    for t in range(1, n):
        v = x[t]
        if v < lo:
            lo = v
        elif v > hi:
            hi = v
    limit = max(8 * n, 4096)
    k = 0
    # float difference: no int64 overflow for labels spread over the whole int64 range
    if float(hi) - float(lo) < 2.0 * limit and hi - lo < limit:
        lookup = np.full(hi - lo + 1, -1, np.int32)
        for t in range(n):
            j = x[t] - lo
            c = lookup[j]
            if c < 0:
                c = k
                lookup[j] = k
                k += 1
            out[t] = c
            counts[c] += 1
    else:
        # wide label range: rank by sorting, then renumber the ranks in first-appearance order
        order = np.argsort(x, kind="mergesort")
        rank = np.empty(n, np.int32)
        r = 0
        rank[order[0]] = 0
        for s in range(1, n):
            if x[order[s]] != x[order[s - 1]]:
                r += 1
            rank[order[s]] = r
        first = np.full(r + 1, -1, np.int32)
        for t in range(n):
            c = first[rank[t]]
            if c < 0:
                c = k
                first[rank[t]] = k
                k += 1
            out[t] = c
            counts[c] += 1
    return k


@numba.njit(cache=True, parallel=True)
def _compact(x, out, k, ss):
    """Compact labels of every row of ``x`` into ``out``; block counts ``k`` and sums of
    squared block sizes ``ss`` per row."""
    r_count, n = x.shape
    for i in prange(r_count):
        counts = np.zeros(n, np.int64)
        ki = _compact_row(x[i], out[i], counts)
        s = 0
        for c in range(ki):
            s += counts[c] * counts[c]
        k[i] = ki
        ss[i] = s


@numba.njit(cache=True, parallel=True)
def _group(ca, k, order, starts):
    """Items of each row sorted by block (counting sort): block c of row i is
    ``order[i, starts[i, c]:starts[i, c + 1]]``."""
    r_count, n = ca.shape
    for i in prange(r_count):
        ki = k[i]
        for c in range(ki + 1):
            starts[i, c] = 0
        for t in range(n):
            starts[i, ca[i, t] + 1] += 1
        for c in range(ki):
            starts[i, c + 1] += starts[i, c]
        fill = starts[i, :ki].copy()
        for t in range(n):
            c = ca[i, t]
            order[i, fill[c]] = t
            fill[c] += 1


# ---------------------------------------------------------------------------------------------
# one pair: sum over contingency cells of |A ∩ B|^2
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _cross_table(ra, rb, ka, kb, table):
    """sum_{A,B} |A ∩ B|^2 by counting the cells of a dense ka×kb contingency table.

    Two tables, ``table[:ka*kb]`` for even and ``table[ka*kb:2*ka*kb]`` for odd items, halve the
    chains of dependent increments of one cell (items of one block are often adjacent), which
    otherwise stall on store-to-load forwarding (2-3x slower on sorted labels). Both tables are
    zero on entry and on exit: the final pass sums the squares of the merged counts and clears
    either the ka*kb cells or, if there are more cells than items, only the touched ones."""
    n = ra.shape[0]
    cells = ka * kb
    m = n - (n & 1)
    for t in range(0, m, 2):
        table[ra[t] * kb + rb[t]] += 1
        table[cells + ra[t + 1] * kb + rb[t + 1]] += 1
    if m < n:
        table[ra[m] * kb + rb[m]] += 1
    s = 0
    if cells <= n:
        for idx in range(cells):
            c = np.int64(table[idx] + table[cells + idx])
            s += c * c
            table[idx] = 0
            table[cells + idx] = 0
    else:
        for t in range(n):
            idx = ra[t] * kb + rb[t]
            c = np.int64(table[idx] + table[cells + idx])
            s += c * c  # cleared below: later items of the same cell add 0
            table[idx] = 0
            table[cells + idx] = 0
    return s


@numba.njit(cache=True)
def _cross_grouped(order, starts, ka, rb, counts, stamp, g):
    """Same sum, block by block of the first partition, with tables of size K_b: ``counts[l]``
    is valid only where ``stamp[l] == g``, and ``g`` grows by one per block, so no table is
    ever cleared. Returns the sum and the last stamp used."""
    s = 0
    for c in range(ka):
        g += 1
        for t in range(starts[c], starts[c + 1]):
            l = rb[order[t]]
            if stamp[l] != g:
                stamp[l] = g
                counts[l] = 1
            else:
                s += counts[l]
                counts[l] += 1
    return order.shape[0] + 2 * s, g


@numba.njit(cache=True, parallel=True)
def _cost_kernel(ca, ka, ssa, cb, kb, ssb, order, starts, symmetric, cell_limit, n_chunks, out):
    """Fill ``out[i, j]`` with Mirkin distances (upper triangle only if ``symmetric``).

    Work is split into ``n_chunks`` chunks, each with its own scratch tables allocated once.
    In the symmetric case a task is the pair of rows (t, R - 1 - t), so every task has the same
    R - 1 pairs and a static split balances the threads."""
    r1 = ca.shape[0]
    r2 = cb.shape[0]
    kmax_a = 0
    for i in range(r1):
        kmax_a = max(kmax_a, ka[i])
    kmax_b = 0
    for j in range(r2):
        kmax_b = max(kmax_b, kb[j])
    table_size = 2 * min(kmax_a * kmax_b, cell_limit)
    n_tasks = (r1 + 1) // 2 if symmetric else r1
    for chunk in prange(n_chunks):
        table = np.zeros(table_size, np.int32)
        counts = np.zeros(kmax_b, np.int32)
        stamp = np.zeros(kmax_b, np.int64)
        g = 0
        for task in range(chunk, n_tasks, n_chunks):
            for side in range(2 if symmetric else 1):
                i = task if side == 0 else r1 - 1 - task
                if side == 1 and i == task:
                    break  # middle row of an odd count
                j0 = i + 1 if symmetric else 0
                for j in range(j0, r2):
                    if ka[i] * kb[j] <= cell_limit:
                        cross = _cross_table(ca[i], cb[j], ka[i], kb[j], table)
                    else:
                        cross, g = _cross_grouped(order[i], starts[i], ka[i], cb[j], counts, stamp, g)
                    out[i, j] = ssa[i] + ssb[j] - 2 * cross


@numba.njit(cache=True, parallel=True)
def _mirror(out):
    """Copy the upper triangle of the square ``out`` to the lower one; zero the diagonal."""
    for i in prange(out.shape[0]):
        out[i, i] = 0.0
        for j in range(i):
            out[i, j] = out[j, i]


# ---------------------------------------------------------------------------------------------
# Python wrapper
# ---------------------------------------------------------------------------------------------


def _as_labels(x, name):
    """Validated (R, n) int64 copy of a stack of label vectors."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-d array of label vectors, shape (draws, n); got shape {x.shape}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} must hold at least one label vector of at least one item; got shape {x.shape}")
    if np.issubdtype(x.dtype, np.integer) or x.dtype == np.bool_:
        # uint64 labels above 2**63 wrap around: still a bijection, so the partition is unchanged
        return np.ascontiguousarray(x.astype(np.int64, copy=False))
    if np.issubdtype(x.dtype, np.floating):
        if not np.all(np.isfinite(x)) or not np.all(np.equal(np.mod(x, 1), 0)):
            raise ValueError(f"{name} must hold integer labels; got non-integer values of dtype {x.dtype}")
        if np.any(np.abs(x) >= 2.0**63):
            raise ValueError(f"{name} holds labels outside the int64 range")
        return np.ascontiguousarray(x.astype(np.int64))
    raise ValueError(f"{name} must hold integer labels; got dtype {x.dtype}")


def _compact_labels(x):
    r_count, n = x.shape
    out = np.empty((r_count, n), np.int32)
    k = np.empty(r_count, np.int64)
    ss = np.empty(r_count, np.int64)
    _compact(x, out, k, ss)
    return out, k, ss


def mirkin_cost_matrix(a, b=None) -> np.ndarray:
    """Matrix of Mirkin distances between two samples of partitions.

    Parameters
    ----------
    a : array_like, shape (R1, n)
        Label vectors, one partition of the same n items per row. Any integer labels (negative,
        non-contiguous, any integer dtype; floats only if integer-valued).
    b : array_like, shape (R2, n), optional
        A second sample. If omitted, ``b = a``: the result is symmetric with a zero diagonal and
        only the upper triangle is computed.

    Returns
    -------
    np.ndarray, shape (R1, R2), float64
        ``out[i, j] = sum |A|^2 + sum |B|^2 - 2 sum |A ∩ B|^2`` for the partitions ``a[i]`` and
        ``b[j]``: the squared Frobenius distance between their co-clustering matrices (an
        integer, exact in float64 for n < 2**26).

    Examples
    --------
    >>> mirkin_cost_matrix([[0, 0, 1], [5, 7, 7]])
    array([[0., 4.],
           [4., 0.]])
    """
    xa = _as_labels(a, "a")
    if b is None:
        xb = None
    else:
        xb = _as_labels(b, "b")
        if xb.shape[1] != xa.shape[1]:
            raise ValueError(
                f"a and b must label the same number of items; got n = {xa.shape[1]} and n = {xb.shape[1]}"
            )
    ca, ka, ssa = _compact_labels(xa)
    symmetric = xb is None
    if symmetric:
        cb, kb, ssb = ca, ka, ssa
    else:
        cb, kb, ssb = _compact_labels(xb)
    r1, n = ca.shape
    r2 = cb.shape[0]
    cell_limit = min(_CELLS_PER_ITEM * n, _TABLE_MAX // 2)
    if int(ka.max()) * int(kb.max()) > cell_limit:
        order = np.empty((r1, n), np.int32)
        starts = np.empty((r1, int(ka.max()) + 1), np.int64)
        _group(ca, ka, order, starts)
    else:
        order = np.empty((r1, 0), np.int32)
        starts = np.empty((r1, 0), np.int64)
    out = np.empty((r1, r2), np.float64)
    n_tasks = (r1 + 1) // 2 if symmetric else r1
    n_chunks = max(1, min(numba.get_num_threads(), n_tasks))
    _cost_kernel(ca, ka, ssa, cb, kb, ssb, order, starts, symmetric, cell_limit, n_chunks, out)
    if symmetric:
        _mirror(out)
    return out
