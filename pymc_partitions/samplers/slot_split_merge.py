"""Split-merge moves for non-conjugate partition mixtures: blocks keep explicit parameters.

The target is p(c) prod_b G0(phi_b) prod_{i in b} f(y_i | phi_b) over the partition c and the
parameters phi_b of its blocks (vectors of d numbers on an unconstrained scale, G0 with its
Jacobian). Jain & Neal's (2007) non-conjugate split-merge needs draws from, and the density of, each
block parameter's conditional posterior (conditionally conjugate priors); a likelihood written in
PyMC has neither, so this is a reversible-jump move in the style of Richardson & Green (1997) with
the items allocated as in SAMS (Dahl 2003):

* Two distinct items i, j are drawn uniformly (ordered). If they share a block S with parameter
  phi, the move proposes a **split**: u ~ q (a scale mixture of centred Normals, see below),
  phi_i = phi + u for i's block, phi_j = phi - u for j's block, and the other items of S, in a
  uniformly random order, join i's or j's block with probability proportional to (the prior's join
  weight of the block's size so far) x f(y | phi_i or phi_j).
* If they are in different blocks, the move proposes their **merge** with the deterministic
  inverse: phi = (phi_i + phi_j) / 2 (u = (phi_i - phi_j) / 2), the probability of the reverse
  split's allocation computed by forcing the current two blocks onto the same sequential rule.

That is the *symmetric* kind. The *anchored* kind keeps i's parameter: a split gives i's block
phi and j's block phi + u, a merge keeps phi_i (u = phi_j - phi_i) -- what merges a small block
into a large one, or splits a small block off a large one, without moving the large one's
parameter. Each move draws its kind uniformly among ``kinds``, independently of the state.

The map (phi, u) -> (phi + u, phi - u) has Jacobian 2^d (the anchored map (phi, u) -> (phi, phi + u)
has 1), so a split is accepted with probability
min(1, pi(split) J / (pi(merged) q(u) P(allocation))) and a merge with the inverse ratio
(pi holds the prior ratio :func:`~pymc_partitions.priors.log_split_prior_ratio`, the base measure
of the two parameters against the merged one, and the likelihood of the items of S). The pair, the
visiting order and the mixture component of q are drawn independently of the state, and q is
evaluated as the whole mixture, so every move is one exact Metropolis-Hastings step.

q: u_k ~ N(0, (c scale_k)^2) (anchored: (2 c scale_k)^2) independently over the d coordinates with
c uniform among ``multipliers``: ``scale`` says how far apart (half the distance) the parameters of
two blocks typically are per coordinate (the caller adapts it, e.g. to the spread of the occupied
parameters during tuning).

Like Algorithm 8 (:mod:`~pymc_partitions.samplers.algorithm8`), the kernel knows nothing of the
likelihood: it calls ``loglik(labels, theta)`` (every item's log-likelihood under the row of
``theta`` its label points to) and ``base_logp(theta)`` (each row's base log density): three calls
per symmetric move, one or two per anchored one; the allocation loop is compiled.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _checks
from .._numeric import runtime_int
from ..families.kernels import NIW, FamilyPack, niw_hyper, pack_init, pack_log_preds, pack_update
from ..partition import canonicalize
from ..priors import log_join_weight, log_split_prior_ratio
from .gibbs import check_prior

__all__ = ["slot_split_merge", "MULTIPLIERS", "informed_split_merge", "surrogate_pack", "within_covariance"]

#: default scale mixture of the split proposal (fractions of ``scale``)
MULTIPLIERS = (0.125, 0.25, 0.5, 1.0)
#: the kinds of move (see the module)
KINDS = ("symmetric", "anchored")


@numba.njit(cache=True, error_model="numpy")
def _allocate(split, ll0, ll1, side, uniforms, prior_code, prior_params):
    """Sequential allocation of a split's items; entries 0 and 1 are the anchors (sides 0 and 1),
    the others in visiting order. ``split``: draws ``side[2:]`` with ``uniforms``; otherwise scores
    the given ``side``. Returns the log probability of the allocation (-inf: impossible)."""
    size0 = 1
    size1 = 1
    log_p = 0.0
    for t in range(2, side.shape[0]):
        w0 = log_join_weight(prior_code, prior_params, size0) + ll0[t]
        w1 = log_join_weight(prior_code, prior_params, size1) + ll1[t]
        top = max(w0, w1)
        if top == -np.inf:
            return -np.inf
        lse = top + math.log(math.exp(w0 - top) + math.exp(w1 - top))
        if split:
            side[t] = 0 if uniforms[t - 2] < math.exp(w0 - lse) else 1
        if side[t] == 0:
            log_p += w0 - lse
            size0 += 1
        else:
            log_p += w1 - lse
            size1 += 1
    return log_p


def _log_q(u, scale, multipliers):
    """log density of the split proposal's scale mixture at ``u``."""
    terms = [float(np.sum(-0.5 * (u / (c * scale)) ** 2 - np.log(c * scale) - 0.5 * math.log(2 * math.pi)))
             for c in multipliers]
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms) / len(terms))


