"""The non-conjugate split-merge move (samplers/slot_split_merge.py), alone on the labels: with the
exact conditional draw of the block means between moves, it reproduces the exact posterior over all
partitions of a conjugate model written with explicit block parameters (every prior kind); a wrong
acceptance ratio fails the same check (power); bad input is refused."""

import math

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


# ----------------------------------------------------------------------------- the data-informed move
# Two models: known variance (the block log density is quadratic in the mean: the Laplace fit is exact
# after one Newton step, not after zero) and unknown mean and variance, (mu, log sigma) per block under
# the Normal-inverse-gamma base measure (not Gaussian: the Laplace fit is an approximation), against the
# collapsed NIW family with D = 1 by enumeration. Derivatives by central differences: any callable will do.

NIG = dict(m0=0.0, kappa0=0.5, nu0=3.0, psi0=2.0)  # sigma^2 ~ InvGamma(nu0/2, psi0/2), mu ~ N(m0, sigma^2/kappa0)


def exact_nig(prior, y=Y):
    hyper = kernels.niw_hyper([NIG["m0"]], NIG["kappa0"], NIG["nu0"], [[NIG["psi0"]]], 1, len(y))
    pack = FamilyPack.build([(kernels.NIW, y[:, None], hyper)])
    return exact_posterior(len(y), lambda p: log_joint(p, pack, prior.code, prior.kernel_params()))


def terms_known(labels, theta, derivatives):
    """terms of informed_split_merge for the known-variance model: per row, log density, gradient, Hessian."""
    S = theta.shape[0]
    lp = base_logp(theta) + np.bincount(labels, loglik(labels, theta), minlength=S)
    if not derivatives:
        return lp
    m, total = np.bincount(labels, minlength=S), np.bincount(labels, Y, minlength=S)
    grad = -theta[:, 0] / SIGMA0**2 + total - m * theta[:, 0]
    return lp, grad[:, None], -(1.0 / SIGMA0**2 + m)[:, None, None] + np.zeros((S, 1, 1))


def terms_nig(labels, theta, derivatives):
    """The same for (mu, log sigma) under the Normal-inverse-gamma base measure (value scale log sigma)."""
    S = theta.shape[0]
    mu, s = theta[:, 0], theta[:, 1]
    a, b, kappa, m0 = 0.5 * NIG["nu0"], 0.5 * NIG["psi0"], NIG["kappa0"], NIG["m0"]
    m = np.bincount(labels, minlength=S)
    total, squares = np.bincount(labels, Y, minlength=S), np.bincount(labels, Y * Y, minlength=S)
    with np.errstate(over="ignore", invalid="ignore"):
        w = np.exp(-2.0 * s)
        Q = kappa * (mu - m0) ** 2 + squares - 2.0 * mu * total + m * mu * mu
        lp = (a * np.log(b) - math.lgamma(a) + np.log(2.0) + 0.5 * np.log(kappa) - (1 + m) * 0.5 * _LOG_2PI
              - (2.0 * a + 1.0 + m) * s - b * w - 0.5 * w * Q)
        if not derivatives:
            return lp
        dQ = 2.0 * ((kappa + m) * mu - kappa * m0 - total)
        grad = np.stack([-0.5 * w * dQ, -(2.0 * a + 1.0 + m) + 2.0 * b * w + w * Q], axis=1)
        hess = np.empty((S, 2, 2))
        hess[:, 0, 0] = -w * (kappa + m)
        hess[:, 0, 1] = hess[:, 1, 0] = w * dQ
        hess[:, 1, 1] = -4.0 * b * w - 2.0 * w * Q
    return lp, grad, hess


def with_differences(row_logp, h=1e-4):
    """terms from a row log density alone, derivatives by central differences (checks the analytic ones)."""
    def terms(labels, theta, derivatives):
        lp = row_logp(labels, theta)
        if not derivatives:
            return lp
        S, d = theta.shape
        grad, hess = np.empty((S, d)), np.empty((S, d, d))
        for a in range(d):
            e = np.zeros(d)
            e[a] = h
            grad[:, a] = (row_logp(labels, theta + e) - row_logp(labels, theta - e)) / (2 * h)
            for b in range(d):
                f = np.zeros(d)
                f[b] = h
                hess[:, a, b] = (row_logp(labels, theta + e + f) - row_logp(labels, theta + e - f)
                                 - row_logp(labels, theta - e + f) + row_logp(labels, theta - e - f)) / (4 * h * h)
        return lp, grad, hess
    return terms


