"""Particle Gibbs Split-Merge (Bouchard-Côté, Doucet & Roth 2017), as one compiled move.

One move (their Algorithms 1-3):

1. draw ``A = num_anchors`` distinct anchors, uniformly or (A = 2) from an informed proposal built
   on a fixed reference clustering (:class:`InformedAnchors`, App. F); the *closure* is the union
   of the blocks that hold an anchor; every other block stays fixed;
2. order the closure: the anchors first (in uniformly random order), then the other items in
   uniformly random order (Algorithm 2; App. D for ``A > 2``);
3. run a conditional SMC over the allocation decisions of the ordered items, the conditional
   (reference) path being the current restricted clustering, and draw the new restricted
   clustering in proportion to the final weights.

Encoding. A particle is the sequence of block indices joined by sigma_1, sigma_2, ...: anchors
may join an existing restricted block or open a new one (blocks numbered by order of opening),
the other items only join one of the open blocks. That is the bijection of App. C: for
``A = 2`` the four states of Fig. 2 are #1 = (t = 1), #2 = (one block, index 0),
#3 = (two blocks, index 0), #4 = (two blocks, index 1); the merge state is absorbing because a
non-anchor cannot open a block. Its inverse labels each closure block by the rank of its first
anchor in sigma (:func:`conditional_path`).

Targets. gamma_t is the posterior of the first t items: the prior weight of each decision
(``log_join_weight`` of the joined block's size, ``log_new_weight`` of the number of blocks,
counting the fixed blocks outside the closure) times the predictive of the item given the
block's statistics. These are ratios of the priors' EPPF (``priors.log_eppf_sizes``, which has
the k!/(k-K)! labelling factor that seed 003's tau_1 omits), so gamma_n is the exact restricted
posterior up to a constant. With ``annealed=True`` (Sec. 3.4, App. D) the targets are
1[valid] for t <= A, then gamma_A^zeta_t gamma_t / gamma_A with zeta_t = (t - A)/(n_s - A).
A valid prefix at t <= A is one of positive gamma_t (e.g. the finite Dirichlet forbids a
(k+1)-th block); this keeps particles out of dead ends and is a legitimate intermediate target.
When the closure is the anchors alone (n_s = A) the schedule is undefined and the seed's
gamma_hat_A = 1[valid] would break Assumption 3: the plain targets are used.

Storage: per particle, the statistics of at most ``A`` blocks (two buffers, for resampling),
their sizes, gamma_A, and per step its decision and parent index.

The move is a deterministic function of (state, anchors, 64-bit seed): see
:func:`pgsm_random_numbers`. ``PGSMKernel`` draws them from a numpy Generator and holds the
anchor proposal (uniform, or informed and adapted while the number of blocks breaks its record).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _checks
from .._numeric import check_seed, check_uniforms, draw_seed, inverse_cdf, keyed_bits, keyed_uniform, stream_key
from ..families.kernels import FamilyPack, pack_init, pack_log_marginal, pack_log_preds, pack_update
from ..partition import as_labels, canonicalize_into, integer_labels
from ..priors import log_join_weight, log_new_weight
from .gibbs import check_model

__all__ = ["pgsm_move", "pgsm_random_numbers", "conditional_path", "order_keys", "PGSMKernel", "InformedAnchors",
           "MOVES", "ANCHOR_PROPOSALS"]

MOVES = ("keep", "split", "merge", "reallocate")
ORDER, PROPOSAL, RESAMPLING, OUTPUT = 0, 1, 2, 3  # streams of a move's seed
_INFO_FIXED = 8  # info layout: see _pgsm_core


@numba.njit(cache=True, error_model="numpy", inline="always")
def _exp_weights(x, count):
    """Overwrite ``x[:count]`` with exp(x - max) and return (max, their sum); (-inf, 0) if all are -inf
    (a dead particle or an impossible decision: legitimate here). Then log-sum-exp = max + log(sum),
    and a draw inverts the CDF at u * sum. Raises ``ValueError`` on a NaN or +inf entry."""
    top = -np.inf
    for j in range(count):
        if x[j] > top:
            top = x[j]
    if top == -np.inf:
        for j in range(count):
            if x[j] != x[j]:
                raise ValueError("PGSM: a log weight is NaN or +inf: non-finite statistics or parameters")
            x[j] = 0.0
        return top, 0.0
    s = 0.0
    for j in range(count):
        x[j] = math.exp(x[j] - top)
        s += x[j]
    if s != s:  # a NaN entry, or +inf (inf - inf): one test after the loop
        raise ValueError("PGSM: a log weight is NaN or +inf: non-finite statistics or parameters")
    return top, s


@numba.njit(cache=True, error_model="numpy")
def _normalise(logw, w):
    """Normalised weights into ``w``; returns the relative ESS (0 if every weight is 0)."""
    n = logw.shape[0]
    for p in range(n):
        w[p] = logw[p]
    _, s = _exp_weights(w, n)
    if s == 0.0:
        return 0.0
    ss = 0.0
    for p in range(n):
        w[p] /= s
        ss += w[p] * w[p]
    return 1.0 / (ss * n)


@numba.njit(cache=True, error_model="numpy")
def _closure(labels, anchors, seed, canon, sigma, ref):
    """Canonical labels, the ordered closure ``sigma[:n_s]`` and the conditional path ``ref``.

    The non-anchors of the closure are sorted by random keys, one per item (stream ORDER of
    ``seed``): a uniformly random order, and two states given the same seed order their common
    items alike. Returns (K, number of restricted blocks, n_s). ``ref[t]`` is the restricted
    block of sigma_t, blocks numbered by the rank of their first anchor in sigma (App. C, eq. 27)."""
    n = labels.shape[0]
    n_anchors = anchors.shape[0]
    k = canonicalize_into(labels, canon)
    new_id = np.full(k, -1, np.int64)
    nb = 0
    is_anchor = np.zeros(n, np.bool_)
    for a in range(n_anchors):
        b = canon[anchors[a]]
        if new_id[b] < 0:
            new_id[b] = nb
            nb += 1
        sigma[a] = anchors[a]
        is_anchor[anchors[a]] = True
    ns = n_anchors
    for i in range(n):
        if not is_anchor[i] and new_id[canon[i]] >= 0:
            sigma[ns] = i
            ns += 1
    key = stream_key(seed, ORDER)
    keys = np.empty(ns - n_anchors, np.uint64)
    for t in range(n_anchors, ns):
        keys[t - n_anchors] = keyed_bits(key, sigma[t])
    rank = np.argsort(keys)
    rest = sigma[n_anchors:ns].copy()
    for t in range(ns - n_anchors):
        sigma[n_anchors + t] = rest[rank[t]]
    for t in range(ns):
        ref[t] = new_id[canon[sigma[t]]]
    return k, nb, ns


@numba.njit(cache=True, error_model="numpy")
def _pgsm_core(labels, anchors, seed, N, beta, annealed, prior_code, prior_params,
               codes, dims, data_off, stat_off, hyper_off, hyper, data, width, out, info):
    """One PGSM move; writes the canonical new labels into ``out`` and the record into ``info``:
    [blocks before, blocks after, changed, n_s, final relative ESS, resamplings, early exit,
    unused, sizes before (A), sizes after (A)]."""
    n = labels.shape[0]
    A = anchors.shape[0]
    prop_key = stream_key(seed, PROPOSAL)
    res_key = stream_key(seed, RESAMPLING)
    canon = np.empty(n, np.int64)
    sigma = np.empty(n, np.int64)
    ref = np.empty(n, np.int64)
    k, nb_ref, ns = _closure(labels, anchors, seed, canon, sigma, ref)
    k_out = k - nb_ref

    R = N * A  # statistics rows per buffer; row cur * R + p * A + j is block j of particle p
    EMPTY = 2 * R
    stats = np.empty((2 * R + 1, width))
    pack_init(codes, dims, stat_off, hyper_off, hyper, stats, EMPTY)
    sizes = np.zeros((2, N, A), np.int64)
    nb = np.zeros((2, N), np.int64)
    g = np.zeros((2, N))  # log gamma_A of each particle (annealed targets)
    logw = np.zeros(N)
    wn = np.empty(N)
    dec = np.empty((ns, N), np.int64)
    anc = np.empty((ns, N), np.int64)
    blocks = np.empty(A + 1, np.int64)
    lp = np.empty(A + 1)
    li = np.empty(A + 1)
    scratch = np.empty(max(1, data.shape[1]))
    anneal = annealed and ns > A
    dz = 1.0 / (ns - A) if anneal else 0.0
    join = np.empty(ns + 1)  # log join weight by block size
    join[0] = -np.inf
    for m in range(1, ns + 1):
        join[m] = log_join_weight(prior_code, prior_params, m)
    cur = 0
    n_res = 0
    early = False
    for t in range(ns):
        i = sigma[t]
        resample = False
        if t > 0:
            resample = _normalise(logw, wn) < beta
        if resample:
            n_res += 1
            nxt = 1 - cur
            for q in range(1, N):  # cumulative weights, in place
                wn[q] += wn[q - 1]
            for p in range(N):
                a = 0
                if p > 0:  # conditional multinomial: particle 0 keeps its own ancestor
                    u = keyed_uniform(res_key, t * N + p) * wn[N - 1]
                    while a < N - 1 and wn[a] <= u:
                        a += 1
                    while a > 0 and wn[a] == wn[a - 1]:  # zero-weight ancestor: step back
                        a -= 1
                anc[t, p] = a
                nb[nxt, p] = nb[cur, a]
                g[nxt, p] = g[cur, a]
                for j in range(nb[cur, a]):
                    sizes[nxt, p, j] = sizes[cur, a, j]
                    src = cur * R + a * A + j
                    dst = nxt * R + p * A + j
                    for c in range(width):
                        stats[dst, c] = stats[src, c]
            for p in range(N):
                logw[p] = 0.0
            cur = nxt
        else:
            for p in range(N):
                anc[t, p] = p
        for p in range(N):
            m = nb[cur, p]
            base = cur * R + p * A
            for j in range(m):
                blocks[j] = base + j
                lp[j] = join[sizes[cur, p, j]]
            n_opt = m
            if t < A:  # an anchor may open a block
                blocks[m] = EMPTY
                lp[m] = log_new_weight(prior_code, prior_params, k_out + m)
                n_opt = m + 1
            pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, blocks, n_opt, data, i,
                           scratch, lp)
            for o in range(n_opt):
                if anneal and t < A:
                    li[o] = 0.0 if lp[o] > -np.inf else -np.inf
                elif anneal:
                    li[o] = lp[o] + dz * g[cur, p]
                else:
                    li[o] = lp[o]
            top, total = _exp_weights(li, n_opt)
            logw[p] += top + math.log(total) if total > 0.0 else -np.inf
            if p == 0:
                o = ref[t]
            elif total == 0.0:
                o = 0  # a dead particle (weight 0): any decision
            else:
                o = inverse_cdf(li, n_opt, keyed_uniform(prop_key, t * N + p) * total)
            dec[t, p] = o
            if anneal and t < A:
                g[cur, p] += lp[o]
            row = base + o
            if o == m:
                nb[cur, p] = m + 1
                sizes[cur, p, o] = 0
                for c in range(width):
                    stats[row, c] = stats[EMPTY, c]
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, row, data, i, 1.0, scratch)
            sizes[cur, p, o] += 1
        if t >= A - 1:  # all particles in the one-block (merge) state: they are all the same path
            all_merged = True
            for p in range(N):
                if nb[cur, p] != 1:
                    all_merged = False
                    break
            if all_merged:
                early = True
                break

    new = np.empty(ns, np.int64)
    rel_ess = 1.0
    if early:
        for t in range(ns):
            new[t] = 0
    else:
        rel_ess = _normalise(logw, wn)
        if rel_ess == 0.0:  # the current state has probability 0: keep it
            for t in range(ns):
                new[t] = ref[t]
        else:
            p = inverse_cdf(wn, wn.shape[0], keyed_uniform(stream_key(seed, OUTPUT), 0))
            for t in range(ns - 1, -1, -1):
                new[t] = dec[t, p]
                p = anc[t, p]
    nb_new = 0
    changed = 0
    for t in range(ns):
        if new[t] + 1 > nb_new:
            nb_new = new[t] + 1
        if new[t] != ref[t]:
            changed = 1
    tmp = np.empty(n, np.int64)
    for i in range(n):
        tmp[i] = canon[i]
    for t in range(ns):
        tmp[sigma[t]] = k + new[t]
    canonicalize_into(tmp, out)
    info[0] = nb_ref
    info[1] = nb_new
    info[2] = changed
    info[3] = ns
    info[4] = rel_ess
    info[5] = n_res
    info[6] = 1.0 if early else 0.0
    for j in range(2 * A):
        info[_INFO_FIXED + j] = 0.0
    for t in range(ns):
        info[_INFO_FIXED + ref[t]] += 1.0
        info[_INFO_FIXED + A + new[t]] += 1.0


def pgsm_random_numbers(rng: np.random.Generator, n: int, num_anchors: int = 2):
    """All the randomness of one move: (anchors, seed). The anchors are distinct and in random
    order (sigma_1..sigma_A). Every other number the move uses is a counter-based uniform of the
    64-bit ``seed`` (:func:`pymc_partitions._numeric.keyed_uniform`): one key per item orders the
    closure, uniform (t, p) of one stream proposes particle p's decision at step t, of another
    resamples it, and one more picks the output. So a move draws only what it uses, and two
    states given the same randomness use the same numbers at the same (step, particle)."""
    num_anchors = _checks.integer("num_anchors", num_anchors, low=2, owner="pgsm_random_numbers")
    n = _checks.integer("n", n, low=num_anchors, owner="pgsm_random_numbers")
    anchors = rng.choice(n, size=num_anchors, replace=False).astype(np.int64)
    return anchors, draw_seed(rng)


def order_keys(seed, items):
    """The random keys (uint64) that order the closure's non-anchors: ascending key first."""
    return np.array([_order_key(np.uint64(seed), int(i)) for i in items], dtype=np.uint64)


