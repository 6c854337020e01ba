"""sample_unbiased with random hyperparameters: what it refuses (naming the variable or argument),
how h receives the hyperparameters, and that results do not depend on the executor."""

import math

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp

Y = np.array([-1.2, -0.9, -1.1, 1.0, 1.3, 0.8])
RUN = dict(n_pairs=4, k=1, m=3, cores=1, random_seed=0, progressbar=False)


def alpha_sigma_model():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=len(Y))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=sigma, observed=Y)
    return model


def fixed_model():
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(Y))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=Y)
    return model


def test_default_h_estimates_every_hyperparameter_and_the_attrs_say_which_step():
    result = pmp.sample_unbiased(alpha_sigma_model(), **RUN)
    ds = result["unbiased"]
    assert set(ds.data_vars) == {"n_clusters", "largest_proportion", "alpha", "sigma"}
    assert ds.attrs["hyperparameters"] == "alpha, sigma" and ds.attrs["escobar_west"] == "alpha_log__"
    assert np.isfinite(ds["alpha"].values).all() and (ds["alpha"].values != 0).any()


def test_h_with_params_and_old_h_both_work():
    h = {"k": pmp.h.n_clusters, "old": lambda labels: labels.max() + 1.0,
         "both": lambda labels, params: [params["alpha"] * (labels.max() + 1), params["sigma"]]}
    result = pmp.sample_unbiased(alpha_sigma_model(), h=h, **RUN)
    assert np.allclose(result["unbiased"]["k"].values, result["unbiased"]["old"].values)
    assert result["unbiased"]["both"].shape == (4, 2)
    seen = []
    pmp.sample_unbiased(fixed_model(), h=lambda labels, params: seen.append(dict(params)) or 1.0, **RUN)
    assert seen and all(p == {} for p in seen)  # no free hyperparameters: an empty dict


@pytest.mark.parametrize("h,match", [
    (lambda labels, params, extra: 1.0, r"h\['h'\] must be called as h\(labels\) or h\(labels, params\)"),
    (lambda labels, *, key: 1.0, "must be called as"),
    (lambda: 1.0, "must be called as"),
])
def test_bad_h_signatures_are_refused_naming_h(h, match):
    with pytest.raises(TypeError, match=match):
        pmp.sample_unbiased(alpha_sigma_model(), h=h, **RUN)


def test_h_reading_a_missing_hyperparameter_fails_at_the_call():
    with pytest.raises(KeyError, match="'tau'"):
        pmp.sample_unbiased(alpha_sigma_model(), h=lambda labels, params: params["tau"], **RUN)


def test_unsupported_hyperparameters_are_refused_naming_them():
    with pm.Model() as discrete:
        n_extra = pm.Poisson("n_extra", 2.0)
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(Y))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=Y)
    with pytest.raises(ValueError, match="'n_extra' is discrete"):
        pmp.sample_unbiased(discrete, **RUN)


def test_pgsm_runs_with_random_hyperparameters():
    """(Refused before issue 22's PGSM coupling with hyperparameters.)"""
    result = pmp.sample_unbiased(alpha_sigma_model(), pgsm=1, **RUN)
    attrs = result["unbiased"].attrs
    assert attrs["pgsm_moves"] == 1 and attrs["hyperparameters"] == "alpha, sigma"
    assert bool(result["meeting"]["met"].all()) and np.isfinite(result["unbiased"]["sigma"].values).all()


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, "1", None])
def test_hyper_scale_is_checked(bad):
    with pytest.raises((TypeError, ValueError), match="hyper_scale"):
        pmp.sample_unbiased(alpha_sigma_model(), hyper_scale=bad, **RUN)


def test_other_priors_and_the_discount_go_through_metropolis_and_meet():
    with pm.Model() as model:
        alpha = pm.HalfNormal("alpha", 2.0)  # not a Gamma: no Escobar-West
        d = pm.Beta("d", 1.0, 3.0)
        z = pmp.Partition("z", pmp.PitmanYor(alpha, d), n=len(Y))
        pmp.BetaBernoulli("b", partition=z, a=pm.HalfNormal("a", 1.0), b=1.0,
                          observed=(Y[:, None] > 0).astype(int))
    result = pmp.sample_unbiased(model, n_pairs=6, k=2, m=4, cores=1, random_seed=1, progressbar=False,
                                 max_iter=2000)
    assert result["unbiased"].attrs["escobar_west"] == "none"
    assert bool(result["meeting"]["met"].all())
    assert {"alpha", "d", "a"} <= set(result["unbiased"].data_vars)


def test_same_results_in_process_and_on_a_process_pool():
    """The job (compiled log density included) pickles to worker processes; pairs are seeded by index."""
    run = dict(RUN, n_pairs=3)
    here = pmp.sample_unbiased(alpha_sigma_model(), **run)
    run["cores"] = 2
    pool = pmp.sample_unbiased(alpha_sigma_model(), **run)
    for name in here["unbiased"].data_vars:
        assert np.array_equal(here["unbiased"][name].values, pool["unbiased"][name].values)
    assert np.array_equal(here["meeting"]["tau"].values, pool["meeting"]["tau"].values)


def test_coupled_sweep_runs_each_chain_at_its_own_hyperparameters():
    """With the independent coupling each chain's draw at an item uses its own uniform: chain x
    is then exactly the single-chain sweep of x's kernel, chain y that of y's kernel (its
    hyperparameters: alpha, and sigma in the pack), with the same random numbers. Before the
    kernels took per-chain values, chain y was swept at chain x's hyperparameters."""
    from pymc_partitions.coupling.sweep import GibbsSweeps
    from pymc_partitions.families.kernels import DIAG_NORMAL, FamilyPack, diag_normal_hyper

    def kernel(alpha, sigma, coupling="independent"):
        pack = FamilyPack.build([(DIAG_NORMAL, Y[:, None], diag_normal_hyper(0.0, 2.0, sigma, 1))])
        return GibbsSweeps(pack, 0, [alpha, 0.0, 0.0], coupling)

    kx, ky = kernel(0.3, 1.0), kernel(4.0, 0.2)
    rng = np.random.default_rng(3)
    lx, ly = np.zeros(len(Y), np.int64), np.arange(len(Y))
    for _ in range(20):
        order, u = kx.random_numbers(rng)
        x, y = kx.start(lx), ky.start(ly)
        kx.coupled_sweep(x, y, kx.intersections(x, y), (order, u), other=ky)
        sx, sy = kx.start(lx), ky.start(ly)
        kx.sweep(sx, (order, u))
        uy = u.copy()
        uy[:, 1] = u[:, 2]
        ky.sweep(sy, (order, uy))
        assert np.array_equal(x.labels(), sx.labels()) and np.array_equal(y.labels(), sy.labels())
        lx, ly = x.labels(), y.labels()
    with pytest.raises(ValueError, match="other must be a GibbsSweeps of the same model structure"):
        kx.coupled_sweep(x, y, kx.intersections(x, y), (order, u), other=kernel(1.0, 1.0, "ot"))
