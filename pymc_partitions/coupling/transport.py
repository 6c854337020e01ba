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
Rows and columns whose mass is at most ``1e-14`` of the total are dropped, the rest
renormalised. A matrix-minimum greedy start (repeatedly fill the cheapest cell of the live
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
coefficients explicitly. Flows within ``1e-14`` of the smallest count as tied, and tied
flows are set to exactly zero, so the tracked flows are always 0 or above the tolerance
and ties are resolved consistently. The basis is optimal when no reduced cost is below
``-1e-12 * max|cost|``; the flows are then recomputed from the tree and the renormalised
marginals, so the plan's marginals are right to rounding.
"""

import warnings

import numba
import numpy as np

__all__ = [
    "transport_plan",
    "transport_plan_ws",
    "transport_plan_info",
    "workspace_sizes",
    "make_workspace",
    "transport_plan_pot",
]

_CTOL = 1e-12  # reduced costs above -_CTOL * max|cost| count as nonnegative
_MTOL = 1e-14  # (normalised) masses and flows closer than this count as equal
_DROP = 1e-15  # final plan entries at or below this (rounding residue of zero flows) are not output
_BLOCK = 2  # partial pricing: rows scanned at least (then on until a candidate is found)


@numba.njit(cache=True)
def workspace_sizes(na, nb):
    """Lengths ``(n_int, n_float)`` of the int64 and float64 work arrays that
    :func:`transport_plan_ws` needs for an ``na`` x ``nb`` problem (enough for any smaller
    one too)."""
    n = na + nb
    return 4 * na + 4 * nb + 16 * n + 2, 3 * na + 2 * nb + 4 * n + na * nb


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

    status 0: optimal. 1: pivot limit reached (never observed; the plan is a valid coupling
    but may not be optimal). 2: ``a[:na]`` or ``b[:nb]`` has no positive finite total
    (count 0). 3: internal inconsistency, cannot happen (count 0). 4: an array is too short
    for ``na``, ``nb`` (count 0).
    """
    iw = iwork
    fw = fwork
    nn = na + nb
    ni, nf = workspace_sizes(na, nb)
    if (iw.size < ni or fw.size < nf or a.size < na or b.size < nb or cost.shape[0] < na
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
    # float64 work layout (offsets into fw)
    RA = 0  # renormalised kept masses
    RB = RA + na
    REMA = RB + nb  # greedy: remaining supply / demand
    REMB = REMA + na
    RBC = REMB + nb  # greedy: cost of RBEST
    AF = RBC + na  # flow of basis cell k
    POT = AF + nn  # potentials u (rows) then v (columns)
    NS = POT + nn  # net supply of subtrees (final flow recomputation)
    ACOST = NS + nn  # cost of basis cell k
    CL = ACOST + nn  # kept cost submatrix, row-major

    # ---- kept rows and columns, renormalised masses ------------------------------------
    # Masses at or below _MTOL of the total are dropped: the perturbation needs every kept
    # mass to exceed the tie tolerance.
    sa = 0.0
    for i in range(na):
        x = a[i]
        if x > 0.0:
            sa += x
    sb = 0.0
    for j in range(nb):
        x = b[j]
        if x > 0.0:
            sb += x
    if not (sa > 0.0 and sa < np.inf and sb > 0.0 and sb < np.inf):
        return 0, 0, 2
    lim = _MTOL * sa
    sa = 0.0
    ma = 0
    for i in range(na):
        x = a[i]
        if x > lim:
            iw[IA + ma] = i
            sa += x
            ma += 1
    lim = _MTOL * sb
    sb = 0.0
    mb = 0
    for j in range(nb):
        x = b[j]
        if x > lim:
            iw[JB + mb] = j
            sb += x
            mb += 1
    for i in range(ma):
        fw[RA + i] = a[iw[IA + i]] / sa
    for j in range(mb):
        fw[RB + j] = b[iw[JB + j]] / sb
    iw[META] = ma
    iw[META + 1] = mb
    if ma == 1:
        for j in range(mb):
            rows[j] = iw[IA]
            cols[j] = iw[JB + j]
            mass[j] = fw[RB + j]
        return mb, 0, 0
    if mb == 1:
        for i in range(ma):
            rows[i] = iw[IA + i]
            cols[i] = iw[JB]
            mass[i] = fw[RA + i]
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
    ctol = _CTOL * scale
    cl = fw[CL:CL + ma * mb]

    # ---- matrix-minimum greedy start on the perturbed masses -----------------------------
    # Perturbed supplies: row i: ra[i] + delta; column j: demand rb[j] - delta; root column
    # mb - 1: demand rb[mb-1] + (n - 1) delta. Remaining masses are (value, coefficient)
    # pairs compared lexicographically, values kept either 0 or > _MTOL. The perturbed
    # problem is nondegenerate, so each step uses up exactly one row or column except the
    # last, and the cells form a spanning tree feasible for it (a strongly feasible tree).
    for i in range(ma):
        fw[REMA + i] = fw[RA + i]
        iw[KA + i] = 1
    for j in range(mb):
        fw[REMB + j] = fw[RB + j]
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
        d = fw[REMA + i] - fw[REMB + j]
        if d > _MTOL:
            cmp = 1
        elif d < -_MTOL:
            cmp = -1
        elif iw[KA + i] < iw[KB + j]:
            cmp = -1
        elif iw[KA + i] > iw[KB + j]:
            cmp = 1
        else:
            cmp = 0
        iw[AR + narc] = i
        iw[AC + narc] = j
        if cmp < 0:  # row i used up
            fw[AF + narc] = fw[REMA + i]
            narc += 1
            rem = fw[REMB + j] - fw[REMA + i]
            fw[REMB + j] = rem if rem > _MTOL else 0.0
            iw[KB + j] -= iw[KA + i]
            nrow -= 1
            iw[ROWACT + t_best] = iw[ROWACT + nrow]
            iw[RBEST + t_best] = iw[RBEST + nrow]
            fw[RBC + t_best] = fw[RBC + nrow]
            continue
        # column j used up (cmp == 0: both, which happens only at the last cell)
        fw[AF + narc] = fw[REMB + j] if cmp > 0 else min(fw[REMA + i], fw[REMB + j])
        narc += 1
        rem = fw[REMA + i] - fw[REMB + j]
        fw[REMA + i] = rem if rem > _MTOL else 0.0
        iw[KA + i] -= iw[KB + j]
        if cmp == 0 or nact == 1:
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
        fmin = np.inf
        for t in range(nq):
            x = iw[PQ + t]
            if x >= ma:
                f = fw[AF + iw[PARC + x]]
                if f < fmin:
                    fmin = f
        for t in range(npp):
            x = iw[PP + t]
            if x < ma:
                f = fw[AF + iw[PARC + x]]
                if f < fmin:
                    fmin = f
        lim = fmin + _MTOL
        kbest = n + 1
        leave = -1
        for t in range(nq):
            x = iw[PQ + t]
            if x >= ma and fw[AF + iw[PARC + x]] <= lim and -iw[SIZ + x] < kbest:
                kbest = -iw[SIZ + x]
                leave = x
        for t in range(npp):
            x = iw[PP + t]
            if x < ma and fw[AF + iw[PARC + x]] <= lim and iw[SIZ + x] < kbest:
                kbest = iw[SIZ + x]
                leave = x
        theta = fmin
        if theta > 0.0:  # (tracked flows are 0 or > _MTOL, so theta == 0 changes nothing)
            for t in range(nq):
                x = iw[PQ + t]
                k = AF + iw[PARC + x]
                if x >= ma:
                    f = fw[k] - theta
                    fw[k] = f if f > _MTOL else 0.0
                else:
                    fw[k] += theta
            for t in range(npp):
                x = iw[PP + t]
                k = AF + iw[PARC + x]
                if x < ma:
                    f = fw[k] - theta
                    fw[k] = f if f > _MTOL else 0.0
                else:
                    fw[k] += theta
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
        fw[AF + k] = theta
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
        hd = 0
        tail = 1
        while hd < tail:  # BFS over T: new parents, depths, potentials
            x = iw[ORD + hd]
            hd += 1
            px = iw[PAR + x]
            dx = iw[DEP + x] + 1
            ux = fw[POT + x]
            h = iw[HEAD + x]
            while h >= 0:
                y = iw[HTO + h]
                if y != px:
                    kk = h >> 1
                    iw[PAR + y] = x
                    iw[PARC + y] = kk
                    iw[DEP + y] = dx
                    fw[POT + y] = fw[ACOST + kk] - ux
                    iw[ORD + tail] = y
                    tail += 1
                h = iw[NXT + h]
        for t in range(tail):
            iw[SIZ + iw[ORD + t]] = 1
        for t in range(tail - 1, 0, -1):
            x = iw[ORD + t]
            iw[SIZ + iw[PAR + x]] += iw[SIZ + x]

    # ---- flows of the final basis from the renormalised marginals ------------------------
    _tree_from_root(iw, fw, n, HEAD, NXT, HTO, PAR, PARC, DEP, SIZ, ORD, POT, ACOST)
    for i in range(ma):
        fw[NS + i] = fw[RA + i]
    for j in range(mb):
        fw[NS + ma + j] = -fw[RB + j]
    for t in range(n - 1, 0, -1):
        x = iw[ORD + t]
        fx = fw[NS + x]
        fw[AF + iw[PARC + x]] = fx if x < ma else -fx
        fw[NS + iw[PAR + x]] += fx
    count = 0
    for k in range(narc):
        f = fw[AF + k]
        if f > _DROP:
            rows[count] = iw[IA + iw[AR + k]]
            cols[count] = iw[JB + iw[AC + k]]
            mass[count] = f
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
    AF = 3 * na + 2 * nb
    ma = iwork[META]
    mb = iwork[META + 1]
    if ma <= 1 or mb <= 1:
        return True
    for x in range(ma + mb - 1):
        if fwork[AF + iwork[PARC + x]] <= tol and x >= ma:
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

    The masses are renormalised to sum to one; entries <= 0 (or at most 1e-14 of the
    total) get no mass. Costs must be finite. On return ``rows[:count], cols[:count],
    mass[:count]`` (arrays of length >= na + nb) list the nonzero cells of an optimal basic
    plan (count <= na + nb - 1) whose marginals are ``a / a.sum()`` and ``b / b.sum()`` to
    rounding. Returns ``count`` (0 if either side has no positive mass). Allocates two
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
    m = np.ascontiguousarray(np.asarray(cost, dtype=np.float64)[: a.size, : b.size])
    a = a / a.sum()
    b = b / b.sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # POT also warns; we raise instead
        plan, log = ot.emd(a, b, m, numItermax=num_iter_max, log=True)
    if log["result_code"] != 1 or log["warning"] is not None:
        raise RuntimeError(f"ot.emd did not find an optimal plan: {log['warning']}")
    return plan
