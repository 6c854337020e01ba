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
from ..partition import canonicalize
from ..priors import log_join_weight, log_split_prior_ratio
from .gibbs import check_prior

__all__ = ["slot_split_merge", "MULTIPLIERS"]

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
        i, j = rng.choice(n, 2, replace=False)
        ci, cj = labels[i], labels[j]
        split = ci == cj
        inside = np.flatnonzero((labels == ci) | (labels == cj))
        rest = inside[(inside != i) & (inside != j)]
        members = np.concatenate([[i, j], rng.permutation(rest)])
        uniforms = rng.random(members.shape[0] - 2)
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
