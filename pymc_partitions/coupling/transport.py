"""Exact solver for small discrete optimal-transport problems, compiled with numba.

A coupled Gibbs sampler draws each data point's pair of cluster labels from an optimal
coupling of the two chains' conditional distributions, so it solves one small transport
problem (2..50 clusters on each side, occasionally a few hundred) per data point and sweep.
POT's ``ot.emd`` is exact, but each call costs tens of microseconds of Python overhead, far
more than the rest of a compiled Gibbs step, and it cannot be called from numba.
:func:`transport_plan` is a ``numba.njit`` transportation simplex meant to be called from
inside other jitted code: about 1 us for 5x5, 11 us for 20x20, 75 us for 50x50.

Method
------
Each side's masses are renormalised and rounded to integers in units of ``2**-62`` of the
total, the rounding residue (at most about ``2**-52``) going to the largest entry, so both
sides sum to exactly ``2**62`` (entries below ``2**-63`` of the total become 0 and are
dropped). All flow arithmetic is then exact integer arithmetic; only costs and potentials
are floating point. A matrix-minimum greedy start (repeatedly fill the cheapest cell of the live
rows and columns) gives a basis tree of ``ma + mb - 1`` cells. Potentials
``u_i + v_j = c_ij`` live on the tree; pricing scans rows cyclically from where it last
stopped, at least two rows and on until a negative reduced cost is seen, and takes the most
negative one seen (partial Dantzig pricing; a full scan per pivot is several times slower
from 50x50 up). The entering cell closes a cycle in the tree, the leaving cell is chosen
on it, and the subtree cut off by the leaving cell is re-hung at the entering cell
(parents, depths, subtree sizes and potentials updated on that subtree only).

Degeneracy (zero flows and ties: common with Hamming-type costs and equal marginals) is
handled by Cunningham's strongly feasible trees, implemented as the equivalent symbolic
perturbation: with the last column as the root, every other node gets an extra supply of
an infinitesimal ``delta``. Every basis tree is nondegenerate for the perturbed problem, so
each pivot strictly lowers the perturbed cost and no basis can repeat (no cycling, for
any entering rule), and a basis that is optimal for the perturbed problem is optimal for
the real one. In a tree the ``delta`` part of the flow on the edge above node ``x`` is
``+size(x)`` if ``x`` is a row and ``-size(x)`` if it is a column (``size`` = number of nodes
in the subtree of ``x``), so the ratio test is a lexicographic comparison of
``(flow, coefficient)`` pairs needing no extra storage; the greedy start tracks the
coefficients explicitly. Because the flows are exact, ties are exact and this argument
holds literally: the start is always a spanning tree of ``ma + mb - 1`` cells feasible for
the perturbed problem, and the pivots cannot cycle. (An earlier version kept the flows in
floating point with a tie tolerance of ``1e-14`` and rounded tied flows to zero; with two
marginals equal up to rounding, the case of two coupled chains that are close, the
discarded residues accumulated, the tolerance-based comparisons became inconsistent with
the actual remaining masses, and the greedy start could end with rows and columns still
open and no spanning tree.) The basis is optimal when no reduced cost is below
``-1e-12 * max|cost|``, far above the rounding error of the potentials, so every pivot
taken has a truly negative reduced cost. The output is the basis cells with positive
flow, as floats; the plan's marginals are those of the rounded masses, within a few
``1e-16`` of ``a / a.sum()`` and ``b / b.sum()``, and a plan between identical masses is
exactly their diagonal.
"""

import warnings

import numba
import numpy as np

from .. import _checks

__all__ = [
    "transport_plan",
    "transport_plan_ws",
    "transport_plan_info",
    "workspace_sizes",
    "make_workspace",
    "transport_plan_pot",
]