def _log_acceptance(split, log_pi_split_over_merged, log_jacobian, log_q_u, log_p_allocation):
    """log Metropolis-Hastings ratio of a split (or, inverted, of the merge)."""
    log_split = log_pi_split_over_merged + log_jacobian - log_q_u - log_p_allocation
    return log_split if split else -log_split


def _finite_or_minus_inf(x):
    x = np.asarray(x, dtype=np.float64)
    return np.where(np.isnan(x), -np.inf, x)


def _called(fn, args, shape, what):
    out = np.asarray(fn(*args), dtype=np.float64)
    if out.shape != shape:
        raise ValueError(f"slot_split_merge: {what} must return shape {shape}, got {out.shape}")
    if np.isposinf(out).any():
        raise ValueError(f"slot_split_merge: {what} returned +inf")
    return _finite_or_minus_inf(out)


def _draw_move(labels, n, rng):
    """The randomness of one split-merge proposal: two distinct items i, j, their blocks ci, cj,
    whether it is a split (ci == cj), the union's items in allocation order (i, j, then the others
    shuffled) and one uniform per allocated item."""
    i, j = rng.choice(n, 2, replace=False)
    ci, cj = labels[i], labels[j]
    inside = np.flatnonzero((labels == ci) | (labels == cj))
    rest = inside[(inside != i) & (inside != j)]
    members = np.concatenate([[i, j], rng.permutation(rest)]).astype(np.int64)
    return i, j, ci, cj, ci == cj, members, rng.random(members.shape[0] - 2)


