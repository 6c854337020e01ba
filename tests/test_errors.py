"""Bad input gives a clear ValueError/TypeError naming the variable, never a silent wrong answer."""

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp

Y = np.random.default_rng(0).normal(size=(6, 2))


def test_nan_and_inf_in_observed():
    for bad in (np.nan, np.inf):
        y = Y.copy()
        y[2, 1] = bad
        with pm.Model():
            z = pmp.Partition("z", pmp.CRP(1.0), n=6)
            with pytest.raises(ValueError, match="'y'.*NaN or infinite"):
                pmp.NormalNormal("y", partition=z, observed=y)


def test_observed_rows_must_match_n():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=5)
        with pytest.raises(ValueError, match="'y': observed has 6 rows but the partition has n=5"):
            pmp.NormalInverseWishart("y", partition=z, observed=Y)


def test_observed_required_and_numeric():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        with pytest.raises(TypeError, match="'y': a collapsed likelihood needs observed"):
            pmp.NormalNormal("y", partition=z)
        with pytest.raises(TypeError, match="'y': observed must be numeric"):
            pmp.NormalNormal("y", partition=z, observed=np.array(["a"] * 6, dtype=object))


def test_partition_argument_must_be_a_partition():
    with pm.Model():
        x = pm.Normal("x", size=6)
        with pytest.raises(TypeError, match="'y': partition must be a pmp.Partition"):
            pmp.NormalNormal("y", partition=x, observed=Y)
        with pytest.raises(TypeError, match="'y': partition must be a pmp.Partition"):
            pmp.BetaBernoulli("y", partition=np.zeros(6, int), observed=(Y > 0).astype(int))


def test_non_binary_data_for_beta_bernoulli():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        with pytest.raises(ValueError, match="'y': BetaBernoulli data must be 0/1"):
            pmp.BetaBernoulli("y", partition=z, observed=Y)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(sigma0=-1.0), "'y': sigma0 must be positive"),
        (dict(sigma=0.0), "'y': sigma must be positive"),
        (dict(sigma0=[1.0, 2.0, 3.0]), "'y': sigma0 must be a scalar or have length D=2"),
        (dict(cov0=np.eye(2)), "'y': give both cov0 and cov"),
        (dict(cov0=np.eye(2), cov=[[1.0, 2.0], [2.0, 1.0]]), "'y': cov must be positive definite"),
        (dict(cov0=np.eye(3), cov=np.eye(2)), "'y': cov0 must be a 2x2 matrix"),
    ],
)
def test_invalid_normal_hyperparameters(kwargs, match):
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        with pytest.raises(ValueError, match=match):
            pmp.NormalNormal("y", partition=z, observed=Y, **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [(dict(kappa0=0.0), "'y': kappa0"), (dict(nu0=0.5), "'y': nu0 must be a finite scalar > 1.0"),
     (dict(scale0=-np.eye(2)), "'y': scale0 must be positive definite")],
)
def test_invalid_niw_hyperparameters(kwargs, match):
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        with pytest.raises(ValueError, match=match):
            pmp.NormalInverseWishart("y", partition=z, observed=Y, **kwargs)


def test_invalid_beta_bernoulli_hyperparameters():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        with pytest.raises(ValueError, match="'y': a must be positive"):
            pmp.BetaBernoulli("y", partition=z, a=0.0, observed=(Y > 0).astype(int))


@pytest.mark.parametrize(
    "initval, exc, match",
    [
        (np.zeros(5, int), ValueError, "'z': labels must have length n=6"),
        (np.array([0, 1, 2, 3, 4, 6]), ValueError, "'z': labels must lie in \\[0, 6\\)"),
        (np.array([0, -1, 0, 0, 0, 0]), ValueError, "'z': labels must lie in"),
        (np.array([0.5, 0, 0, 0, 0, 0]), TypeError, "'z': labels must be integers"),
        ("clusters", ValueError, "'z': initval must be one of"),
    ],
)
def test_invalid_initial_labels(initval, exc, match):
    with pm.Model():
        with pytest.raises(exc, match=match):
            pmp.Partition("z", pmp.CRP(1.0), n=6, initval=initval)


def test_initval_options_are_used():
    for initval, want in [("singletons", np.arange(6)), ("one_block", np.zeros(6)), ([0, 0, 1, 1, 2, 2], None)]:
        with pm.Model() as model:
            pmp.Partition("z", pmp.CRP(1.0), n=6, initval=initval)
        got = model.initial_point()["z"]
        assert np.array_equal(got, np.asarray(initval if want is None else want))
    with pm.Model() as model:
        pmp.Partition("z", pmp.CRP(1.0), n=6, initval="prior")
    assert model.initial_point(random_seed=1)["z"].shape == (6,)


def test_partition_arguments():
    with pm.Model():
        with pytest.raises(ValueError, match="n must be a positive integer, got n=0"):
            pmp.Partition("z", pmp.CRP(1.0), n=0)
        with pytest.raises(TypeError, match="prior must be pmp.CRP"):
            pmp.Partition("z", 1.0, n=3)


def test_labels_out_of_range_in_point_are_rejected_by_step():
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        pmp.NormalNormal("y", partition=z, observed=Y)
        step = pmp.CollapsedGibbs([z])
    point = model.initial_point()
    point["z"] = np.array([0, 0, 7, 0, 0, 0])
    with pytest.raises(ValueError, match="'z': labels must lie in"):
        step.step(point)
    assert model.compile_logp()(point) == -np.inf  # and the logp says so too


def test_other_terms_depending_on_partition_are_refused():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        pmp.NormalNormal("y", partition=z, observed=Y)
        pm.Normal("w", mu=z.astype("float64"), sigma=1.0, observed=np.zeros(6))
        with pytest.raises(ValueError, match="'w' depends on the partition 'z'"):
            pmp.CollapsedGibbs([z])


def test_step_argument_errors():
    with pm.Model():
        x = pm.Normal("x")
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        beta = pm.HalfNormal("beta", 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=6)
        pmp.NormalNormal("y", partition=z, sigma0=beta, observed=Y)
        with pytest.raises(TypeError, match="'x' is not a pmp.Partition"):
            pmp.CollapsedGibbs([x])
        with pytest.raises(ValueError, match="CollapsedGibbs: sweeps must be an integer >= 1, got 0"):
            pmp.CollapsedGibbs([z], sweeps=0)
        with pytest.raises(ValueError, match="'beta' must be the alpha or discount"):
            pmp.PriorSlice([beta])
    with pm.Model():
        alpha = pm.HalfNormal("alpha", 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=6)
        with pytest.raises(ValueError, match="must have a pm.Gamma prior"):
            pmp.EscobarWest([alpha])
    with pm.Model():
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=6)
        pmp.NormalNormal("y", partition=z, sigma0=alpha, observed=Y)
        with pytest.raises(ValueError, match="'y' also depend"):
            pmp.EscobarWest([alpha])
    with pm.Model():
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.FiniteDirichlet(alpha, 3), n=6)
        with pytest.raises(ValueError, match="must be the alpha of a pmp.CRP"):
            pmp.EscobarWest([alpha])


def test_random_alpha_outside_support_gives_minus_inf_logp():
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 1.0, 1.0)
        pmp.Partition("z", pmp.CRP(alpha), n=4)
    f = model.compile_logp(vars=[model["z"]])
    assert f({"alpha": -0.5, "z": np.zeros(4, int)}) == -np.inf
    assert np.isfinite(f({"alpha": 0.5, "z": np.zeros(4, int)}))