def test_analytic_terms_are_the_derivatives():
    rng = np.random.default_rng(0)
    labels = np.array([0, 0, 1, 0, 2, 1])
    for terms, d in [(terms_known, 1), (terms_nig, 2)]:
        theta = rng.normal(0.0, 0.7, (6, d))
        numeric = with_differences(lambda lab, th: terms(lab, th, False))(labels, theta, True)
        for x, y in zip(terms(labels, theta, True), numeric):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
    # the NIG row density is the base measure of (mu, log sigma) plus the items' Normal log-likelihoods
    from scipy import stats
    theta = rng.normal(0.0, 0.7, (6, 2))
    sig = np.exp(theta[:, 1])
    base = (stats.invgamma.logpdf(sig**2, 0.5 * NIG["nu0"], scale=0.5 * NIG["psi0"]) + np.log(2 * sig**2)
            + stats.norm.logpdf(theta[:, 0], NIG["m0"], sig / np.sqrt(NIG["kappa0"])))
    items = stats.norm.logpdf(Y, theta[labels, 0], sig[labels])
    np.testing.assert_allclose(terms_nig(labels, theta, False), base + np.bincount(labels, items, minlength=6))


def nig_draw(labels, y, rng, S):
    """(S, 2) exact conditional draws of (mu, log sigma) of the occupied blocks, base draws beyond."""
    K = labels.max() + 1
    out = np.empty((S, 2))
    for b in range(S):
        x = y[labels == b] if b < K else y[:0]
        m = x.shape[0]
        xbar = x.mean() if m else 0.0
        kn, nun = NIG["kappa0"] + m, NIG["nu0"] + m
        mn = (NIG["kappa0"] * NIG["m0"] + x.sum()) / kn
        psin = NIG["psi0"] + ((x - xbar) ** 2).sum() + NIG["kappa0"] * m / kn * (xbar - NIG["m0"]) ** 2
        var = 1.0 / rng.gamma(0.5 * nun, 2.0 / psin)
        out[b] = rng.normal(mn, math.sqrt(var / kn)), 0.5 * math.log(var)
    return out


def run_informed(prior, iterations, seed, model="known", moves=2, newton_steps=ssm.NEWTON_STEPS, y=Y):
    rng = np.random.default_rng(seed)
    n = len(y)
    S = prior.k if isinstance(prior, FiniteDirichlet) else n
    terms = terms_known if model == "known" else terms_nig
    spread = np.array([SIGMA0]) if model == "known" else np.array([2.0, 0.7])  # (about the base measures')
    pack = ssm.surrogate_pack(y[:, None], np.eye(1) * 0.5)
    labels = np.zeros(n, np.int64)
    out = np.empty((iterations, n), np.int64)
    accepted = 0
    for t in range(iterations):
        if model == "known":
            K = labels.max() + 1
            counts = np.bincount(labels, minlength=S)
            var = 1.0 / (1.0 / SIGMA0**2 + counts)
            theta = rng.normal(var * np.bincount(labels, y, minlength=S), np.sqrt(var))[:, None]
        else:
            theta = nig_draw(labels, y, rng, S)
        labels, theta, s, m = ssm.informed_split_merge(labels, theta, terms, pack, prior.code, prior.kernel_params(),
                                                       spread, rng, moves=moves, newton_steps=newton_steps)
        accepted += s + m
        out[t] = labels
    return out, accepted


@pytest.mark.parametrize("prior_name, model, newton_steps", [
    ("crp", "known", 1), ("pitman_yor", "known", 2), ("finite_dirichlet", "known", 3), ("crp", "nig", 4),
    ("finite_dirichlet", "nig", 2)])
def test_informed_split_merge_alone_matches_enumeration(prior_name, model, newton_steps):
    """The informed move alone on the labels (with exact draws of the block parameters between moves)
    leaves the exact posterior over partitions invariant, for exact (known variance) and approximate
    (unknown variance, value scale log sigma) Laplace proposals, started at the mode or not."""
    prior = PRIORS[prior_name]
    parts, p = exact(prior) if model == "known" else exact_nig(prior)
    _, wrong = exact(prior, y=Y * 1.5) if model == "known" else exact_nig(prior, y=Y * 3.0)  # (as far from p)
    samples, accepted = run_informed(prior, 3000 if model == "known" else 4000, seed=1, model=model,
                                     newton_steps=newton_steps, moves=3)
    assert accepted > 500  # the labels move by this move only
    k = samples.max(axis=1).astype(float)
    together = (samples[:, 0] == samples[:, 3]).astype(float)
    tv, tol = check_against(parts, p, samples[100:], [k[100:], together[100:]], wrong=wrong)
    assert tv < tol