_CTOL = 1e-12  # reduced costs above -_CTOL * max|cost| count as nonnegative
_UNIT = 1 << 62  # masses are integers in units of 2**-62 of the total (exact arithmetic)
_UNITF = float(1 << 62)
_INV_UNIT = 2.0 ** -62
_BLOCK = 2  # partial pricing: rows scanned at least (then on until a candidate is found)


@numba.njit(cache=True)
def workspace_sizes(na, nb):
    """Lengths ``(n_int, n_float)`` of the int64 and float64 work arrays that
    :func:`transport_plan_ws` needs for an ``na`` x ``nb`` problem (enough for any smaller
    one too)."""
    n = na + nb
    return 6 * na + 6 * nb + 17 * n + 2, na + 2 * n + na * nb


@numba.njit(cache=True)
def make_workspace(na, nb):
    """Work arrays ``(iwork, fwork)`` for problems up to ``na`` x ``nb``."""
    ni, nf = workspace_sizes(na, nb)
    return np.empty(ni, dtype=np.int64), np.empty(nf, dtype=np.float64)


@numba.njit(cache=True, error_model="numpy")
def _tree_from_root(iw, fw, n, HEAD, NXT, HTO, PAR, PARC, DEP, SIZ, ORD, POT, ACOST):
    """Root the basis tree at node n - 1 by breadth-first search: parents, parent edges,
    depths, BFS order, subtree sizes and potentials (root potential 0). Returns the number
    of nodes reached."""
    root = n - 1
    iw[PAR + root] = -1
    iw[PARC + root] = -1
    iw[DEP + root] = 0
    fw[POT + root] = 0.0
    iw[ORD] = root
    return _hang(iw, fw, HEAD, NXT, HTO, PAR, PARC, DEP, SIZ, ORD, POT, ACOST)


@numba.njit(cache=True, error_model="numpy")
def _hang(iw, fw, HEAD, NXT, HTO, PAR, PARC, DEP, SIZ, ORD, POT, ACOST):
    """Breadth-first search of the subtree below ``iw[ORD]`` (whose parent, depth and potential
    are set): parents, parent edges, depths, potentials, BFS order and subtree sizes. Returns
    the number of nodes reached."""
    hd = 0
    tail = 1
    while hd < tail:
        x = iw[ORD + hd]
        hd += 1
        px = iw[PAR + x]
        dx = iw[DEP + x] + 1
        ux = fw[POT + x]
        h = iw[HEAD + x]
        while h >= 0:
            y = iw[HTO + h]
            if y != px:
                k = h >> 1
                iw[PAR + y] = x
                iw[PARC + y] = k
                iw[DEP + y] = dx
                fw[POT + y] = fw[ACOST + k] - ux
                iw[ORD + tail] = y
                tail += 1
            h = iw[NXT + h]
    for t in range(tail):
        iw[SIZ + iw[ORD + t]] = 1
    for t in range(tail - 1, 0, -1):
        x = iw[ORD + t]
        iw[SIZ + iw[PAR + x]] += iw[SIZ + x]
    return tail


