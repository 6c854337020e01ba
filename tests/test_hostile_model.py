"""Hostile input at the PyMC layer: data changed with pm.set_data, starts outside the prior's
support, non-integer starting labels, step settings that used to hang or be coerced, prior
parameters that round to their boundary, and PyMC entry points that cannot sample a partition."""

import math
import warnings

import numpy as np
import pymc as pm
import pytest
from pymc.variational.opvi import ParametrizationError

import pymc_partitions as pmp
from pymc_partitions.pymc.compat import PYMC_MAJOR, CompoundStep, posterior_dataset

N = 10
SAME = np.zeros(N)  # one tight group: the posterior puts most mass on K = 1
APART = np.r_[np.full(5, -20.0), np.full(5, 20.0)]  # two groups 40 sds apart: K >= 2 always


def _sample(model, **kwargs):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.sample(draws=40, tune=5, chains=1, random_seed=3, progressbar=False,
                         compute_convergence_checks=False, **kwargs)


def _n_clusters(idata):
    return posterior_dataset(idata, "sample_stats")["n_clusters"].values.ravel()


def _normal_model(data, **data_kwargs):
    with pm.Model() as model:
        d = pm.Data("d", data, **data_kwargs)
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=10.0, sigma=1.0, observed=d)
    return model


@pytest.mark.parametrize("shape", [(N,), (N, 1)])
def test_set_data_reaches_the_logp_and_the_gibbs_step(shape):
    model = _normal_model(SAME.reshape(shape))
    logp = model.compile_logp()
    point = {"z": np.zeros(N, np.int64)}
    with pm.Model() as fresh:  # the same model built on the new data directly
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=10.0, sigma=1.0, observed=APART.reshape(shape))
    stale_k = _n_clusters(_sample(_normal_model(SAME.reshape(shape))))
    assert (stale_k == 1).mean() > 0.5  # power: a step still on the old data puts K = 1 often

    pm.set_data({"d": APART.reshape(shape)}, model=model)
    assert logp(point) == pytest.approx(fresh.compile_logp()(point))
    assert (_n_clusters(_sample(model)) >= 2).all()


def test_set_data_reaches_sample_unbiased():
    def mean_k(model):
        result = pmp.sample_unbiased(model, n_pairs=4, k=4, m=8, cores=1, random_seed=0, progressbar=False)
        return posterior_dataset(result, "unbiased")["n_clusters"].values.mean()

    model = _normal_model(SAME)
    stale = mean_k(model)
    pm.set_data({"d": APART}, model=model)
    assert stale < 1.5 < 1.8 < mean_k(model)


@pytest.mark.parametrize(
    "new, match",
    [
        (np.r_[SAME[:-1], np.nan], "'y': observed contains 1 NaN or infinite values"),
        (np.r_[SAME[:-1], np.inf], "'y': observed contains 1 NaN or infinite values"),
        (np.zeros(N + 1), "'y': observed has 11 rows but the partition has n=10 items"),
    ],
)
def test_set_data_with_bad_values_is_refused_by_the_step(new, match):
    model = _normal_model(SAME)
    pm.set_data({"d": new}, model=model)
    with pytest.raises(ValueError, match=match):
        _sample(model)
    with pytest.raises(ValueError, match=match):
        pmp.sample_unbiased(model, n_pairs=2, k=1, m=2, cores=1, progressbar=False)


def test_set_data_with_another_n_is_refused_by_the_next_sample_and_leaves_the_model_usable():
    """As docs/models.md says: PyMC's set_data asks the likelihood nothing, so another number of rows
    passes there and the next pm.sample refuses it; n rows make the model work again, and the
    predictive of an earlier result still replicates its own data."""
    model = _normal_model(APART)
    fitted = _sample(model)
    pm.set_data({"d": np.zeros(N + 2)}, model=model)  # accepted
    with pytest.raises(ValueError, match="'y': observed has 12 rows but the partition has n=10 items"):
        _sample(model)
    with model:
        replicate = posterior_dataset(pm.sample_posterior_predictive(fitted, random_seed=0, progressbar=False),
                                      "posterior_predictive")["y"]
    assert replicate.sizes[replicate.dims[2]] == N  # the fitted data's n rows
    pm.set_data({"d": APART}, model=model)
    assert (_n_clusters(_sample(model)) >= 2).all()


