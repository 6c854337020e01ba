"""Losses between partitions, computed from contingency tables (never from n x n matrices).

For two partitions of n items with block sizes a_k, b_l and contingency table c_kl = |A_k ∩ B_l|:

* **Binder** (equal costs, salso's and mcclust.ext's normalisation):
  ``(Σ a_k² + Σ b_l² − 2 Σ c_kl²) / n²``, i.e. twice the number of pairs {i, j} on which the
  partitions disagree (together in one, apart in the other), divided by n². It is the Mirkin
  distance over n², lies in [0, 1 − 1/n], and equals (1 − Rand index)·(n − 1)/n.
* **VI**, variation of information (Meilă 2007) in **bits** (log base 2, as salso and
  mcclust.ext): ``(Σ a_k log2 a_k + Σ b_l log2 b_l − 2 Σ c_kl log2 c_kl) / n``
  = H(A | B) + H(B | A), in [0, log2 n].
* **omARI**, one minus the adjusted Rand index (Hubert & Arabie 1985), with
  x = Σ C(a_k, 2), y = Σ C(b_l, 2), z = Σ C(c_kl, 2), N = C(n, 2) and e = x·y / N:
  ARI = (z − e) / ((x + y)/2 − e). The denominator is zero only when both partitions are all
  singletons or both one block (x = y = 0 or x = y = N), i.e. when they are *equal*; there ARI is
  taken as 1 (loss 0), and also for n = 1. (salso counts such a draw as ARI 0 instead; that
  makes the loss of the true partition positive, which we avoid.)

All three are symmetric. Expected losses are weighted means over draws; Binder and VI are linear
in the table entries' functions, which is what makes the search's incremental updates O(draws)
per item move (see :mod:`pymc_partitions.summaries.salso`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._checks import choice
from ._threads import cpu_threads, run_chunks
from .draws import LabelDraws, label_draws, labels_vector

__all__ = ["LOSSES", "loss_code", "pair_losses", "expected_loss", "partition_loss", "draw_summaries"]

#: Loss names, in the order of the columns of :func:`pair_losses`.
LOSSES = ("binder", "vi", "omari")
BINDER, VI, OMARI = 0, 1, 2


def loss_code(loss, owner: str) -> int:
    """Column / kernel code of a loss name (checked)."""
    return LOSSES.index(choice("loss", loss, LOSSES, owner=owner))


@numba.njit(cache=True, nogil=True)
def xlog2x(x):
    """x log2 x for a count x >= 0 (0 for x <= 1)."""
    if x <= 1:
        return 0.0
    return x * math.log2(x)


@numba.njit(cache=True, nogil=True)
def ari_from_sums(n, a2, b2, c2):
    """Adjusted Rand index from n and the sums of squares of the block sizes (a2, b2) and of the
    table (c2); 1 where it is undefined (equal trivial partitions, or n < 2)."""
    if n < 2:
        return 1.0
    pairs = 0.5 * n * (n - 1.0)
    x = 0.5 * (a2 - n)
    y = 0.5 * (b2 - n)
    z = 0.5 * (c2 - n)
    if (x == 0.0 and y == 0.0) or (x == pairs and y == pairs):
        return 1.0
    expected = x * y / pairs
    return (z - expected) / (0.5 * (x + y) - expected)


@numba.njit(cache=True, nogil=True)
def _loss_from_sums(code, n, a2, b2, c2, alog, blog, clog):
    if code == 0:
        return (a2 + b2 - 2.0 * c2) / (n * n)
    if code == 1:
        return max((alog + blog - 2.0 * clog) / n, 0.0)
    return 1.0 - ari_from_sums(n, a2, b2, c2)


@numba.njit(cache=True, nogil=True)
def _block_order(labels, k):
    """Items grouped by block (counting sort): (order, start) with the items of block b at
    order[start[b]:start[b + 1]], ascending."""
    n = labels.shape[0]
    start = np.zeros(k + 1, np.int64)
    for i in range(n):
        start[labels[i] + 1] += 1
    for b in range(k):
        start[b + 1] += start[b]
    fill = start[:k].copy()
    order = np.empty(n, np.int64)
    for i in range(n):
        b = labels[i]
        order[fill[b]] = i
        fill[b] += 1
    return order, start


@numba.njit(cache=True, nogil=True)
def _size_sums(labels, k, counts):
    """(Σ size², Σ size log2 size) of the blocks of ``labels`` (k blocks); ``counts`` is zero
    scratch of length >= k, left zero."""
    for i in range(labels.shape[0]):
        counts[labels[i]] += 1
    sq = 0.0
    lg = 0.0
    for b in range(k):
        c = counts[b]
        sq += float(c) * c
        lg += xlog2x(c)
        counts[b] = 0
    return sq, lg


@numba.njit(cache=True, nogil=True)
def _table_sums(order, start, ka, b, counts, touched):
    """(Σ c², Σ c log2 c) over the contingency table of partition A (given by its block order)
    and labels ``b``; ``counts`` zero scratch of length > max(b), left zero."""
    sq = 0.0
    lg = 0.0
    for blk in range(ka):
        t = 0
        for idx in range(start[blk], start[blk + 1]):
            lab = b[order[idx]]
            if counts[lab] == 0:
                touched[t] = lab
                t += 1
            counts[lab] += 1
        for j in range(t):
            c = counts[touched[j]]
            sq += float(c) * c
            lg += xlog2x(c)
            counts[touched[j]] = 0
    return sq, lg


@numba.njit(cache=True, nogil=True)
def _draw_sums(draws, kdraws, b2, blog):
    """Σ size² and Σ size log2 size of every draw's blocks."""
    kmax = 1
    for s in range(draws.shape[0]):
        kmax = max(kmax, kdraws[s])
    scratch = np.zeros(kmax, np.int64)
    for s in range(draws.shape[0]):
        b2[s], blog[s] = _size_sums(draws[s], kdraws[s], scratch)