@numba.njit(cache=True, error_model="numpy")
def transport_plan_info(a, na, b, nb, cost, rows, cols, mass, iwork, fwork):
    """:func:`transport_plan_ws` returning ``(count, pivots, status)``.

    status 0: optimal. 2: ``a[:na]`` or ``b[:nb]`` has no positive finite total, or holds a NaN
    or +inf (count 0). 4: an array is too short for ``na``, ``nb`` (count 0). 5: a cost between
    two entries of positive mass is not finite (count 0). For finite costs and masses with
    positive finite totals the status is always 0: 1 (pivot limit ``1000 + 50 (na + nb)**2``
    reached; the plan is a valid coupling but may not be optimal) and 3 (internal
    inconsistency, count 0) are guards against programming errors only. The method provably
    terminates (exact flows, no cycling); pivot counts seen in practice are below
    ``2 (na + nb)``.
    """
    iw = iwork
    fw = fwork
    nn = na + nb
    ni, nf = workspace_sizes(na, nb)
    if (na < 0 or nb < 0 or iw.size < ni or fw.size < nf or a.size < na or b.size < nb or cost.shape[0] < na
            or cost.shape[1] < nb or rows.size < nn or cols.size < nn or mass.size < nn):
        return 0, 0, 4
    # int64 work layout (offsets into iw)
    IA = 0  # original index of each kept row
    JB = IA + na  # original index of each kept column
    KA = JB + nb  # greedy: delta coefficient of each row's remaining supply
    KB = KA + na  # greedy: delta coefficient of each column's remaining demand
    COLACT = KB + nb  # greedy: live columns
    ALIVE = COLACT + nb  # greedy: position of a column in COLACT, -1 once used up
    ROWACT = ALIVE + nb  # greedy: live rows
    RBEST = ROWACT + na  # greedy: cheapest live column of ROWACT[t] (maybe stale)
    AR = RBEST + na  # basis cell k = (AR[k], AC[k]) in kept-row/column numbering
    AC = AR + nn
    PAR = AC + nn  # tree over nodes 0..ma-1 (rows) and ma..n-1 (columns), root n-1
    PARC = PAR + nn  # basis cell joining a node to its parent
    ORD = PARC + nn  # BFS order (of the whole tree or of a re-hung subtree)
    DEP = ORD + nn
    SIZ = DEP + nn
    PQ = SIZ + nn  # cycle: tree path from the entering column up to the apex
    PP = PQ + nn  # cycle: tree path from the entering row up to the apex
    HEAD = PP + nn  # adjacency lists; half-edge 2k sits at the row of cell k, 2k+1 at its column
    NXT = HEAD + nn
    PRV = NXT + 2 * nn
    HTO = PRV + 2 * nn  # node at the other end of a half-edge
    META = HTO + 2 * nn  # numbers of kept rows and columns (for _strongly_feasible)
    QA = META + 2  # kept masses in units of 2**-62 (each side sums to exactly 2**62)
    QB = QA + na
    REMA = QB + nb  # greedy: remaining supply / demand (units)
    REMB = REMA + na
    AF = REMB + nb  # flow of basis cell k (units)
    # float64 work layout (offsets into fw)
    RBC = 0  # greedy: cost of RBEST
    POT = RBC + na  # potentials u (rows) then v (columns)
    ACOST = POT + nn  # cost of basis cell k
    CL = ACOST + nn  # kept cost submatrix, row-major

    # ---- kept rows and columns, masses as exact integers --------------------------------
    # Each side is renormalised (by a compensated sum) and rounded to integer multiples of
    # 2**-62, the rounding residue (about 2**-52 of the total at most) going to the largest
    # entry, so that both sides sum to exactly 2**62. From here on all flow arithmetic is
    # exact integer arithmetic: ties are exact ties, no tolerance is needed, and the
    # symbolic perturbation below is exactly consistent. Entries below 2**-63 of the total
    # round to zero and are dropped.
    sa = 0.0
    ca = 0.0
    for i in range(na):
        x = a[i]
        if x > 0.0:
            t = sa + x
            ca += ((sa - t) + x) if sa >= x else ((x - t) + sa)
            sa = t
        elif x != x:  # NaN: not a mass (entries <= 0, -inf included, just get none)
            return 0, 0, 2
    sa += ca
    sb = 0.0
    ca = 0.0
    for j in range(nb):
        x = b[j]
        if x > 0.0:
            t = sb + x
            ca += ((sb - t) + x) if sb >= x else ((x - t) + sb)
            sb = t
        elif x != x:
            return 0, 0, 2
    sb += ca
    if not (sa > 0.0 and sa < np.inf and sb > 0.0 and sb < np.inf):
        return 0, 0, 2
    ma = 0
    tot = 0
    big = 0
    for i in range(na):
        x = a[i]
        if x > 0.0:
            q = np.int64(x / sa * _UNITF + 0.5)
            if q > 0:
                iw[IA + ma] = i
                iw[QA + ma] = q
                tot += q
                if q > iw[QA + big]:
                    big = ma
                ma += 1
    iw[QA + big] += _UNIT - tot
    mb = 0
    tot = 0
    big = 0
    for j in range(nb):
        x = b[j]
        if x > 0.0:
            q = np.int64(x / sb * _UNITF + 0.5)
            if q > 0:
                iw[JB + mb] = j
                iw[QB + mb] = q
                tot += q
                if q > iw[QB + big]:
                    big = mb
                mb += 1
    iw[QB + big] += _UNIT - tot
    iw[META] = ma
    iw[META + 1] = mb
    if ma == 1:
        for j in range(mb):
            rows[j] = iw[IA]
            cols[j] = iw[JB + j]
            mass[j] = iw[QB + j] * _INV_UNIT
        return mb, 0, 0
    if mb == 1:
        for i in range(ma):
            rows[i] = iw[IA + i]
            cols[i] = iw[JB]
            mass[i] = iw[QA + i] * _INV_UNIT
        return ma, 0, 0
    n = ma + mb

    # ---- kept cost submatrix and the reduced-cost tolerance ------------------------------
    scale = 0.0
    for i in range(ma):
        ri = iw[IA + i]
        base = CL + i * mb
        for j in range(mb):
            c = cost[ri, iw[JB + j]]
            fw[base + j] = c
            c = abs(c)
            if c > scale:
                scale = c
            elif not c <= scale:  # NaN
                return 0, 0, 5
    if scale == np.inf:
        return 0, 0, 5
    ctol = _CTOL * scale
    cl = fw[CL:CL + ma * mb]

    # ---- matrix-minimum greedy start on the perturbed masses -----------------------------
    # Perturbed supplies: row i: qa[i] + delta; column j: demand qb[j] - delta; root column
    # mb - 1: demand qb[mb-1] + (n - 1) delta (both sides total 2**62 + ma delta). Remaining
    # masses are exact (value, coefficient) pairs compared lexicographically. The perturbed
    # problem is nondegenerate (no proper subset of rows and columns balances), so each
    # step uses up exactly one row or column except the last, which uses up both, and the
    # cells form a spanning tree feasible for it (a strongly feasible tree). The choice is
    # also forced structurally once one side has a single line left (the comparison then
    # agrees anyway), so the cells always form a spanning tree.
    for i in range(ma):
        iw[REMA + i] = iw[QA + i]
        iw[KA + i] = 1
    for j in range(mb):
        iw[REMB + j] = iw[QB + j]
        iw[KB + j] = -1
        iw[COLACT + j] = j
        iw[ALIVE + j] = j
    iw[KB + mb - 1] = n - 1
    nact = mb
    for i in range(ma):
        iw[ROWACT + i] = i
        base = i * mb
        jj = 0
        cc = cl[base]
        for j in range(1, mb):
            c = cl[base + j]
            if c < cc:
                cc = c
                jj = j
        iw[RBEST + i] = jj
        fw[RBC + i] = cc
    nrow = ma
    narc = 0
    while nrow > 0:
        t_best = 0
        c_best = fw[RBC]
        for t in range(1, nrow):
            c = fw[RBC + t]
            if c < c_best:
                c_best = c
                t_best = t
        i = iw[ROWACT + t_best]
        j = iw[RBEST + t_best]
        if iw[ALIVE + j] < 0:
            # stale (that column is used up; the cost is a lower bound): refresh and reselect
            base = i * mb
            jj = iw[COLACT]
            cc = cl[base + jj]
            for t2 in range(1, nact):
                j2 = iw[COLACT + t2]
                c = cl[base + j2]
                if c < cc:
                    cc = c
                    jj = j2
            iw[RBEST + t_best] = jj
            fw[RBC + t_best] = cc
            continue
        if nrow == 1:
            cmp = 0 if nact == 1 else 1
        elif nact == 1:
            cmp = -1
        else:
            d = iw[REMA + i] - iw[REMB + j]
            if d > 0:
                cmp = 1
            elif d < 0:
                cmp = -1
            elif iw[KA + i] < iw[KB + j]:
                cmp = -1
            else:  # (equal pairs cannot occur before the last cell)
                cmp = 1
        iw[AR + narc] = i
        iw[AC + narc] = j
        if cmp < 0:  # row i used up
            iw[AF + narc] = iw[REMA + i]
            narc += 1
            iw[REMB + j] -= iw[REMA + i]
            iw[KB + j] -= iw[KA + i]
            nrow -= 1
            iw[ROWACT + t_best] = iw[ROWACT + nrow]
            iw[RBEST + t_best] = iw[RBEST + nrow]
            fw[RBC + t_best] = fw[RBC + nrow]
            continue
        # column j used up (cmp == 0: both, the last cell)
        iw[AF + narc] = iw[REMB + j]
        narc += 1
        iw[REMA + i] -= iw[REMB + j]
        iw[KA + i] -= iw[KB + j]
        if cmp == 0:
            break
        nact -= 1
        t = iw[ALIVE + j]
        j2 = iw[COLACT + nact]
        iw[COLACT + t] = j2
        iw[ALIVE + j2] = t
        iw[ALIVE + j] = -1
    if narc != n - 1:
        return 0, 0, 3

    # ---- basis tree: adjacency lists, then rooted at the last column --------------------
    for k in range(narc):
        fw[ACOST + k] = cl[iw[AR + k] * mb + iw[AC + k]]
    for x in range(n):
        iw[HEAD + x] = -1
    for h in range(2 * narc):
        k = h >> 1
        if (h & 1) == 0:
            x = iw[AR + k]
            iw[HTO + h] = ma + iw[AC + k]
        else:
            x = ma + iw[AC + k]
            iw[HTO + h] = iw[AR + k]
        g = iw[HEAD + x]
        iw[NXT + h] = g
        iw[PRV + h] = -1
        if g >= 0:
            iw[PRV + g] = h
        iw[HEAD + x] = h
    if _tree_from_root(iw, fw, n, HEAD, NXT, HTO, PAR, PARC, DEP, SIZ, ORD, POT, ACOST) != n:
        return 0, 0, 3

    # ---- simplex pivots ------------------------------------------------------------------
    max_pivots = 1000 + 50 * n * n
    pivots = 0
    status = 0
    rot = 0
    pu = fw[POT:POT + ma]
    pv = fw[POT + ma:POT + n]
    while True:
        # partial pricing: rows from `rot` on, stop once _BLOCK rows have been scanned
        # and a negative reduced cost was seen; take the most negative one seen
        best = -ctol
        bp = -1
        cnt = 0
        i = rot
        while cnt < ma:
            base = i * mb
            m = np.inf
            for j in range(mb):
                r = cl[base + j] - pv[j]
                if r < m:
                    m = r
            r = m - pu[i]
            if r < best:
                best = r
                bp = i
            cnt += 1
            i += 1
            if i == ma:
                i = 0
            if bp >= 0 and cnt >= _BLOCK:
                break
        rot = i
        if bp < 0:
            break
        if pivots >= max_pivots:
            status = 1
            break
        pivots += 1
        base = bp * mb
        bq = 0
        m = np.inf
        for j in range(mb):
            r = cl[base + j] - pv[j]
            if r < m:
                m = r
                bq = j
        Q = ma + bq
        # cycle: tree paths from column node Q and row node bp up to their common ancestor
        x = Q
        y = bp
        nq = 0
        npp = 0
        while iw[DEP + x] > iw[DEP + y]:
            iw[PQ + nq] = x
            nq += 1
            x = iw[PAR + x]
        while iw[DEP + y] > iw[DEP + x]:
            iw[PP + npp] = y
            npp += 1
            y = iw[PAR + y]
        while x != y:
            iw[PQ + nq] = x
            nq += 1
            x = iw[PAR + x]
            iw[PP + npp] = y
            npp += 1
            y = iw[PAR + y]
        # Flow goes round bp -> Q -> (tree) -> bp. It decreases on the edges above column
        # nodes of the Q path (delta coefficient -size) and above row nodes of the bp path
        # (coefficient +size). Leaving: smallest flow, ties broken by smallest coefficient.
        # Flows are exact integers, so ties are exact.
        theta = _UNIT
        kbest = n + 1
        leave = -1
        for t in range(nq):
            x = iw[PQ + t]
            if x >= ma:
                f = iw[AF + iw[PARC + x]]
                if f < theta or (f == theta and -iw[SIZ + x] < kbest):
                    theta = f
                    kbest = -iw[SIZ + x]
                    leave = x
        for t in range(npp):
            x = iw[PP + t]
            if x < ma:
                f = iw[AF + iw[PARC + x]]
                if f < theta or (f == theta and iw[SIZ + x] < kbest):
                    theta = f
                    kbest = iw[SIZ + x]
                    leave = x
        if theta > 0:
            for t in range(nq):
                x = iw[PQ + t]
                k = AF + iw[PARC + x]
                if x >= ma:
                    iw[k] -= theta
                else:
                    iw[k] += theta
            for t in range(npp):
                x = iw[PP + t]
                k = AF + iw[PARC + x]
                if x < ma:
                    iw[k] -= theta
                else:
                    iw[k] += theta
        # The subtree T below `leave` contains endpoint e of the entering cell; it is cut
        # off and re-hung below the other endpoint fnode. Cell k is reused for the new cell.
        k = iw[PARC + leave]
        if leave >= ma:
            e = Q
            fnode = bp
        else:
            e = bp
            fnode = Q
        s = iw[SIZ + leave]
        y = iw[PAR + leave]
        while y >= 0:
            iw[SIZ + y] -= s
            y = iw[PAR + y]
        y = fnode
        while y >= 0:
            iw[SIZ + y] += s
            y = iw[PAR + y]
        for h in range(2 * k, 2 * k + 2):  # unlink the leaving cell's half-edges
            x = iw[HTO + (h ^ 1)]
            g = iw[PRV + h]
            if g >= 0:
                iw[NXT + g] = iw[NXT + h]
            else:
                iw[HEAD + x] = iw[NXT + h]
            g = iw[NXT + h]
            if g >= 0:
                iw[PRV + g] = iw[PRV + h]
        iw[AR + k] = bp
        iw[AC + k] = bq
        iw[AF + k] = theta
        fw[ACOST + k] = cl[base + bq]
        iw[HTO + 2 * k] = Q
        iw[HTO + 2 * k + 1] = bp
        for h in range(2 * k, 2 * k + 2):  # link the entering cell's half-edges
            x = bp if h == 2 * k else Q
            g = iw[HEAD + x]
            iw[NXT + h] = g
            iw[PRV + h] = -1
            if g >= 0:
                iw[PRV + g] = h
            iw[HEAD + x] = h
        iw[PAR + e] = fnode
        iw[PARC + e] = k
        iw[DEP + e] = iw[DEP + fnode] + 1
        fw[POT + e] = fw[ACOST + k] - fw[POT + fnode]
        iw[ORD] = e
        _hang(iw, fw, HEAD, NXT, HTO, PAR, PARC, DEP, SIZ, ORD, POT, ACOST)  # re-hang the subtree below e

    # ---- output: the cells of the final basis with positive flow ------------------------
    count = 0
    for k in range(narc):
        f = iw[AF + k]
        if f > 0:
            rows[count] = iw[IA + iw[AR + k]]
            cols[count] = iw[JB + iw[AC + k]]
            mass[count] = f * _INV_UNIT
            count += 1
    return count, pivots, status