@pytest.mark.parametrize("shape, fixed", [((N,), (N,)), ((N, 2), (N, None))])
def test_a_container_of_fixed_shape_refuses_another_n_at_set_data(shape, fixed):
    """The recipe of docs/models.md: pm.Data(..., shape=(n,) or (n, None)) makes set_data refuse."""
    model = _normal_model(np.zeros(shape), shape=fixed)
    with pytest.raises(TypeError, match="not compatible"):
        pm.set_data({"d": np.zeros((N + 2, *shape[1:]))}, model=model)
    pm.set_data({"d": APART.repeat(np.prod(shape[1:], dtype=int)).reshape(shape)}, model=model)
    assert (_n_clusters(_sample(model)) >= 2).all()


def test_set_data_cannot_change_the_number_of_columns():
    model = _normal_model(np.zeros((N, 2)))
    pm.set_data({"d": np.zeros((N, 3))}, model=model)
    with pytest.raises(ValueError, match="'y': observed has 3 columns but the model was built for D=2"):
        _sample(model)


BINARY = (np.arange(N * 2).reshape(N, 2) % 3 == 0).astype(float)


@pytest.mark.parametrize("bad, match", [(2.0, "'y': BetaBernoulli data must be 0/1, got 1 other values"),
                                        (0.5, "'y': BetaBernoulli data must be 0/1, got 1 other values"),
                                        (np.nan, "'y': observed contains 1 NaN or infinite values")])
def test_beta_bernoulli_set_data_outside_zero_one(bad, match):
    with pm.Model() as model:
        d = pm.Data("d", BINARY)
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.BetaBernoulli("y", partition=z, observed=d)
    logp = model.compile_logp()
    point = {"z": np.zeros(N, np.int64)}
    assert np.isfinite(logp(point))
    new = BINARY.copy()
    new[3, 1] = bad
    pm.set_data({"d": new}, model=model)
    assert logp(point) == -np.inf  # 0.5 is not truncated to a valid 0 before the logp sees it
    with pytest.raises(ValueError, match=match):
        _sample(model)


def test_beta_bernoulli_data_as_integers_through_pm_data():
    with pm.Model() as model:
        d = pm.Data("d", BINARY.astype(int))
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.BetaBernoulli("y", partition=z, observed=d)
    k = _n_clusters(_sample(model))
    assert k.min() >= 1
    pm.set_data({"d": 1 - BINARY.astype(int)}, model=model)
    assert np.isfinite(model.compile_logp()({"z": np.zeros(N, np.int64)}))


# ----------------------------------------------------------------------------- starting values


def test_finite_dirichlet_start_outside_the_support():
    with pm.Model():
        with pytest.raises(ValueError, match="'z': the starting labels have 5 blocks but the FiniteDirichlet prior "
                                             "allows at most k=2"):
            pmp.Partition("z", pmp.FiniteDirichlet(1.0, 2), n=N, initval=np.arange(N) % 5)
        with pytest.raises(ValueError, match="initval='singletons' has n=10 blocks but the FiniteDirichlet prior "
                                             "allows at most k=2"):
            pmp.Partition("z", pmp.FiniteDirichlet(1.0, 2), n=N, initval="singletons")
        pmp.Partition("ok", pmp.FiniteDirichlet(1.0, 2), n=N, initval=np.arange(N) % 2)


def _fd_model():
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.FiniteDirichlet(1.0, 2), n=N)
        pmp.NormalNormal("y", partition=z, sigma0=10.0, observed=APART)
    return model


def test_pm_sample_initvals_outside_the_support_or_not_integers():
    with pytest.raises(ValueError, match="'z': the starting labels have 5 blocks"):
        _sample(_fd_model(), initvals={"z": np.arange(N) % 5})
    with pytest.raises(TypeError, match="'z': labels must be integers, got dtype float64"):
        _sample(_fd_model(), initvals={"z": np.full(N, 0.5)})
    with pytest.raises(ValueError, match=r"'z': labels must lie in \[0, 10\)"):
        _sample(_fd_model(), initvals={"z": np.full(N, 10)})
    with pytest.raises(ValueError, match="'z': labels must have length n=10"):
        _sample(_fd_model(), initvals={"z": np.zeros(N - 1, int)})
    ok = _sample(_fd_model(), initvals={"z": np.arange(N) % 2})  # integral floats would be fine too
    assert (_n_clusters(ok) <= 2).all()