def _checked_state(owner, labels, theta):
    """(labels as int64, theta as float64 (S, d), n, K, S, d) after checking them: canonical labels,
    and a parameter row per slot, finite on the K occupied ones."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] < 1 or not np.issubdtype(labels.dtype, np.integer) \
            or not np.array_equal(canonicalize(labels), labels):
        raise ValueError(f"{owner}: labels must be canonical integer labels (0, 1, ... in order of appearance)")
    n = labels.shape[0]
    labels = labels.astype(np.int64)
    K = int(labels.max()) + 1
    theta = np.array(theta, dtype=np.float64)
    if theta.ndim != 2 or theta.shape[0] < K or theta.shape[1] < 1 or not np.isfinite(theta[:K]).all():
        raise ValueError(f"{owner}: theta must be (S, d) with S >= K={K} rows, d >= 1 and finite occupied rows, "
                         f"got shape {theta.shape}")
    S, d = theta.shape
    return labels, theta, n, K, S, d


def slot_split_merge(labels, theta, item_ll, base_lp, loglik, base_logp, prior_code, prior_params, scale, rng,
                     moves=1, multipliers=MULTIPLIERS, kinds=KINDS):
    """``moves`` split-merge proposals on (partition, block parameters); returns (canonical labels,
    theta, item_ll, base_lp, accepted splits, accepted merges).

    Parameters
    ----------
    labels : (n,) canonical labels (blocks 0..K-1).
    theta : (S, d) float, S >= K
        Row b: block b's parameter (value scale); rows >= K are free (overwritten at will).
    item_ll : (n,) float
        Each item's log-likelihood under its block's row.
    base_lp : (S,) float
        Base log density of each row (rows >= K ignored).
    loglik : callable ``(labels (n,), theta (S, d)) -> (n,)``
        Every item's log-likelihood under the row its label points to.
    base_logp : callable ``theta (S, d) -> (S,)``
        Each row's base log density (value scale, with the Jacobian).
    prior_code, prior_params : the partition prior (``priors``).
    scale : (d,) positive floats
        Per coordinate, the typical half-distance between two blocks' parameters (see the module).
    rng : numpy Generator.
    moves : int >= 0.
    multipliers : positive floats, the scale mixture of the split proposal.
    kinds : subset of ``KINDS``, the kinds of move drawn from (uniformly, per move).

    On return, rows >= K of ``theta`` are stale: the caller draws free parameters afresh.
    """
    owner = "slot_split_merge"
    labels, theta, n, K, S, d = _checked_state(owner, labels, theta)
    item_ll = np.array(item_ll, dtype=np.float64)
    if item_ll.shape != (n,) or not np.isfinite(item_ll).all():
        raise ValueError(f"{owner}: item_ll must be n={n} finite log-likelihoods, got shape {item_ll.shape}")
    base_lp = np.array(base_lp, dtype=np.float64)
    if base_lp.shape != (S,) or not np.isfinite(base_lp[:K]).all():
        raise ValueError(f"{owner}: base_lp must be S={S} log densities, finite on the occupied rows")
    if not callable(loglik) or not callable(base_logp):
        raise TypeError(f"{owner}: loglik and base_logp must be callable")
    code, params = check_prior(n, prior_code, prior_params, owner)
    scale = np.asarray(scale, dtype=np.float64)
    if scale.shape != (d,) or not (np.isfinite(scale).all() and (scale > 0).all()):
        raise ValueError(f"{owner}: scale must be d={d} positive finite numbers, got {scale!r}")
    multipliers = np.asarray(multipliers, dtype=np.float64).reshape(-1)
    if multipliers.size < 1 or not (np.isfinite(multipliers).all() and (multipliers > 0).all()):
        raise ValueError(f"{owner}: multipliers must be positive finite numbers, got {multipliers!r}")
    moves = _checks.integer("moves", moves, low=0, owner=owner)
    if isinstance(kinds, str) or not kinds or not set(kinds) <= set(KINDS):
        raise ValueError(f"{owner}: kinds must be a non-empty subset of {KINDS}, got {kinds!r}")
    anchored_kinds = [k == "anchored" for k in dict.fromkeys(kinds)]
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{owner}: rng must be a numpy Generator, got {type(rng).__name__}")
    splits = merges = 0
    for _ in range(moves if n > 1 else 0):
        i, j, ci, cj, split, members, uniforms = _draw_move(labels, n, rng)
        log_u = math.log(rng.random() or 5e-324)
        anchored = anchored_kinds[rng.integers(len(anchored_kinds))]
        spread = 2.0 * scale if anchored else scale  # u: the whole distance, or half of it
        log_jacobian = 0.0 if anchored else d * math.log(2.0)
        prop = theta.copy()
        trial = labels.copy()
        if split:
            if K >= S:
                continue  # no free row: only a finite prior with K = k blocks, where a split has probability 0
            c = multipliers[rng.integers(multipliers.size)]
            u = rng.standard_normal(d) * c * spread
            prop[ci] = theta[ci] if anchored else theta[ci] + u
            prop[K] = theta[ci] + u if anchored else theta[ci] - u
            ll0 = item_ll[members] if anchored else _called(loglik, (trial, prop), (n,), "loglik")[members]
            trial[members] = K
            ll1 = _called(loglik, (trial, prop), (n,), "loglik")[members]
            bp = _called(base_logp, (prop,), (S,), "base_logp")
            side = np.zeros(members.shape[0], np.int64)
            side[1] = 1
            log_p = _allocate(True, ll0, ll1, side, uniforms, code, params)
            if log_p == -np.inf:
                continue
            a = int(np.count_nonzero(side == 0))
            log_pi = (log_split_prior_ratio(code, params, K, a, members.shape[0] - a) + bp[ci] + bp[K] - base_lp[ci]
                      + np.where(side == 0, ll0, ll1).sum() - item_ll[members].sum())
        else:
            u = theta[cj] - theta[ci] if anchored else 0.5 * (theta[ci] - theta[cj])
            side = (labels[members] == cj).astype(np.int64)
            trial[members] = np.where(side == 0, cj, ci)
            cross = _called(loglik, (trial, theta), (n,), "loglik")[members]
            own = item_ll[members]
            ll0 = np.where(side == 0, own, cross)
            ll1 = np.where(side == 1, own, cross)
            if anchored:  # the merged block keeps i's parameter
                llm = ll0
                bp = base_lp
            else:
                prop[ci] = 0.5 * (theta[ci] + theta[cj])
                trial[members] = ci
                llm = _called(loglik, (trial, prop), (n,), "loglik")[members]
                bp = _called(base_logp, (prop,), (S,), "base_logp")
            log_p = _allocate(False, ll0, ll1, side, uniforms, code, params)
            a = int(np.count_nonzero(side == 0))
            log_pi = (log_split_prior_ratio(code, params, K - 1, a, members.shape[0] - a) + base_lp[ci]
                      + base_lp[cj] - bp[ci] + own.sum() - llm.sum())
        log_ratio = _log_acceptance(split, log_pi, log_jacobian, _log_q(u, spread, multipliers), log_p)
        if not log_u < log_ratio:  # (a NaN ratio rejects)
            continue
        base_new = base_lp.copy()
        base_new[ci] = bp[ci]
        if split:
            trial = labels.copy()
            trial[members[side == 1]] = K
            item_ll[members] = np.where(side == 0, ll0, ll1)
            base_new[K] = bp[K]
            splits += 1
        else:
            trial = labels.copy()
            trial[members] = ci
            item_ll[members] = llm
            merges += 1
        labels = canonicalize(trial)
        K = int(labels.max()) + 1
        first = np.zeros(K, np.int64)
        first[labels[::-1]] = np.arange(n)[::-1]
        old = trial[first]
        theta[:K] = prop[old]
        base_lp[:K] = base_new[old]
    return labels, theta, item_ll, base_lp, splits, merges


# ---------------------------------------------------------------------------------------------------------------
# The data-informed move: SAMS allocation by a conjugate surrogate, Laplace proposals of the parameters


#: The most derivative evaluations (Newton steps) per Laplace fit of the informed move ...
NEWTON_STEPS = 4
#: ... which stop early once every fitted block's Newton decrement g' P^-1 g is below this
NEWTON_TOLERANCE = 0.01


def surrogate_pack(features, within_cov) -> FamilyPack:
    """The conjugate surrogate of :func:`informed_split_merge`'s allocation: a Normal-inverse-Wishart
    family on the items' ``features`` (n, p) (e.g. their observed values), centred on their mean with
    kappa0 = 0.01, nu0 = p + 2 and the prior mean of the blocks' covariance ``within_cov`` (p, p)."""
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1 or not np.isfinite(x).all():
        raise ValueError(f"surrogate_pack: features must be a finite (n, p) array, got shape {x.shape}")
    p = x.shape[1]
    cov = np.asarray(within_cov, dtype=np.float64)
    if cov.shape != (p, p) or not np.isfinite(cov).all() or not np.allclose(cov, cov.T):
        raise ValueError(f"surrogate_pack: within_cov must be a finite symmetric ({p}, {p}) matrix")
    ceiling = np.abs(np.linalg.eigvalsh(cov)).max() if p else 1.0
    cov = cov + np.eye(p) * 1e-9 * max(ceiling, 1e-300)
    if np.linalg.eigvalsh(cov).min() <= 0:
        raise ValueError("surrogate_pack: within_cov must be positive definite")
    nu0 = p + 2.0
    return FamilyPack.build([(NIW, x, niw_hyper(x.mean(axis=0), 0.01, nu0, cov * (nu0 - p - 1.0), p, x.shape[0]))])


