"""PGSM moves in coupled chains with random hyperparameters (issue 22): each chain's PGSM moves at
its own hyperparameters, with common random numbers. Checked against the exact posterior
(partitions enumerated, the hyperparameter integrated by quadrature): the average of many
unbiased estimates, and the law of each chain after one coupled iteration started from exact
posterior draws; a power check (moves at the other chain's alpha) fails; identical states stay
identical; what is refused."""

import math

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special, stats

import pymc_partitions as pmp
from enumeration import exact_posterior
from pymc_partitions.coupling.hyper import HyperSweeps
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.pymc.unbiased_hyper import PyMCHyperModel
from pymc_partitions.samplers.gibbs import log_joint
from test_unbiased_hyper_enumeration import (A, B, N, _one_iteration_laws, _same_law, alpha_model, exact_alpha,
                                             exact_sigma, sigma_model)


def test_random_alpha_with_pgsm_matches_quadrature():
    """alpha ~ Gamma(1, 1), one PGSM move per iteration: E[K | y] and E[alpha | y] within 3 SE."""
    ek, ea = exact_alpha()
    result = pmp.sample_unbiased(alpha_model(), n_pairs=1000, k=4, m=12, cores=1, random_seed=13,
                                 progressbar=False, pgsm=1)
    s = pmp.summarize_unbiased(result)
    assert bool(result["meeting"]["met"].all())
    assert result["unbiased"].attrs["pgsm_moves"] == 1
    assert abs(s.loc["n_clusters", "mean"] - ek) < 3 * s.loc["n_clusters", "se"]
    assert abs(s.loc["alpha", "mean"] - ea) < 3 * s.loc["alpha", "se"]
    assert s.loc["alpha", "se"] < 0.05 and s.loc["n_clusters", "se"] < 0.05  # (precise enough to mean something)


def test_random_likelihood_scale_with_pgsm_matches_quadrature():
    """NormalNormal's sigma ~ HalfNormal(1) (coupled random-walk Metropolis), two PGSM moves of
    10 particles per iteration at each chain's own sigma."""
    ek, es = exact_sigma()
    result = pmp.sample_unbiased(sigma_model(), n_pairs=150, k=50, m=100, cores=1, random_seed=14,
                                 progressbar=False, hyper_scale=1.0, pgsm={"moves": 2, "num_particles": 10})
    s = pmp.summarize_unbiased(result)
    assert bool(result["meeting"]["met"].all())
    assert abs(s.loc["n_clusters", "mean"] - ek) < 3 * s.loc["n_clusters", "se"]
    assert abs(s.loc["sigma", "mean"] - es) < 3 * s.loc["sigma", "se"]
    assert s.loc["sigma", "se"] < 0.05


# ----------------------------------------------------------------------------- one iteration from the exact posterior


def exact_alpha_sampler():
    """Draws of (labels, log alpha) from the exact joint posterior of the alpha model, and the
    exact law of K (enumeration) and CDF of alpha (quadrature)."""
    model = alpha_model()
    terms = PartitionTerms(model, "z")
    _, pack = terms.kernel_inputs(model.initial_point())
    parts, post1 = exact_posterior(N, lambda p: log_joint(p, pack, terms.prior_code, np.array([1.0, 0.0, 0.0])))
    K = parts.max(axis=1) + 1

    def log_weight(a, k):  # log (Gamma(A, B) density x EPPF(a) / EPPF(1))
        return (stats.gamma.logpdf(a, A, scale=1 / B) + k * np.log(a) + special.gammaln(a)
                - special.gammaln(a + N) + special.gammaln(1 + N))

    z_k = np.array([integrate.quad(lambda a, k: math.exp(log_weight(a, k)), 0, np.inf, args=(k,))[0]
                    for k in range(1, N + 1)])
    w = post1 * z_k[K - 1]
    w /= w.sum()
    p_k = np.array([w[K == k].sum() for k in range(1, N + 1)])
    grid = np.geomspace(1e-8, 60.0, 200_001)  # alpha | K: inverse CDF on a fine grid
    cdf_k = []
    for k in range(1, N + 1):
        dens = np.exp(log_weight(grid, k) - math.log(z_k[k - 1]))
        c = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(grid))])
        cdf_k.append(c / c[-1])

    def draw(rng):
        i = rng.choice(len(parts), p=w)
        return parts[i], math.log(np.interp(rng.random(), cdf_k[K[i] - 1], grid))

    def alpha_cdf(a):
        return sum(p_k[k - 1] * np.interp(a, grid, cdf_k[k - 1]) for k in range(1, N + 1))

    return draw, p_k, alpha_cdf


