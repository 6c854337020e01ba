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


@pytest.mark.parametrize(
    "observed, exc, match",
    [
        ([0, 0, 1, 2, 3, 3, 4], ValueError, "'z': observed labels must have length n=6, got shape \\(7,\\)"),
        ([0, 0, 1, 2, 9, 9], ValueError, "'z': observed labels must lie in \\[0, 6\\)"),
        ([-1, 0, 1, 2, 2, 2], ValueError, "'z': observed labels must lie in"),
        ([0.5, 0, 1, 2, 2, 2], TypeError, "'z': observed labels must be integers.*non-integer values \\[0.5\\]"),
        (np.array([[0, 0, 1], [1, 2, 2]]), ValueError, "'z': observed labels must have length n=6"),
    ],
)
def test_invalid_observed_labels(observed, exc, match):
    """PyMC casts observed data to the variable's dtype: 0.5 became 0 and a vector of 7 labels was
    evaluated without a word; a known partition is checked like labels given as a start."""
    with pm.Model():
        with pytest.raises(exc, match=match):
            pmp.Partition("z", pmp.CRP(1.0), n=6, observed=observed)
    with pm.Model():  # as pm.Data, at its value when the model is built
        with pytest.raises(exc, match=match):
            pmp.Partition("z", pmp.CRP(1.0), n=6, observed=pm.Data("labels", np.asarray(observed)))


def test_observed_labels_outside_a_finite_prior_support():
    with pm.Model():
        with pytest.raises(ValueError, match="'z': the observed labels have 3 blocks but the FiniteDirichlet prior "
                                             "allows at most k=2"):
            pmp.Partition("z", pmp.FiniteDirichlet(1.0, 2), n=6, observed=[0, 0, 1, 1, 2, 2])


def test_a_known_partition_is_named_where_a_partition_to_sample_is_needed():
    """A model whose only partition is observed has nothing to sample; the refusal says so rather
    than that the model has no partition."""
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=6, observed=[0, 0, 1, 1, 2, 2])
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=1.0, observed=Y)
    known = r"no unknown pmp.Partition variable \('z' observed: a known partition is data\)"
    with pytest.raises(ValueError, match=known):
        pmp.sample_unbiased(model, n_pairs=2, k=2, m=4, cores=1, random_seed=1)
    # (the predictive functions read a known partition: tests/test_predictive.py)
    with pm.Model() as empty:
        pm.Normal("x")
    with pytest.raises(ValueError, match=r"the model has no pmp.Partition variable$"):
        pmp.sample_unbiased(empty, n_pairs=2, k=2, m=4, cores=1, random_seed=1)


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
        with pytest.raises(ValueError, match="'w' depends on the partition 'z'") as err:
            pmp.CollapsedGibbs([z])
    for name in ("NormalNormal", "NormalInverseWishart", "BetaBernoulli", "BetaBernoulliNetwork", "GammaPoisson",
                 "DirichletCategorical"):  # every family is listed (the list is derived, not written by hand)
        assert f"pmp.{name}," in str(err.value) or f"pmp.{name} " in str(err.value)


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


def test_hyperparameters_as_pymc_variables_of_the_wrong_shape():
    """Named like a numpy value of the wrong shape, not a raw PyTensor message: for every family's
    vector, scalar and matrix hyperparameters and every prior's parameters."""
    import pytensor.tensor as pt  # noqa: PLC0415

    counts, cats = np.ones((6, 2)), np.zeros((6, 2), np.int64)
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        bad = [
            (lambda: pmp.NormalNormal("y", partition=z, sigma=pm.HalfNormal("s", shape=3), observed=Y),
             "'y': sigma must be a scalar or have length D=2, got a PyMC variable of shape \\(3,\\)"),
            (lambda: pmp.NormalNormal("y", partition=z, mu0=pm.Normal("m", shape=(2, 2)), observed=Y),
             "'y': mu0 must be a scalar or have length D=2, got a PyMC variable of shape \\(2, 2\\)"),
            (lambda: pmp.NormalNormal("y", partition=z, cov0=np.eye(2), cov=pt.eye(3) * pm.HalfNormal("c"), observed=Y),
             "'y': cov must be a 2x2 matrix, got a PyMC variable of shape \\(3, 3\\)"),
            (lambda: pmp.NormalInverseWishart("y", partition=z, kappa0=pm.HalfNormal("k", shape=2), observed=Y),
             "'y': kappa0 must be a scalar, got a PyMC variable of shape \\(2,\\)"),
            (lambda: pmp.NormalInverseWishart("y", partition=z, scale0=pt.eye(3) * pm.HalfNormal("sc"), observed=Y),
             "'y': scale0 must be a 2x2 matrix"),
            (lambda: pmp.BetaBernoulli("y", partition=z, b=pm.HalfNormal("b", shape=3), observed=Y > 0),
             "'y': b must be a scalar or have length D=2"),
            (lambda: pmp.BetaBernoulliNetwork("y", partition=z, a=pm.HalfNormal("a", shape=2), observed=[[0, 1]]),
             "'y': a must be a scalar, got a PyMC variable of shape \\(2,\\)"),
            (lambda: pmp.GammaPoisson("y", partition=z, beta=pm.HalfNormal("g", shape=4), observed=counts),
             "'y': beta must be a scalar or have length D=2"),
            (lambda: pmp.DirichletCategorical("y", partition=z, a=pm.HalfNormal("d", shape=(3, 5)), n_categories=[2, 3],
                                              observed=cats), "'y': a must be a scalar, a length-3 vector or \\(2, 3\\)"),
        ]
        for make, match in bad:
            with pytest.raises(ValueError, match=match):
                make()
        # shapes that do broadcast are accepted: a scalar, a length-1 or length-D vector, a (1, C) matrix
        pmp.NormalNormal("ok1", partition=z, sigma=pm.HalfNormal("s1", shape=1), sigma0=pm.HalfNormal("s2", shape=2),
                         observed=Y)
        pmp.DirichletCategorical("ok2", partition=z, a=pm.HalfNormal("d1", shape=(1, 3)), n_categories=[2, 3],
                                 observed=cats)
        coords_a = pm.Data("a_by_dim", np.ones(2))  # a shape known only by evaluation
        pmp.GammaPoisson("ok3", partition=z, alpha=coords_a, observed=counts)
    for make, match in [(lambda a: pmp.CRP(a), "CRP: alpha"), (lambda a: pmp.PitmanYor(1.0, a), "PitmanYor: discount"),
                        (lambda a: pmp.PitmanYor(a, 0.5), "PitmanYor: alpha"),
                        (lambda a: pmp.FiniteDirichlet(a, 3), "FiniteDirichlet: alpha")]:
        with pm.Model():
            with pytest.raises(ValueError, match=match + " must be a scalar, got a PyMC variable of shape \\(2,\\)"):
                make(pm.Beta("a", 1.0, 1.0, shape=2))