def within_covariance(features, labels):
    """The pooled within-block covariance (p, p) of ``features`` under ``labels`` (None if no block has
    two items): the scale :class:`surrogate_pack` is given, measured on a partition of the chain."""
    x = np.asarray(features, dtype=np.float64)
    K = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=K)
    if x.shape[0] - K < 1:
        return None
    means = np.stack([np.bincount(labels, x[:, c], minlength=K) for c in range(x.shape[1])], axis=1) / sizes[:, None]
    r = x - means[labels]
    return r.T @ r / (x.shape[0] - K)


@numba.njit(cache=True, error_model="numpy")
def _surrogate_allocate(split, members, side, uniforms, prior_code, prior_params,
                        codes, dims, data_off, stat_off, hyper_off, hyper, data, width):
    """SAMS allocation of ``members`` (anchors first, sides 0 and 1) by the surrogate's predictives:
    ``split`` draws ``side[2:]`` with ``uniforms``, else scores the given sides. Returns the log
    probability of the allocation (-inf: impossible)."""
    stats = np.empty((2, width))
    pack_init(codes, dims, stat_off, hyper_off, hyper, stats, 0)
    pack_init(codes, dims, stat_off, hyper_off, hyper, stats, 1)
    scratch = np.empty(max(1, data.shape[1]))
    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, 0, data, members[0], 1.0, scratch)
    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, 1, data, members[1], 1.0, scratch)
    rows = np.arange(2)
    lw = np.empty(2)
    size0 = 1
    size1 = 1
    log_p = 0.0
    for t in range(2, members.shape[0]):
        q = members[t]
        lw[0] = log_join_weight(prior_code, prior_params, size0)
        lw[1] = log_join_weight(prior_code, prior_params, size1)
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows, runtime_int(2), data, q, scratch, lw)
        top = max(lw[0], lw[1])
        if not top > -np.inf or top == np.inf:  # (also NaN)
            return -np.inf
        lse = top + math.log(math.exp(lw[0] - top) + math.exp(lw[1] - top))
        if split:
            side[t] = 0 if uniforms[t - 2] < math.exp(lw[0] - lse) else 1
        c = side[t]
        log_p += lw[c] - lse
        if c == 0:
            size0 += 1
        else:
            size1 += 1
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, c, data, q, 1.0, scratch)
    return log_p


