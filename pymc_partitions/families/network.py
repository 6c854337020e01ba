"""The collapsed Bernoulli stochastic blockmodel (infinite relational model, Kemp et al. 2006;
seed 004 Sec. 3.2): a graph on the n items of a partition, ``theta_kl ~ Beta(a, b)`` for every
block pair and ``A_ij ~ Bernoulli(theta_{z_i z_j})`` for every node pair, theta integrated out::

    log p(A | z) = sum over block pairs (k, l) of  log B(a + e_kl, b + N_kl - e_kl) - log B(a, b)

with e_kl the edges between blocks k and l and N_kl the node pairs. Undirected graphs: pairs
k <= l, N_kl = m_k m_l and N_kk = m_k (m_k - 1) / 2 (the within-block pairs are included; seed
004 writes k < k' but its N_kk' halves the k = k' terms, which it must therefore mean to
include). Directed graphs: ordered pairs (k, l) for all k, l, N_kl = m_k m_l, N_kk = m_k (m_k - 1).
No self-loops: a node is never paired with itself.

This module holds what does not depend on PyMC: the input forms (dense 0/1 matrix, ``scipy.sparse``
matrix, m x 2 edge list) reduced to one canonical edge list, its compressed adjacency (CSR:
``indptr``, ``indices``), the hyper vector of the compiled family ``kernels.NETWORK``, a numpy
reference log likelihood, and the compiled relational helpers the samplers share: the block-pair
edge counts of a slot table and the change of the log likelihood when a node (or a set of nodes)
joins a block. Memory is O(edges + K^2), never n x n.

Kernel layout (``kernels.NETWORK``): the family's data column is unused (zeros, D = 1); its
per-block statistics row is ``[m]``; its hyper vector holds
``[a, b, directed, nnz, indptr (n + 1), indices (nnz)]`` and, when directed, the in-adjacency
``[indptr_in (n + 1), indices_in (nnz)]`` after it (integers stored as float64: exact below 2^53).
An undirected graph lists each edge in both rows (nnz = 2 edges). The per-block pack functions
treat the family as inert; kernels that support it (``samplers.network``) add the relational
terms, the others refuse it (:func:`refuse_network`).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy.special import betaln

__all__ = ["as_edges", "adjacency_lists", "network_hyper", "network_log_likelihood", "block_edge_counts",
           "block_probabilities", "replicate_edges"]

HEAD = 4  # a, b, directed, nnz


# ----------------------------------------------------------------------------- input forms


def _is_sparse(value) -> bool:
    try:
        import scipy.sparse as sp  # noqa: PLC0415
    except ImportError:  # pragma: no cover
        return False
    return sp.issparse(value)


def as_edges(observed, n: int, *, directed: bool = False, name: str = "observed") -> np.ndarray:
    """The canonical edge list of a graph on ``n`` nodes: an (m, 2) int64 array, rows sorted, each
    edge once, ``i < j`` in every row when undirected, no self-loops.

    ``observed``: a dense n x n 0/1 matrix (symmetric unless ``directed``; zero diagonal), a
    ``scipy.sparse`` matrix of the same kind (never densified), or an (m, 2) integer edge list
    with node indices in [0, n) (undirected: each edge once, in either orientation). Anything
    else -- NaN, values other than 0/1, asymmetry, self-loops, repeated edges, indices out of
    range, floats that are not integers -- raises ``ValueError`` (``TypeError`` for non-numeric
    input) naming ``name``.
    """
    if isinstance(directed, (bool, np.bool_)):
        directed = bool(directed)
    else:
        raise TypeError(f"{name!r}: directed must be True or False, got {directed!r}")
    if _is_sparse(observed):
        return _sparse_edges(observed, n, directed, name)
    try:
        arr = np.asarray(observed)
    except Exception:  # noqa: BLE001 - ragged lists and the like
        raise TypeError(f"{name!r}: observed must be an n x n adjacency matrix or an (m, 2) edge list") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name!r}: observed must be numeric (an n x n adjacency matrix or an (m, 2) edge list), "
                        f"got dtype {arr.dtype}")
    if arr.ndim == 2 and arr.shape == (n, n):  # (an n x n array is a matrix, also when n = 2)
        return _dense_edges(arr, n, directed, name)
    if arr.ndim == 2 and arr.shape[1] == 2:
        return _list_edges(arr, n, directed, name)
    if arr.ndim == 1 and arr.size == 0:
        return np.zeros((0, 2), np.int64)
    raise ValueError(f"{name!r}: observed must be an n x n adjacency matrix (n = {n}, the partition's size) or an "
                     f"(m, 2) edge list, got shape {arr.shape}")


def _values_01(values, name, what):
    v = np.asarray(values)
    if v.dtype.kind == "f":
        bad = ~np.isfinite(v)
        if bad.any():
            raise ValueError(f"{name!r}: {what} contains {int(bad.sum())} NaN or infinite values")
    off = (v != 0) & (v != 1)
    if off.any():
        raise ValueError(f"{name!r}: {what} must hold 0/1 values, got {int(off.sum())} other values "
                         f"(e.g. {v[off].ravel()[0]!r})")


def _dense_edges(arr, n, directed, name):
    _values_01(arr, name, "the adjacency matrix")
    a = arr != 0
    loops = np.flatnonzero(np.diagonal(a))
    if loops.size:
        raise ValueError(f"{name!r}: the adjacency matrix has {loops.size} self-loops (non-zero diagonal, e.g. node "
                         f"{loops[0]}); self-loops are not modelled: set the diagonal to 0")
    if not directed and not np.array_equal(a, a.T):
        i, j = np.argwhere(a != a.T)[0]
        raise ValueError(f"{name!r}: the adjacency matrix is not symmetric (A[{i}, {j}] != A[{j}, {i}]); pass "
                         "directed=True for a directed graph")
    if not directed:
        a = np.triu(a, 1)
    return np.argwhere(a).astype(np.int64)


def _sparse_edges(mat, n, directed, name):
    if mat.ndim != 2 or mat.shape != (n, n):
        raise ValueError(f"{name!r}: the sparse adjacency matrix must be n x n with n = {n} (the partition's size), "
                         f"got shape {mat.shape}")
    coo = mat.tocoo(copy=True)
    if coo.data.dtype == object or coo.data.dtype.kind not in "biuf":
        raise TypeError(f"{name!r}: the sparse adjacency matrix must be numeric, got dtype {coo.data.dtype}")
    coo.sum_duplicates()
    _values_01(coo.data, name, "the sparse adjacency matrix")
    keep = coo.data != 0
    rows = coo.row[keep].astype(np.int64)
    cols = coo.col[keep].astype(np.int64)
    loops = rows == cols
    if loops.any():
        raise ValueError(f"{name!r}: the sparse adjacency matrix has {int(loops.sum())} self-loops (non-zero "
                         f"diagonal, e.g. node {rows[loops][0]}); self-loops are not modelled")
    edges = np.stack([rows, cols], axis=1)
    if not directed:
        fwd = _sorted_unique(edges)
        rev = _sorted_unique(edges[:, ::-1])
        if fwd.shape != rev.shape or not np.array_equal(fwd, rev):
            raise ValueError(f"{name!r}: the sparse adjacency matrix is not symmetric; pass directed=True for a "
                             "directed graph")
        return fwd[fwd[:, 0] < fwd[:, 1]]
    return _sorted_unique(edges)


def _sorted_unique(edges):
    if edges.shape[0] == 0:
        return np.zeros((0, 2), np.int64)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    return np.ascontiguousarray(edges[order])


def _list_edges(arr, n, directed, name):
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name!r}: the edge list contains NaN or infinite values")
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name!r}: the edge list must hold integer node indices")
    if arr.dtype.kind == "b":
        raise TypeError(f"{name!r}: the edge list must hold integer node indices, got booleans")
    edges = arr.astype(np.int64)
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        bad = edges[(edges < 0) | (edges >= n)][0]
        raise ValueError(f"{name!r}: the edge list has node index {bad} outside [0, {n}) (n = the partition's size)")
    loops = edges[:, 0] == edges[:, 1]
    if loops.any():
        raise ValueError(f"{name!r}: the edge list has {int(loops.sum())} self-loops (e.g. ({edges[loops][0, 0]}, "
                         f"{edges[loops][0, 0]})); self-loops are not modelled")
    if not directed:
        edges = np.sort(edges, axis=1)
    out = _sorted_unique(edges)
    if out.shape[0] > 1:
        dup = np.all(out[1:] == out[:-1], axis=1)
        if dup.any():
            i, j = out[1:][dup][0]
            both = " (an undirected edge is listed once, in either orientation)" if not directed else ""
            raise ValueError(f"{name!r}: the edge list repeats the edge ({i}, {j}){both}")
    return out


def adjacency_lists(edges: np.ndarray, n: int, directed: bool):
    """(indptr, indices) of the out-neighbours of every node (both directions when undirected),
    and, when directed, (indptr_in, indices_in) of the in-neighbours; else those are the same."""
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    src, dst = edges[:, 0], edges[:, 1]
    if not directed:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])

    def csr(a, b):
        order = np.lexsort((b, a))
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(a, minlength=n), out=indptr[1:])
        return indptr, b[order].astype(np.int64)

    out = csr(src, dst)
    return (out, csr(dst, src)) if directed else (out, out)


def network_hyper(a, b, edges, n: int, directed: bool) -> np.ndarray:
    """The hyper vector of ``kernels.NETWORK`` (see the module docstring) for a canonical edge list."""
    (ip, ix), (jp, jx) = adjacency_lists(edges, n, directed)
    head = [float(a), float(b), 1.0 if directed else 0.0, float(ix.shape[0])]
    parts = [np.asarray(head), ip.astype(np.float64), ix.astype(np.float64)]
    if directed:
        parts += [jp.astype(np.float64), jx.astype(np.float64)]
    return np.concatenate(parts)


def network_hyper_length(n: int, nnz: int, directed: bool) -> int:
    return HEAD + (n + 1 + nnz) * (2 if directed else 1)


def unpack_hyper(hp, n):
    """(a, b, directed, edges) from a NETWORK hyper vector (checked by ``check_network_hyper``)."""
    a, b, directed, nnz = float(hp[0]), float(hp[1]), bool(hp[2]), int(hp[3])
    ip = hp[HEAD:HEAD + n + 1].astype(np.int64)
    ix = hp[HEAD + n + 1:HEAD + n + 1 + nnz].astype(np.int64)
    src = np.repeat(np.arange(n), np.diff(ip))
    edges = np.stack([src, ix], axis=1)
    if not directed:
        edges = edges[edges[:, 0] < edges[:, 1]]
    return a, b, directed, edges


def check_network_hyper(hp, n) -> str | None:
    """``None`` if ``hp`` is a well-formed NETWORK hyper vector for n nodes, else what is wrong."""
    hp = np.asarray(hp, np.float64)
    if hp.ndim != 1 or hp.shape[0] < HEAD + n + 1:
        return f"the hyper vector must have at least {HEAD + n + 1} entries, got shape {hp.shape}"
    if not np.all(np.isfinite(hp)):
        return "the hyper vector holds NaN or infinite values"
    a, b, directed, nnz = hp[:HEAD]
    if directed not in (0.0, 1.0) or nnz != math.floor(nnz) or not 0 <= nnz <= n * (n - 1):
        return f"bad header [directed = {directed}, nnz = {nnz}]"
    nnz = int(nnz)
    want = network_hyper_length(n, nnz, bool(directed))
    if hp.shape[0] != want:
        return f"the hyper vector must have length {want} for n = {n}, nnz = {nnz}, got {hp.shape[0]}"
    if not _csr_ok(hp, n):
        return "the compressed adjacency is inconsistent (indptr not from 0 to nnz, non-decreasing; indices not " \
               "integers in [0, n), repeated or self-loops; undirected rows not symmetric)"
    return None


@numba.njit(cache=True)
def _csr_ok(hp, n):
    nnz = int(hp[3])
    directed = hp[2] > 0.5
    for part in range(2 if directed else 1):
        base = HEAD + part * (n + 1 + nnz)
        if hp[base] != 0.0 or hp[base + n] != nnz:
            return False
        for i in range(n):
            lo = hp[base + i]
            hi = hp[base + i + 1]
            if not (lo <= hi and lo == math.floor(lo)):
                return False
            prev = -1.0
            for t in range(int(lo), int(hi)):
                j = hp[base + n + 1 + t]
                if not (0.0 <= j < n and j == math.floor(j) and j != i and j > prev):
                    return False
                prev = j
    if not directed:  # every (i, j) has its (j, i): each row's entries are sorted, so count matches
        indeg = np.zeros(n, np.int64)
        for t in range(nnz):
            indeg[int(hp[HEAD + n + 1 + t])] += 1
        for i in range(n):
            if indeg[i] != hp[HEAD + i + 1] - hp[HEAD + i]:
                return False
    return True


# ----------------------------------------------------------------------------- numpy reference


def network_log_likelihood(labels, edges, a, b, directed=False) -> float:
    """The collapsed log likelihood from a direct Beta-function computation (scipy's ``betaln``),
    O(edges + K^2): the reference the compiled and PyTensor forms are tested against."""
    labels = np.asarray(labels, np.int64)
    _, z = np.unique(labels, return_inverse=True)
    k = int(z.max()) + 1 if z.size else 0
    m = np.bincount(z, minlength=k).astype(float)
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    e = np.zeros((k, k))
    np.add.at(e, (z[edges[:, 0]], z[edges[:, 1]]), 1.0)
    if directed:
        pairs = np.outer(m, m) - np.diag(m)
        return float(np.sum(betaln(a + e, b + pairs - e) - betaln(a, b)))
    e = np.triu(e + e.T - np.diag(np.diag(e)))
    pairs = np.triu(np.outer(m, m) - np.diag(m * (m + 1) / 2))
    iu = np.triu_indices(k)
    return float(np.sum(betaln(a + e[iu], b + pairs[iu] - e[iu]) - betaln(a, b)))


# ----------------------------------------------------------------------------- compiled helpers
#
# A kernel keeps, per NETWORK family f, a matrix E[f] over its slots: E[s, t] counts the ordered
# node pairs (i in s, j in t) with an edge i -> j (undirected graphs: both orientations, so the
# diagonal holds twice the edges inside a block). A node with ``out[t]`` out-neighbours and
# ``inn[t]`` in-neighbours in slot t joins slot s by E[s, t] += out[t], E[t, s] += inn[t] for
# every t: O(degree) per move, touching only the neighbours' slots.


@numba.njit(cache=True, error_model="numpy", inline="always")
def _pair_term(e, pairs, a, b, lg0):
    """log B(a + e, b + pairs - e) - log B(a, b); 0 for a pair set with no pairs."""
    return math.lgamma(a + e) + math.lgamma(b + (pairs - e)) - math.lgamma(a + b + pairs) - lg0


@numba.njit(cache=True, error_model="numpy", inline="always")
def size_gain(e, pairs, d, a, b):
    """g(e, pairs + d) - g(e, pairs) for g(e, m) = log B(a + e, b + m - e): a pair term gaining
    ``d`` node pairs without an edge (d >= 0 an integer). For d <= 8 a product of d ratios and one
    log (when the products stay in [1e-150, 1e150]), else four lgammas."""
    x = b + (pairs - e)  # (integers first: b + pairs - e loses a tiny b)
    y = a + b + pairs
    if d <= 8.0:
        num = 1.0
        den = 1.0
        k = 0.0
        while k < d:
            num *= x + k
            den *= y + k
            k += 1.0
        if 1e-150 < num < 1e150 and 1e-150 < den < 1e150:
            return math.log(num / den)
    return math.lgamma(x + d) - math.lgamma(x) - math.lgamma(y + d) + math.lgamma(y)


@numba.njit(cache=True, error_model="numpy", inline="always")
def edge_gain_factor(e, c, pairs, a, b):
    """g(e + c, pairs) - g(e, pairs) (g as in :func:`size_gain`), a pair term whose ``pairs`` node
    pairs gain ``c`` edges (c >= 0 an integer, e + c <= pairs), as (ratio, rest) with the gain
    log(ratio) + rest: for c <= 4 a product of c ratios (rest 0, the ratio in [1e-100, 1e100]),
    else ratio 1 and four lgammas. Callers summing many gains multiply the ratios, one log."""
    x = a + e
    y = b + (pairs - e - c)
    if c <= 4.0:
        num = 1.0
        den = 1.0
        k = 0.0
        while k < c:
            num *= x + k
            den *= y + k
            k += 1.0
        if 1e-50 < num < 1e50 and 1e-50 < den < 1e50:
            return num / den, 0.0
    return 1.0, math.lgamma(x + c) - math.lgamma(x) + math.lgamma(y) - math.lgamma(y + c)


@numba.njit(cache=True, error_model="numpy", inline="always")
def edge_gain(e, c, pairs, a, b):
    """:func:`edge_gain_factor` as one number."""
    ratio, rest = edge_gain_factor(e, c, pairs, a, b)
    return math.log(ratio) + rest


@numba.njit(cache=True, error_model="numpy")
def prior_const(a, b):
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


@numba.njit(cache=True, error_model="numpy")
def net_offsets(hp, ho, n):
    """(a, b, directed, out indptr offset, out indices offset, in indptr offset, in indices offset)."""
    nnz = int(hp[ho + 3])
    ip = ho + HEAD
    ix = ip + n + 1
    if hp[ho + 2] > 0.5:
        jp = ix + nnz
        jx = jp + n + 1
        return hp[ho], hp[ho + 1], True, ip, ix, jp, jx
    return hp[ho], hp[ho + 1], False, ip, ix, ip, ix


@numba.njit(cache=True, error_model="numpy")
def net_add_node(E, f, hp, ho, n, slot_of, i, s, sign):
    """E[f] += sign * (node i's pairs when it is in slot s); O(degree of i). Neighbours are
    counted in their ``slot_of`` slots, those with a negative slot (not placed) skipped; i itself
    is never its own neighbour."""
    a, b, directed, ip, ix, jp, jx = net_offsets(hp, ho, n)
    for t in range(int(hp[ip + i]), int(hp[ip + i + 1])):
        r = slot_of[int(hp[ix + t])]
        if r >= 0:
            E[f, s, r] += sign
    for t in range(int(hp[jp + i]), int(hp[jp + i + 1])):
        r = slot_of[int(hp[jx + t])]
        if r >= 0:
            E[f, r, s] += sign


@numba.njit(cache=True, error_model="numpy")
def net_node_counts(hp, ho, n, slot_of, i, out, inn, touched, c0):
    """out[t] / inn[t] += i's out- / in-neighbours in slot t (neighbours with a negative slot
    skipped); a slot whose counts were both 0 is appended to ``touched`` from ``c0`` on, so each
    slot is listed once: returns the new count (at most c0 + 2 n). Reset them with
    :func:`net_clear_counts`."""
    a, b, directed, ip, ix, jp, jx = net_offsets(hp, ho, n)
    c = c0
    for t in range(int(hp[ip + i]), int(hp[ip + i + 1])):
        s = slot_of[int(hp[ix + t])]
        if s >= 0:
            if out[s] == 0.0 and inn[s] == 0.0:
                touched[c] = s
                c += 1
            out[s] += 1.0
    for t in range(int(hp[jp + i]), int(hp[jp + i + 1])):
        s = slot_of[int(hp[jx + t])]
        if s >= 0:
            if out[s] == 0.0 and inn[s] == 0.0:
                touched[c] = s
                c += 1
            inn[s] += 1.0
    return c


@numba.njit(cache=True, error_model="numpy")
def net_clear_counts(out, inn, touched, c):
    for q in range(c):
        out[touched[q]] = 0.0
        inn[touched[q]] = 0.0


@numba.njit(cache=True, error_model="numpy")
def net_join_logw(E, f, hp, ho, sizes, slots, n_slots, cands, n_cands, out, inn, cs, internal, logw, new_w):
    """Add to ``logw[j]`` the change of family f's log likelihood when a set of ``cs`` nodes (not in
    any slot; ``out``/``inn`` its edges to each slot, ``internal`` the ordered pairs with an edge
    inside it: 2 x edges undirected) joins slot ``cands[j]``, j < n_cands; and to ``new_w[0]`` the
    change when it opens a block of its own. ``slots[:n_slots]`` must list every occupied slot
    (empty ones may be listed too): O(n_cands n_slots) (O(n_slots) for the new block)."""
    a = hp[ho]
    b = hp[ho + 1]
    directed = hp[ho + 2] > 0.5
    lg0 = prior_const(a, b)
    cs_pairs = cs * (cs - 1.0) if directed else 0.5 * cs * (cs - 1.0)
    inner = internal if directed else 0.5 * internal
    nw = _pair_term(inner, cs_pairs, a, b, lg0)
    for q in range(n_slots):
        t = slots[q]
        mt = float(sizes[t])
        nw += _pair_term(out[t], cs * mt, a, b, lg0)
        if directed:
            nw += _pair_term(inn[t], cs * mt, a, b, lg0)
    new_w[0] += nw
    for j in range(n_cands):
        s = cands[j]
        ms = float(sizes[s])
        d = 0.0
        for q in range(n_slots):
            t = slots[q]
            if t == s:
                continue
            mt = float(sizes[t])
            e = E[f, s, t]
            d += _pair_term(e + out[t], (ms + cs) * mt, a, b, lg0) - _pair_term(e, ms * mt, a, b, lg0)
            if directed:
                e = E[f, t, s]
                d += _pair_term(e + inn[t], (ms + cs) * mt, a, b, lg0) - _pair_term(e, ms * mt, a, b, lg0)
        if directed:
            e = E[f, s, s]
            d += (_pair_term(e + out[s] + inn[s] + internal, (ms + cs) * (ms + cs - 1.0), a, b, lg0)
                  - _pair_term(e, ms * (ms - 1.0), a, b, lg0))
        else:
            e = 0.5 * E[f, s, s]
            d += (_pair_term(e + out[s] + 0.5 * internal, 0.5 * (ms + cs) * (ms + cs - 1.0), a, b, lg0)
                  - _pair_term(e, 0.5 * ms * (ms - 1.0), a, b, lg0))
        logw[j] += d


@numba.njit(cache=True, error_model="numpy")
def net_log_likelihood(E, f, hp, ho, sizes, slots, n_slots):
    """Family f's log likelihood from the slot table (occupied slots ``slots[:n_slots]``)."""
    a = hp[ho]
    b = hp[ho + 1]
    directed = hp[ho + 2] > 0.5
    lg0 = prior_const(a, b)
    out = 0.0
    for j in range(n_slots):
        s = slots[j]
        ms = float(sizes[s])
        if directed:
            out += _pair_term(E[f, s, s], ms * (ms - 1.0), a, b, lg0)
        else:
            out += _pair_term(0.5 * E[f, s, s], 0.5 * ms * (ms - 1.0), a, b, lg0)
        for q in range(n_slots):
            t = slots[q]
            if t == s or (not directed and t < s):
                continue
            out += _pair_term(E[f, s, t], ms * float(sizes[t]), a, b, lg0)
    return out