class _PGSMAtChainXsAlpha(HyperSweeps):
    """Wrong: chain y's PGSM moves use chain x's alpha (its Gibbs sweep and Escobar-West step are right)."""

    def coupled_sweep(self, x, y, inter, randomness):
        r, rng = randomness
        x.gibbs.coupled_sweep(x.chain, y.chain, x.gibbs.intersections(x.chain, y.chain), r, other=y.gibbs)
        moves = self._pgsm_numbers(rng)
        self._pgsm_moves(x, moves)
        own, y.gibbs = y.gibbs, x.gibbs
        self._pgsm_moves(y, moves)
        y.gibbs, y.chain = own, own.start(y.labels())
        self._hyper_steps(x, y, rng)


def _after_one_coupled_iteration(kernel_class, stationary, reps=1500, coupling="ot"):
    """(K, alpha) of the chain ``stationary`` ("x" or "y") after one coupled iteration with one
    PGSM move (Gibbs sweeps coupled by ``coupling``), that chain started from an exact posterior
    draw and the other at one block with alpha = e^-3 (far from it)."""
    model = alpha_model()
    terms = PartitionTerms(model, "z")
    hyper = PyMCHyperModel(model, model["z"], terms, [model["alpha"]])
    kernel = kernel_class(hyper, coupling, 0.0, 0.6, pgsm=1)
    draw, p_k, alpha_cdf = exact_alpha_sampler()
    rng = np.random.default_rng(7)

    def fresh(labels, log_alpha):
        s = kernel.start(labels)
        kernel._refresh(s, s.theta, log_alpha)
        return s

    out = []
    for _ in range(reps):
        exact, far = fresh(*draw(rng)), fresh(np.zeros(N, np.int64), -3.0)
        x, y = (exact, far) if stationary == "x" else (far, exact)
        kernel.coupled_sweep(x, y, None, kernel.random_numbers(rng))
        out.append((exact.chain.n_active, math.exp(exact.log_alpha)))
    out = np.array(out)
    counts = np.array([np.sum(out[:, 0] == k) for k in range(1, N + 1)])
    keep = p_k * reps >= 5  # (chi-square cells with enough expected counts; the rest pooled)
    observed, expected = counts[keep], p_k[keep] * reps
    if not keep.all():
        observed, expected = np.append(observed, counts[~keep].sum()), np.append(expected, p_k[~keep].sum() * reps)
    p_chi2 = stats.chisquare(observed, expected).pvalue
    p_ks = stats.kstest(out[:, 1], alpha_cdf).pvalue
    return p_chi2, p_ks


@pytest.mark.parametrize("coupling", ["ot", "aligned"])
@pytest.mark.parametrize("stationary", ["x", "y"])
def test_a_coupled_iteration_with_pgsm_keeps_each_chain_at_the_exact_posterior(stationary, coupling):
    """One coupled iteration (Gibbs sweeps, PGSM moves, Escobar-West, each at the chain's own
    alpha) started with one chain at an exact posterior draw and the other far away: that
    chain's K and alpha still follow the exact posterior (chi-square on K against enumeration,
    KS on alpha against the quadrature CDF)."""
    assert min(_after_one_coupled_iteration(HyperSweeps, stationary, coupling=coupling)) > 1e-3


def test_power_pgsm_at_the_other_chains_alpha_fails():
    """The same check with chain y's PGSM move at chain x's alpha (e^-3) fails."""
    assert min(_after_one_coupled_iteration(_PGSMAtChainXsAlpha, "y")) < 1e-4