@numba.njit(cache=True)
def _strongly_feasible(na, nb, iwork, fwork, tol):
    """Test hook: whether the final basis tree left in the work arrays by a successful
    solve of an ``na`` x ``nb`` problem is strongly feasible, i.e. every tree cell with flow
    <= tol joins a row to its parent column (points towards the root). This is what the
    anti-cycling rule maintains. Offsets as in transport_plan_info."""
    nn = na + nb
    AR = 4 * na + 4 * nb
    PARC = AR + 3 * nn
    META = AR + 16 * nn
    AF = META + 2 + 2 * na + 2 * nb
    ma = iwork[META]
    mb = iwork[META + 1]
    if ma <= 1 or mb <= 1:
        return True
    for x in range(ma + mb - 1):
        if iwork[AF + iwork[PARC + x]] * _INV_UNIT <= tol and x >= ma:
            return False
    return True


@numba.njit(cache=True)
def transport_plan_ws(a, na, b, nb, cost, rows, cols, mass, iwork, fwork):
    """:func:`transport_plan` with caller-provided work arrays, allocation-free: ``iwork``
    (int64) and ``fwork`` (float64) of at least the lengths given by
    ``workspace_sizes(na, nb)``, e.g. from ``make_workspace(na_max, nb_max)``. Returns 0 if
    an array is too short."""
    return transport_plan_info(a, na, b, nb, cost, rows, cols, mass, iwork, fwork)[0]