@numba.njit(cache=True, nogil=True)
def _pair_losses(est, kest, draws, kdraws, b2, blog, lo, hi, out):
    """out[s] = (Binder, VI, omARI) between ``est`` and draw s, for s in [lo, hi)."""
    n = draws.shape[1]
    kmax = 1
    for s in range(lo, hi):
        kmax = max(kmax, kdraws[s])
    order, start = _block_order(est, kest)
    counts = np.zeros(max(kest, kmax), np.int64)
    touched = np.empty(n, np.int64)
    a2, alog = _size_sums(est, kest, counts)
    for s in range(lo, hi):
        c2, clog = _table_sums(order, start, kest, draws[s], counts, touched)
        for code in range(3):
            out[s, code] = _loss_from_sums(code, float(n), a2, b2[s], c2, alog, blog[s], clog)


@numba.njit(cache=True, nogil=True)
def _expected_losses(cands, kcands, draws, kdraws, b2, blog, weights, code, lo, hi, out):
    """out[c] = weighted mean loss (``code``) of candidate row c against all draws, c in [lo, hi)."""
    n = draws.shape[1]
    kmax = 1
    for s in range(draws.shape[0]):
        kmax = max(kmax, kdraws[s])
    for c in range(lo, hi):
        kmax = max(kmax, kcands[c])
    counts = np.zeros(kmax, np.int64)
    touched = np.empty(n, np.int64)
    for c in range(lo, hi):
        order, start = _block_order(cands[c], kcands[c])
        a2, alog = _size_sums(cands[c], kcands[c], counts)
        total = 0.0
        for s in range(draws.shape[0]):
            c2, clog = _table_sums(order, start, kcands[c], draws[s], counts, touched)
            total += weights[s] * _loss_from_sums(code, float(n), a2, b2[s], c2, alog, blog[s], clog)
        out[c] = total


@numba.njit(cache=True, nogil=True)
def _draw_expected_losses(draws, kdraws, b2, blog, weights, code, first, stride, acc):
    """For rows s = first, first + stride, ...: the loss between draw s and each later draw t,
    added to acc[s] (weighted by w_t) and acc[t] (by w_s): every pair once (the losses are
    symmetric)."""
    s_count, n = draws.shape
    kmax = 1
    for s in range(s_count):
        kmax = max(kmax, kdraws[s])
    counts = np.zeros(kmax, np.int64)
    touched = np.empty(n, np.int64)
    for s in range(first, s_count, stride):
        order, start = _block_order(draws[s], kdraws[s])
        for t in range(s + 1, s_count):
            c2, clog = _table_sums(order, start, kdraws[s], draws[t], counts, touched)
            value = _loss_from_sums(code, float(n), b2[s], b2[t], c2, blog[s], blog[t], clog)
            acc[s] += weights[t] * value
            acc[t] += weights[s] * value


def draw_expected_losses(draws: LabelDraws, code: int) -> np.ndarray:
    """Expected loss of each draw under all the (weighted) draws: each pair of draws once."""
    b2, blog = _sums(draws)
    s_count = draws.n_draws
    strides = max(1, min(s_count, 4 * cpu_threads()))
    acc = np.zeros((strides, s_count))
    run_chunks(lambda lo, hi: [_draw_expected_losses(draws.labels, draws.n_clusters, b2, blog, draws.weights, code,
                                                     f, strides, acc[f]) for f in range(lo, hi)],
               strides, 0.5 * float(s_count) * draws.labels.size)
    return acc.sum(axis=0)


def _sums(draws: LabelDraws):
    b2 = np.empty(draws.n_draws)
    blog = np.empty(draws.n_draws)
    _draw_sums(draws.labels, draws.n_clusters, b2, blog)
    return b2, blog