@numba.njit(cache=True)
def _order_key(seed, item):
    return keyed_bits(stream_key(seed, ORDER), item)


def _info_dict(info, num_anchors):
    before, after, changed = int(info[0]), int(info[1]), bool(info[2])
    if not changed:
        move = "keep"
    elif after > before:
        move = "split"
    elif after < before:
        move = "merge"
    else:
        move = "reallocate"
    a = _INFO_FIXED
    return {
        "move": move,
        "closure_size": int(info[3]),
        "sizes_before": info[a:a + before].astype(np.int64),
        "sizes_after": info[a + num_anchors:a + num_anchors + after].astype(np.int64),
        "ess": float(info[4]),
        "n_resamplings": int(info[5]),
        "early_exit": bool(info[6]),
    }


def _settings(num_particles, resample_threshold, num_anchors, annealed, owner):
    """The move's settings, checked: (N >= 2, threshold in [0, 1], A >= 2, annealed bool)."""
    return (_checks.integer("num_particles", num_particles, low=2, owner=owner),
            _checks.probability("resample_threshold", resample_threshold, owner=owner),
            _checks.integer("num_anchors", num_anchors, low=2, owner=owner),
            _checks.boolean("annealed", annealed, owner=owner))


def _anchors(randomness, n, num_anchors, owner):
    """(anchors as int64, seed as uint64) from ``randomness``, checked: ``num_anchors`` distinct
    items of 0..n-1 and a 64-bit seed."""
    try:
        anchors, seed = randomness
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: randomness must be (anchors, seed), got {randomness!r}") from None
    anchors = integer_labels(anchors, name="anchors", owner=owner)
    if anchors.shape != (num_anchors,):
        raise ValueError(f"{owner}: need num_anchors >= 2 anchors, got {anchors.shape} for num_anchors={num_anchors}")
    items = anchors.tolist()
    if len(set(items)) != num_anchors or min(items) < 0 or max(items) >= n:
        raise ValueError(f"{owner}: anchors must be distinct items of 0..{n - 1}, got {anchors}")
    return anchors, check_seed(seed, owner)