@numba.njit(cache=True)
def transport_plan(a, na, b, nb, cost, rows, cols, mass):
    """Optimal transport plan between masses ``a[:na]`` and ``b[:nb]`` for ``cost[:na, :nb]``.

    The masses are renormalised to sum to one; entries <= 0 (or below 2**-63 of the
    total) get no mass. Costs must be finite. On return ``rows[:count], cols[:count],
    mass[:count]`` (arrays of length >= na + nb) list the nonzero cells of an optimal basic
    plan (count <= na + nb - 1) whose marginals are ``a / a.sum()`` and ``b / b.sum()`` to
    rounding. Returns ``count`` (0 if either side has no positive mass, holds a NaN or +inf, an
    array is too short or a used cost is not finite: see :func:`transport_plan_info`). Allocates two
    small work arrays; :func:`transport_plan_ws` avoids that.
    """
    iwork, fwork = make_workspace(na, nb)
    return transport_plan_info(a, na, b, nb, cost, rows, cols, mass, iwork, fwork)[0]


def transport_plan_pot(a, b, cost, num_iter_max=1_000_000):
    """Reference solution via POT's exact ``ot.emd``: the dense optimal plan for the
    renormalised masses ``a``, ``b`` and ``cost[:len(a), :len(b)]``. Raises RuntimeError if
    POT does not report an optimal solution."""
    import ot

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    cost = np.asarray(cost, dtype=np.float64)
    for name, v in (("a", a), ("b", b)):
        if v.ndim != 1 or v.size == 0 or not np.isfinite(v).all() or v.min() < 0.0 or not v.sum() > 0.0:
            raise ValueError(f"transport_plan_pot: {name} must be a non-empty vector of finite masses >= 0 "
                             "with a positive total")
    if cost.ndim != 2 or cost.shape[0] < a.size or cost.shape[1] < b.size:
        raise ValueError(f"transport_plan_pot: cost must be at least ({a.size}, {b.size}), got shape {cost.shape}")
    m = np.ascontiguousarray(cost[: a.size, : b.size])
    if not np.isfinite(m).all():
        raise ValueError("transport_plan_pot: costs must be finite")
    num_iter_max = _checks.integer("num_iter_max", num_iter_max, low=1, owner="transport_plan_pot")
    a = a / a.sum()
    b = b / b.sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # POT also warns; we raise instead
        plan, log = ot.emd(a, b, m, numItermax=num_iter_max, log=True)
    if log["result_code"] != 1 or log["warning"] is not None:
        raise RuntimeError(f"ot.emd did not find an optimal plan: {log['warning']}")
    return plan