def pair_losses(estimate: np.ndarray, draws: LabelDraws) -> np.ndarray:
    """(S, 3) array: Binder, VI and omARI between the canonical ``estimate`` and each draw.

    >>> import numpy as np
    >>> from pymc_partitions.summaries import label_draws, pair_losses
    >>> pair_losses(np.array([0, 0, 1, 1]), label_draws([[0, 0, 1, 1], [0, 0, 0, 0]])).tolist()
    [[0.0, 0.0, 0.0], [0.5, 1.0, 1.0]]
    """
    est = np.ascontiguousarray(estimate, dtype=np.int64)
    kest = int(est.max()) + 1
    b2, blog = _sums(draws)
    out = np.empty((draws.n_draws, 3))
    run_chunks(lambda lo, hi: _pair_losses(est, kest, draws.labels, draws.n_clusters, b2, blog, lo, hi, out),
               draws.n_draws, float(draws.labels.size))
    return out


def candidate_losses(candidates: np.ndarray, k: np.ndarray, draws: LabelDraws, code: int) -> np.ndarray:
    """Expected loss of each canonical candidate row under the weighted draws."""
    cands = np.ascontiguousarray(candidates, dtype=np.int32)
    k = np.ascontiguousarray(k, dtype=np.int64)
    b2, blog = _sums(draws)
    out = np.empty(cands.shape[0])
    run_chunks(lambda lo, hi: _expected_losses(cands, k, draws.labels, draws.n_clusters, b2, blog, draws.weights,
                                               code, lo, hi, out),
               cands.shape[0], float(cands.shape[0]) * draws.labels.size)
    return out


def expected_loss(estimate, draws, loss: str = "vi", weights=None) -> float:
    """Posterior expected loss of a clustering: the weighted mean of ``loss`` between
    ``estimate`` and each draw (losses defined in the module docstring).

    ``estimate``: labels (any labelling) or a point estimate; ``draws``: (draws, n) or
    (chains, draws, n) labels; ``weights``: optional non-negative weights per draw.

    >>> import numpy as np
    >>> from pymc_partitions.summaries import expected_loss
    >>> draws = np.array([[0, 0, 1, 1], [0, 0, 0, 1]])
    >>> round(expected_loss([5, 5, 7, 7], draws, loss="binder"), 4)  # 0 and 6/16, averaged
    0.1875
    """
    owner = "expected_loss"
    code = loss_code(loss, owner)
    d = label_draws(draws, weights, owner=owner)
    est = labels_vector(estimate, d.n_items, what="estimate", owner=owner)
    return float(pair_losses(est, d)[:, code] @ d.weights)


def partition_loss(a, b, loss: str = "vi") -> float:
    """``loss`` between two partitions given as label vectors (any labelling).

    >>> from pymc_partitions.summaries import partition_loss
    >>> partition_loss([0, 0, 1, 1], [0, 0, 0, 0], loss="vi")  # H(A | B) + H(B | A) = 1 + 0 bits
    1.0
    """
    owner = "partition_loss"
    code = loss_code(loss, owner)
    a = labels_vector(a, what="a", owner=owner)
    d = label_draws(labels_vector(b, a.size, what="b", owner=owner)[None, :], owner=owner)
    return float(pair_losses(a, d)[0, code])


def draw_summaries(draws: LabelDraws, reference: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Label-invariant quantities per draw: ``n_clusters``, ``largest_cluster`` and, given a
    canonical ``reference``, ``rand``, ``ari`` and ``vi`` to it (each of length S).

    >>> import numpy as np
    >>> from pymc_partitions.summaries import draw_summaries, label_draws
    >>> out = draw_summaries(label_draws([[0, 0, 1], [0, 1, 2]]), np.array([0, 0, 1]))
    >>> out["n_clusters"].tolist(), out["largest_cluster"].tolist(), out["rand"].tolist()
    ([2, 3], [2, 1], [1.0, 0.6666666666666667])
    """
    labels = draws.labels
    out = {"n_clusters": draws.n_clusters.copy(), "largest_cluster": _largest(labels, draws.n_clusters)}
    if reference is not None:
        losses = pair_losses(reference, draws)
        n = labels.shape[1]
        out["rand"] = 1.0 - losses[:, BINDER] * n / (n - 1) if n > 1 else np.ones(len(labels))
        out["ari"] = 1.0 - losses[:, OMARI]
        out["vi"] = losses[:, VI]
    return out


@numba.njit(cache=True, nogil=True)
def _largest(labels, k):
    out = np.empty(labels.shape[0], np.int64)
    counts = np.zeros(max(1, k.max()), np.int64)
    for s in range(labels.shape[0]):
        for i in range(labels.shape[1]):
            counts[labels[s, i]] += 1
        top = 0
        for b in range(k[s]):
            top = max(top, counts[b])
            counts[b] = 0
        out[s] = top
    return out