def _move(labels, pack, prior_code, prior_params, anchors, seed, num_particles, resample_threshold, annealed):
    """One move on checked inputs (see :func:`pgsm_move`)."""
    out = np.empty(labels.shape[0], np.int64)
    info = np.empty(_INFO_FIXED + 2 * anchors.shape[0])
    _pgsm_core(
        labels, anchors, seed, num_particles, resample_threshold, annealed, prior_code, prior_params,
        pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width,
        out, info,
    )
    return out, _info_dict(info, anchors.shape[0])


def pgsm_move(labels, pack: FamilyPack, prior_code: int, prior_params, randomness, num_particles=20,
              resample_threshold=0.5, num_anchors=2, annealed=True):
    """One Particle Gibbs Split-Merge move; returns (canonical labels, info).

    ``randomness`` is (anchors, seed), as from :func:`pgsm_random_numbers`. ``info``: ``move``
    ("keep": restricted clustering unchanged, "split", "merge", "reallocate": same number of
    blocks, other allocation), ``closure_size``, ``sizes_before`` / ``sizes_after`` (restricted
    blocks, by rank of their first anchor), ``ess`` (final relative ESS), ``n_resamplings``,
    ``early_exit`` (all particles merged).

    Every argument is checked first (labels: n integers in [0, n); anchors: distinct items;
    num_particles >= 2 and num_anchors >= 2 integers, resample_threshold in [0, 1], annealed a
    bool). ``ValueError`` if a log weight is NaN or +inf.
    """
    owner = "pgsm_move"
    prior_code, prior_params = check_model(pack, prior_code, prior_params, owner)
    n_part, beta, n_anchors, annealed = _settings(num_particles, resample_threshold, num_anchors, annealed, owner)
    labels = as_labels(labels, pack.data.shape[0], owner=owner)
    anchors, seed = _anchors(randomness, labels.shape[0], n_anchors, owner)
    return _move(labels, pack, prior_code, prior_params, anchors, seed, n_part, beta, annealed)


