"""Forward draws of every random variable of the package (the partition, each family's likelihood
and posterior replicate) under PyMC 6's numba backend: registered implementations, so no
"Numba will use object mode" warning; the same draws for the same seed, different draws per
posterior draw. (The laws themselves are tested against the exact ones in test_posterior_predictive
and test_counts_pymc, which run through these implementations on PyMC 6.)"""

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from models import categories, counts, data, regressions
from pymc_partitions.pymc import numba_draws
from pymc_partitions.pymc.compat import posterior_dataset

N = 6
Y, B = data(N)
C = counts(N)
CAT, NCAT = categories(N)
XR, YR = regressions(N)
FAMILIES = {
    "diag": lambda z: pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=Y),
    "full": lambda z: pmp.NormalNormal("y", partition=z, mu0=0.0, cov0=4.0 * np.eye(2), cov=np.eye(2), observed=Y),
    "niw": lambda z: pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=0.5, nu0=4.0, scale0=np.eye(2),
                                              observed=Y),
    "beta_bernoulli": lambda z: pmp.BetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=B),
    "gamma_poisson": lambda z: pmp.GammaPoisson("y", partition=z, alpha=1.0, beta=1.0, observed=C),
    "dirichlet_categorical": lambda z: pmp.DirichletCategorical("y", partition=z, a=1.0, n_categories=NCAT,
                                                                observed=CAT),
    "regression": lambda z: pmp.NormalLinearRegression("y", partition=z, X=XR, mu0=0.0, cov0=4.0, a0=2.0, b0=1.0,
                                                       observed=YR),
}
QUIET = dict(progressbar=False)
SEED_CHECKED = ("niw", "gamma_poisson")  # one continuous and one discrete family's replicate op


@pytest.mark.parametrize("family", list(FAMILIES))
def test_forward_draws_without_object_mode_warnings(family):
    with pm.Model(), warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*object mode.*")
        z = pmp.Partition("z", pmp.PitmanYor(1.0, 0.2), n=N)
        FAMILIES[family](z)
        prior = pm.sample_prior_predictive(draws=20, random_seed=0)
        idata = pm.sample(draws=10, tune=0, chains=1, random_seed=0, compute_convergence_checks=False, **QUIET)
        # Each call compiles the forward graph again (about 3 s on PyTensor 3): the seed's
        # role is checked once per family kind, by the test below.
        seeds = (1, 1, 2) if family in SEED_CHECKED else (1,)
        replicates = [posterior_dataset(pm.sample_posterior_predictive(idata, random_seed=seed, **QUIET),
                                        "posterior_predictive")["y"].values for seed in seeds]
    observed = {"beta_bernoulli": B, "gamma_poisson": C, "dirichlet_categorical": CAT,
                "regression": YR[:, None]}.get(family, Y)
    assert replicates[0].shape == (1, 10, *observed.shape)
    if family in SEED_CHECKED:
        np.testing.assert_array_equal(replicates[0], replicates[1])  # the seed decides
        assert not np.array_equal(replicates[0], replicates[2])
    assert len({r.tobytes() for r in replicates[0][0]}) == 10  # each posterior draw its own replicate
    labels = posterior_dataset(prior, "prior")["z"].values[0]
    assert labels.shape == (20, N) and len({r.tobytes() for r in labels}) > 1 and (labels[:, 0] == 0).all()


def test_registered_for_pytensor_3_only():
    assert numba_draws.register() is (numba_draws.PYTENSOR_MAJOR >= 3)
    if numba_draws.PYTENSOR_MAJOR >= 3:
        from pytensor.link.numba.dispatch.random import numba_core_rv_funcify  # noqa: PLC0415

        from pymc_partitions.pymc.distributions import _REPLICATE_OPS, PartitionRV  # noqa: PLC0415

        for op_type in [PartitionRV, *_REPLICATE_OPS, *(type(op) for op in _REPLICATE_OPS.values())]:
            assert numba_core_rv_funcify.dispatch(op_type) is numba_draws._object_mode_draw


def test_errors_of_the_draws_reach_the_caller():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=4)
        graph = pmp.BetaBernoulliNetwork("g", partition=z, observed=np.array([[0, 1], [2, 3]]))
    with pytest.raises(NotImplementedError, match="BetaBernoulliNetwork: forward draws"):
        pm.draw(graph, random_seed=0)


@pytest.mark.parametrize("family", ["niw", "gamma_poisson"])
def test_predictive_calls_raise_no_warning_at_all(family):
    """Every warning an error, on the calls a user makes after sampling: the posterior predictive (NIW's
    observation held in a (n, D) pm.Data), the prior predictive and pm.draw of the partition."""
    observed = {"niw": Y, "gamma_poisson": C}[family]
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        held = pm.Data("held", observed)
        if family == "niw":
            pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=0.5, nu0=4.0, scale0=np.eye(2), observed=held)
        else:
            pmp.GammaPoisson("y", partition=z, alpha=1.0, beta=1.0, observed=held)
        idata = pm.sample(draws=5, tune=0, chains=1, random_seed=0, compute_convergence_checks=False, **QUIET)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            replicate = posterior_dataset(pm.sample_posterior_predictive(idata, random_seed=3, **QUIET),
                                          "posterior_predictive")["y"].values
            prior = posterior_dataset(pm.sample_prior_predictive(draws=5, random_seed=3), "prior_predictive")["y"].values
            labels = [pm.draw(z, draws=50, random_seed=seed) for seed in (4, 4, 5)]
    assert replicate.shape == (1, 5, *observed.shape) and prior.shape == (1, 5, *observed.shape)
    np.testing.assert_array_equal(labels[0], labels[1])
    assert not np.array_equal(labels[0], labels[2]) and len({r.tobytes() for r in labels[0]}) > 5
