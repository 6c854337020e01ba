"""Couplings of two categorical draws: the per-point step of a coupled Gibbs sweep.

Each function takes the two Gibbs conditionals as probability vectors and a few uniforms, and
returns one index for each chain. Each index has exactly its own chain's law whatever the other
chain does; the couplings differ in how often (and on what) the two draws agree:

* ``draw_ot``: a draw from an optimal transport plan between the two conditionals (seed 000,
  eq. 3), for a cost supplied by the caller (the Mirkin distance increase of each pair of blocks);
  ``draw_ot_metric`` the same when that cost is a metric on the atoms (it is: see
  :func:`metric_plan`), solving only the part of the problem where the two laws differ;
* ``draw_maximal``: the maximal coupling of the two label laws (the two draws are equal with the
  largest possible probability, sum_j min(p_j, q_j));
* ``draw_aligned``: the maximal coupling under a given one-to-one pairing of the atoms (the
  coupled sweep pairs each block of one chain with the block of the other it overlaps most): the
  two draws land on paired atoms with the largest possible probability; O(atoms), no solve;
* ``draw_crn``: one common uniform through both CDFs;
* ``draw_independent``: the independent coupling.
"""

from __future__ import annotations

import numba
import numpy as np

from .._numeric import inverse_cdf, relative_weights
from .transport import transport_plan_ws

__all__ = ["probabilities", "draw_ot", "draw_ot_metric", "metric_plan", "draw_maximal", "draw_aligned",
           "draw_crn", "draw_independent"]


@numba.njit(cache=True, error_model="numpy")
def probabilities(logw, count, p):
    """``p[:count]`` = normalised exp(logw[:count]). Weights below e^-37 of the largest are set to
    exactly 0, as in the single-chain draw (:func:`~pymc_partitions._numeric.relative_weights`,
    which raises ``ValueError`` on a NaN or +inf log weight, or when every log weight is -inf)."""
    total = relative_weights(logw, count, p)
    for j in range(count):
        p[j] /= total


@numba.njit(cache=True, error_model="numpy")
def draw_independent(p, cx, q, cy, u1, u2):
    return inverse_cdf(p, cx, u1), inverse_cdf(q, cy, u2)


@numba.njit(cache=True, error_model="numpy")
def draw_crn(p, cx, q, cy, u):
    """Common random number: the same uniform through both CDFs (labels in the given order)."""
    return inverse_cdf(p, cx, u), inverse_cdf(q, cy, u)


@numba.njit(cache=True, error_model="numpy")
def _residual_draw(p, count, overlap, target):
    """Index drawn from the residual ``p - overlap`` by inverting its (unnormalised) CDF at
    ``target``; -1 if the residual is empty."""
    acc = 0.0
    chosen = -1
    for j in range(count):
        r = p[j] - overlap[j]
        if r > 0.0:
            acc += r
            chosen = j
            if target < acc:
                break
    return chosen


@numba.njit(cache=True, error_model="numpy")
def draw_maximal(p, cx, q, cy, u1, u2, u3, work):
    """Maximal coupling of two laws on labels 0, 1, ...: with probability w = sum_j min(p_j, q_j)
    both take the same label j ~ min(p, q) / w; otherwise each draws from its own residual
    (p - min(p, q)) / (1 - w), independently. ``work`` holds at least max(cx, cy) floats."""
    c = max(cx, cy)
    if work.shape[0] < c or p.shape[0] < cx or q.shape[0] < cy:
        raise ValueError("draw_maximal: an array is shorter than its count")
    w = 0.0
    for j in range(c):
        work[j] = min(p[j] if j < cx else 0.0, q[j] if j < cy else 0.0)
        w += work[j]
    if u1 < w:
        j = inverse_cdf(work, c, u1)  # u1 / w is uniform on [0, 1) given u1 < w
        return j, j
    rest = 1.0 - w
    if rest <= 0.0:  # rounding: the laws are equal
        j = inverse_cdf(p, cx, u2)
        return j, j
    jx = _residual_draw(p, cx, work, u2 * rest)
    jy = _residual_draw(q, cy, work, u3 * rest)
    if jx < 0 or jy < 0:  # residual lost to rounding: the laws are equal up to it
        j = inverse_cdf(p, cx, u2)
        return j, j
    return jx, jy