def conditional_path(labels, anchors, seed):
    """(sigma, path): the ordered closure and the decisions that encode the current restricted
    clustering (App. C, eq. 27): path[t] is the block of sigma_t, blocks numbered by first anchor."""
    labels = integer_labels(labels, owner="conditional_path")
    n = labels.shape[0]
    labels = as_labels(labels, n, owner="conditional_path")
    anchors = np.atleast_1d(anchors)
    anchors, seed = _anchors((anchors, seed), n, anchors.shape[0], "conditional_path")
    canon, sigma, ref = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    _, _, ns = _closure(labels, anchors, seed, canon, sigma, ref)
    return sigma[:ns].copy(), ref[:ns].copy()


ANCHOR_PROPOSALS = ("uniform", "cluster", "threshold")


class PGSMKernel:
    """PGSM moves with their random numbers drawn from a numpy Generator, and the anchor proposal.

    Parameters
    ----------
    pack : FamilyPack
        The data and conjugate likelihoods.
    prior_code, prior_params :
        From a prior object (``prior.code``, ``prior.kernel_params()``).
    num_particles, resample_threshold, num_anchors, annealed :
        As in :func:`pgsm_move`.
    anchor_proposal : {"uniform", "cluster", "threshold"} or InformedAnchors
        How the two anchors are drawn (seed 003 Sec. 4.3, App. F). "cluster" and "threshold" score
        a *reference* clustering: the chain's state when the number of blocks breaks its record
        (the first state counts), during the first ``adapt_iterations`` calls of :meth:`step`;
        then the reference is frozen. An :class:`InformedAnchors` object is used as given, frozen.
    threshold : float
        The threshold-informed proposal's cut-off (App. F, 0.01).
    adapt_iterations : int
        How many moves the informed proposals adapt for. The chain is exact (pi-invariant) only
        once adaptation has stopped; discard the adaptation moves as burn-in.
    """

    def __init__(self, pack: FamilyPack, prior_code: int, prior_params, num_particles=20, resample_threshold=0.5,
                 num_anchors=2, annealed=True, anchor_proposal="uniform", threshold=0.01, adapt_iterations=1000):
        owner = "PGSMKernel"
        fixed = isinstance(anchor_proposal, InformedAnchors)
        if not fixed and anchor_proposal not in ANCHOR_PROPOSALS:
            raise ValueError(f"{owner}: anchor_proposal must be one of {ANCHOR_PROPOSALS} or an InformedAnchors, "
                             f"got {anchor_proposal!r}")
        (self.num_particles, self.resample_threshold, self.num_anchors,
         self.annealed) = _settings(num_particles, resample_threshold, num_anchors, annealed, owner)
        if anchor_proposal != "uniform" and self.num_anchors != 2:
            raise ValueError(f"{owner}: informed anchor proposals draw two anchors: use num_anchors=2")
        self.threshold = _checks.real("threshold", threshold, low=0.0, high=1.0, low_open=True, high_open=True,
                                      owner=owner)
        adapt_iterations = _checks.integer("adapt_iterations", adapt_iterations, low=0, owner=owner)
        self.prior_code = _checks.integer("prior_code", prior_code, low=0, high=2, owner=owner)
        self.pack = None
        self.prior_params = None
        if pack is not None:  # None: the model comes later, through set_model (the PyMC step does that)
            self.set_model(pack, prior_params)
        self.kind = anchor_proposal.kind if fixed else anchor_proposal
        self.anchors = anchor_proposal if fixed else None
        self.adapt_iterations = 0 if fixed else adapt_iterations
        self.adapted = 0  # moves made while adapting
        self.record = -1  # the largest number of blocks seen while adapting

    @property
    def adapting(self) -> bool:
        """Whether the next :meth:`step` may still change the informed proposal."""
        return self.kind != "uniform" and (self.anchors is None or self.adapted < self.adapt_iterations)

    def adapt(self, labels) -> None:
        """Rebuild the informed proposal from ``labels`` if their number of blocks breaks the record
        (and always the first time); counts one adaptation iteration."""
        if not self.adapting:
            return
        labels = self._labels(labels)
        k = int(np.max(labels)) + 1
        if k > self.record or self.anchors is None:
            self.record = max(k, self.record)
            self.anchors = InformedAnchors(self.pack, self.prior_code, self.prior_params, labels, self.kind,
                                           self.threshold)
        self.adapted += 1

    def stop_adapting(self) -> None:
        """Freeze the informed proposal (from here on every move leaves the posterior invariant)."""
        self.adapt_iterations = self.adapted

    def set_model(self, pack: FamilyPack, prior_params) -> None:
        """New data or hyperparameter values (e.g. moved by other steps); the adaptation state and
        a frozen anchor proposal are kept (an anchor proposal need not track the hyperparameters)."""
        _, self.prior_params = check_model(pack, self.prior_code, prior_params, "PGSMKernel")
        if pack.data.shape[0] < self.num_anchors:
            raise ValueError(f"PGSMKernel: num_anchors ({self.num_anchors}) exceeds the number of items "
                             f"({pack.data.shape[0]})")
        self.pack = pack

    def _labels(self, labels):
        if self.pack is None:
            raise RuntimeError("PGSMKernel has no model yet: call set_model(pack, prior_params)")
        return as_labels(labels, self.pack.data.shape[0], owner="PGSMKernel")

    def random_numbers(self, rng: np.random.Generator, n: int):
        """The randomness of one move, (anchors, seed) (see :func:`pgsm_random_numbers`); informed
        anchors are a function of six uniforms drawn first."""
        if self.kind == "uniform":
            return pgsm_random_numbers(rng, n, self.num_anchors)
        if self.anchors is None:
            raise RuntimeError("the informed anchor proposal has no reference yet: call adapt(labels) or step()")
        return self.anchors.draw(n, rng.random(6)), draw_seed(rng)

    def move(self, labels, randomness):
        """One move with given random numbers: (canonical labels, info). The labels and the
        randomness are checked as in :func:`pgsm_move` (the settings and the model were checked
        once, at construction or by :meth:`set_model`)."""
        labels = self._labels(labels)
        anchors, seed = _anchors(randomness, labels.shape[0], self.num_anchors, "PGSMKernel")
        return _move(labels, self.pack, self.prior_code, self.prior_params, anchors, seed, self.num_particles,
                     self.resample_threshold, self.annealed)

    def step(self, labels, rng: np.random.Generator):
        """One move (after adapting the anchor proposal, while it adapts): (canonical labels, info)."""
        self.adapt(labels)
        return self.move(labels, self.random_numbers(rng, len(labels)))


