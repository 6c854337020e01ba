"""The non-conjugate split-merge move (samplers/slot_split_merge.py), alone on the labels: with the
exact conditional draw of the block means between moves, it reproduces the exact posterior over all
partitions of a conjugate model written with explicit block parameters (every prior kind); a wrong
acceptance ratio fails the same check (power); bad input is refused."""

import numpy as np
import pytest

from enumeration import check_against, ess, exact_posterior, frequencies, total_variation, tv_tolerance
from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.priors import CRP, FiniteDirichlet, PitmanYor, log_eppf_sizes, log_split_prior_ratio
from pymc_partitions.samplers import slot_split_merge as ssm
from pymc_partitions.samplers.gibbs import log_joint

Y = np.array([-2.1, -1.6, -1.9, 1.8, 2.3, 0.4])
SIGMA0 = 2.0  # base measure N(0, SIGMA0^2) of the block means; items N(mean, 1)
PRIORS = {"crp": CRP(1.2), "pitman_yor": PitmanYor(0.5, 0.3), "finite_dirichlet": FiniteDirichlet(0.7, 3)}


def exact(prior, y=Y):
    pack = FamilyPack.build([(kernels.DIAG_NORMAL, y[:, None], kernels.diag_normal_hyper([0.0], [SIGMA0], [1.0], 1))])
    return exact_posterior(len(y), lambda p: log_joint(p, pack, prior.code, prior.kernel_params()))


_LOG_2PI = np.log(2.0 * np.pi)


def loglik(labels, theta):
    return -0.5 * (Y - theta[labels, 0]) ** 2 - 0.5 * _LOG_2PI


def base_logp(theta):
    return -0.5 * (theta[:, 0] / SIGMA0) ** 2 - np.log(SIGMA0) - 0.5 * _LOG_2PI


def run(prior, iterations, seed, moves=3, kinds=ssm.KINDS):
    """Split-merge moves only on the labels, then the exact conjugate draw of the occupied means:
    (labels per iteration, accepted splits + merges)."""
    rng = np.random.default_rng(seed)
    n = len(Y)
    S = prior.k if isinstance(prior, FiniteDirichlet) else n
    labels = np.zeros(n, np.int64)
    theta = rng.normal(0.0, SIGMA0, (S, 1))
    out = np.empty((iterations, n), np.int64)
    accepted = 0
    for t in range(iterations):
        item_ll, base = loglik(labels, theta), base_logp(theta)
        labels, theta, _, _, s, m = ssm.slot_split_merge(labels, theta, item_ll, base, loglik, base_logp, prior.code,
                                                         prior.kernel_params(), np.array([1.5]), rng, moves=moves,
                                                         kinds=kinds)
        accepted += s + m
        K = labels.max() + 1
        counts = np.bincount(labels, minlength=K)
        var = 1.0 / (1.0 / SIGMA0**2 + counts)
        theta[:K, 0] = rng.normal(var * np.bincount(labels, Y, minlength=K), np.sqrt(var))
        theta[K:, 0] = rng.normal(0.0, SIGMA0, S - K)
        out[t] = labels
    return out, accepted


def test_split_prior_ratio_is_the_eppf_ratio():
    for prior in PRIORS.values():
        code, params = prior.code, prior.kernel_params()
        for K, a, b, rest in [(1, 2, 3, []), (2, 1, 1, [4]), (3, 4, 2, [1, 2])]:
            merged = log_eppf_sizes(code, params, np.array(rest + [a + b], np.int64))
            split = log_eppf_sizes(code, params, np.array(rest + [a, b], np.int64))
            assert K == len(rest) + 1
            assert log_split_prior_ratio(code, params, K, a, b) == pytest.approx(split - merged, abs=1e-12)


@pytest.mark.parametrize("prior_name, kinds", [(name, ssm.KINDS) for name in PRIORS]
                         + [("crp", ("symmetric",)), ("crp", ("anchored",))])