@numba.njit(cache=True, error_model="numpy")
def draw_aligned(p, cx, q, cy, partner, u1, u2, u3, wp, wq):
    """Maximal coupling of ``p[:cx]`` and ``q[:cy]`` under the pairing ``partner`` (atom ``a`` of
    p is paired with atom ``partner[a]`` of q, or with none when -1; no atom of q twice): with
    probability w = sum_a min(p_a, q_partner(a)) the pair (a, partner(a)) is drawn with
    probability min(p_a, q_partner(a)) / w; otherwise each index is drawn from its own residual,
    independently (as :func:`draw_maximal`, which is the pairing a -> a). Each index has exactly
    its own law whatever the pairing. ``wp``, ``wq``: work arrays of >= cx and >= cy floats."""
    for b in range(cy):
        wq[b] = 0.0
    w = 0.0
    for a in range(cx):
        b = partner[a]
        m = min(p[a], q[b]) if b >= 0 else 0.0
        wp[a] = m
        if b >= 0:
            wq[b] = m
        w += m
    if u1 < w:
        a = inverse_cdf(wp, cx, u1)  # u1 / w is uniform on [0, 1) given u1 < w
        return a, partner[a]
    rest = 1.0 - w
    if rest > 0.0:
        a = _residual_draw(p, cx, wp, u2 * rest)
        b = _residual_draw(q, cy, wq, u3 * rest)
        if a >= 0 and b >= 0:
            return a, b
    # rounding: the laws are equal on paired atoms up to it (u1 >= w here, so wp sums to > 0 only
    # by a rounding unit): the pair drawn from the shared part at u2
    total = 0.0
    for a in range(cx):
        total += wp[a]
    if total > 0.0:
        a = inverse_cdf(wp, cx, u2 * total)
        return a, partner[a]
    return draw_independent(p, cx, q, cy, u2, u3)


@numba.njit(cache=True, error_model="numpy")
def draw_ot(p, mx, q, my, cost, u1, u2, rows, cols, mass, iwork, fwork):
    """A pair (a, b) drawn from an optimal transport plan between ``p[:mx]`` and ``q[:my]`` for
    ``cost[:mx, :my]``. The plan is exact, so each index has exactly its own law. Should the
    solver ever return no plan, the pair is drawn independently (still the right marginals)."""
    count = transport_plan_ws(p, mx, q, my, cost, rows, cols, mass, iwork, fwork)
    if count <= 0:
        return draw_independent(p, mx, q, my, u1, u2)
    acc = 0.0
    for e in range(count):
        acc += mass[e]
        if u1 < acc:
            return rows[e], cols[e]
    return rows[count - 1], cols[count - 1]


@numba.njit(cache=True, error_model="numpy")
def _north_west(rp, mx, tp, rq, my, tq, rows, cols, mass, count):
    """Append the north-west corner coupling of ``rp[:mx]`` and ``rq[:my]`` (totals ``tp``, ``tq``,
    both scaled to their mean) to the plan's ``count`` cells; returns the new count."""
    t = 0.5 * (tp + tq)
    a = 0
    b = 0
    left_a = rp[0] / tp * t
    left_b = rq[0] / tq * t
    while a < mx and b < my and count < rows.shape[0]:
        m = min(left_a, left_b)
        if m > 0.0:
            rows[count] = a
            cols[count] = b
            mass[count] = m
            count += 1
        left_a -= m
        left_b -= m
        if left_a <= left_b:
            a += 1
            if a < mx:
                left_a = rp[a] / tp * t
        else:
            b += 1
            if b < my:
                left_b = rq[b] / tq * t
    return count