# ----------------------------------------------------------------------------- informed anchors
#
# App. F's informed anchor proposals score blocks of a clustering c. Algorithm 1's auxiliary-variable
# argument (App. A: pi~(s, c_-, c) = pi(c) h(s) 1[...]) needs h independent of the current state,
# so here c is a fixed *reference* clustering (the paper adapts it only when the number of blocks
# breaks its record, then stops): with the current state in its place the move is not pi-invariant.


@numba.njit(cache=True, error_model="numpy")
def _block_table(ref, codes, dims, data_off, stat_off, hyper_off, hyper, data, width):
    n = ref.shape[0]
    canon = np.empty(n, np.int64)
    k = canonicalize_into(ref, canon)
    stats = np.empty((k + 2, width))  # blocks, then two work rows
    sizes = np.zeros(k, np.int64)
    scratch = np.empty(max(1, data.shape[1]))
    for b in range(k + 2):
        pack_init(codes, dims, stat_off, hyper_off, hyper, stats, b)
    for i in range(n):
        sizes[canon[i]] += 1
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, canon[i], data, i, 1.0, scratch)
    return canon, k, sizes, stats, scratch


@numba.njit(cache=True, error_model="numpy")
def _cluster_informed_scores(ref, codes, dims, data_off, stat_off, hyper_off, hyper, data, width):
    """(canonical reference, K x K log scores): Algorithm 4's s_b for each block b-bar, with
    s_{b-bar} = the mean of the others' scores."""
    canon, k, sizes, stats, scratch = _block_table(ref, codes, dims, data_off, stat_off, hyper_off, hyper, data,
                                                   width)
    lm = np.empty(k)
    for b in range(k):
        lm[b] = pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, b)
    score = np.zeros((k, k))
    for a in range(k):
        for b in range(a + 1, k):
            for c in range(width):
                stats[k, c] = stats[a, c]
            for i in range(canon.shape[0]):
                if canon[i] == b:
                    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, k, data, i, 1.0, scratch)
            v = pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, k) - lm[a] - lm[b]
            score[a, b] = v
            score[b, a] = v
    for a in range(k):
        if k == 1:
            score[a, a] = 0.0
            continue
        top = -np.inf
        for b in range(k):
            if b != a and score[a, b] > top:
                top = score[a, b]
        if top == -np.inf:  # no merge with block a is possible (e.g. a graph constraint)
            score[a, a] = -np.inf
            continue
        s = 0.0
        for b in range(k):
            if b != a:
                s += math.exp(score[a, b] - top)
        score[a, a] = top + math.log(s / (k - 1))
    return canon, score