def test_a_step_refuses_labels_outside_the_support_however_they_arrive():
    model = _fd_model()
    with model:
        step = pmp.CollapsedGibbs()
    pmp.pymc.compat.setup_chain(step, 0)
    with pytest.raises(ValueError, match="'z': the partition has 3 blocks but its FiniteDirichlet prior allows at "
                                         "most k=2"):
        step.step({"z": np.arange(N) % 3})


def test_partition_refuses_size_and_other_shapes():
    with pm.Model():
        with pytest.raises(TypeError, match="'z': size is not supported"):
            pmp.Partition("z", pmp.CRP(1.0), n=5, size=2)
        with pytest.raises(ValueError, match=r"'z': shape must be \(n,\) = \(5,\), got \(3,\)"):
            pmp.Partition("z", pmp.CRP(1.0), n=5, shape=(3,))
        pmp.Partition("z", pmp.CRP(1.0), n=5, shape=(5,))


# ----------------------------------------------------------------------------- step settings


def _crp_model():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        d = pm.Beta("d", 1.0, 3.0)
        z = pmp.Partition("z", pmp.PitmanYor(alpha, d), n=N)
        pmp.NormalNormal("y", partition=z, sigma0=10.0, observed=APART)
    return model


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda z, v: pmp.CollapsedGibbs([z], sweeps=1.5), ValueError, "CollapsedGibbs: sweeps must be an integer"),
        (lambda z, v: pmp.CollapsedGibbs([z], sweeps=True), TypeError, "CollapsedGibbs: sweeps must be an integer"),
        (lambda z, v: pmp.PGSM([z], moves=0), ValueError, "PGSM: moves must be an integer >= 1"),
        (lambda z, v: pmp.PGSM([z], num_anchors=1), ValueError, "num_anchors must be an integer >= 2 and <= 10"),
        (lambda z, v: pmp.PGSM([z], num_anchors=11), ValueError, "num_anchors must be an integer >= 2 and <= 10"),
        (lambda z, v: pmp.PGSM([z], adapt_iterations=-1), ValueError, "PGSM: adapt_iterations must be an integer"),
        (lambda z, v: pmp.SAMS([z], moves=2.5), ValueError, "SAMS: moves must be an integer"),
        (lambda z, v: pmp.PriorSlice([v], width=-1.0), ValueError, "PriorSlice: width must be a finite number > 0"),
        (lambda z, v: pmp.PriorSlice([v], width=np.nan), ValueError, "PriorSlice: width must be a finite number > 0"),
        (lambda z, v: pmp.PriorSlice([v], width=0.0), ValueError, "PriorSlice: width must be a finite number > 0"),
        (lambda z, v: pmp.PriorSlice([v], width="1"), TypeError, "PriorSlice: width must be a number"),
        (lambda z, v: pmp.PriorSlice([v], max_steps=0), ValueError, "PriorSlice: max_steps must be an integer >= 1"),
    ],
)
def test_step_settings_are_checked_at_construction(make, error, match):
    model = _crp_model()
    with model:
        with pytest.raises(error, match=match):
            make(model["z"], model["d"])


def test_prior_slice_refuses_a_start_outside_the_support_instead_of_looping():
    model = _crp_model()
    with model:
        step = pmp.PriorSlice([model["alpha"]])
    pmp.pymc.compat.setup_chain(step, 0)
    point = model.initial_point()
    point["d_logodds__"] = np.asarray(np.inf)  # discount 1: outside [0, 1)
    with pytest.raises(ValueError, match="PriorSlice: 'alpha_log__' = .* outside the support"):
        step.step(point)