@numba.njit(cache=True, error_model="numpy")
def metric_plan(p, mx, q, my, cost, rows, cols, mass, rp, rq, iwork, fwork):
    """An optimal transport plan between ``p[:mx]`` and ``q[:my]`` (each summing to one) when
    ``cost[:mx, :my]`` is a metric between the atoms: ``cost[a, b] == 0`` exactly when row atom
    ``a`` and column atom ``b`` are the same point, and the triangle inequality holds. Returns the
    number of cells; ``rows``, ``cols``, ``mass`` (length >= 2 (mx + my)) list them.

    Why it is optimal: for a metric cost (Wasserstein-1), some optimal plan keeps the shared mass
    min(p_a, q_b) of every shared point in place (rerouting c -> a -> b as c -> b never costs more,
    by the triangle inequality), and its remaining cells are an optimal plan between the residuals
    (p - min)+ and (q - min)+. So: the shared points' diagonal cells, then, on the atoms still
    carrying mass, nothing (all mass shared: equal laws give exactly the diagonal), a product
    (one residual atom on a side: the only coupling there is) or
    :func:`~pymc_partitions.coupling.transport.transport_plan_ws` on the residual supports only.
    For the coupled Gibbs sweep the atoms are sets (the blocks an item may join, the new block
    being the empty set) and the Mirkin increase |A| + |B| - 2 |A ∩ B| = |A Δ B| is the
    symmetric-difference metric. ``rp``, ``rq``: work arrays of >= mx and >= my floats."""
    count = 0
    for a in range(mx):
        rp[a] = p[a]
    for b in range(my):
        rq[b] = q[b]
    for a in range(mx):
        for b in range(my):
            if cost[a, b] == 0.0:  # the same point (at most one b per a for a metric)
                m = min(rp[a], rq[b])
                if m > 0.0:
                    rows[count] = a
                    cols[count] = b
                    mass[count] = m
                    count += 1
                    rp[a] -= m  # exactly 0 on the side with the smaller mass
                    rq[b] -= m
                break
    na = 0
    ra = -1
    tp = 0.0
    for a in range(mx):
        if rp[a] > 0.0:
            na += 1
            ra = a
            tp += rp[a]
    nb = 0
    rb = -1
    tq = 0.0
    for b in range(my):
        if rq[b] > 0.0:
            nb += 1
            rb = b
            tq += rq[b]
    if na == 0 or nb == 0:  # all mass shared (up to rounding, ~1e-16: that residue is dropped)
        return count
    if na == 1:
        for b in range(my):
            if rq[b] > 0.0:
                rows[count] = ra
                cols[count] = b
                mass[count] = rq[b]
                count += 1
        return count
    if nb == 1:
        for a in range(mx):
            if rp[a] > 0.0:
                rows[count] = a
                cols[count] = rb
                mass[count] = rp[a]
                count += 1
        return count
    k = transport_plan_ws(rp, mx, rq, my, cost, rows[count:], cols[count:], mass[count:], iwork, fwork)
    if k <= 0:  # (never for finite costs) the north-west corner plan of the residuals: exact marginals
        return _north_west(rp, mx, tp, rq, my, tq, rows, cols, mass, count)
    scale = 0.5 * (tp + tq)  # the solver's plan sums to one
    for e in range(count, count + k):
        mass[e] *= scale
    return count + k


@numba.njit(cache=True, error_model="numpy")
def draw_ot_metric(p, mx, q, my, cost, u1, rows, cols, mass, rp, rq, iwork, fwork):
    """A pair (a, b) drawn from :func:`metric_plan` by inverting its cumulative mass at ``u1``."""
    count = metric_plan(p, mx, q, my, cost, rows, cols, mass, rp, rq, iwork, fwork)
    acc = 0.0
    for e in range(count):
        acc += mass[e]
        if u1 < acc:
            return rows[e], cols[e]
    return rows[count - 1], cols[count - 1]