@numba.njit(cache=True, error_model="numpy")
def _threshold_informed_probs(ref, prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data,
                              width):
    """(canonical reference, n x K probabilities): Algorithm 5's p_b for each first anchor i, from the
    prior join weight of b minus i times the predictive of y_i given b minus i (0 if b minus i is empty)."""
    canon, k, sizes, stats, scratch = _block_table(ref, codes, dims, data_off, stat_off, hyper_off, hyper, data,
                                                   width)
    n = canon.shape[0]
    blocks = np.arange(k + 1)
    lw = np.empty(k + 1)
    probs = np.zeros((n, k))
    for i in range(n):
        own = canon[i]
        for c in range(width):
            stats[k, c] = stats[own, c]
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, k, data, i, -1.0, scratch)
        for b in range(k):
            blocks[b] = b
            m = sizes[b]
            if b == own:
                blocks[b] = k
                m -= 1
            lw[b] = log_join_weight(prior_code, prior_params, m) if m > 0 else -np.inf
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, blocks, k, data, i, scratch, lw)
        top = -np.inf
        for b in range(k):
            if lw[b] > top:
                top = lw[b]
        if top == -np.inf:
            continue
        s = 0.0
        for b in range(k):
            probs[i, b] = math.exp(lw[b] - top)
            s += probs[i, b]
        for b in range(k):
            probs[i, b] /= s
    return canon, probs