def test_prior_helpers_refuse_bad_labels_and_sizes():
    prior = pmp.CRP(1.0)
    with pytest.raises(ValueError, match="labels must be integers"):
        prior.log_eppf([0.0, 0.5, 1.0])  # was: three distinct "blocks"
    with pytest.raises(ValueError, match="labels must be a 1-d vector"):
        prior.log_eppf([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="CRP.log_eppf: labels must not be empty"):
        prior.log_eppf([])
    assert prior.log_eppf([7, 7, 3]) == prior.log_eppf([0, 0, 1])
    with pytest.raises(TypeError, match="CRP.sample: n must be an integer"):
        prior.sample(True)
    with pytest.raises(ValueError, match="FiniteDirichlet.sample: n must be an integer >= 1"):
        pmp.FiniteDirichlet(1.0, 3).sample(0)


# ----------------------------------------------------------------------------- unrepresentable values


GALAXIES = pmp.datasets.load_galaxies() / 1000.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(observed=GALAXIES * 1e200), r"'y': DIAG_NORMAL: .*exceeds 1e\+300.*rescale the data"),
        (dict(observed=GALAXIES, sigma=1e-200), r"'y': DIAG_NORMAL: sigma\^2 = 0 .*increase sigma"),
        (dict(observed=GALAXIES, sigma0=1e200), r"'y': DIAG_NORMAL: sigma0\^2 = inf exceeds 1e\+300"),
        (dict(observed=GALAXIES[:, None] * [1.0, 1.0], cov0=np.eye(2), cov=[[1.0, 1.0], [1.0, 1.0 + 1e-300]]),
         "'y': cov must be positive definite"),
    ],
)
def test_unrepresentable_normal_models_are_refused_at_construction(kwargs, match):
    """These used to give K = 1 with log_joint 0 or NaN, or crash the compiled kernels."""
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(GALAXIES))
        with pytest.raises(ValueError, match=match):
            pmp.NormalNormal("y", partition=z, **kwargs)


def test_unrepresentable_niw_and_beta_bernoulli_are_refused_at_construction():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(GALAXIES))
        with pytest.raises(ValueError, match=r"'y': NIW: .*scatter matrix.*rescale the data"):
            pmp.NormalInverseWishart("y", partition=z, observed=GALAXIES * 1e200)
        with pytest.raises(ValueError, match=r"'y': NIW: .*smallest eigenvalue of scale0"):
            pmp.NormalInverseWishart("y", partition=z, scale0=1e-300, observed=GALAXIES)
        with pytest.raises(ValueError, match=r"'b': BETA_BERNOULLI: .*decrease a and b"):
            pmp.BetaBernoulli("b", partition=z, a=1e300, observed=(GALAXIES > 20).astype(int))


def test_a_random_hyperparameter_reaching_an_unrepresentable_value_stops_sampling_clearly():
    with pm.Model() as model:
        s = pm.HalfNormal("s", 1e-200)  # its draws square to 0
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(GALAXIES))
        pmp.NormalNormal("y", partition=z, sigma=s, observed=GALAXIES)
        steps = [pmp.CollapsedGibbs([z]), pm.Slice([s])]
    with pytest.raises(ValueError, match=r"'y': DIAG_NORMAL: sigma\^2 = 0"):
        _sample(model, step=steps)


def test_all_nan_data_through_set_data_is_refused_by_sample_unbiased():
    """This used to segfault the compiled coupled sweep."""
    model = _normal_model(SAME)
    pm.set_data({"d": np.full(N, np.nan)}, model=model)
    with pytest.raises(ValueError, match="'y': observed contains 10 NaN or infinite values"):
        pmp.sample_unbiased(model, n_pairs=2, k=1, m=2, cores=2, progressbar=False)


def test_float_labels_in_a_point_are_refused():
    model = _fd_model()
    with model:
        step = pmp.CollapsedGibbs()
    pmp.pymc.compat.setup_chain(step, 0)
    with pytest.raises(TypeError, match="'z': labels must be integers, got dtype float64"):
        step.step({"z": np.zeros(N) + 0.5})


