"""Adaptive Reconfiguration Moves (Herlau, Mørup, Schmidt & Teh; seed 004), as compiled moves.

One move (their Algorithm 3, Sec. 2.2-2.4) takes the current partition ``z``, two *reference*
partitions ``za``, ``zb`` and a pair of items (i, j) on which they disagree (``za`` has i, j
together, ``zb`` apart), and an ordering of the items (a fresh random relabelling each move).
Together they are the move's index phi; the move is a Metropolis-Hastings kernel T_phi for each
phi, and phi must not depend on ``z`` (see "Exactness across chains" below).

1. U = z_i ∪ z_j; c = the coarsest common refinement of z, za and zb restricted to U. Since zb
   separates i and j, c_i != c_j.
2. Launch: the blocks of U are taken out; if z_i = z_j (a *split*) c_i and c_j become two blocks,
   else (a *merge*) c_i ∪ c_j becomes one block.
3. The other blocks of c (the refinement blocks), largest first, ties by their smallest-ranked
   member (the *earmark*), join one block of the current state or open a new one, each as a unit,
   with probability ∝ q(state after the choice) (eq. 5-7: the restricted block-wise Gibbs choice).
4. Every item h other than i, j and the earmarks, in rank order: if h ∈ U, an unrestricted Gibbs
   choice (any block or a new one); else h may stay or join the block(s) of i and j, except
   that the last of its original block's members must stay once others have joined the block
   (the uniqueness rule, eq. 17).
5. log T(z*|z) is the sum of the log probabilities of the choices; log T(z|z*) is the probability
   of the *forced* path of the same procedure from z* back to z with the same phi (each target has
   at most one path, Sec. 2.3), and the move is accepted with the MH ratio (eq. 8).

ARM alone is not ergodic: a move needs two references that disagree (with equal references it
cannot move at all), so chains that agree freeze. Interleave it with Gibbs sweeps, as seed 004
does (one move, then one sweep).

Discovery (issue 20). A move can only split along a disagreement of its references, so chains
that share a trap (every chain of a planted 4-block network merging the same two blocks) never
leave it, and a chain two splits behind its references is proposed both splits at once, whose
forced way back rebuilds a block item by item (log T(z|z*) ~ -177: rejected). Two transformations
of the references, still functions of the references and the move's seed only, fix both
(:class:`ARMKernel`'s ``synthetic`` and ``focus``):

* *synthetic reference*: with probability ``synthetic`` the second reference is replaced by a
  Jain-Neal proposal computed from the first (:func:`_synthetic_reference`; a split by
  restricted Gibbs scans, or a merge of two blocks; never accepted), so the references differ by
  one split or merge that the data favour locally -- possibly one that no chain has made;
* *pair-focused references*: with probability ``focus``, once (i, j) is drawn, the first reference
  is coarsened to one block and the second to its block of i (or of j, a fair coin) against the
  rest (:func:`_focused`): c then has at most two blocks per current block of U, and the move
  splits U in two along that block (or merges along it) -- one split or merge at a time.

The forced path. Once made, the choice of a unit (an earmark, an item) never changes again, and
it leaves a *permanent* member in the chosen block (i or j; an earmark; an item already placed;
for a block of z outside U, an original member that stays: eq. 17 keeps one whenever another unit
has joined). So the target z* fixes each choice: join i's (j's) block if the unit's final block
holds i (j); else the block now holding a permanent member, or an unmoved original member, of
the unit's final block; else a new block. :func:`_arm_path` runs the procedure in either mode:
drawing the choices with counter-based uniforms, or forcing them towards a target (T = 0 when
a forced choice is impossible or the end state is not the target). The tests check that the
forced probabilities of all targets sum to one, and that sampled proposals follow them.

Weights. A set C of s items joining a block of m others has prior weight
``log_join_set_weight(m, s)`` and likelihood log marginal(B ∪ C) - log marginal(B); opening a
block, ``log_new_set_weight(K, s)`` + log marginal(C): ratios of the prior's EPPF
(``priors.log_eppf_sizes``: CRP, Pitman-Yor, finite Dirichlet with its labelling factor, where
the new-block weight is -inf once all k components are used). Statistics of unions are formed
by ``families.kernels.pack_merge`` (no loop over the items where the statistics add). Single
items use the families' cached predictives, as a Gibbs sweep does.

Randomness. A move's 64-bit seed gives every number through counter-based uniforms
(:mod:`pymc_partitions._numeric`): stream SELECTION picks the pair, ORDER the ranks (a
Fisher-Yates permutation), ALLOCATION one uniform per choice (indexed by the unit's item),
ACCEPTANCE the MH test. Same state + same randomness -> same output.

Exactness across chains. Seed 004 draws the references from a window of all chains' past
states, the moving chain's current state included, and argues validity by diminishing
adaptation only; at finite t that is biased, and using the other chains' current states while
they move too breaks the invariance of the product pi^S. :func:`alternating_roles` gives the exact
scheme: two groups of chains take turns, a chain of the active group takes its references from
the passive group's current states, and passive chains make no ARM move that draw; each active
move is then an MH kernel whose phi does not depend on its own state, and the passive states
do not change while it is used (tests/test_arm_population.py checks pi^S invariance by
enumeration, and that the simultaneous scheme fails the same check).

Extending to likelihoods with block-pair statistics (the infinite relational model): the two
places that read the likelihood are the set weights (:func:`_set_join_weights`, a merged row's
log marginal minus the block's) and the item weights (``pack_log_preds``), plus the log target
(:func:`_log_target_rows`). A relational family needs, for a set C joining a block B, the change
of every block-pair term (B, B') -- from C's edge counts to each block (O(|C| degree) from the
members, which the merge receives) -- rather than a per-block marginal.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _checks
from .._numeric import check_seed, draw_seed, keyed_uniform, runtime_int, stream_key
from ..families.kernels import (FamilyPack, merge_work_size, pack_init, pack_log_marginal, pack_log_preds,
                                pack_merge, pack_set_stats, pack_update)
from ..partition import as_labels, canonicalize_into, integer_labels
from ..priors import log_eppf_sizes, log_join_set_weight, log_join_weight, log_new_set_weight, log_new_weight
from ..families.network import net_add_node, net_clear_counts, net_join_logw, net_node_counts
from ._mh import _canonical, _log_normaliser, _metropolis, _named_seed, _pick
from .gibbs import check_model
from .jain_neal import _proposal as _jain_neal_proposal
from .network import net_fill, net_set_counts, net_total, network_offsets

__all__ = ["arm_move", "arm_log_proposal", "arm_select_pair", "ARMKernel", "alternating_roles", "ReferencePool",
           "MODES"]

SELECTION, ORDER, ALLOCATION, ACCEPTANCE, SYNTHETIC, FOCUS = 0, 1, 2, 3, 4, 5  # streams of a move's seed
OK, DEAD_END, UNREACHABLE = 0, 1, 2  # status of a path
# layout of a path's record
R_LOGT, R_LOGPI, R_STATUS, R_SPLIT, R_USIZE, R_NREF, R_KSTART, R_KEND, R_EROWS = range(9)
RECORD = 9


# ----------------------------------------------------------------------------- compiled helpers


@numba.njit(cache=True, error_model="numpy")
def _permutation(n, key):
    """(perm, rank): a uniformly random permutation of range(n) (Fisher-Yates on the counter-based
    uniforms of ``key``) and its inverse; perm[t] is the item of rank t."""
    perm = np.arange(n)
    for t in range(n - 1, 0, -1):
        s = int(keyed_uniform(key, t) * (t + 1))
        if s > t:
            s = t
        tmp = perm[t]
        perm[t] = perm[s]
        perm[s] = tmp
    rank = np.empty(n, np.int64)
    for t in range(n):
        rank[perm[t]] = t
    return perm, rank


@numba.njit(cache=True, error_model="numpy", inline="always")
def _live_add(live, pos, nlive, r):
    live[nlive] = r
    pos[r] = nlive
    return nlive + 1


@numba.njit(cache=True, error_model="numpy", inline="always")
def _live_remove(live, pos, nlive, r):
    q = pos[r]
    last = live[nlive - 1]
    live[q] = last
    pos[last] = q
    pos[r] = -1
    return nlive - 1


@numba.njit(cache=True, error_model="numpy", inline="always")
def _forced_option(y, ti, tj, i, j, blk, wit, pos, nlive):
    """The option a forced path must take for a unit whose final block is target label ``y``:
    index in the live list, ``nlive`` for a new block, -1 if that block is not live (no path)."""
    if y == ti:
        r = blk[i]
    elif y == tj:
        r = blk[j]
    else:
        r = wit[y]
        if r < 0:
            return nlive
    return pos[r]


@numba.njit(cache=True, error_model="numpy", inline="always")
def _choose(logw, count, forced, o_forced, alloc_key, unit, res):
    """One choice of a path among the options ``logw[:count]``: ``o_forced`` on a forced path, else
    drawn with the unit's allocation uniform; log T (``res[R_LOGT]``) gains its log probability.
    Returns the option, or -1 with the path's status set (DEAD_END: no option possible on a drawn
    path; UNREACHABLE: the forced option is missing or impossible) and log T = -inf."""
    lse = _log_normaliser(logw, count)
    if forced:
        o = o_forced
    elif lse == -np.inf:
        res[R_STATUS] = DEAD_END
        res[R_LOGT] = -np.inf
        return -1
    else:
        o = _pick(logw, count, keyed_uniform(alloc_key, unit), lse)
    if o < 0 or logw[o] == -np.inf:
        res[R_STATUS] = UNREACHABLE
        res[R_LOGT] = -np.inf
        return -1
    res[R_LOGT] += logw[o] - lse
    return o


@numba.njit(cache=True, error_model="numpy", inline="always")
def _new_block_logw(prior_code, prior_params, k_other, codes, dims, data_off, stat_off, hyper_off, hyper, stats,
                    empty_rows, data, h, scratch, one):
    """Log weight of item ``h`` opening a block beside ``k_other`` others: the prior's new-block
    weight plus h's predictive under the empty row ``empty_rows[0]`` (-inf if the prior has no
    new block left)."""
    w = log_new_weight(prior_code, prior_params, k_other)
    if w > -np.inf:
        one[0] = w
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, empty_rows, runtime_int(1), data, h,
                       scratch, one)
        w = one[0]
    return w


@numba.njit(cache=True, error_model="numpy", inline="always")
def _net_join(E, f, hyper, ho, size, live, nlive, cands, n_cands, out, inn, cs, internal, logw, new_at, nw1):
    """Network family f's block-pair terms of a set of ``cs`` nodes (edges ``out``/``inn`` to each
    slot, ``internal`` inside) joining ``cands[:n_cands]`` added to ``logw[:n_cands]``, and those
    of opening a block of its own to ``logw[new_at]`` (none if ``new_at`` < 0)."""
    nw1[0] = 0.0
    net_join_logw(E, f, hyper, ho, size, live, nlive, cands, n_cands, out, inn, cs, internal, logw, nw1)
    if new_at >= 0:
        logw[new_at] += nw1[0]


@numba.njit(cache=True, error_model="numpy")
def _copy_row(stats, dst, src):
    for c in range(stats.shape[1]):
        stats[dst, c] = stats[src, c]


@numba.njit(cache=True, error_model="numpy")
def _csr(labels, k):
    """(sizes, start, items): the members of each of the k blocks of canonical ``labels``."""
    n = labels.shape[0]
    sizes = np.zeros(k, np.int64)
    for h in range(n):
        sizes[labels[h]] += 1
    start = np.zeros(k + 1, np.int64)
    for b in range(k):
        start[b + 1] = start[b] + sizes[b]
    fill = start[:k].copy()
    items = np.empty(n, np.int64)
    for h in range(n):
        items[fill[labels[h]]] = h
        fill[labels[h]] += 1
    return sizes, start, items


@numba.njit(cache=True, error_model="numpy")
def _set_join_weights(stats, live, nlive, size, lm, ra, s, members, start, work_row, cand, logw, prior_code,
                      prior_params, codes, dims, stat_off, hyper_off, hyper, work):
    """Block-wise weights (eq. 5-7) of the set in row ``ra`` (``s`` items, ``members[start:start+s]``)
    joining each live block (``logw[:nlive]``, and the joined block's log marginal in ``cand``) or
    opening a new one (``logw[nlive]``); ``lm`` caches the live blocks' log marginals. A block of
    probability 0 (log marginal -inf: a launch that merges parts a hard constraint keeps apart)
    takes no set: its weight is -inf rather than -inf - (-inf)."""
    for q in range(nlive):
        r = live[q]
        _copy_row(stats, work_row, r)
        pack_merge(codes, dims, stat_off, hyper_off, hyper, stats, work_row, ra, members, start, s, work)
        cand[q] = pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, work_row)
        if lm[r] > -np.inf:
            logw[q] = log_join_set_weight(prior_code, prior_params, size[r], s) + cand[q] - lm[r]
        else:  # an impossible block (a hard constraint broken, e.g. a merged launch): no set joins it
            logw[q] = -np.inf
    w = log_new_set_weight(prior_code, prior_params, nlive, s)
    logw[nlive] = w + lm[ra] if w > -np.inf else -np.inf


E_ROOM = 4  # blocks a path may open before its edge counts need more room (network families)


@numba.njit(cache=True, error_model="numpy")
def _arm_path(x, za, zb, i, j, perm, rank, alloc_key, forced, target, prior_code, prior_params,
              codes, dims, data_off, stat_off, hyper_off, hyper, data, width, work_size, out, res, net_ho):
    """:func:`_arm_path_room` with edge counts for ``E_ROOM`` opened blocks, run again with twice
    the room while a path needs more (same randomness: the same path)."""
    room = E_ROOM
    while True:
        _arm_path_room(x, za, zb, i, j, perm, rank, alloc_key, forced, target, prior_code, prior_params, codes, dims,
                       data_off, stat_off, hyper_off, hyper, data, width, work_size, out, res, net_ho, room)
        if res[R_EROWS] >= 0:
            return
        room *= 2


@numba.njit(cache=True, error_model="numpy")
def _arm_path_room(x, za, zb, i, j, perm, rank, alloc_key, forced, target, prior_code, prior_params,
                   codes, dims, data_off, stat_off, hyper_off, hyper, data, width, work_size, out, res, net_ho, room):
    """The ARM procedure from ``x`` (Algorithm 3), drawing its choices (``forced`` False: uniform
    ``alloc_key``/item for each unit) or forcing them towards ``target``. Writes the canonical end
    state into ``out`` and the record into ``res``: log T (-inf if no path), log pi(x), status (OK,
    DEAD_END: every option of a draw impossible, UNREACHABLE: no forced path), split launch, |U|,
    refinement blocks moved as units, K of x, K of the end state, rows of the edge-count matrices.
    A forced path that fails its first checks stops before log pi(x) is computed (NaN).

    Blocks live in *slots*: x's K blocks keep theirs (0..K-1), a block the path opens takes the
    next one (K, K + 1, ...); at most K_U are opened, K_U <= min(|U|, K of the end state), since
    each keeps a distinct item of U for good. Network families (hyper offsets ``net_ho``):
    ``E[f]`` counts the edges between the slots of the items placed so far (``blk >= 0``), and
    every weight adds the change of the block-pair terms (``families.network.net_join_logw``)
    over the live slots. ``E`` has K + min(|U|, ``room``) rows; a path that opens more blocks stops
    with ``R_EROWS`` = -1 (:func:`_arm_path` runs it again with twice the room: no array is
    rebound inside the loops, which would slow every family's path), so in the end ``E`` holds
    at most K + max(E_ROOM, 2 K_U) rows: memory O(nf (K + K_U)^2), the order of a Gibbs sweep's
    edge counts on these states, whatever |U| and n. Everything else is O(n + edges + (K + |U|)
    width)."""
    n = x.shape[0]
    for c in range(RECORD):
        res[c] = 0.0
    res[R_LOGPI] = np.nan  # (not computed when a forced path stops before building statistics)
    cx = np.empty(n, np.int64)
    k = canonicalize_into(x, cx)
    bi = cx[i]
    bj = cx[j]
    split = bi == bj
    res[R_SPLIT] = 1.0 if split else 0.0
    res[R_KSTART] = k
    xsize, xstart, xitems = _csr(cx, k)
    in_u = np.zeros(n, np.bool_)
    uitems = np.empty(n, np.int64)
    nu = 0
    for h in range(n):
        if cx[h] == bi or cx[h] == bj:
            in_u[h] = True
            uitems[nu] = h
            nu += 1
    res[R_USIZE] = nu

    # forced: the target's blocks that hold no i, j are pinned by the original members outside U
    # (checked first: most targets fail here, before any statistics are built)
    wit = np.full(n, -1, np.int64)
    ti = -1
    tj = -1
    if forced:
        ti = target[i]
        tj = target[j]
        if split == (ti == tj):
            res[R_STATUS] = UNREACHABLE
            res[R_LOGT] = -np.inf
            return
        for h in range(n):
            if not in_u[h]:
                y = target[h]
                if y != ti and y != tj:
                    if wit[y] < 0:
                        wit[y] = cx[h]
                    elif wit[y] != cx[h]:  # members of two blocks outside U can never meet
                        res[R_STATUS] = UNREACHABLE
                        res[R_LOGT] = -np.inf
                        return

    # the coarsest common refinement of x, za, zb on U: by (side, za), then by zb within each group
    map1 = np.full(2 * n, -1, np.int64)
    id1 = np.empty(nu, np.int64)
    n1 = 0
    for t in range(nu):
        h = uitems[t]
        key = za[h] + (0 if cx[h] == bi else n)
        if map1[key] < 0:
            map1[key] = n1
            n1 += 1
        id1[t] = map1[key]
    g_size, g_start, g_items = _csr(id1, n1)
    map2 = np.full(n, -1, np.int64)
    cid = np.full(n, -1, np.int64)
    nc = 0
    for g in range(n1):
        for q in range(g_start[g], g_start[g + 1]):
            h = uitems[g_items[q]]
            if map2[zb[h]] < 0:
                map2[zb[h]] = nc
                nc += 1
            cid[h] = map2[zb[h]]
        for q in range(g_start[g], g_start[g + 1]):
            map2[zb[uitems[g_items[q]]]] = -1
    cs = np.zeros(nc, np.int64)
    em = np.full(nc, -1, np.int64)  # earmark: the member of smallest rank
    for t in range(nu):
        h = uitems[t]
        c = cid[h]
        cs[c] += 1
        if em[c] < 0 or rank[h] < rank[em[c]]:
            em[c] = h
    cstart = np.zeros(nc + 1, np.int64)
    for c in range(nc):
        cstart[c + 1] = cstart[c] + cs[c]
    fill = cstart[:nc].copy()
    citems = np.empty(max(nu, 1), np.int64)
    for t in range(nu):
        c = cid[uitems[t]]
        citems[fill[c]] = uitems[t]
        fill[c] += 1
    ci = cid[i]
    cj = cid[j]
    ng = nc - 2  # refinement blocks moved as units: largest first, ties by the earmark's rank
    gl = np.empty(ng, np.int64)
    gkey = np.empty(ng, np.int64)
    q = 0
    for c in range(nc):
        if c != ci and c != cj:
            gl[q] = c
            gkey[q] = (n - cs[c]) * n + rank[em[c]]
            q += 1
    gorder = np.argsort(gkey)
    res[R_NREF] = ng
    is_earmark = np.zeros(n, np.bool_)
    for q in range(ng):
        is_earmark[em[gl[q]]] = True

    # statistics rows: block slots (x's k blocks, then the blocks the path opens: at most one per
    # item of U, each keeping a distinct item of U), the refinement blocks' sets, spare rows
    max_slots = k + nu
    ref0 = max_slots
    empty = ref0 + nc
    work_row = empty + 1
    backup = empty + 2
    n_rows = empty + 3
    stats = np.empty((n_rows, width))
    size = np.zeros(n_rows, np.int64)
    scratch = np.empty(max(1, data.shape[1]))
    work = np.empty(work_size)
    pack_init(codes, dims, stat_off, hyper_off, hyper, stats, empty)
    log_pi = 0.0
    for b in range(k):
        pack_set_stats(codes, dims, data_off, stat_off, hyper_off, hyper, stats, b, data, xitems, xstart[b], xsize[b],
                       scratch)
        log_pi += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, b)
    nf = net_ho.shape[0]
    e_rows = k + min(nu, room) if nf > 0 else 0
    E = np.zeros((nf, e_rows, e_rows))
    nout = np.zeros((nf, max_slots))
    ninn = np.zeros((nf, max_slots))
    n_touch = 2 * n
    for f in range(nf):
        n_touch = max(n_touch, 2 * int(hyper[net_ho[f] + 3]))
    ntouch = np.zeros((nf, n_touch + 1), np.int64)
    nw1 = np.empty(1)
    if nf > 0:
        net_fill(E, net_ho, hyper, n, cx)
        log_pi += net_total(E, net_ho, hyper, xsize, np.arange(k), k)
    res[R_LOGPI] = log_pi + log_eppf_sizes(prior_code, prior_params, xsize)
    for c in range(nc):
        pack_set_stats(codes, dims, data_off, stat_off, hyper_off, hyper, stats, ref0 + c, data, citems, cstart[c],
                       cs[c], scratch)

    # launch state
    live = np.empty(n_rows, np.int64)
    pos = np.full(n_rows, -1, np.int64)
    nlive = 0
    blk = np.full(n, -1, np.int64)
    for b in range(k):
        if b != bi and b != bj:
            nlive = _live_add(live, pos, nlive, b)
            size[b] = xsize[b]
    for h in range(n):
        if not in_u[h]:
            blk[h] = cx[h]
    pi_row = k
    pj_row = k + 1 if split else k
    n_slots = pj_row + 1  # slots in use
    _copy_row(stats, pi_row, ref0 + ci)
    size[pi_row] = cs[ci]
    if split:
        _copy_row(stats, pj_row, ref0 + cj)
        size[pj_row] = cs[cj]
    else:
        pack_merge(codes, dims, stat_off, hyper_off, hyper, stats, pi_row, ref0 + cj, citems, cstart[cj], cs[cj], work)
        size[pi_row] += cs[cj]
    nlive = _live_add(live, pos, nlive, pi_row)
    if split:
        nlive = _live_add(live, pos, nlive, pj_row)
    for q in range(cstart[ci], cstart[ci + 1]):
        blk[citems[q]] = pi_row
    for q in range(cstart[cj], cstart[cj + 1]):
        blk[citems[q]] = pj_row
    if nf > 0:
        net_fill(E, net_ho, hyper, n, blk)

    logw = np.empty(n_rows + 1)
    cand = np.empty(n_rows + 1)
    lm = np.empty(n_rows)
    if ng > 0:
        for q in range(nlive):
            lm[live[q]] = pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, live[q])
        for q in range(ng):
            lm[ref0 + gl[q]] = pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, ref0 + gl[q])

    # refinement blocks, as units (eq. 5-7)
    for t in range(ng):
        a = gl[gorder[t]]
        ra = ref0 + a
        s = cs[a]
        e = em[a]
        _set_join_weights(stats, live, nlive, size, lm, ra, s, citems, cstart[a], work_row, cand, logw, prior_code,
                          prior_params, codes, dims, stat_off, hyper_off, hyper, work)
        for f in range(nf):
            ct, internal = net_set_counts(hyper, net_ho[f], n, blk, citems, cstart[a], s, cid, a, nout[f], ninn[f],
                                          ntouch[f])
            _net_join(E, f, hyper, net_ho[f], size, live, nlive, live, nlive, nout[f], ninn[f], float(s), internal,
                      logw, nlive, nw1)
            net_clear_counts(nout[f], ninn[f], ntouch[f], ct)
        o = _choose(logw, nlive + 1, forced, _forced_option(target[e], ti, tj, i, j, blk, wit, pos, nlive) if forced
                    else -1, alloc_key, e, res)
        if o < 0:
            return
        if o < nlive:
            r = live[o]
            pack_merge(codes, dims, stat_off, hyper_off, hyper, stats, r, ra, citems, cstart[a], s, work)
            size[r] += s
            lm[r] = cand[o]
        else:
            r = n_slots
            n_slots += 1
            if nf > 0 and r >= e_rows:  # no room for its edge counts: run again with more
                res[R_EROWS] = -1.0
                return
            _copy_row(stats, r, ra)
            size[r] = s
            lm[r] = lm[ra]
            nlive = _live_add(live, pos, nlive, r)
        for q in range(cstart[a], cstart[a + 1]):
            blk[citems[q]] = r
            for f in range(nf):  # one member at a time: each edge inside the set counted once
                net_add_node(E, f, hyper, net_ho[f], n, blk, citems[q], r, 1.0)
        if forced:
            y = target[e]
            if y != ti and y != tj and wit[y] < 0:
                wit[y] = r

    # the items, in rank order
    orig_left = np.zeros(k, np.int64)  # original members still in each block outside U
    for b in range(k):
        if b != bi and b != bj:
            orig_left[b] = xsize[b]
    rows3 = np.empty(3, np.int64)
    one = np.empty(1)
    empty_rows = np.full(1, empty, np.int64)
    for t in range(n):
        h = perm[t]
        if h == i or h == j or is_earmark[h]:
            continue
        if in_u[h]:  # an unrestricted Gibbs choice
            r0 = blk[h]
            for f in range(nf):
                ntouch[f, n_touch] = net_node_counts(hyper, net_ho[f], n, blk, h, nout[f], ninn[f], ntouch[f], 0)
                net_add_node(E, f, hyper, net_ho[f], n, blk, h, r0, -1.0)
            size[r0] -= 1
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, r0, data, h, -1.0, scratch)
            if size[r0] == 0:  # (not reached: its block keeps i, j or an earmark)
                nlive = _live_remove(live, pos, nlive, r0)
            for q in range(nlive):
                logw[q] = log_join_weight(prior_code, prior_params, size[live[q]])
            pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, live, nlive, data, h, scratch,
                           logw)
            logw[nlive] = _new_block_logw(prior_code, prior_params, nlive, codes, dims, data_off, stat_off, hyper_off,
                                          hyper, stats, empty_rows, data, h, scratch, one)
            for f in range(nf):
                _net_join(E, f, hyper, net_ho[f], size, live, nlive, live, nlive, nout[f], ninn[f], 1.0, 0.0, logw, nlive,
                          nw1)
            o = _choose(logw, nlive + 1, forced, _forced_option(target[h], ti, tj, i, j, blk, wit, pos, nlive)
                        if forced else -1, alloc_key, h, res)
            if o < 0:
                return
            if o == nlive:
                r = n_slots
                n_slots += 1
                if nf > 0 and r >= e_rows:
                    res[R_EROWS] = -1.0
                    return
                _copy_row(stats, r, empty)
                nlive = _live_add(live, pos, nlive, r)
            else:
                r = live[o]
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, r, data, h, 1.0, scratch)
            size[r] += 1
            blk[h] = r
            for f in range(nf):
                net_add_node(E, f, hyper, net_ho[f], n, blk, h, r, 1.0)
                net_clear_counts(nout[f], ninn[f], ntouch[f], ntouch[f, n_touch])
            if forced:
                y = target[h]
                if y != ti and y != tj and wit[y] < 0:
                    wit[y] = r
        else:  # outside U: stay, or join the block(s) of i and j
            b = blk[h]
            if orig_left[b] == 1 and size[b] >= 2:  # eq. 17: the last original member stays
                if forced and (target[h] == ti or target[h] == tj):
                    res[R_STATUS] = UNREACHABLE
                    res[R_LOGT] = -np.inf
                    return
                continue
            _copy_row(stats, backup, b)
            for f in range(nf):
                ntouch[f, n_touch] = net_node_counts(hyper, net_ho[f], n, blk, h, nout[f], ninn[f], ntouch[f], 0)
                net_add_node(E, f, hyper, net_ho[f], n, blk, h, b, -1.0)
            size[b] -= 1
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, b, data, h, -1.0, scratch)
            rows3[0] = pi_row
            m = 1
            if split:
                rows3[1] = pj_row
                m = 2
            for q in range(m):
                logw[q] = log_join_weight(prior_code, prior_params, size[rows3[q]])
            if size[b] > 0:
                rows3[m] = b
                logw[m] = log_join_weight(prior_code, prior_params, size[b])
                pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows3, m + 1, data, h,
                               scratch, logw)
                for f in range(nf):
                    _net_join(E, f, hyper, net_ho[f], size, live, nlive, rows3, m + 1, nout[f], ninn[f], 1.0, 0.0, logw,
                              -1, nw1)
            else:  # alone: staying is a block of its own
                pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows3, m, data, h, scratch,
                               logw)
                logw[m] = _new_block_logw(prior_code, prior_params, nlive - 1, codes, dims, data_off, stat_off,
                                          hyper_off, hyper, stats, empty_rows, data, h, scratch, one)
                for f in range(nf):
                    _net_join(E, f, hyper, net_ho[f], size, live, nlive, rows3, m, nout[f], ninn[f], 1.0, 0.0, logw, m,
                              nw1)
            y = target[h]
            o = _choose(logw, m + 1, forced, 0 if y == ti else (1 if split and y == tj else m), alloc_key, h, res)
            if o < 0:
                return
            if o == m:
                _copy_row(stats, b, backup)
                size[b] += 1
                r = b
            else:
                r = rows3[o]
                pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, r, data, h, 1.0, scratch)
                size[r] += 1
                blk[h] = r
            for f in range(nf):
                net_add_node(E, f, hyper, net_ho[f], n, blk, h, r, 1.0)
                net_clear_counts(nout[f], ninn[f], ntouch[f], ntouch[f, n_touch])
            if o != m:
                orig_left[b] -= 1
                if size[b] == 0:
                    nlive = _live_remove(live, pos, nlive, b)

    res[R_KEND] = canonicalize_into(blk, out)
    res[R_EROWS] = E.shape[1]
    if forced:
        canon_target = np.empty(n, np.int64)
        canonicalize_into(target, canon_target)
        for h in range(n):
            if out[h] != canon_target[h]:
                res[R_STATUS] = UNREACHABLE
                res[R_LOGT] = -np.inf
                return


@numba.njit(cache=True, error_model="numpy")
def _arm_core(x, za, zb, i, j, perm, rank, alloc_key, propose, has_propose, prior_code, prior_params,
              codes, dims, data_off, stat_off, hyper_off, hyper, data, width, work_size, proposal, res_f, res_r, net_ho):
    """A proposal from ``x`` (drawn, or forced to ``propose``) into ``proposal`` with its record in
    ``res_f``, then the forced path back to ``x`` with its record in ``res_r`` (if the proposal
    was made: ``res_f`` status OK)."""
    _arm_path(x, za, zb, i, j, perm, rank, alloc_key, has_propose, propose, prior_code, prior_params,
              codes, dims, data_off, stat_off, hyper_off, hyper, data, width, work_size, proposal, res_f, net_ho)
    for c in range(RECORD):
        res_r[c] = 0.0
    if res_f[R_STATUS] != OK:
        return
    back = np.empty(x.shape[0], np.int64)
    _arm_path(proposal, za, zb, i, j, perm, rank, alloc_key, True, x, prior_code, prior_params,
              codes, dims, data_off, stat_off, hyper_off, hyper, data, width, work_size, back, res_r, net_ho)


@numba.njit(cache=True, error_model="numpy")
def _log_proposals(starts, targets, za, zb, i, j, perm, rank, prior_code, prior_params,
                   codes, dims, data_off, stat_off, hyper_off, hyper, data, width, work_size, lt, lp, net_ho):
    """lt[a, b] = log T(targets[b] | starts[a]) by the forced path, lp[a] = log pi(starts[a])."""
    out = np.empty(starts.shape[1], np.int64)
    res = np.empty(RECORD)
    for a in range(starts.shape[0]):
        lp[a] = np.nan
        for b in range(targets.shape[0]):
            _arm_path(starts[a], za, zb, i, j, perm, rank, np.uint64(0), True, targets[b], prior_code, prior_params,
                      codes, dims, data_off, stat_off, hyper_off, hyper, data, width, work_size, out, res, net_ho)
            lt[a, b] = res[R_LOGT]
            if res[R_LOGPI] == res[R_LOGPI]:
                lp[a] = res[R_LOGPI]


def _proposal_matrix(starts, targets, pack, prior_code, prior_params, za, zb, pair, perm, rank):
    """(log T (len(starts), len(targets)), log pi of the starts) of the move with phi = (za, zb, pair,
    ranks), every entry by the forced path: what the enumeration tests compare against. (log pi is
    NaN for a start from which no target in ``targets`` passes the forced path's first checks.)"""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    targets = np.ascontiguousarray(targets, dtype=np.int64)
    lt = np.empty((starts.shape[0], targets.shape[0]))
    lp = np.empty(starts.shape[0])
    _log_proposals(starts, targets, za, zb, int(pair[0]), int(pair[1]), perm, rank, prior_code, prior_params,
                   pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data,
                   pack.width, merge_work_size(pack.codes, pack.dims), lt, lp, network_offsets(pack))
    return lt, lp


@numba.njit(cache=True, error_model="numpy")
def _pair_weights(c1, k1, c2, k2):
    """For each block A of the canonical partition c1: the number of pairs of A that c2 separates,
    C(|A|, 2) - sum over blocks B of c2 of C(|A ∩ B|, 2); and (sizes, start, items) of c1's blocks."""
    sizes, start, items = _csr(c1, k1)
    count = np.zeros(k2, np.int64)
    w = np.zeros(k1, np.int64)
    for a in range(k1):
        for q in range(start[a], start[a + 1]):
            count[c2[items[q]]] += 1
        together = 0
        for q in range(start[a], start[a + 1]):
            b = c2[items[q]]
            together += count[b] * (count[b] - 1) // 2
            count[b] = 0
        w[a] = sizes[a] * (sizes[a] - 1) // 2 - together
    return w, sizes, start, items


@numba.njit(cache=True, error_model="numpy")
def _select_pair(za, zb, key, out):
    """A pair drawn uniformly among the pairs on which ``za`` and ``zb`` disagree, in O(n): the kind
    of disagreement (together in za or in zb), then a block of the partition that holds them
    together (∝ its separated pairs), then two of its items that the other separates. Writes
    [i, j, swapped] (swapped: zb is the one holding i, j together); returns False if the
    partitions are equal."""
    n = za.shape[0]
    ca = np.empty(n, np.int64)
    cb = np.empty(n, np.int64)
    ka = canonicalize_into(za, ca)
    kb = canonicalize_into(zb, cb)
    wa, sa, sta, ita = _pair_weights(ca, ka, cb, kb)
    wb, sb, stb, itb = _pair_weights(cb, kb, ca, ka)
    na = wa.sum()
    nb = wb.sum()
    if na + nb == 0:
        return False
    swapped = keyed_uniform(key, 0) * (na + nb) >= na
    if swapped:
        c1, c2, w, sizes, start, items, total = cb, ca, wb, sb, stb, itb, nb
    else:
        c1, c2, w, sizes, start, items, total = ca, cb, wa, sa, sta, ita, na
    u = keyed_uniform(key, 1) * total  # the block, ∝ its separated pairs
    a = 0
    acc = w[0]
    while a < w.shape[0] - 1 and (acc <= u or w[a] == 0):
        a += 1
        acc += w[a]
    count = np.zeros(n, np.int64)
    for q in range(start[a], start[a + 1]):
        count[c2[items[q]]] += 1
    # first item ∝ the number of items of the block the other partition separates it from
    u = keyed_uniform(key, 2) * (2 * w[a])
    acc = 0
    first = items[start[a + 1] - 1]
    for q in range(start[a], start[a + 1]):
        acc += sizes[a] - count[c2[items[q]]]
        if u < acc:
            first = items[q]
            break
    m = sizes[a] - count[c2[first]]  # then uniformly among those
    target = min(int(keyed_uniform(key, 3) * m), m - 1)
    second = -1
    for q in range(start[a], start[a + 1]):
        h = items[q]
        if c2[h] != c2[first]:
            if target == 0:
                second = h
                break
            target -= 1
    out[0] = first
    out[1] = second
    out[2] = 1 if swapped else 0
    return True


# ----------------------------------------------------------------------------- Python layer


def _references(references, n, owner):
    try:
        za, zb = references
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: references must be a pair of label vectors (za, zb)") from None
    return (as_labels(za, n, name="references[0]", owner=owner), as_labels(zb, n, name="references[1]", owner=owner))


def _oriented_pair(pair, za, zb, owner):
    """(i, j) as ints after checking that they are two distinct items on which the references
    disagree the way a move needs: together in ``za``, apart in ``zb``."""
    n = za.shape[0]
    pair = np.asarray(pair)
    if pair.shape != (2,) or pair.dtype.kind not in "iu":
        raise ValueError(f"{owner}: pair must be two integer items, got {pair!r}")
    i, j = (int(v) for v in pair)
    if i == j or min(i, j) < 0 or max(i, j) >= n:
        raise ValueError(f"{owner}: need two distinct items of 0..{n - 1}, got ({i}, {j})")
    if za[i] != za[j] or zb[i] == zb[j]:
        raise ValueError(f"{owner}: the references must hold items {i}, {j} together in references[0] and apart in "
                         "references[1] (arm_select_pair orients them)")
    return i, j


@numba.njit(cache=True)
def _acceptance(seed):
    return keyed_uniform(stream_key(seed, ACCEPTANCE), 0)


def _log_ratio(log_pi_x, log_pi_y, log_forward, log_reverse):
    """log [pi(y) T(x|y)] - log [pi(x) T(y|x)] (eq. 8). -inf when the reverse path does not exist;
    NaN (rejected) only when x and y both have probability 0."""
    if log_reverse == -math.inf:
        return -math.inf if log_pi_x > -math.inf else math.nan
    return (log_pi_y - log_pi_x) + (log_reverse - log_forward)


def _run(labels, pack, prior_code, prior_params, za, zb, i, j, perm, rank, seed, propose):
    n = labels.shape[0]
    proposal = np.empty(n, np.int64)
    res_f = np.empty(RECORD)
    res_r = np.empty(RECORD)
    forced = propose is not None
    _arm_core(labels, za, zb, i, j, perm, rank, np.uint64(stream_key(seed, ALLOCATION)), propose if forced else labels, forced,
              prior_code, prior_params, pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off,
              pack.hyper, pack.data, pack.width, merge_work_size(pack.codes, pack.dims), proposal, res_f, res_r,
              network_offsets(pack))
    info = {"skipped": False, "move": "split" if res_f[R_SPLIT] else "merge", "pair": (i, j),
            "u_size": int(res_f[R_USIZE]), "refinement_blocks": int(res_f[R_NREF]), "k_before": int(res_f[R_KSTART])}
    status = int(res_f[R_STATUS])
    if status != OK:  # a dead end (every option of a draw impossible), or a forced proposal with no path
        info.update(accepted=False, log_ratio=-math.inf, delta_k=0, log_forward=-math.inf, log_reverse=math.nan,
                    proposal=None, dead_end=status == DEAD_END)
        return _canonical(labels), info
    log_ratio = _log_ratio(res_f[R_LOGPI], res_r[R_LOGPI], res_f[R_LOGT], res_r[R_LOGT])
    state, accepted = _metropolis(labels, proposal, log_ratio, float(_acceptance(seed)))
    k_after = int(res_f[R_KEND]) if accepted else int(res_f[R_KSTART])
    info.update(accepted=accepted, log_ratio=float(log_ratio), delta_k=k_after - int(res_f[R_KSTART]),
                log_forward=float(res_f[R_LOGT]), log_reverse=float(res_r[R_LOGT]), proposal=proposal,
                dead_end=False, log_target=(float(res_f[R_LOGPI]), float(res_r[R_LOGPI])))
    return state, info


def _order(n, seed):
    return _permutation(n, np.uint64(stream_key(seed, ORDER)))


def arm_move(labels, pack: FamilyPack, prior_code: int, prior_params, references, pair, seed, *, order_seed=None,
             propose=None):
    """One ARM move with fixed references and pair; returns (canonical labels, info).

    Parameters
    ----------
    labels : (n,) ints in [0, n)
        The current partition.
    pack, prior_code, prior_params :
        The likelihoods (:class:`~pymc_partitions.families.kernels.FamilyPack`) and prior
        (``prior.code``, ``prior.kernel_params()``).
    references : (za, zb)
        Two partitions of the n items with ``pair`` together in ``za`` and apart in ``zb``
        (:func:`arm_select_pair` draws a pair and orients them).
    pair : (i, j)
    seed : int in [0, 2^64)
        All the move's other randomness: the ranks (unless ``order_seed``), one uniform per
        choice, the acceptance uniform.
    order_seed : int, optional
        Take the ranks (the random relabelling) from this seed instead: a fixed order with
        varying choices, for tests of T_phi.
    propose : labels, optional
        Force the proposal to this partition (for tests: the returned info then has its log
        ratio; ``info["proposal"]`` is None if the kernel cannot propose it).

    info: ``move`` ("split" or "merge" launch), ``accepted``, ``log_ratio``, ``u_size`` (|U|),
    ``refinement_blocks`` (blocks moved as units), ``k_before``, ``delta_k`` (change in the number
    of blocks; 0 if rejected), ``log_forward`` / ``log_reverse`` (log T of the proposal and of
    the way back), ``proposal``, ``dead_end`` (no option possible at some choice: rejected),
    ``pair``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_partitions.families.kernels import FamilyPack, DIAG_NORMAL, diag_normal_hyper
    >>> from pymc_partitions.priors import CRP
    >>> y = np.r_[np.zeros(4), np.ones(4) * 5.0][:, None]
    >>> pack = FamilyPack.build([(DIAG_NORMAL, y, diag_normal_hyper(2.5, 3.0, 1.0, 1))])
    >>> prior = CRP(1.0)
    >>> za, zb = np.zeros(8, int), np.repeat([0, 1], 4)  # 0 and 7 together in za, apart in zb
    >>> new, info = arm_move(np.zeros(8, int), pack, prior.code, prior.kernel_params(), (za, zb), (0, 7), seed=3)
    >>> info["move"], info["u_size"]
    ('split', 8)
    """
    owner = "arm_move"
    prior_code, prior_params = check_model(pack, prior_code, prior_params, owner, network=True)
    n = pack.data.shape[0]
    labels = as_labels(labels, n, owner=owner)
    za, zb = _references(references, n, owner)
    i, j = _oriented_pair(pair, za, zb, owner)
    seed = check_seed(seed, owner)
    perm, rank = _order(n, seed if order_seed is None else _named_seed(order_seed, "order_seed", owner))
    if propose is not None:
        propose = as_labels(propose, n, name="propose", owner=owner)
    return _run(labels, pack, prior_code, prior_params, za, zb, i, j, perm, rank, seed, propose)


def arm_log_proposal(labels, proposal, pack: FamilyPack, prior_code: int, prior_params, references, pair, seed, *,
                     order_seed=None) -> float:
    """log T(proposal | labels) of the ARM move with these references, pair and ranks (from
    ``order_seed`` if given, else ``seed``), by the forced path: -inf if the move cannot propose it."""
    owner = "arm_log_proposal"
    prior_code, prior_params = check_model(pack, prior_code, prior_params, owner, network=True)
    n = pack.data.shape[0]
    labels = as_labels(labels, n, owner=owner)
    proposal = as_labels(proposal, n, name="proposal", owner=owner)
    za, zb = _references(references, n, owner)
    i, j = _oriented_pair(pair, za, zb, owner)
    seed = check_seed(seed, owner)
    perm, rank = _order(n, seed if order_seed is None else _named_seed(order_seed, "order_seed", owner))
    _, res = _path_record(labels, pack, prior_code, prior_params, za, zb, i, j, perm, rank, seed, proposal)
    return float(res[R_LOGT])


def _path_record(labels, pack, prior_code, prior_params, za, zb, i, j, perm, rank, seed, target=None):
    """(end state, record) of one path of the procedure (checked arguments): drawn with ``seed``'s
    allocation uniforms, or forced to ``target``. The tests read its record (``R_EROWS``...)."""
    n = labels.shape[0]
    out = np.empty(n, np.int64)
    res = np.empty(RECORD)
    forced = target is not None
    _arm_path(labels, za, zb, i, j, perm, rank, np.uint64(0 if forced else stream_key(seed, ALLOCATION)), forced,
              target if forced else labels, prior_code, prior_params, pack.codes, pack.dims, pack.data_off,
              pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width, merge_work_size(pack.codes, pack.dims),
              out, res, network_offsets(pack))
    return out, res


def arm_select_pair(references, seed):
    """A pair on which the two references disagree, uniformly among all such pairs, in O(n);
    returns ``((i, j), (za, zb))`` with the references ordered as :func:`arm_move` needs them
    (together in ``za``, apart in ``zb``), or None if the references are the same partition.

    Examples
    --------
    >>> import numpy as np
    >>> pair, (za, zb) = arm_select_pair((np.array([0, 0, 1]), np.array([0, 1, 1])), seed=5)
    >>> bool(za[pair[0]] == za[pair[1]] and zb[pair[0]] != zb[pair[1]])
    True
    """
    owner = "arm_select_pair"
    try:
        za, zb = references
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: references must be a pair of label vectors (za, zb)") from None
    za = integer_labels(za, name="references[0]", owner=owner)
    za, zb = _references((za, zb), za.shape[0], owner)
    seed = check_seed(seed, owner)
    return _select(za, zb, seed)


def _select(za, zb, seed):
    if za.shape[0] < 2:
        return None
    out = np.empty(3, np.int64)
    if not _select_pair(za, zb, np.uint64(stream_key(seed, SELECTION)), out):
        return None
    pair = (int(out[0]), int(out[1]))
    return (pair, (zb, za)) if out[2] else (pair, (za, zb))


@numba.njit(cache=True, error_model="numpy")
def _focused(zb, i, j, isolate_i):
    """Pair-focused references for the pair (i, j) of references (za, zb) that hold it together
    in za and apart in zb: za coarsened to one block, zb to two -- zb's block of i and the rest
    (``isolate_i``), or zb's block of j and the rest. They still disagree on (i, j), and the
    move they give splits U (the union of the current blocks of i and j) into its parts in
    and out of that block, or merges along them: one split or merge at a time."""
    n = zb.shape[0]
    fa = np.zeros(n, np.int64)
    fb = np.empty(n, np.int64)
    b = zb[i] if isolate_i else zb[j]
    for h in range(n):
        inside = zb[h] == b
        fb[h] = 0 if inside == isolate_i else 1
    return fa, fb


def _synthetic_reference(za, pack, prior_code, prior_params, seed, scans):
    """A Jain-Neal proposal from the reference ``za`` (pair and randomness from ``seed``'s stream
    SYNTHETIC; never accepted), or None at a dead end: depends on ``za`` and the seed only."""
    n = za.shape[0]
    key = np.uint64(stream_key(seed, SYNTHETIC))
    i = min(int(keyed_uniform(key, 1) * n), n - 1)
    j = min(int(keyed_uniform(key, 2) * (n - 1)), n - 2)
    j += j >= i
    return _jain_neal_proposal(za, pack, prior_code, prior_params, i, j, np.uint64(stream_key(key, 0)), scans)


class ARMKernel:
    """ARM moves for one model, given references: the pair is drawn from where they disagree.

    Parameters
    ----------
    pack, prior_code, prior_params :
        As for :func:`arm_move`. ``pack`` may be None and given later with :meth:`set_model`.
    synthetic : float in [0, 1], default 0.25
        Probability that the second reference is *synthetic*: a Jain-Neal split-merge proposal
        (random pair, ``synthetic_scans`` intermediate restricted scans; a merge of two blocks
        is immediate) computed from the first reference, never accepted, only used as a
        reference. The two references then differ by one split or merge that the data favour
        locally, so a move can propose a split (or merge) that no chain has made yet: ARM
        discovers structure instead of only recombining what its references hold.
    synthetic_scans : int >= 0, default 5
        Intermediate scans of the synthetic proposal (seed 004's Jain-Neal setting).
    focus : float in [0, 1], default 1.0
        Probability that, once the pair (i, j) is drawn, both references are coarsened around
        it: the first to one block, the second to the second reference's block of i (or of j,
        a fair coin) against everything else. The move then splits the union U of the pair's
        current blocks along that block, or merges along it, instead of moving every part on
        which the three partitions agree as a separate unit: one split or merge at a time,
        whose way back is likely (a move that makes two splits at once must rebuild a block
        item by item on its way back, and is rejected).

    Both options make the references functions of the references given and of the move's seed
    only -- never of the moving chain's state -- so each move stays an exact
    Metropolis-Hastings move (``tests/test_arm_enumeration.py``, ``tests/test_arm_population.py``).

    :meth:`move` / :meth:`step` take the references; with equal references there is no pair and
    the move is skipped (``info["skipped"]``) unless the synthetic reference is drawn. ARM alone
    is not ergodic: when the references agree it cannot move; interleave it with Gibbs sweeps.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_partitions.families.kernels import FamilyPack, BETA_BERNOULLI, beta_bernoulli_hyper
    >>> from pymc_partitions.priors import CRP
    >>> x = (np.random.default_rng(0).random((10, 4)) < 0.5).astype(float)
    >>> pack = FamilyPack.build([(BETA_BERNOULLI, x, beta_bernoulli_hyper(1.0, 1.0, 4))])
    >>> kernel = ARMKernel(pack, CRP(1.0).code, CRP(1.0).kernel_params())
    >>> refs = (np.arange(10) % 2, np.arange(10) % 3)
    >>> labels, info = kernel.step(np.zeros(10, int), refs, np.random.default_rng(1))
    >>> info["skipped"], info["move"] in ("split", "merge"), labels.shape
    (False, True, (10,))
    """

    def __init__(self, pack, prior_code: int, prior_params, *, synthetic=0.25, synthetic_scans=5, focus=1.0):
        owner = "ARMKernel"
        self.prior_code = _checks.integer("prior_code", prior_code, low=0, high=2, owner=owner)
        self.synthetic = _checks.probability("synthetic", synthetic, owner=owner)
        self.synthetic_scans = _checks.integer("synthetic_scans", synthetic_scans, low=0, owner=owner)
        self.focus = _checks.probability("focus", focus, owner=owner)
        self.pack = None
        self.prior_params = None
        if pack is not None:
            self.set_model(pack, prior_params)

    def set_model(self, pack: FamilyPack, prior_params) -> None:
        """New data or hyperparameter values (checked)."""
        _, self.prior_params = check_model(pack, self.prior_code, prior_params, "ARMKernel", network=True)
        self.pack = pack

    def move(self, labels, references, seed):
        """One move with its 64-bit ``seed`` (synthetic reference, pair, focus, ranks, choices,
        acceptance): (labels, info). info also says whether the second reference was synthetic
        (``synthetic``) and the references were focused (``focused``; ``isolated``: the item of
        the pair whose block in the second reference was kept, else None)."""
        if self.pack is None:
            raise RuntimeError("ARMKernel has no model yet: call set_model(pack, prior_params)")
        owner = "ARMKernel"
        n = self.pack.data.shape[0]
        labels = as_labels(labels, n, owner=owner)
        za, zb = _references(references, n, owner)
        seed = check_seed(seed, owner)
        synthetic = False
        if n >= 2 and self.synthetic > 0.0 and keyed_uniform(np.uint64(stream_key(seed, SYNTHETIC)), 0) < self.synthetic:
            made = _synthetic_reference(za, self.pack, self.prior_code, self.prior_params, seed, self.synthetic_scans)
            if made is not None:
                zb, synthetic = made, True
        chosen = _select(za, zb, seed)
        if chosen is None:
            out = _canonical(labels)
            return out, _skipped(out)
        (i, j), (za, zb) = chosen
        key = np.uint64(stream_key(seed, FOCUS))
        isolated = None
        if self.focus > 0.0 and keyed_uniform(key, 0) < self.focus:
            isolated = i if keyed_uniform(key, 1) < 0.5 else j
            za, zb = _focused(zb, i, j, isolated == i)
        perm, rank = _order(n, seed)
        out, info = _run(labels, self.pack, self.prior_code, self.prior_params, za, zb, i, j, perm, rank, seed, None)
        info.update(synthetic=synthetic, focused=isolated is not None, isolated=isolated)
        return out, info

    def step(self, labels, references, rng: np.random.Generator):
        """One move with a seed drawn from ``rng``."""
        return self.move(labels, references, draw_seed(rng))


def _skipped(labels):
    return {"skipped": True, "move": None, "accepted": False, "log_ratio": math.nan, "u_size": 0,
            "refinement_blocks": 0, "k_before": int(labels.max()) + 1, "delta_k": 0, "log_forward": math.nan,
            "log_reverse": math.nan, "proposal": None, "dead_end": False, "pair": None, "synthetic": False,
            "focused": False, "isolated": None}


# ----------------------------------------------------------------------------- references across chains

MODES = ("alternating", "frozen", "paper")


def alternating_roles(n_chains: int, draw: int):
    """(active chains, passive chains) at ``draw`` in the exact alternating scheme: with 4 or more
    chains the even and odd chains take turns (even chains at even draws); with 3, one chain at a
    time (round robin). An active chain takes its two references from passive chains' current
    states; passive chains make no ARM move. Every chain derives the roles from the same draw
    counter, so they agree without talking to each other.

    Examples
    --------
    >>> alternating_roles(4, 0), alternating_roles(4, 1), alternating_roles(3, 4)
    (((0, 2), (1, 3)), ((1, 3), (0, 2)), ((1,), (0, 2)))
    """
    n_chains = _checks.integer("n_chains", n_chains, low=3, owner="alternating_roles")
    draw = _checks.integer("draw", draw, low=0, owner="alternating_roles")
    if n_chains == 3:
        active = (draw % 3,)
    else:
        active = tuple(c for c in range(n_chains) if c % 2 == draw % 2)
    return active, tuple(c for c in range(n_chains) if c not in active)


class ReferencePool:
    """Past states of all chains, from which two references are drawn (modes "frozen" and "paper").

    ``mode="frozen"``: the states of the last ``max_draws`` draws added while tuning; :meth:`freeze`
    fixes the pool (from then on the references do not depend on any chain's state: exact).
    ``mode="paper"``: seed 004's window, the states of draws floor(t/2) .. t of all chains (the
    current ones included, at most ``max_draws`` draws), one reference from the moving chain's own
    history: asymptotically valid only (diminishing adaptation), biased at any finite t.
    States are stored as int32 canonical labels.

    Examples
    --------
    >>> import numpy as np
    >>> pool = ReferencePool("frozen", max_draws=10)
    >>> pool.add([np.array([0, 0, 1]), np.array([0, 1, 1]), np.array([0, 1, 2])])
    >>> pool.freeze(); len(pool)
    3
    """

    def __init__(self, mode: str, max_draws: int = 50):
        self.mode = _checks.choice("mode", mode, ("frozen", "paper"), owner="ReferencePool")
        self.max_draws = _checks.integer("max_draws", max_draws, low=1, owner="ReferencePool")
        self.draws = []  # one (n_chains, n) int32 array per draw
        self.added = 0
        self.frozen = False

    def __len__(self):
        return sum(d.shape[0] for d in self.draws)

    def add(self, states) -> None:
        """Add one draw's states of all chains (ignored once frozen)."""
        if self.frozen:
            return
        block = np.stack([canonical_int32(s) for s in states])
        self.draws.append(block)
        self.added += 1
        keep = self.max_draws
        if self.mode == "paper":  # seed 004's window: draws floor(t/2) .. t
            keep = min(keep, self.added - self.added // 2)
        if len(self.draws) > keep:
            del self.draws[: len(self.draws) - keep]

    def freeze(self) -> None:
        self.frozen = True

    def draw(self, chain: int, rng: np.random.Generator, attempts: int = 20):
        """Two different states ((chain, labels), (chain, labels)), or None (empty pool, or only equal
        states found in ``attempts`` tries). In "paper" mode the first is from ``chain``'s history."""
        if not self.draws:
            return None
        n_chains = self.draws[0].shape[0]
        for _ in range(attempts):
            if self.mode == "paper":
                ta, ca = int(rng.integers(len(self.draws))), chain
            else:
                ta, ca = int(rng.integers(len(self.draws))), int(rng.integers(n_chains))
            tb, cb = int(rng.integers(len(self.draws))), int(rng.integers(n_chains))
            a, b = self.draws[ta][ca], self.draws[tb][cb]
            if not np.array_equal(a, b):
                return (ca, a.astype(np.int64)), (cb, b.astype(np.int64))
        return None


def canonical_int32(labels):
    out = np.empty(len(labels), np.int64)
    canonicalize_into(np.ascontiguousarray(labels, dtype=np.int64), out)
    return out.astype(np.int32)