class InformedAnchors:
    """Anchor proposal of App. F built from a fixed reference clustering ``reference``.

    ``kind="cluster"`` (Algorithm 4) or ``"threshold"`` (Algorithm 5, blocks with p_b >= ``threshold``
    drawn uniformly). :meth:`draw` turns uniforms into an ordered pair of distinct anchors; the
    order is then uniformly shuffled (Algorithm 2). When the chosen block has no second item,
    two uniform anchors are returned (Remark 10).
    """

    def __init__(self, pack: FamilyPack, prior_code, prior_params, reference, kind="cluster", threshold=0.01):
        owner = "InformedAnchors"
        prior_code, prior_params = check_model(pack, prior_code, prior_params, owner)
        self.kind = _checks.choice("kind", kind, ("cluster", "threshold"), owner=owner)
        threshold = _checks.real("threshold", threshold, low=0.0, high=1.0, owner=owner)
        n = pack.data.shape[0]
        if n < 2:
            raise ValueError(f"{owner}: need at least two items")
        ref = as_labels(reference, n, name="the reference clustering", owner=owner)
        args = (pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width)
        if kind == "cluster":
            self.canon, score = _cluster_informed_scores(ref, *args)
            if np.isnan(score).any() or (score == np.inf).any():  # (-inf: an impossible merge, legitimate)
                raise ValueError(f"{owner}: a block score is NaN or +inf")
            top = score.max(axis=1, keepdims=True)
            p = np.exp(score - np.where(top > -np.inf, top, 0.0))
            total = p.sum(axis=1, keepdims=True)
            # row: block of the first anchor; a row of zeros (no possible merge): two uniform anchors
            self.table = p / np.where(total > 0.0, total, 1.0)
        else:
            self.canon, probs = _threshold_informed_probs(ref, prior_code, prior_params, *args)
            keep = probs >= threshold
            self.table = keep / np.maximum(keep.sum(axis=1, keepdims=True), 1)  # row: first anchor
        self.members = [np.flatnonzero(self.canon == b) for b in range(self.canon.max() + 1)]

    def draw(self, n, u):
        """Ordered anchors from six uniforms ``u``."""
        if n != self.canon.shape[0]:
            raise ValueError(f"InformedAnchors.draw: n must be {self.canon.shape[0]} (the reference's length), got {n}")
        u = check_uniforms(np.asarray(u, dtype=np.float64).reshape(-1), (6,), "InformedAnchors.draw", "u")
        i1 = min(int(u[0] * n), n - 1)
        row = self.table[self.canon[i1] if self.kind == "cluster" else i1]
        cdf = np.cumsum(row)
        if cdf[-1] <= 0:
            b = -1
        else:
            b = min(int(np.searchsorted(cdf, u[1] * cdf[-1], side="right")), len(row) - 1)
        rest = self.members[b] if b >= 0 else np.zeros(0, np.int64)
        rest = rest[rest != i1]
        if len(rest) == 0:  # Remark 10: two uniform anchors
            i1 = min(int(u[3] * n), n - 1)
            j = min(int(u[4] * (n - 1)), n - 2)
            i2 = j + (j >= i1)
        else:
            i2 = int(rest[min(int(u[2] * len(rest)), len(rest) - 1)])
        pair = np.array([i1, i2], np.int64)
        return pair if u[5] < 0.5 else pair[::-1].copy()  # sigma_1 uniform over the two anchors