def test_prior_slice_at_parameters_that_round_to_their_boundary():
    """The class of EscobarWest's crash (issue 19) in PriorSlice: a parameter inside its support
    that float64 rounds to the boundary -- a Pitman-Yor discount ~ Beta(1e-3, 1e-3) within 1e-16 of
    1 (logit value 40), a finite Dirichlet alpha ~ Gamma(1e-3, 1e-3) below 1e-308 (log value -800)
    -- gets the limit law (all singletons; one block) instead of being cut off as outside the
    support. Where PyMC itself cannot evaluate the prior's log density there (pm.Gamma on PyMC 5),
    the step stops naming the variable. An untransformed variable's -inf outside its support is an
    ordinary slice boundary."""
    singletons, one_block = np.ones(N, np.int64), np.array([N])
    with pm.Model() as model:
        d = pm.Beta("d", 1e-3, 1e-3)
        z = pmp.Partition("z", pmp.PitmanYor(1.0, d), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=10.0, sigma=1.0, observed=APART)
        step = pmp.PriorSlice([d])
    point = model.initial_point()
    own = model.compile_logp(vars=[d])
    assert step._logp(dict(point), 40.0, singletons) == pytest.approx(own({**point, "d_logodds__": 40.0}))
    assert step._logp(dict(point), 40.0, one_block) == -np.inf  # probability 0 in the limit
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1e-3, 1e-3)
        z = pmp.Partition("z", pmp.FiniteDirichlet(alpha, 3), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=10.0, sigma=1.0, observed=SAME)
        step = pmp.PriorSlice([alpha])
    point = model.initial_point()
    if PYMC_MAJOR >= 6:
        value = step._logp(dict(point), -800.0, one_block)
        gamma = 1e-3 * -800.0 - 1e-3 * np.exp(-800.0) + 1e-3 * np.log(1e-3) - math.lgamma(1e-3)
        assert value == pytest.approx(gamma, rel=1e-12)  # the EPPF's one-block limit is 1
        assert step._logp(dict(point), -800.0, np.array([N - 1, 1])) == -np.inf
    else:
        with pytest.raises(ValueError, match="PriorSlice: PyMC 5.* log density of 'alpha_log__' as -inf at the "
                                             "unconstrained value -800.0 .*alpha = 0.0"):
            step._logp(dict(point), -800.0, one_block)
    with pm.Model() as model:
        raw = pm.Uniform("u", 0.0, 1.0, default_transform=None)
        z = pmp.Partition("z", pmp.PitmanYor(1.0, raw), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=10.0, sigma=1.0, observed=APART)
        plain = pmp.PriorSlice([raw])
    assert plain._logp(dict(model.initial_point()), 1.5, singletons) == -np.inf


def _two_groups_model():
    y = np.r_[np.full(12, -4.0), np.full(12, 4.0)] + np.linspace(-1, 1, 24)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=24)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=1.0, observed=y)
    return model, z, alpha


QUIET = dict(draws=5, tune=0, chains=1, progressbar=False, compute_convergence_checks=False, random_seed=1)