def test_ragged_and_missing_observed_values():
    """A ragged list is named as such (numpy said "setting an array element with a sequence");
    pandas' nullable dtypes (Float64, Int64, boolean) are read when nothing is missing, and pd.NA
    / None / NaN are refused as missing values, for every family."""
    import pandas as pd  # noqa: PLC0415

    ragged = [[1.0, 2.0], [1.0]] + [[1.0, 2.0]] * 4
    frame = pd.DataFrame(Y, columns=["a", "b"]).astype("Float64")
    holed = frame.copy()
    holed.iloc[1, 0] = pd.NA
    ints = pd.Series([1, 2, 3, 4, 5, 6], dtype="Int64")
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        with pytest.raises(ValueError, match="'y': observed must be a rectangular array of numbers, got a ragged"):
            pmp.NormalNormal("y", partition=z, observed=ragged)
        for make in (pmp.NormalNormal, pmp.NormalInverseWishart):
            with pytest.raises(ValueError, match="'y': observed has 1 missing values .*pd.NA.*leave those items out"):
                make("y", partition=z, observed=holed)
        with pytest.raises(ValueError, match="'y': observed has 1 missing values"):
            pmp.GammaPoisson("y", partition=z, observed=pd.Series([1, None, 3, 4, 5, 6], dtype="Int64"))
        with pytest.raises(ValueError, match="'y': observed has 1 missing values"):
            pmp.BetaBernoulli("y", partition=z, observed=pd.Series([1, 0, pd.NA, 1, 0, 1], dtype="boolean"))
        with pytest.raises(ValueError, match="'y': observed has 1 missing values"):
            pmp.DirichletCategorical("y", partition=z, observed=pd.Series([1, 0, pd.NA, 1, 0, 1], dtype="Int64"))
        pmp.NormalNormal("y1", partition=z, observed=frame)
        pmp.GammaPoisson("y2", partition=z, observed=ints)
        pmp.BetaBernoulli("y3", partition=z, observed=pd.DataFrame(Y > 0).astype("boolean"))
        pmp.DirichletCategorical("y4", partition=z, observed=ints - 1)
    with pm.Model() as plain:
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        pmp.NormalNormal("y1", partition=z, observed=Y)
        pmp.GammaPoisson("y2", partition=z, observed=np.arange(1, 7))
        pmp.BetaBernoulli("y3", partition=z, observed=(Y > 0).astype(int))
        pmp.DirichletCategorical("y4", partition=z, observed=np.arange(6))
    labels = {"z": np.array([0, 0, 1, 1, 2, 0])}
    assert model.compile_logp()(labels) == pytest.approx(plain.compile_logp()(labels), rel=1e-12)


def test_split_merge_steps_on_one_item_say_the_partition_is_too_small():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=1)
        pmp.NormalNormal("y", partition=z, observed=[0.3])
        for cls in (pmp.PGSM, pmp.SAMS, pmp.SplitMerge, pmp.ARM):
            with pytest.raises(ValueError, match=f"{cls.__name__}: the partition 'z' has 1 item, too few for its moves"):
                cls([z])
        pmp.CollapsedGibbs([z])  # one partition: nothing to do, and nothing wrong
