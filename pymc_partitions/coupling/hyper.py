"""Coupled chains on (partition, hyperparameters): issue 22, items 1-2.

One iteration of each chain is up to four steps, each leaving the posterior invariant:

1. a collapsed Gibbs sweep of the partition at the chain's own hyperparameters (the coupled
   sweep of :mod:`.sweep`, each chain with its own prior parameters and family pack);
2. with ``pgsm`` settings, that many Particle Gibbs Split-Merge moves of the partition at the
   chain's own hyperparameters, the two chains' moves with common random numbers (as
   :class:`.split_merge.GibbsPGSM`: the same anchors and 64-bit seed, so equal partitions at
   equal hyperparameters give equal outputs);
3. an Escobar-West update of a Gamma-prior CRP concentration, when the model has one
   (:func:`coupled_escobar_west`);
4. a random-walk Metropolis update of every other hyperparameter on its unconstrained value,
   whose target is the collapsed log joint given the chain's partition
   (:func:`coupled_random_walk`).

Two chains are coupled in each step: each step's coupling has the single-chain step as its
marginals (so each chain on its own is the single-chain kernel), and two identical states give
identical outputs (faithfulness), so the chains stay together once they meet. They meet when the
partitions *and* all the hyperparameters are equal (:meth:`HyperSweeps.same`).

This module knows nothing of PyMC: the model enters through a :class:`HyperModel`-like object
(``pymc_partitions.pymc.unbiased_hyper`` builds one from a PyMC model).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .._checks import real
from ..samplers.concentration import log_gamma_draw
from ..samplers.pgsm import PGSMKernel, pgsm_random_numbers
from .parallel import UnbiasedJob
from .split_merge import pgsm_settings, refuse_pgsm_network
from .sweep import GibbsSweeps

__all__ = ["HyperState", "HyperSweeps", "HyperUnbiasedJob", "coupled_escobar_west", "coupled_random_walk",
           "maximal_coupling"]


def maximal_coupling(draw_p, logp, draw_q, logq, rng):
    """(X, Y) with X ~ p, Y ~ q and P(X = Y) = 1 - TV(p, q), the largest possible (Thorisson's
    rejection algorithm; Jacob, O'Leary & Atchadé 2020, Algorithm 2). ``draw_*(rng)`` draw,
    ``log*`` are log densities (up to the same kind of base measure).

    Draw X ~ p; with probability min(1, q(X)/p(X)) set Y = X. Otherwise draw Y ~ q until
    U q(Y) > p(Y) (U uniform): Y then has density (q - min(p, q))/TV, so that altogether Y ~ q.
    The loop runs 1 / TV(p, q) times on average when it is entered, which happens with
    probability TV(p, q): one trial per call on average."""
    x = draw_p(rng)
    if math.log1p(-rng.random()) + logp(x) <= logq(x):
        return x, x
    while True:
        y = draw_q(rng)
        if math.log1p(-rng.random()) + logq(y) > logp(y):
            return x, y


def _log_beta_density(x, a, b):
    if not 0.0 < x < 1.0:
        return -math.inf
    return (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + (a - 1.0) * math.log(x)
            + (b - 1.0) * math.log1p(-x))


def _log_alpha_mixture(log_eta, n_clusters, n, shape, rate):
    """(weight of the first component, its shape, the second's shape, common rate) of the
    Escobar-West conditional of alpha given eta and K (see :func:`..samplers.concentration.escobar_west_log`)."""
    post_rate = rate - log_eta
    odds = (shape + n_clusters - 1.0) / (n * post_rate)
    return odds / (1.0 + odds), shape + n_clusters, shape + n_clusters - 1.0, post_rate


def _log_gamma_of_log(l, s, r):
    """Log density of l = log G, G ~ Gamma(shape s, rate r)."""
    if l == -math.inf:
        return -math.inf
    return s * math.log(r) - math.lgamma(s) + s * l - r * math.exp(l)


def _mixture_law(log_eta, n_clusters, n, shape, rate):
    w, s1, s2, r = _log_alpha_mixture(log_eta, n_clusters, n, shape, rate)

    def draw(rng):
        return log_gamma_draw(s1 if rng.random() < w else s2, r, rng)

    def logd(l):
        a, b = _log_gamma_of_log(l, s1, r), _log_gamma_of_log(l, s2, r)
        if a == -math.inf and b == -math.inf:
            return -math.inf
        return float(np.logaddexp(math.log(w) + a, math.log1p(-w) + b))

    return draw, logd


def escobar_west_single(log_alpha, n_clusters, n, shape, rate, rng):
    """One Escobar-West draw of log alpha (the single-chain marginal of :func:`coupled_escobar_west`,
    with the same random-number use as its first chain)."""
    return coupled_escobar_west(log_alpha, n_clusters, None, None, n, shape, rate, rng)[0]


def coupled_escobar_west(log_alpha_x, k_x, log_alpha_y, k_y, n, shape, rate, rng):
    """Coupled Escobar-West draws of log alpha for two chains with K = ``k_x``, ``k_y`` blocks
    (``log_alpha_y=None``: chain x alone). Returns (new log alpha x, new log alpha y).

    The Escobar-West kernel draws eta ~ Beta(alpha + 1, n), then alpha' from a two-Gamma mixture
    whose weights and rates depend on (eta, K). Its transition density alpha -> alpha' is an
    integral over eta, so it cannot be coupled maximally in one go; we couple the two stages:

    1. eta_x, eta_y from a maximal coupling of Beta(alpha_x + 1, n) and Beta(alpha_y + 1, n);
    2. given (eta_x, eta_y), log alpha'_x and log alpha'_y from a maximal coupling of the two
       conditional mixtures (their densities are explicit; log scale, as the single-chain step).

    Marginals: stage 1 gives eta_x ~ Beta(alpha_x + 1, n) and stage 2, whatever eta_y, gives
    alpha'_x ~ mixture(eta_x, K_x): chain x makes exactly the Escobar-West draw (likewise y).
    Meeting: when K_x = K_y and stage 1 returns eta_x = eta_y (probability 1 - TV of the two
    Betas, positive for any alphas), the two mixtures are the same law and stage 2 returns equal
    draws with probability one; stage 2 may also meet when they differ. So alpha meets *exactly*,
    and only, by the chains' block counts agreeing or by the mixtures' overlap; it may meet before
    the partitions do, which is harmless: the pair has met only when everything has.
    Faithfulness: equal (alpha, K) give equal Betas and then equal mixtures, so equal draws.
    """
    alpha_x = math.exp(log_alpha_x)
    if log_alpha_y is None:
        eta_x = rng.beta(alpha_x + 1.0, n)
        draw, _ = _mixture_law(math.log(eta_x), k_x, n, shape, rate)
        return draw(rng), None
    alpha_y = math.exp(log_alpha_y)
    if alpha_x == alpha_y:
        eta_x = eta_y = rng.beta(alpha_x + 1.0, n)
    else:
        eta_x, eta_y = maximal_coupling(
            lambda g: g.beta(alpha_x + 1.0, n), lambda e: _log_beta_density(e, alpha_x + 1.0, n),
            lambda g: g.beta(alpha_y + 1.0, n), lambda e: _log_beta_density(e, alpha_y + 1.0, n), rng)
    draw_x, logd_x = _mixture_law(math.log(eta_x), k_x, n, shape, rate)
    if eta_x == eta_y and k_x == k_y:
        new = draw_x(rng)
        return new, new
    draw_y, logd_y = _mixture_law(math.log(eta_y), k_y, n, shape, rate)
    return maximal_coupling(draw_x, logd_x, draw_y, logd_y, rng)


def coupled_random_walk(theta_x, logd_x, theta_y, logd_y, scale, rng):
    """One coupled random-walk Metropolis step for two chains on R^d (``theta_y=None``: x alone).

    ``logd_*(theta)`` is each chain's log target (the collapsed log joint at its own partition;
    -inf outside the support). Proposals x + scale xi and y + scale xi' come from the
    reflection-maximal coupling of N(x, scale^2 I) and N(y, scale^2 I) (Jacob, O'Leary & Atchadé
    2020, Sec. 4.1): the same point with probability min(1, phi(xi + z) / phi(xi)),
    z = (x - y) / scale, else xi' = xi reflected in the hyperplane orthogonal to z. Both accept
    steps use one shared uniform. Each chain alone is the plain random-walk Metropolis step; equal
    states give equal proposals and decisions; when both accept a common proposal the chains meet.
    Returns (new theta x, new theta y, accepted x, accepted y); the current log targets are
    evaluated here (the partitions changed since the last step)."""
    xi = rng.standard_normal(theta_x.shape[0])
    prop_x = theta_x + scale * xi
    log_u = math.log1p(-rng.random())
    cur_x = logd_x(theta_x)
    new_x = prop_x if log_u < logd_x(prop_x) - cur_x else theta_x
    if theta_y is None:
        return new_x, None, new_x is prop_x, False
    z = (theta_x - theta_y) / scale
    if not z.any():
        prop_y = prop_x
    elif math.log1p(-rng.random()) <= 0.5 * (xi @ xi - (xi + z) @ (xi + z)):
        prop_y = prop_x
    else:
        e = z / math.sqrt(z @ z)
        prop_y = theta_y + scale * (xi - 2.0 * (e @ xi) * e)
    cur_y = logd_y(theta_y)
    new_y = prop_y if log_u < logd_y(prop_y) - cur_y else theta_y
    return new_x, new_y, new_x is prop_x, new_y is prop_y


class HyperState:
    """One chain: its partition (a :class:`.sweep.ChainState` of its own kernel ``gibbs``), the
    unconstrained values ``theta`` of the random-walk hyperparameters and ``log_alpha`` of the
    Escobar-West concentration (None without one)."""

    __slots__ = ("chain", "gibbs", "theta", "log_alpha")

    def __init__(self, chain, gibbs, theta, log_alpha):
        self.chain, self.gibbs, self.theta, self.log_alpha = chain, gibbs, theta, log_alpha

    def labels(self) -> np.ndarray:
        return self.chain.labels()


class HyperSweeps:
    """Single and coupled iterations on (partition, hyperparameters), the kernel of
    :func:`.unbiased.run_pair` for models with random hyperparameters (see the module docstring).

    ``model`` provides: ``n``, ``prior_code``, ``theta0`` (unconstrained start of the random-walk
    hyperparameters, a float vector, possibly empty), ``log_alpha0`` (None without an
    Escobar-West concentration), ``escobar_west`` ((shape, rate) of alpha's Gamma prior, or None),
    ``kernel_inputs(theta, log_alpha) -> (prior_params, pack)``, ``log_density(labels, theta,
    log_alpha) -> float`` (collapsed log joint, for the random-walk step) and
    ``params(theta, log_alpha) -> dict`` (values given to functions h). ``scale``: the random-walk
    proposal's standard deviation on the unconstrained scale. ``pgsm``: None, a number of PGSM
    moves per iteration or a dict of settings (:func:`.split_merge.pgsm_settings`); the moves
    follow each chain's Gibbs sweep, at that chain's prior parameters and pack. Refused for a
    network likelihood."""

    def __init__(self, model, coupling="ot", eps=0.0, scale=0.5, pgsm=None):
        self.model, self.coupling, self.eps = model, coupling, eps
        self.scale = real("hyper_scale", scale, low=0.0, low_open=True, owner="HyperSweeps")
        self.n = model.n
        self._kernels = {}
        settings = pgsm_settings(pgsm, self.n)
        self.moves, self.pgsm = 0, None
        if settings is not None:
            first = self._gibbs(np.array(model.theta0, np.float64), model.log_alpha0)
            refuse_pgsm_network(first.pack, "HyperSweeps")
            self.moves = settings["moves"]
            # one kernel for both chains: set_model gives it each chain's pack and prior parameters before its moves
            self.pgsm = PGSMKernel(first.pack, first.prior_code, first.prior_params, settings["num_particles"],
                                   settings["resample_threshold"], settings["num_anchors"], settings["annealed"])

    def _gibbs(self, theta, log_alpha):
        """The partition kernel at these hyperparameter values (the last few kept: a pair has two)."""
        key = (theta.tobytes(), log_alpha)
        kernel = self._kernels.get(key)
        if kernel is None:
            prior_params, pack = self.model.kernel_inputs(theta, log_alpha)
            kernel = GibbsSweeps(pack, self.model.prior_code, prior_params, self.coupling, self.eps)
            if len(self._kernels) >= 4:
                self._kernels.pop(next(iter(self._kernels)))
            self._kernels[key] = kernel
        return kernel

    def start(self, labels) -> HyperState:
        theta = np.array(self.model.theta0, np.float64)
        gibbs = self._gibbs(theta, self.model.log_alpha0)
        return HyperState(gibbs.start(labels), gibbs, theta, self.model.log_alpha0)

    def random_numbers(self, rng):
        """The partition sweep's random numbers, and the generator the hyperparameter steps draw from."""
        return self._gibbs_numbers(rng), rng

    def _gibbs_numbers(self, rng):
        return rng.permutation(self.n), rng.random((self.n, 4))

    def _refresh(self, state, theta, log_alpha):
        """Move ``state`` to new hyperparameter values; rebuild its table when the pack changed."""
        gibbs = self._gibbs(theta, log_alpha)
        if gibbs.pack is not state.gibbs.pack:
            state.chain = gibbs.start(state.chain.labels())
        state.gibbs, state.theta, state.log_alpha = gibbs, theta, log_alpha

    def _pgsm_moves(self, state, moves) -> None:
        """The PGSM moves on ``state``'s partition at its own hyperparameters, in place (the table
        rebuilt only if a move changed the partition)."""
        gibbs = state.gibbs
        self.pgsm.set_model(gibbs.pack, gibbs.prior_params)
        labels, changed = state.labels(), False
        for r in moves:
            labels, info = self.pgsm.move(labels, r)
            changed = changed or info["move"] != "keep"
        if changed:
            state.chain = gibbs.start(labels)

    def _pgsm_numbers(self, rng):
        """The randomness of this iteration's PGSM moves, shared by both chains ([] without PGSM)."""
        return [pgsm_random_numbers(rng, self.n, self.pgsm.num_anchors) for _ in range(self.moves)]

    def _hyper_steps(self, x, y, rng):
        m = self.model
        la_x, la_y = x.log_alpha, None if y is None else y.log_alpha
        if m.escobar_west is not None:
            shape, rate = m.escobar_west
            k_x = int(x.chain.n_active)
            k_y = None if y is None else int(y.chain.n_active)
            la_x, la_y = coupled_escobar_west(la_x, k_x, la_y, k_y, self.n, shape, rate, rng)
        th_x, th_y = x.theta, None if y is None else y.theta
        if th_x.shape[0]:
            lx = x.labels()
            ly = None if y is None else y.labels()
            th_x, th_y, _, _ = coupled_random_walk(
                th_x, lambda t: m.log_density(lx, t, la_x), th_y,
                None if y is None else (lambda t: m.log_density(ly, t, la_y)), self.scale, rng)
        self._refresh(x, th_x, la_x)
        if y is not None:
            self._refresh(y, th_y, la_y)

    def sweep(self, state: HyperState, randomness) -> None:
        r, rng = randomness
        state.gibbs.sweep(state.chain, r)
        if self.moves:
            self._pgsm_moves(state, self._pgsm_numbers(rng))
        self._hyper_steps(state, None, rng)

    def coupled_sweep(self, x: HyperState, y: HyperState, inter, randomness):
        r, rng = randomness
        x.gibbs.coupled_sweep(x.chain, y.chain, x.gibbs.intersections(x.chain, y.chain), r, other=y.gibbs)
        if self.moves:
            moves = self._pgsm_numbers(rng)
            self._pgsm_moves(x, moves)
            self._pgsm_moves(y, moves)
        self._hyper_steps(x, y, rng)
        return None  # (the tables may have been rebuilt: intersections are recomputed when needed)

    def intersections(self, x: HyperState, y: HyperState):
        return None

    def distance(self, x: HyperState, y: HyperState, inter) -> int:
        return x.gibbs.distance(x.chain, y.chain, x.gibbs.intersections(x.chain, y.chain))

    @staticmethod
    def same(x: HyperState, y: HyperState) -> bool:
        """Met: the same partition and exactly the same hyperparameter values."""
        return (x.log_alpha == y.log_alpha and np.array_equal(x.theta, y.theta)
                and np.array_equal(x.labels(), y.labels()))

    def h_args(self, state: HyperState):
        """What the functions h are called with: (labels, hyperparameter values by name), the
        values computed only if some h reads them."""
        return state.labels(), _LazyParams(self.model, state.theta, state.log_alpha)


class _LazyParams(Mapping):
    """{name: value} of the hyperparameters, computed on first use (a PyTensor call)."""

    __slots__ = ("_args", "_values")

    def __init__(self, model, theta, log_alpha):
        self._args, self._values = (model, theta, log_alpha), None

    def _get(self):
        if self._values is None:
            model, theta, log_alpha = self._args
            self._values = model.params(theta, log_alpha)
        return self._values

    def __getitem__(self, name):
        return self._get()[name]

    def __iter__(self):
        return iter(self._get())

    def __len__(self):
        return len(self._get())

    def __repr__(self):
        return repr(self._get())


@dataclass
class HyperUnbiasedJob(UnbiasedJob):
    """An :class:`.parallel.UnbiasedJob` whose chains also carry random hyperparameters
    (:class:`HyperSweeps`, with the job's ``pgsm`` settings); ``pack``/``prior_params`` are those
    at the model's initial point (the initial law of the partition)."""

    hyper_model: object = None
    hyper_scale: float = 0.5

    def kernel(self):
        return HyperSweeps(self.hyper_model, self.coupling, self.eps, self.hyper_scale, self.pgsm)

    def warm_up(self):
        try:
            n, rng, kernel = self.pack.data.shape[0], np.random.default_rng(0), self.kernel()
            x, y = kernel.start(np.arange(n)), kernel.start(np.zeros(n, np.int64))
            kernel.sweep(x, kernel.random_numbers(rng))
            kernel.coupled_sweep(x, y, None, kernel.random_numbers(rng))
            kernel.h_args(x)
        except Exception:  # the pairs report their own errors
            pass