def test_pymc_entry_points_that_cannot_sample_a_partition_refuse_it():
    """pm.sample_smc returned one block in every draw; pm.find_MAP kept the starting labels and
    returned alpha ~ 1e-6; pm.Metropolis / pm.Slice on the labels sample each partition in proportion
    to its labellings. Each now refuses, saying what to use. pm.fit and the external NUTS samplers
    refuse by themselves (PyMC's own errors)."""
    model, z, alpha = _two_groups_model()
    with model:
        with pytest.raises(NotImplementedError, match=r"pm.sample_smc cannot sample a model with a partition \('z'.*"
                                                      r"Use pm.sample.*pmp.CollapsedGibbs"):
            pm.sample_smc(draws=50, chains=1, progressbar=False, random_seed=1)
        start = "start" if PYMC_MAJOR < 6 else "initvals"  # PyMC 6 renamed it (start= still works, deprecated)
        with pytest.raises(NotImplementedError, match=r"pm.find_MAP keeps the partition\(s\) \['z'\] at their starting "
                                                      rf"labels.*pmp.point_estimate.*{start}=\{{'z': labels\}}"):
            pm.find_MAP(progressbar=False)
        for vars_ in ([z, alpha], ["z"], [model.rvs_to_values[z]]):
            with pytest.raises(NotImplementedError, match="pm.find_MAP cannot optimise the partition 'z'"):
                pm.find_MAP(vars=vars_, **{start: {"z": np.zeros(24, np.int64)}}, progressbar=False)
        labels = np.r_[np.zeros(12, np.int64), np.ones(12, np.int64)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # PyMC 6: find_MAP's coming changes
            for kwargs in ({start: {"z": labels}}, {"start": {"z": labels}}):
                given = pm.find_MAP(**kwargs, progressbar=False)  # the mode given those labels, as asked
                np.testing.assert_array_equal(given["z"], labels)
                assert given["alpha"] > 0.1
        for step in (pm.Metropolis([z]), pm.Slice([z]), CompoundStep([pm.Metropolis([z])]), pm.Metropolis([z, alpha])):
            with pytest.raises(ValueError, match=r"step (Metropolis|Slice) cannot sample the partition 'z' "
                                                 r"\(pmp.Partition\).*labellings.*pmp.CollapsedGibbs"):
                pm.sample(step=[step], **QUIET)
        with pytest.raises(ParametrizationError, match="Discrete variables are not supported by VI: z"):
            pm.fit(n=10, progressbar=False)
        for sampler in ("numpyro", "nutpie", "blackjax"):
            with pytest.raises(ValueError, match="NUTS alone|requires all variables to be differentiable"):
                pm.sample(nuts_sampler=sampler, **QUIET)


def test_one_partition_in_two_steps_of_one_class_is_refused():
    """Two CollapsedGibbs (or two PGSM) steps on one partition were accepted, their statistics
    stacked as if for two partitions: refused, pointing to sweeps= / moves=. Different classes on one
    partition (the usual Gibbs + split-merge composition) and one step per partition are fine."""
    model, z, alpha = _two_groups_model()
    with model:
        for make, more in ((lambda: pmp.CollapsedGibbs([z]), "sweeps=2"), (lambda: pmp.PGSM([z]), "moves=2"),
                           (lambda: pmp.SplitMerge([z]), "moves=2")):
            name = type(make()).__name__
            with pytest.raises(ValueError, match=f"'z' is given to two {name} steps: give one {name} step {more}"):
                pm.sample(step=[make(), pmp.EscobarWest([alpha]), make()], **QUIET)
        idata = pm.sample(step=[pmp.CollapsedGibbs([z], sweeps=2), pmp.PGSM([z]), pm.Metropolis([alpha])], **QUIET)
    assert posterior_dataset(idata, "sample_stats")["n_clusters"].shape == (1, 5)


def test_models_without_a_partition_pass_the_guards_untouched():
    with pm.Model():
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("obs", mu, 1.0, observed=[0.1, 0.3])
        assert pm.find_MAP(progressbar=False)["mu"] == pytest.approx(0.4 / 3, rel=1e-4)
        idata = pm.sample(step=[pm.Metropolis([mu])], **QUIET)
        assert posterior_dataset(idata)["mu"].shape == (1, 5)
        smc = pm.sample_smc(draws=40, chains=1, progressbar=False, random_seed=1)
        assert posterior_dataset(smc)["mu"].shape == (1, 40)


def test_escobar_west_without_a_transform_under_a_vague_prior():
    """alpha ~ Gamma(1e-3, 1e-3) kept on its own scale (no log transform): draws below 1e-308 are
    stored as alpha = 0, the one-block limit the other steps accept, and the next update starts
    from there; the statistic log_alpha keeps the exact draw. A value outside the support (which
    only a hand-made point can hold) is refused by name."""
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1e-3, 1e-3, default_transform=None)
        z = pmp.Partition("z", pmp.CRP(alpha), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=10.0, sigma=1.0, observed=SAME)
        step = pmp.EscobarWest([alpha])
        idata = pm.sample(step=[pmp.CollapsedGibbs([z]), step], **{**QUIET, "draws": 200})
    values = posterior_dataset(idata)["alpha"].values.ravel()
    log_alphas = posterior_dataset(idata, "sample_stats")["log_alpha"].values.ravel()
    assert (values == 0).mean() > 0.2 and np.all(values >= 0)
    assert np.all(np.isfinite(log_alphas)) and np.allclose(np.exp(log_alphas), values, rtol=1e-14, atol=0)
    point = model.initial_point()
    point["alpha"] = np.asarray(-1.0)
    with pytest.raises(ValueError, match="EscobarWest: 'alpha' = -1.0 is outside the Gamma prior's support"):
        step.step(point)