@pytest.mark.parametrize("coupling", ["ot", "aligned"])
@pytest.mark.parametrize("which", ["sigma", "alpha"])
def test_a_coupled_iteration_with_pgsm_is_the_single_chain_iteration(which, coupling):
    """From two different states, chain y's (K, hyperparameter) after one coupled iteration with
    PGSM has the law of the single-chain iteration (Gibbs, PGSM, hyperparameter steps) from y's state."""
    assert _same_law(*_one_iteration_laws(HyperSweeps, which, pgsm=1, coupling=coupling)) > 1e-3


# ----------------------------------------------------------------------------- faithfulness


@pytest.mark.parametrize("which", ["sigma", "alpha"])
def test_identical_states_stay_identical_and_the_moves_act(which):
    """Two chains in the same state (partition and hyperparameter) stay equal through coupled
    iterations with PGSM; and the moves change the trajectory (same seed, pgsm=None differs)."""
    model = sigma_model() if which == "sigma" else alpha_model()
    terms = PartitionTerms(model, "z")
    hyper = PyMCHyperModel(model, model["z"], terms, [model[which]])
    paths = {}
    for pgsm in (None, 2):
        kernel = HyperSweeps(hyper, "ot", 0.0, 0.6, pgsm=pgsm)
        rng = np.random.default_rng(2)
        x, y = kernel.start(np.array([0, 1, 0, 2, 1, 2])), kernel.start(np.array([0, 1, 0, 2, 1, 2]))
        path = []
        for _ in range(60):
            kernel.coupled_sweep(x, y, None, kernel.random_numbers(rng))
            assert kernel.same(x, y)
            path.append(x.labels())
        paths[pgsm] = np.array(path)
    assert not np.array_equal(paths[None], paths[2])


# ----------------------------------------------------------------------------- refusals


def network_model():
    edges = pmp.datasets.load_karate()
    edges = edges[edges.max(axis=1) < 12]  # (the first 12 members' ties)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=12)
        pmp.BetaBernoulliNetwork("A", partition=z, a=1.0, b=1.0, observed=edges)
    return model


RUN = dict(n_pairs=2, k=1, m=2, cores=1, random_seed=0, progressbar=False)


def test_pgsm_with_a_network_and_random_hyperparameters_is_refused_clearly():
    with pytest.raises(NotImplementedError, match=r"sample_unbiased: PGSM moves \(pgsm=\) do not support the network "
                                                  r"likelihood .* leave pgsm=None"):
        pmp.sample_unbiased(network_model(), pgsm=1, **RUN)
    model = network_model()
    terms = PartitionTerms(model, "z")
    hyper = PyMCHyperModel(model, model["z"], terms, [model["alpha"]])
    with pytest.raises(NotImplementedError, match=r"HyperSweeps: PGSM moves \(pgsm=\) do not support the network"):
        HyperSweeps(hyper, pgsm=1)


@pytest.mark.parametrize("bad,exc,match", [
    (0, ValueError, "pgsm: moves must be an integer >= 1"),
    (-2, ValueError, "pgsm: moves must be an integer >= 1"),
    (True, TypeError, "pgsm must be None, a number of moves"),
    (1.5, TypeError, "pgsm must be None, a number of moves"),
    ("1", TypeError, "pgsm must be None, a number of moves"),
    ({"moves": 1, "particles": 5}, ValueError, r"unknown PGSM setting\(s\) \['particles'\]"),
    ({"num_particles": 1}, ValueError, "pgsm: num_particles must be an integer >= 2"),
    ({"num_anchors": N + 1}, ValueError, "pgsm num_anchors .* exceeds the number of items"),
    ({"anchor_proposal": "cluster"}, ValueError, "coupled PGSM moves need anchor_proposal='uniform'"),
    ({"resample_threshold": 1.5}, ValueError, "pgsm: resample_threshold"),
])
def test_bad_pgsm_values_are_refused_with_random_hyperparameters(bad, exc, match):
    with pytest.raises(exc, match=match):
        pmp.sample_unbiased(alpha_model(), pgsm=bad, **RUN)
    model = alpha_model()
    terms = PartitionTerms(model, "z")
    hyper = PyMCHyperModel(model, model["z"], terms, [model["alpha"]])
    with pytest.raises(exc, match=match):
        HyperSweeps(hyper, pgsm=bad)