def block_edge_counts(labels, edges, directed=False):
    """(K x K edge counts e, block sizes m) of a partition, canonical block order: e[k, l] the
    edges from block k to block l (undirected: symmetric, e[k, k] the edges inside block k)."""
    labels = np.asarray(labels, np.int64)
    _, z = np.unique(labels, return_inverse=True)
    k = int(z.max()) + 1 if z.size else 0
    # canonical order: first appearance
    first = np.full(k, labels.shape[0])
    np.minimum.at(first, z, np.arange(labels.shape[0]))
    rank = np.argsort(np.argsort(first))
    z = rank[z]
    e = np.zeros((k, k), np.int64)
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    np.add.at(e, (z[edges[:, 0]], z[edges[:, 1]]), 1)
    if not directed:
        e = e + e.T - np.diag(np.diag(e))
    return e, np.bincount(z, minlength=k)


# ----------------------------------------------------------------------------- conditional posterior


def block_probabilities(labels, edges, a, b, directed=False, rng=None) -> np.ndarray:
    """One draw of the block-pair edge probabilities from their conditional posterior given the
    partition and the graph: ``theta_kl ~ Beta(a + e_kl, b + N_kl - e_kl)`` (K x K, blocks in
    canonical order: first appearance; symmetric when undirected). ``edges``: any input form of
    :func:`as_edges`."""
    rng = np.random.default_rng(rng)
    labels = np.asarray(labels, np.int64)
    n = labels.shape[0]
    edges = as_edges(edges, n, directed=bool(directed), name="edges")
    if not (float(a) > 0 and float(b) > 0 and math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"block_probabilities: a and b must be positive and finite, got a = {a!r}, b = {b!r}")
    e, m = block_edge_counts(labels, edges, directed)
    m = m.astype(float)
    pairs = np.outer(m, m) - (np.diag(m) if directed else np.diag(m * (m + 1.0) / 2.0))
    theta = rng.beta(a + e, b + pairs - e)
    if not directed:
        theta = np.triu(theta) + np.triu(theta, 1).T
    return theta