@pytest.mark.parametrize("wrong_term", ["merged proposal", "split proposal", "allocation"])
def test_a_wrong_informed_ratio_is_detected(monkeypatch, wrong_term):
    """Power: leaving one proposal density out of the ratio fails the check the move passes above."""
    right = ssm._log_informed_acceptance

    def wrong(split, log_pi, log_q_merged, log_q_split, log_p):
        return right(split, log_pi, 0.0 if wrong_term == "merged proposal" else log_q_merged,
                     0.0 if wrong_term == "split proposal" else log_q_split, 0.0 if wrong_term == "allocation" else log_p)

    monkeypatch.setattr(ssm, "_log_informed_acceptance", wrong)
    prior = PRIORS["crp"]
    parts, p = exact(prior)
    samples, _ = run_informed(prior, 3000, seed=1, model="known", moves=3)
    k = samples[100:].max(axis=1).astype(float)
    together = (samples[100:, 0] == samples[100:, 3]).astype(float)
    n_eff = min(len(k), ess(k), ess(together))
    assert total_variation(frequencies(parts, samples[100:]), p) > tv_tolerance(p, n_eff, 2.0)


def test_informed_bad_input_is_refused():
    prior = CRP(1.0)
    n = len(Y)
    rng = np.random.default_rng(0)
    terms = terms_known
    pack = ssm.surrogate_pack(Y[:, None], np.eye(1))
    good = dict(labels=np.zeros(n, np.int64), theta=np.zeros((n, 1)), terms=terms, pack=pack, prior_code=prior.code,
                prior_params=prior.kernel_params(), spread=np.ones(1), rng=rng, moves=3)
    ssm.informed_split_merge(**good)
    bad = [
        ({"labels": np.array([1, 0, 0, 0, 0, 0])}, "canonical"),
        ({"theta": np.zeros((n, 0))}, "theta"),
        ({"theta": np.full((n, 1), np.inf)}, "theta"),
        ({"terms": None}, "callable"),
        ({"pack": None}, "FamilyPack"),
        ({"pack": ssm.surrogate_pack(Y[:3, None], np.eye(1))}, "FamilyPack"),
        ({"prior_params": [-1.0, 0.0, 0.0]}, "prior"),
        ({"moves": -1}, "moves"),
        ({"spread": np.zeros(1)}, "spread"),
        ({"spread": np.ones(2)}, "spread"),
        ({"spread": np.array([np.nan])}, "spread"),
        ({"newton_steps": 0}, "newton_steps"),
        ({"newton_steps": 1.5}, "newton_steps"),
        ({"rng": 3}, "rng"),
        ({"terms": lambda lab, th, der: np.zeros(n + 1)}, "terms must return"),
        ({"terms": lambda lab, th, der: (np.zeros(n), np.zeros((n, 1))) if der else np.zeros(n)}, "terms must return"),
        ({"terms": lambda lab, th, der: (np.full(n, np.inf), np.zeros((n, 1)), np.zeros((n, 1, 1))) if der
          else np.full(n, np.inf)}, r"\+inf"),
    ]
    for change, word in bad:
        with pytest.raises((ValueError, TypeError), match=word):
            ssm.informed_split_merge(**{**good, **change})
    for features, cov, word in [(np.zeros((0, 1)), np.eye(1), "features"), (np.full((3, 1), np.nan), np.eye(1), "features"),
                                (Y[:, None], np.eye(2), "within_cov"), (Y[:, None], -np.eye(1), "positive definite"),
                                (Y[:, None], np.array([[np.nan]]), "within_cov")]:
        with pytest.raises(ValueError, match=word):
            ssm.surrogate_pack(features, cov)


def test_newton_step_is_its_definition_and_refuses_wrong_shapes():
    rng = np.random.default_rng(5)
    r, d = 3, 2
    H = rng.normal(size=(r, d, d))
    g = rng.normal(size=(r, d))
    floor = np.diag([0.5, 2.0])
    P, delta, decrement = ssm._newton_step(H, g, floor)
    for k in range(r):
        lam, vec = np.linalg.eigh(-0.5 * (H[k] + H[k].T))
        want = vec @ np.diag(np.abs(lam)) @ vec.T + floor
        np.testing.assert_allclose(P[k], want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(delta[k], np.linalg.solve(want, g[k]), rtol=1e-10)
    assert decrement == pytest.approx(max(g[k] @ delta[k] for k in range(r)), rel=1e-12)
    for bad_H, bad_floor in [(H[:2], floor), (H[:, :1], floor), (H[:, :, :1], floor), (H, floor[:1]),
                             (H, np.eye(3))]:
        with pytest.raises(ValueError, match="_newton_step"):
            ssm._newton_step(np.ascontiguousarray(bad_H), g, np.ascontiguousarray(bad_floor))