@numba.njit(cache=True)
def _newton_step(H, g, floor):
    """Per row r: P = |-sym(H_r)| + floor (eigenvalues' absolute values), delta = P^-1 g_r; and the
    largest Newton decrement g' P^-1 g over the rows (finite H and g). ``ValueError`` unless H is (r, d, d) and
    floor (d, d)."""
    r, d = g.shape
    if H.shape[0] != r or H.shape[1] != d or H.shape[2] != d or floor.shape[0] != d or floor.shape[1] != d:
        raise ValueError("_newton_step: H must be (r, d, d) and floor (d, d) for g of shape (r, d)")
    P = np.empty((r, d, d))
    delta = np.empty((r, d))
    decrement = -np.inf
    for k in range(r):
        A = -0.5 * (H[k] + H[k].T)
        lam, vec = np.linalg.eigh(A)
        for a in range(d):
            for b in range(d):
                acc = 0.0
                for c in range(d):
                    acc += vec[a, c] * abs(lam[c]) * vec[b, c]
                P[k, a, b] = acc + floor[a, b]
        delta[k] = np.linalg.solve(P[k], g[k])
        dec = 0.0
        for a in range(d):
            dec += g[k, a] * delta[k, a]
        decrement = max(decrement, dec)
    return P, delta, decrement


def _laplace(terms, labels, theta, rows, steps, spread):
    """Gaussian approximations of the blocks in ``rows`` (their log densities given ``labels``) by Newton's
    method from ``theta[rows]``: at each of up to ``steps`` points x, the gradient g and the precision
    P = |H| + diag(1 / spread^2) (|H|: the negative Hessian with its eigenvalues' absolute values, so
    saddle points and convex regions still give a precision; the added term keeps the proposal no wider
    than ``spread`` per coordinate where the log density is flat, e.g. along the funnel of a block of one
    item), and the step P^-1 g shrunk so that no coordinate moves by more than its ``spread``. It stops
    early once every block's Newton decrement g' P^-1 g is below ``NEWTON_TOLERANCE``. The approximation
    is N(last point + its step, P^-1 at the last point). Returns (means (r, d), Cholesky factors (r, d, d)
    of the precisions), or None if not finite. Deterministic in its inputs, so the reverse move's
    proposal density is the same computation."""
    x = theta[rows].copy()
    full = theta.copy()
    floor = np.diag(1.0 / spread**2)
    for _ in range(steps):
        full[rows] = x
        lp, g, H = terms(labels, full, True)
        lp, g, H = lp[rows], g[rows], H[rows]
        if not (np.isfinite(lp).all() and np.isfinite(g).all() and np.isfinite(H).all()):
            return None
        P, delta, decrement = _newton_step(np.ascontiguousarray(H), np.ascontiguousarray(g), floor)
        x = x + delta / np.maximum(1.0, np.max(np.abs(delta) / spread, axis=1))[:, None]
        if decrement < NEWTON_TOLERANCE:
            break
    if not np.isfinite(x).all():
        return None
    try:
        chol = np.linalg.cholesky(P)
    except np.linalg.LinAlgError:
        return None
    return x, chol