def replicate_edges(labels, theta, directed=False, rng=None) -> np.ndarray:
    """A graph drawn given the partition and block-pair probabilities ``theta`` (K x K, canonical
    blocks, e.g. from :func:`block_probabilities`): the canonical edge list. Each block pair draws
    its number of edges (Binomial) and then which of its node pairs: O(edges + K^2 + n)."""
    rng = np.random.default_rng(rng)
    labels = np.asarray(labels, np.int64)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    z = np.argsort(np.argsort(first))[inverse]  # canonical block of each node (first appearance)
    k = int(z.max()) + 1
    theta = np.asarray(theta, float)
    if theta.shape != (k, k) or not np.all((theta >= 0) & (theta <= 1)):
        raise ValueError(f"replicate_edges: theta must be a {k} x {k} matrix of probabilities, got shape {theta.shape}")
    members = [np.flatnonzero(z == c) for c in range(k)]
    out = []
    for s in range(k):
        for t in range(k) if directed else range(s, k):
            ms, mt = len(members[s]), len(members[t])
            if s == t:
                count = ms * (ms - 1) // (1 if directed else 2)
            else:
                count = ms * mt
            c = rng.binomial(count, theta[s, t])
            if c == 0:
                continue
            pick = rng.choice(count, c, replace=False)
            if s != t:
                src, dst = members[s][pick // mt], members[t][pick % mt]
            elif directed:  # ordered pairs (u, v), u != v: index u * (m - 1) + v', v' skipping u
                u, v = pick // (ms - 1), pick % (ms - 1)
                v = v + (v >= u)
                src, dst = members[s][u], members[s][v]
            else:  # unordered pairs u < v of the block, row-major upper triangle, decoded in O(1)
                u = ms - 2 - np.floor(np.sqrt(4.0 * ms * (ms - 1) - 8.0 * pick - 7.0) / 2.0 - 0.5).astype(np.int64)
                v = pick + u + 1 - count + (ms - u) * (ms - u - 1) // 2
                src, dst = members[s][u], members[s][v]
            out.append(np.stack([src, dst], axis=1))
    edges = np.concatenate(out) if out else np.zeros((0, 2), np.int64)
    return as_edges(edges, labels.shape[0], directed=directed, name="replicate")
