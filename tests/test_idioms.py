"""Plain PyMC / ArviZ idioms on a clustering model: a named item dimension, label-invariant
Deterministics, convergence checks on label-invariant quantities (no false warnings from plain
``pm.sample()``), automatic steps for prior parameters, ``pmp.summary`` / ``pmp.plot_trace`` /
``pmp.label_invariant`` and the top-level ``pmp.posterior_dataset``; on both PyMC lines."""

import logging
import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from pymc.sampling.mcmc import assign_step_methods

import pymc_partitions as pmp
from pymc_partitions.pymc import compat, guards
from pymc_partitions.results.invariants import cluster_counts, for_convergence_checks

Y = np.r_[np.random.default_rng(0).normal(size=6) - 4.0, np.random.default_rng(1).normal(size=6) + 4.0]


def crp_model(alpha=None, **partition_kwargs):
    with pm.Model() as model:
        a = pm.Gamma("alpha", 2.0, 1.0) if alpha is None else alpha
        z = pmp.Partition("z", pmp.CRP(a), n=len(Y), **partition_kwargs)
        pmp.NormalNormal("y", partition=z, sigma0=5.0, sigma=1.0, observed=Y)
    return model


def assigned(model, step=None):
    _, selected = assign_step_methods(model, step)
    return {cls.__name__: sorted(v.name for v in vs) for cls, vs in selected.items()}


# ------------------------------------------------------------------------- dims, Deterministics


def test_item_dimension_and_invariants_in_the_posterior():
    model = crp_model()
    assert list(model.coords["item"]) == list(range(len(Y)))
    assert model.named_vars_to_dims["z"] == ("item",)
    assert [v.name for v in model.deterministics] == ["z_n_clusters", "z_largest_share"]
    with model:
        idata = pm.sample(draws=60, tune=20, chains=2, random_seed=3, progressbar=False)
    post = pmp.posterior_dataset(idata)
    assert post["z"].dims == ("chain", "draw", "item") and list(post["item"].values) == list(range(len(Y)))
    k, top = cluster_counts(post["z"].values)
    assert np.array_equal(post["z_n_clusters"].values, k)
    assert np.allclose(post["z_largest_share"].values, top / len(Y))
    assert post["z_n_clusters"].dtype.kind == "i"
    stats = pmp.posterior_dataset(idata, "sample_stats")
    assert np.array_equal(stats["n_clusters"].values, k)  # the sampler statistic agrees
    # prior predictive carries them too
    with model:
        prior = pm.sample_prior_predictive(draws=50, random_seed=1)
    pz = pmp.posterior_dataset(prior, "prior")
    assert np.array_equal(pz["z_n_clusters"].values, cluster_counts(pz["z"].values)[0])


def test_item_dimension_rules():
    with pm.Model(coords={"item": [f"g{i}" for i in range(5)]}) as model:
        a = pmp.Partition("a", pmp.CRP(1.0), n=5)  # the model's own item coordinates, same length
        b = pmp.Partition("b", pmp.CRP(1.0), n=3)  # another length: its own dimension
        c = pmp.Partition("c", pmp.CRP(1.0), n=3, dims="b_item")  # explicit dims win
        d = pmp.Partition("d", pmp.CRP(1.0), n=4, invariants=False)
    dims = model.named_vars_to_dims
    assert dims["a"] == ("item",) and list(model.coords["item"]) == [f"g{i}" for i in range(5)]
    assert dims["b"] == ("b_item",) and dims["c"] == ("b_item",) and dims["d"] == ("d_item",)
    assert "d_n_clusters" not in model.named_vars and "a_n_clusters" in model.named_vars
    assert a.eval().shape == (5,) and b.eval().shape == (3,) and c.eval().shape == (3,) and d.eval().shape == (4,)