def _gauss_draw(fit, k, rng):
    """A draw from N(mean_k, P_k^-1) with P_k = L L^T: mean + L^-T z."""
    mean, chol = fit
    return mean[k] + np.linalg.solve(chol[k].T, rng.standard_normal(mean.shape[1]))


def _gauss_logpdf(fit, k, x):
    mean, chol = fit
    z = chol[k].T @ (x - mean[k])
    return float(-0.5 * z @ z + np.log(np.diag(chol[k])).sum() - 0.5 * mean.shape[1] * math.log(2 * math.pi))


def _log_informed_acceptance(split, log_pi_split_over_merged, log_q_merged, log_q_split, log_p_allocation):
    """log Metropolis-Hastings ratio of an informed split (or, inverted, of the merge): the split
    draws both blocks' parameters (density ``log_q_split``) after the allocation, the merge the merged
    block's (``log_q_merged``)."""
    log_split = log_pi_split_over_merged + log_q_merged - log_q_split - log_p_allocation
    return log_split if split else -log_split


def informed_split_merge(labels, theta, terms, pack, prior_code, prior_params, spread, rng, moves=1,
                         newton_steps=NEWTON_STEPS):
    """``moves`` data-informed split-merge proposals on (partition, block parameters); returns
    (canonical labels, theta, accepted splits, accepted merges).

    Two distinct items i, j are drawn uniformly (ordered). Same block S with parameter phi: a **split**.
    The other items of S, in a uniformly random order, join i's side or j's SAMS-style with probability
    proportional to (the prior's join weight) x (the predictive of a conjugate surrogate, ``pack``, given
    the items already on that side): the probability of any allocation is computable by replaying it.
    Then each side's parameter is drawn from a Gaussian (Laplace-like) approximation of its conditional
    posterior given its items (value scale): Newton's method from phi (up to ``newton_steps`` evaluations), each coordinate's
    step at most its ``spread``, the precision the negative Hessian's absolute value plus
    diag(1 / spread^2) at the last point (:func:`_laplace`). Different
    blocks: a **merge**, its parameter drawn from the Laplace approximation of the merged block's
    posterior started at i's block's parameter. The reverse move's densities are the same computations
    on the proposed state, so the acceptance ratio, pi(split) q(phi | merge) / (pi(merged) P(allocation)
    q(phi_i, phi_j | split)), is exact; the draws are direct in the value space (Jacobian 1).

    Parameters
    ----------
    labels : (n,) canonical labels.
    theta : (S, d) float, S >= K; rows >= K free (overwritten at will; stale on return).
    terms : callable ``(labels, theta, derivatives) -> lp (S,)``, or ``(lp, grad (S, d), hess (S, d, d))``
        when ``derivatives``: each row's log density given the labels (base measure with its Jacobian plus the
        log-likelihoods of the items labelled with it) and its gradient and Hessian in the row.
    pack : :class:`~pymc_partitions.families.kernels.FamilyPack` of the surrogate (:func:`surrogate_pack`).
    prior_code, prior_params : the partition prior.
    spread : (d,) positive floats
        Per coordinate, the base measure's spread (value scale): the widest a proposal gets, and the
        largest move of one Newton step.
    rng : numpy Generator.
    moves : int >= 0.
    newton_steps : int >= 1, the most evaluations of the derivatives per Laplace fit.
    """
    owner = "informed_split_merge"
    labels, theta, n, K, S, d = _checked_state(owner, labels, theta)
    if not callable(terms):
        raise TypeError(f"{owner}: terms must be callable")
    if not isinstance(pack, FamilyPack) or pack.data.shape[0] != n:
        raise TypeError(f"{owner}: pack must be a FamilyPack on the n={n} items (see surrogate_pack)")
    code, params = check_prior(n, prior_code, prior_params, owner)
    spread = np.asarray(spread, dtype=np.float64)
    if spread.shape != (d,) or not (np.isfinite(spread).all() and (spread > 0).all()):
        raise ValueError(f"{owner}: spread must be d={d} positive finite numbers, got {spread!r}")
    moves = _checks.integer("moves", moves, low=0, owner=owner)
    newton_steps = _checks.integer("newton_steps", newton_steps, low=1, owner=owner)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{owner}: rng must be a numpy Generator, got {type(rng).__name__}")

    def checked(lab, th, derivatives):
        out = terms(lab, th, derivatives)
        parts = out if derivatives else (out,)
        shapes = [(S,), (S, d), (S, d, d)][:len(parts)]
        if len(parts) != (3 if derivatives else 1) or any(np.shape(p) != s for p, s in zip(parts, shapes)):
            raise ValueError(f"{owner}: terms must return lp (S,) [, grad (S, d), hess (S, d, d)] with S={S}, d={d}")
        parts = [_finite_or_minus_inf(p) for p in parts]
        if np.isposinf(parts[0]).any():
            raise ValueError(f"{owner}: terms returned a log density of +inf")
        return tuple(parts) if derivatives else parts[0]

    pk = (pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width)
    splits = merges = 0
    for _ in range(moves if n > 1 else 0):
        i, j, ci, cj, split, members, uniforms = _draw_move(labels, n, rng)
        log_u = math.log(rng.random() or 5e-324)
        if split:
            if K >= S:
                continue  # no free row: only a finite prior with K = k blocks, where a split has probability 0
            side = np.zeros(members.shape[0], np.int64)
            side[1] = 1
            log_p = _surrogate_allocate(True, members, side, uniforms, code, params, *pk)
            if log_p == -np.inf:
                continue
            merged, parted = labels, labels.copy()
            parted[members[side == 1]] = K
            a_row, b_row = ci, K
            start = theta.copy()
            start[K] = theta[ci]
            fit = _laplace(checked, parted, start, np.array([a_row, b_row]), newton_steps, spread)
            if fit is None:
                continue
            split_theta = theta.copy()
            split_theta[a_row] = _gauss_draw(fit, 0, rng)
            split_theta[b_row] = _gauss_draw(fit, 1, rng)
            merged_theta = theta
        else:
            side = (labels[members] == cj).astype(np.int64)
            log_p = _surrogate_allocate(False, members, side, uniforms, code, params, *pk)
            parted, merged = labels, labels.copy()
            merged[members] = ci
            a_row, b_row = ci, cj
            merged_fit = _laplace(checked, merged, theta, np.array([ci]), newton_steps, spread)
            if merged_fit is None:
                continue
            merged_theta = theta.copy()
            merged_theta[ci] = _gauss_draw(merged_fit, 0, rng)
            split_theta = theta
            start = merged_theta.copy()
            start[cj] = merged_theta[ci]
            fit = _laplace(checked, parted, start, np.array([a_row, b_row]), newton_steps, spread)
            if fit is None:
                continue
        if split:  # the reverse merge's fit, started at i's side's (proposed) parameter
            merged_fit = _laplace(checked, merged, split_theta, np.array([ci]), newton_steps, spread)
            if merged_fit is None:
                continue
        lp_split = checked(parted, split_theta, False)
        lp_merged = checked(merged, merged_theta, False)
        a = int(np.count_nonzero(side == 0))
        log_pi = (log_split_prior_ratio(code, params, K - (0 if split else 1), a, members.shape[0] - a)
                  + lp_split[a_row] + lp_split[b_row] - lp_merged[ci])
        log_q_split = _gauss_logpdf(fit, 0, split_theta[a_row]) + _gauss_logpdf(fit, 1, split_theta[b_row])
        log_q_merged = _gauss_logpdf(merged_fit, 0, merged_theta[ci])
        log_ratio = _log_informed_acceptance(split, log_pi, log_q_merged, log_q_split, log_p)
        if not log_u < log_ratio:  # (a NaN ratio rejects)
            continue
        trial, theta = (parted, split_theta) if split else (merged, merged_theta)
        splits += int(split)
        merges += int(not split)
        labels = canonicalize(trial)
        K = int(labels.max()) + 1
        first = np.zeros(K, np.int64)
        first[labels[::-1]] = np.arange(n)[::-1]
        theta = theta.copy()
        theta[:K] = theta[trial[first]]
    return labels, theta, splits, merges