def test_split_merge_alone_matches_enumeration(prior_name, kinds):
    prior = PRIORS[prior_name]
    parts, p = exact(prior)
    _, wrong = exact(prior, y=Y * 1.5)
    samples, accepted = run(prior, 5000, seed=1, kinds=kinds)
    assert accepted > 500  # the labels move by this move only
    k = samples.max(axis=1).astype(float)
    together = (samples[:, 0] == samples[:, 3]).astype(float)
    tv, tol = check_against(parts, p, samples[100:], [k[100:], together[100:]], wrong=wrong)
    assert tv < tol


@pytest.mark.parametrize("wrong_term", ["jacobian", "proposal"])  # (the Jacobian: of the symmetric kind)
def test_a_wrong_acceptance_ratio_is_detected(monkeypatch, wrong_term):
    """Power: the same chain with the Jacobian 2^d or the proposal density of u left out of the
    ratio fails the check the correct move passes above with the same number of draws."""
    right = ssm._log_acceptance

    def wrong(split, log_pi, log_jacobian, log_q_u, log_p):
        if wrong_term == "jacobian":
            return right(split, log_pi, 0.0, log_q_u, log_p)
        return right(split, log_pi, log_jacobian, 0.0, log_p)

    monkeypatch.setattr(ssm, "_log_acceptance", wrong)
    prior = PRIORS["crp"]
    parts, p = exact(prior)
    samples, _ = run(prior, 5000, seed=1, kinds=("symmetric",) if wrong_term == "jacobian" else ssm.KINDS)
    k = samples[100:].max(axis=1).astype(float)
    together = (samples[100:, 0] == samples[100:, 3]).astype(float)
    n_eff = min(len(k), ess(k), ess(together))
    assert total_variation(frequencies(parts, samples[100:]), p) > tv_tolerance(p, n_eff, 2.0)


def test_bad_input_is_refused():
    prior = CRP(1.0)
    n = len(Y)
    rng = np.random.default_rng(0)
    theta = np.zeros((n, 1))
    good = dict(labels=np.zeros(n, np.int64), theta=theta, item_ll=loglik(np.zeros(n, np.int64), theta),
                base_lp=base_logp(theta), loglik=loglik, base_logp=base_logp, prior_code=prior.code,
                prior_params=prior.kernel_params(), scale=np.ones(1), rng=rng, moves=2)
    ssm.slot_split_merge(**good)
    bad = [
        ({"labels": np.array([1, 0, 0, 0, 0, 0])}, "canonical"),
        ({"labels": np.zeros(n)}, "canonical"),
        ({"theta": np.zeros((n, 0))}, "theta"),
        ({"theta": np.full((n, 1), np.nan)}, "theta"),
        ({"item_ll": np.zeros(n - 1)}, "item_ll"),
        ({"item_ll": np.full(n, np.nan)}, "item_ll"),
        ({"base_lp": np.zeros(n + 1)}, "base_lp"),
        ({"loglik": None}, "callable"),
        ({"prior_params": [-1.0, 0.0, 0.0]}, "prior"),
        ({"scale": np.zeros(1)}, "scale"),
        ({"scale": np.ones(2)}, "scale"),
        ({"multipliers": [0.0]}, "multipliers"),
        ({"moves": -1}, "moves"),
        ({"moves": 1.5}, "moves"),
        ({"rng": 3}, "rng"),
        ({"kinds": "anchored"}, "kinds"),
        ({"kinds": ()}, "kinds"),
        ({"kinds": ("other",)}, "kinds"),
        ({"loglik": lambda lab, th: np.zeros(n + 1)}, "loglik must return"),
        ({"base_logp": lambda th: np.full(n, np.inf)}, r"\+inf"),
    ]
    for change, word in bad:
        with pytest.raises((ValueError, TypeError), match=word):
            ssm.slot_split_merge(**{**good, **change})