def test_partition_arguments_are_checked():
    with pm.Model():
        with pytest.raises(TypeError, match="invariants must be True or False"):
            pmp.Partition("z", pmp.CRP(1.0), n=3, invariants="yes")
        with pytest.raises(TypeError, match="invariants"):
            pmp.Partition("z", pmp.CRP(1.0), n=3, invariants=1)
        pm.Normal("z_n_clusters")
        with pytest.raises(ValueError, match=r"already has variable\(s\) \['z_n_clusters'\].*invariants=False"):
            pmp.Partition("z", pmp.CRP(1.0), n=3)
        pmp.Partition("w", pmp.CRP(1.0), n=3, invariants=False)
        with pytest.raises(ValueError, match="dims must name the one item dimension"):
            pmp.Partition("v", pmp.CRP(1.0), n=3, dims=("item", "other"))
        with pytest.raises(ValueError, match="dims must name"):
            pmp.Partition("v", pmp.CRP(1.0), n=3, dims=3)
        with pytest.raises(ValueError, match="dimension 'item' has length 3, but the partition has n=4"):
            pmp.Partition("v", pmp.CRP(1.0), n=4, dims="item")
        v = pmp.Partition("v", pmp.CRP(1.0), n=4, dims="gene")
        assert v.eval().shape == (4,) and v.owner is not None


# ------------------------------------------------------------------------- convergence checks


