"""Compiled family kernels agree with independent oracles, and the PyMC model's logp (PyTensor)
equals the kernel log joint on random partitions."""

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from models import COV, COV0
from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.families.transforms import whiten_full_normal
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.samplers.gibbs import log_joint
from reference_families import (
    ref_log_marginal_beta_bernoulli,
    ref_log_marginal_niw,
    ref_log_marginal_normal_normal,
    ref_log_marginal_normal_normal_full,
    ref_total,
)

NO_PRIOR = pmp.CRP(1.0)


def kernel_log_lik(labels, parts):
    """Collapsed log likelihood from the kernels: log joint minus the prior term."""
    pack = FamilyPack.build(parts)
    return log_joint(labels, pack, NO_PRIOR.code, NO_PRIOR.kernel_params()) - NO_PRIOR.log_eppf(labels)


def random_labels(rng, n):
    return rng.integers(0, rng.integers(1, n + 1), n)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_kernels_match_reference(dim):
    rng = np.random.default_rng(dim)
    n = 9
    y = rng.normal(size=(n, dim)) * 2 + 1
    yb = (rng.random((n, dim)) < 0.4).astype(float)
    mu0 = rng.normal(size=dim)
    s0, s = rng.uniform(0.5, 2, dim), rng.uniform(0.5, 2, dim)
    a_cov = rng.normal(size=(dim, dim))
    cov0 = a_cov @ a_cov.T + np.eye(dim)
    b_cov = rng.normal(size=(dim, dim))
    cov = b_cov @ b_cov.T + 0.5 * np.eye(dim)
    kappa0, nu0 = 0.7, dim + 0.5
    a, b = rng.uniform(0.3, 3, dim), rng.uniform(0.3, 3, dim)
    y2, mu2, sd2, jac = whiten_full_normal(y, mu0, cov0, cov)
    for _ in range(5):
        z = random_labels(rng, n)
        got = kernel_log_lik(z, [(kernels.DIAG_NORMAL, y, kernels.diag_normal_hyper(mu0, s0, s, dim))])
        want = ref_total(z, y, ref_log_marginal_normal_normal, mu0=mu0, sigma0=s0, sigma=s)
        assert got == pytest.approx(want, rel=1e-9)
        got = kernel_log_lik(z, [(kernels.DIAG_NORMAL, y2, kernels.diag_normal_hyper(mu2, sd2, 1.0, dim, jac))])
        want = ref_total(z, y, ref_log_marginal_normal_normal_full, mu0=mu0, cov0=cov0, cov=cov)
        assert got == pytest.approx(want, rel=1e-9)
        got = kernel_log_lik(z, [(kernels.NIW, y, kernels.niw_hyper(mu0, kappa0, nu0, cov, dim, n))])
        want = ref_total(z, y, ref_log_marginal_niw, mu0=mu0, kappa0=kappa0, nu0=nu0, scale0=cov)
        assert got == pytest.approx(want, rel=1e-9)
        got = kernel_log_lik(z, [(kernels.BETA_BERNOULLI, yb, kernels.beta_bernoulli_hyper(a, b, dim))])
        want = ref_total(z, yb, ref_log_marginal_beta_bernoulli, a=a, b=b)
        assert got == pytest.approx(want, rel=1e-9)


def test_niw_add_remove_is_exact_after_many_moves():
    """Cholesky up/downdates over thousands of Gibbs moves leave the state's log joint exact."""
    from pymc_partitions.samplers.gibbs import GibbsKernel  # noqa: PLC0415

    rng = np.random.default_rng(0)
    y = rng.normal(size=(40, 3)) + np.repeat(rng.normal(size=(4, 3)) * 4, 10, axis=0)
    pack = FamilyPack.build([(kernels.NIW, y, kernels.niw_hyper(0.0, 0.1, 5.0, np.eye(3), 3, 40))])
    prior = pmp.CRP(1.0)
    kernel = GibbsKernel(pack, prior.code, prior.kernel_params(), sweeps=200)
    labels, lj = kernel.step(np.zeros(40, np.int64), rng)
    assert lj == pytest.approx(log_joint(labels, pack, prior.code, prior.kernel_params()), rel=1e-10)


def _model(family, make_prior, n, rng):
    y = rng.normal(size=(n, 2)) * 2
    with pm.Model() as model:
        z = pmp.Partition("z", make_prior(), n=n)
        if family == "diag":
            s0 = pm.HalfNormal("s0", 2.0)
            pmp.NormalNormal("y", partition=z, mu0=[0.5, -0.2], sigma0=s0, sigma=[1.0, 0.7], observed=y)
        elif family == "full":
            pmp.NormalNormal("y", partition=z, mu0=0.3, cov0=COV0, cov=COV, observed=y)
        elif family == "niw":
            kappa = pm.Gamma("kappa", 2.0, 2.0)
            pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=kappa, nu0=3.5, scale0=COV, observed=y)
        elif family == "bb":
            pmp.BetaBernoulli("y", partition=z, a=0.7, b=[1.0, 2.0], observed=(y > 0).astype(int))
        else:
            pmp.NormalNormal("y", partition=z, sigma0=2.0, sigma=1.0, observed=y)
            pmp.BetaBernoulli("b", partition=z, a=1.0, b=1.0, observed=(y > 0.5).astype(int))
    return model


@pytest.mark.parametrize("family", ["diag", "full", "niw", "bb", "multi"])
@pytest.mark.parametrize(
    "make_prior",
    [lambda: pmp.CRP(pm.Gamma("alpha", 2.0, 1.0)), lambda: pmp.PitmanYor(0.5, pm.Beta("d", 1.0, 1.0)),
     lambda: pmp.FiniteDirichlet(pm.Exponential("alpha", 1.0), 4)],
    ids=["crp", "py", "fd"],
)
def test_pymc_logp_equals_kernel_log_joint(family, make_prior):
    rng = np.random.default_rng(3)
    n = 12
    model = _model(family, make_prior, n, rng)
    logp = model.compile_logp(vars=[model["z"]] + model.observed_RVs, jacobian=False)
    terms = PartitionTerms(model, model["z"])
    point = model.initial_point()
    for _ in range(6):
        for name in point:
            if name != "z":
                point[name] = point[name] + rng.normal() * 0.3
        z = rng.integers(0, 4, n)
        point["z"] = z
        params, pack = terms.kernel_inputs(point)
        want = log_joint(z, pack, terms.prior_code, params)
        assert logp(point) == pytest.approx(want, rel=1e-9, abs=1e-9)