def _switching_idata(model):
    """Two chains that visit the same label-invariant values but, item by item, different labels:
    R-hat of the labels is huge, R-hat of every label-invariant quantity is 1."""
    rng = np.random.default_rng(0)
    n = len(Y)

    def canonical(labels):
        first = {}
        return np.array([first.setdefault(v, len(first)) for v in labels])

    a = np.r_[np.zeros(n // 2, int), np.ones(n - n // 2, int)]
    b = np.r_[np.zeros(n - 4, int), np.ones(4, int)]
    states = [[a, b], [canonical(np.roll(a, 3)), canonical(np.roll(b, 3))]]  # chain 1: the items shifted
    draws = 200
    pick = rng.integers(0, 2, size=(2, draws))
    z = np.array([[states[c][pick[c, d]] for d in range(draws)] for c in range(2)], np.int64)
    k, top = cluster_counts(z)
    assert np.array_equal(np.sort(top[0]), np.sort(top[0])) and set(top[0]) == set(top[1]) and (k == 2).all()
    posterior = xr.Dataset({
        "z": (("chain", "draw", "item"), z),
        "alpha": (("chain", "draw"), rng.gamma(2.0, size=(2, draws))),
        "z_n_clusters": (("chain", "draw"), k),
        "z_largest_share": (("chain", "draw"), top / n),
    }, coords={"chain": [0, 1], "draw": np.arange(draws), "item": np.arange(n)})
    stats = xr.Dataset({"log_joint": (("chain", "draw"), rng.normal(size=(2, draws)))},
                       coords={"chain": [0, 1], "draw": np.arange(draws)})
    return compat.new_result({"posterior": posterior, "sample_stats": stats})


def test_convergence_checks_judge_label_invariant_quantities():
    import pymc.sampling.mcmc as mcmc  # noqa: PLC0415

    model = crp_model()
    idata = _switching_idata(model)
    assert getattr(mcmc.run_convergence_checks, "_pmp_guard", False)
    original = mcmc.run_convergence_checks.__wrapped__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        unguarded = original(idata, model)
    assert any("rhat" in w.message for w in unguarded)  # the labels would give a false warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no numpy RuntimeWarning from the constant first label
        guarded = mcmc.run_convergence_checks(idata, model)
    assert not any(w.kind.name == "CONVERGENCE" for w in guarded), [w.message for w in guarded]
    checked = pmp.posterior_dataset(for_convergence_checks(idata, model))
    # the constant n_clusters is left out
    assert list(checked["z"].coords["z_invariant"].values) == ["largest_share", "log_joint"]
    assert set(checked.data_vars) == {"z", "alpha", "z_n_clusters", "z_largest_share"}
    # a model without partitions: untouched
    with pm.Model() as plain:
        pm.Normal("alpha")
    assert for_convergence_checks(idata, plain) is idata
    # only a partition whose label-invariant quantities are all constant: nothing to compute, no crash
    post = pmp.posterior_dataset(idata)[["z"]]
    post["z"][:] = np.r_[np.zeros(len(Y) // 2, int), np.ones(len(Y) - len(Y) // 2, int)]
    only = compat.new_result({"posterior": post})
    assert for_convergence_checks(only, model) is None
    assert mcmc.run_convergence_checks(only, model) == []


def test_convergence_checks_still_warn_about_label_invariant_quantities():
    import pymc.sampling.mcmc as mcmc  # noqa: PLC0415

    model = crp_model()
    idata = _switching_idata(model)
    post = pmp.posterior_dataset(idata).copy()
    post["z_n_clusters"][1] += 1  # chains disagree on the number of clusters (as read from the Deterministic)
    bad = compat.new_result({"posterior": post, "sample_stats": pmp.posterior_dataset(idata, "sample_stats")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = mcmc.run_convergence_checks(bad, model)
    assert any("rhat" in w.message for w in out)


def test_plain_pm_sample_gives_no_false_warnings(caplog):
    model = crp_model()
    with model, warnings.catch_warnings(), caplog.at_level(logging.WARNING):
        warnings.simplefilter("error", RuntimeWarning)
        idata = pm.sample(draws=400, tune=100, chains=2, random_seed=2, progressbar=False)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "rhat" not in text and "effective sample size" not in text, text
    assert "z_n_clusters" in pmp.posterior_dataset(idata)


# ------------------------------------------------------------------------- automatic steps


def test_automatic_steps_for_prior_parameters():
    assert assigned(crp_model()) == {"GibbsSplitMerge": ["z"], "EscobarWest": ["alpha_log__"]}
    with pm.Model() as model:
        alpha = pm.Exponential("alpha", 1.0)
        d = pm.Beta("d", 1.0, 3.0)
        a2 = pm.Gamma("a2", 2.0, 1.0)
        s = pm.HalfNormal("s", 2.0)
        z = pmp.Partition("z", pmp.PitmanYor(alpha, d), n=len(Y))
        w = pmp.Partition("w", pmp.FiniteDirichlet(a2, 3), n=4)
        pmp.NormalNormal("y", partition=z, sigma0=5.0, sigma=s, observed=Y)
        pmp.NormalNormal("v", partition=w, sigma0=5.0, sigma=1.0, observed=Y[:4])
    assert assigned(model) == {"GibbsSplitMerge": ["w", "z"], "PriorSlice": ["a2_log__", "alpha_log__", "d_logodds__"],
                               "NUTS": ["s_log__"]}


def test_automatic_steps_only_where_exact():
    with pm.Model() as used_twice:  # alpha also scales the likelihood: NUTS
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=len(Y))
        pmp.NormalNormal("y", partition=z, sigma0=alpha, sigma=1.0, observed=Y)
    assert assigned(used_twice)["NUTS"] == ["alpha_log__"]
    with pm.Model() as random_rate:  # Gamma with a random rate: not Escobar-West, but prior terms only
        b = pm.Exponential("b", 1.0)
        alpha = pm.Gamma("alpha", 2.0, b)
        z = pmp.Partition("z", pmp.CRP(alpha), n=len(Y))
        pmp.NormalNormal("y", partition=z, sigma0=5.0, sigma=1.0, observed=Y)
    assert assigned(random_rate) == {"NUTS": ["b_log__"], "PriorSlice": ["alpha_log__"], "GibbsSplitMerge": ["z"]}
    with pm.Model() as vector:  # a vector of concentrations, one per partition
        alpha = pm.Gamma("alpha", 2.0, 1.0, shape=2)
        z = pmp.Partition("z", pmp.CRP(alpha[0]), n=len(Y))
        pmp.NormalNormal("y", partition=z, sigma0=5.0, sigma=1.0, observed=Y)
    assert assigned(vector)["NUTS"] == ["alpha_log__"]
    with pm.Model() as plain:  # no partition: PyMC's choice unchanged
        pm.Gamma("alpha", 2.0, 1.0)
    assert assigned(plain) == {"NUTS": ["alpha_log__"]}


def test_explicit_steps_override_and_model_outside_context():
    model = crp_model()
    with model:
        explicit = pm.Slice([model["alpha"]])
    assert assigned(model, [explicit]) == {"GibbsSplitMerge": ["z"]}
    idata = pm.sample(draws=30, tune=10, chains=1, model=model, random_seed=1, progressbar=False)  # no context
    stats = pmp.posterior_dataset(idata, "sample_stats")
    assert "alpha" in stats and np.allclose(stats["alpha"].values, pmp.posterior_dataset(idata)["alpha"].values)


# ------------------------------------------------------------------------- summaries and plots


@pytest.fixture(scope="module")
def result():
    model = crp_model()
    with model:
        idata = pm.sample(draws=100, tune=20, chains=2, random_seed=4, progressbar=False,
                          compute_convergence_checks=False)
    return model, idata


def test_label_invariant_summary_and_trace(result):
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    model, idata = result
    inv = pmp.label_invariant(idata)
    assert type(inv) is type(idata)
    post = pmp.posterior_dataset(inv)
    assert list(post.data_vars) == ["z_n_clusters", "z_largest_share", "log_joint", "alpha"]
    assert np.array_equal(post["log_joint"].values, pmp.posterior_dataset(idata, "sample_stats")["log_joint"].values)
    table = pmp.summary(idata)
    assert list(table.index) == ["z_n_clusters", "z_largest_share", "log_joint", "alpha"]
    assert list(pmp.summary(idata, var_names=["alpha"]).index) == ["alpha"]
    pmp.plot_trace(idata)
    plt.close("all")
    # without the Deterministics (and without a model): computed from the labels
    bare = compat.new_result({"posterior": pmp.posterior_dataset(idata)[["z", "alpha"]]})
    again = pmp.posterior_dataset(pmp.label_invariant(bare))
    assert list(again.data_vars) == ["z_n_clusters", "z_largest_share", "alpha"]
    assert np.array_equal(again["z_n_clusters"].values, post["z_n_clusters"].values)
    assert np.allclose(again["z_largest_share"].values, post["z_largest_share"].values)


def test_label_invariant_hostile(result):
    model, idata = result
    with pytest.raises(TypeError, match="label_invariant: expected a pm.sample result"):
        pmp.label_invariant(pmp.posterior_dataset(idata))
    with pytest.raises(TypeError, match="var_names"):
        pmp.label_invariant(idata, var_names=3)
    with pytest.raises(ValueError, match=r"var_names \['z'\] are not among"):
        pmp.summary(idata, var_names=["z"])
    with pytest.raises(ValueError, match="partition variables"):
        pmp.label_invariant(idata, partitions=["nope"])
    with pytest.raises(TypeError, match="model must be a pymc.Model"):
        pmp.label_invariant(idata, model="m")
    with pytest.raises(ValueError, match="no posterior"):
        pmp.label_invariant(compat.new_result({"sample_stats": pmp.posterior_dataset(idata, "sample_stats")}))
    only = compat.new_result({"posterior": pmp.posterior_dataset(idata)[["z"]]})
    assert list(pmp.posterior_dataset(pmp.label_invariant(only)).data_vars) == ["z_n_clusters", "z_largest_share"]
    negative = pmp.posterior_dataset(idata)[["z"]].copy(deep=True)
    negative["z"][0, 0, 3] = -1
    with pytest.raises(ValueError):
        pmp.label_invariant(compat.new_result({"posterior": negative}), partitions=["z"])


def test_plain_az_summary_lists_label_invariant_quantities_first(result):
    import arviz as az  # noqa: PLC0415

    model, idata = result
    post = pmp.posterior_dataset(idata)
    # z is the first random variable of the model, yet its labels come last
    assert list(post.data_vars) == ["z_n_clusters", "z_largest_share", "alpha", "z"]
    assert post["z"].dims == ("chain", "draw", "item") and post.attrs.get("inference_library") == "pymc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # ArviZ: R-hat of the constant first label
        table = az.summary(idata)
    rows = list(table.index)
    assert rows[:3] == ["z_n_clusters", "z_largest_share", "alpha"]
    assert rows[3:] == [f"z[{i}]" for i in range(len(Y))]
    # the documented way to leave the labels out of plain az.summary
    assert list(az.summary(idata, var_names=["~z"]).index) == ["z_n_clusters", "z_largest_share", "alpha"]


def test_variable_order_in_every_group_pymc_builds():
    with pm.Model() as model:
        w = pmp.Partition("w", pmp.CRP(1.0), n=4, invariants=False)
        mu = pm.Normal("mu", 0.0, 3.0)
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(Y))
        pmp.NormalNormal("y", partition=z, mu0=mu, sigma0=5.0, sigma=1.0, observed=Y)
        pmp.NormalNormal("v", partition=w, sigma0=5.0, sigma=1.0, observed=Y[:4])
        pm.Deterministic("mu2", 2 * mu)
        idata = pm.sample(draws=20, tune=10, chains=1, random_seed=5, progressbar=False,
                          discard_tuned_samples=False, compute_convergence_checks=False)
        prior = pm.sample_prior_predictive(draws=10, random_seed=1)
    # The invariants first and the labels last; the others keep PyMC's order (which for the prior
    # group differs between PyMC versions).
    for names in (list(pmp.posterior_dataset(idata).data_vars),
                  list(pmp.posterior_dataset(idata, "warmup_posterior").data_vars),
                  list(pmp.posterior_dataset(prior, "prior").data_vars)):
        assert names[:2] == ["z_n_clusters", "z_largest_share"] and names[-2:] == ["w", "z"]
        assert sorted(names[2:-2]) == ["mu", "mu2"]
    k = pmp.posterior_dataset(idata)["z_n_clusters"].values
    assert np.array_equal(k, cluster_counts(pmp.posterior_dataset(idata)["z"].values)[0])  # not shuffled
    with pm.Model() as plain:  # no partition: PyMC's order untouched
        pm.Normal("b")
        pm.Normal("a")
        idata = pm.sample(draws=10, tune=10, chains=1, random_seed=5, progressbar=False,
                          compute_convergence_checks=False)
    assert list(pmp.posterior_dataset(idata).data_vars) == ["b", "a"]


def test_order_variables_hostile():
    model = crp_model()
    ds = xr.Dataset({"z": ("item", np.zeros(3, int)), "q": 1.0})
    assert guards.order_variables(ds, None) is ds
    assert list(guards.order_variables(ds, model).data_vars) == ["q", "z"]
    no_parts = xr.Dataset({"q": 1.0, "alpha": 2.0})
    assert guards.order_variables(no_parts, model) is no_parts
    assert guards.order_variables("not a dataset", model) == "not a dataset"
    assert guards.guard_variable_order() is True  # idempotent: wrapped once
    import pymc.backends.arviz as backend  # noqa: PLC0415

    converter = getattr(backend, "DataTreeConverter", None) or backend.InferenceDataConverter
    method = converter.posterior_to_xarray
    assert method._pmp_guard and not getattr(method.__wrapped__, "_pmp_guard", False)


def test_top_level_posterior_dataset(result):
    _, idata = result
    assert pmp.posterior_dataset is compat.posterior_dataset
    assert isinstance(pmp.posterior_dataset(idata, "sample_stats"), xr.Dataset)
    with pytest.raises(KeyError):
        pmp.posterior_dataset(idata, "nope")
    with pytest.raises(TypeError):
        pmp.posterior_dataset({"posterior": 1})
