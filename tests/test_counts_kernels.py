"""The count and categorical families (GAMMA_POISSON, DIRICHLET_CATEGORICAL) in the compiled kernels:
log marginals equal independent oracles (chains of negative-binomial / Polya-urn predictives), the
log predictive of an item equals a ratio of log marginals, statistics of sets and unions equal those
built item by item, bad data and hyper vectors are refused, and every kernel (collapsed Gibbs,
PGSM, SAMS, Jain-Neal, ARM, coupled Gibbs and Gibbs+PGSM sweeps, unbiased estimates) reproduces the
exact posterior by enumeration of all partitions, with a perturbed prior rejected (power)."""

import numpy as np
import pytest

import test_arm_enumeration as arm_tests
import test_coupled_gibbs as coupled_gibbs_tests
import test_coupled_pgsm as coupled_pgsm_tests
import test_gibbs_enumeration as gibbs_tests
import test_jain_neal_enumeration as jain_neal_tests
import test_pgsm_enumeration as pgsm_tests
import test_sams_enumeration as sams_tests
import test_unbiased as unbiased_tests
from models import categories, counts
from pymc_partitions.families import kernels as K
from pymc_partitions.families.kernels import FamilyPack, merge_work_size, pack_init, pack_log_marginal, pack_merge
from pymc_partitions.families.kernels import pack_log_preds, pack_set_stats, pack_update
from pymc_partitions.priors import CRP
from pymc_partitions.samplers.gibbs import log_joint
from reference_families import ref_log_marginal_dirichlet_categorical, ref_log_marginal_gamma_poisson, ref_total

FAMILIES = ["gp", "dc"]
UNIT = CRP(1.0)


def log_lik(labels, pack):
    return log_joint(labels, pack, UNIT.code, UNIT.kernel_params()) - UNIT.log_eppf(labels)


@pytest.mark.parametrize("dim", [1, 2, 4])
def test_gamma_poisson_matches_reference(dim):
    rng = np.random.default_rng(dim)
    n = 10
    x = rng.poisson(rng.uniform(0.2, 20.0, dim), size=(n, dim)).astype(float)
    alpha, beta = rng.uniform(0.2, 5.0, dim), rng.uniform(0.1, 3.0, dim)
    pack = FamilyPack.build([(K.GAMMA_POISSON, x, K.gamma_poisson_hyper(alpha, beta, dim))])
    for _ in range(6):
        z = rng.integers(0, rng.integers(1, n + 1), n)
        want = ref_total(z, x, ref_log_marginal_gamma_poisson, alpha=alpha, beta=beta)
        assert log_lik(z, pack) == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("n_cat", [[2], [3, 2], [5, 1, 4]])
def test_dirichlet_categorical_matches_reference(n_cat):
    rng = np.random.default_rng(len(n_cat))
    n, dim = 10, len(n_cat)
    cats = np.column_stack([rng.integers(0, c, n) for c in n_cat])
    a = rng.uniform(0.2, 3.0, (dim, max(n_cat)))
    pack = FamilyPack.build([(K.DIRICHLET_CATEGORICAL, K.dirichlet_categorical_data(cats, n_cat),
                              K.dirichlet_categorical_hyper(a, n_cat))])
    for _ in range(6):
        z = rng.integers(0, rng.integers(1, n + 1), n)
        want = ref_total(z, cats, ref_log_marginal_dirichlet_categorical, a=a, n_categories=n_cat)
        assert log_lik(z, pack) == pytest.approx(want, rel=1e-10)


def _packs(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.poisson([0.5, 4.0, 30.0], size=(n, 3)).astype(float)
    cats, n_cat = categories(n, seed)
    return {
        "gp": FamilyPack.build([(K.GAMMA_POISSON, x, K.gamma_poisson_hyper([1.0, 0.3, 2.0], [0.5, 1.0, 0.1], 3))]),
        "dc": FamilyPack.build([(K.DIRICHLET_CATEGORICAL, K.dirichlet_categorical_data(cats, n_cat),
                                 K.dirichlet_categorical_hyper([[0.5, 1.0, 2.0], [1.0, 0.3, 0.0]], n_cat))]),
        "multi": FamilyPack.build([(K.GAMMA_POISSON, x, K.gamma_poisson_hyper(1.0, 1.0, 3)),
                                   (K.DIRICHLET_CATEGORICAL, K.dirichlet_categorical_data(cats, n_cat),
                                    K.dirichlet_categorical_hyper(1.0, n_cat)),
                                   (K.DIAG_NORMAL, x[:, :2], K.diag_normal_hyper(0.0, 5.0, 1.0, 2))]),
    }


def _args(p):
    return p.codes, p.dims, p.stat_off, p.hyper_off, p.hyper


def _one_by_one(p, items):
    st = np.empty((1, p.width))
    pack_init(*_args(p), st, 0)
    scratch = np.empty(max(1, p.data.shape[1]))
    for i in items:
        pack_update(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, 0, p.data, i, 1.0, scratch)
    return st


@pytest.mark.parametrize("family", ["gp", "dc", "multi"])
def test_log_predictive_is_a_ratio_of_marginals_and_removal_undoes_addition(family):
    n = 25
    p = _packs(n)[family]
    rng = np.random.default_rng(2)
    scratch = np.empty(max(1, p.data.shape[1]))
    for _ in range(30):
        items = rng.permutation(n)[:rng.integers(0, 10)]
        st = _one_by_one(p, items)
        base = pack_log_marginal(*_args(p), st, 0)
        i = int(rng.integers(n))
        out = np.zeros(1)
        pack_log_preds(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, np.zeros(1, np.int64), 1,
                       p.data, i, scratch, out)
        before = st.copy()
        pack_update(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, 0, p.data, i, 1.0, scratch)
        assert out[0] == pytest.approx(pack_log_marginal(*_args(p), st, 0) - base, rel=1e-10, abs=1e-10)
        pack_update(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, 0, p.data, i, -1.0, scratch)
        np.testing.assert_allclose(st, before, rtol=1e-12, atol=1e-11)
        if len(items) == 0:
            np.testing.assert_array_equal(st, before)  # an emptied block is reset exactly


@pytest.mark.parametrize("family", ["gp", "dc", "multi"])
def test_merge_and_set_statistics_equal_item_by_item(family):
    n = 30
    p = _packs(n)[family]
    rng = np.random.default_rng(1)
    scratch = np.empty(max(1, p.data.shape[1]))
    work = np.empty(merge_work_size(p.codes, p.dims))
    for _ in range(30):
        perm = rng.permutation(n)
        na, nb = rng.integers(0, 12, 2)
        st = np.empty((2, p.width))
        for b, (start, count) in enumerate([(0, na), (na, nb)]):
            pack_set_stats(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, b, p.data, perm, start,
                           count, scratch)
        np.testing.assert_allclose(st[0], _one_by_one(p, perm[:na])[0], rtol=1e-11, atol=1e-11)
        pack_merge(*_args(p), st, 0, 1, perm, na, nb, work)
        want = _one_by_one(p, perm[:na + nb])
        np.testing.assert_allclose(st[0], want[0], rtol=1e-10, atol=1e-10)
        assert pack_log_marginal(*_args(p), st, 0) == pytest.approx(pack_log_marginal(*_args(p), want, 0), rel=1e-11)


@pytest.mark.parametrize("bad,match", [
    (lambda x: x - 0.5, "non-negative integers"), (lambda x: -x - 1, "non-negative integers"),
    (lambda x: np.where(x > 1, np.nan, x), "NaN"), (lambda x: x * 2.0**52, "2\\^52"),
])
def test_gamma_poisson_refuses_bad_counts(bad, match):
    x = counts(6)
    with pytest.raises(ValueError, match=match):
        FamilyPack.build([(K.GAMMA_POISSON, bad(x), K.gamma_poisson_hyper(1.0, 1.0, 2))])


@pytest.mark.parametrize("alpha,beta", [(0.0, 1.0), (1.0, -1.0), (np.nan, 1.0), (1.0, np.inf), (1e301, 1.0)])
def test_gamma_poisson_refuses_bad_hyper(alpha, beta):
    with pytest.raises(ValueError, match="GAMMA_POISSON"):
        FamilyPack.build([(K.GAMMA_POISSON, counts(6), K.gamma_poisson_hyper(alpha, beta, 2))])
    with pytest.raises(ValueError, match="length 4"):
        FamilyPack.build([(K.GAMMA_POISSON, counts(6), np.ones(3))])


def test_dirichlet_categorical_refuses_bad_data_and_hyper():
    cats, n_cat = categories(6)
    good = K.dirichlet_categorical_data(cats, n_cat)
    hyper = K.dirichlet_categorical_hyper(1.0, n_cat)
    for bad in (cats + 0.5, np.where(cats > 0, np.nan, cats), cats + 3, cats - 1, cats[:, :1]):
        with pytest.raises(ValueError, match="categor"):
            K.dirichlet_categorical_data(bad, n_cat)
    two = good.copy()
    two[0, 0] = two[0, 1] = 1.0
    with pytest.raises(ValueError, match="exactly one 1"):
        FamilyPack.build([(K.DIRICHLET_CATEGORICAL, two, hyper)])
    with pytest.raises(ValueError, match="one-hot"):
        FamilyPack.build([(K.DIRICHLET_CATEGORICAL, good * 2, hyper)])
    for h in (K.dirichlet_categorical_hyper(0.0, n_cat), hyper * np.r_[np.ones(5), 2 * np.ones(5), np.ones(5)],
              np.r_[hyper[:10], np.zeros(5)]):
        with pytest.raises(ValueError, match="DIRICHLET_CATEGORICAL"):
            FamilyPack.build([(K.DIRICHLET_CATEGORICAL, good, h)])


# ----------------------------------------------------------------------------- every kernel, by enumeration
# The existing enumeration tests, run on the new families (each asserts the exact posterior and,
# where it has one, rejects the posterior of a perturbed prior).

@pytest.mark.parametrize("prior_name,family,n", [("crp", "gp", 7), ("pitman_yor", "gp", 6),
                                                 ("finite_dirichlet", "gp", 8), ("crp", "dc", 6),
                                                 ("pitman_yor", "dc", 8), ("finite_dirichlet", "dc", 7)])
def test_gibbs(prior_name, family, n):
    gibbs_tests.test_gibbs_matches_enumeration(prior_name, family, n)


@pytest.mark.parametrize("prior_name,family,annealed,n", [("crp", "gp", True, 6), ("finite_dirichlet", "dc", False, 7)])
def test_pgsm_alone(prior_name, family, annealed, n):
    pgsm_tests.test_pgsm_alone_matches_enumeration(prior_name, family, annealed, n)


@pytest.mark.parametrize("prior_name,family,n", [("pitman_yor", "gp", 7), ("crp", "dc", 6)])
def test_sams_alone(prior_name, family, n):
    sams_tests.test_sams_alone_matches_enumeration(prior_name, family, n)


@pytest.mark.parametrize("prior_name,family,n", [("finite_dirichlet", "gp", 6), ("pitman_yor", "dc", 7)])
def test_jain_neal_alone(prior_name, family, n):
    jain_neal_tests.test_alone_matches_enumeration(prior_name, family, n)


@pytest.mark.parametrize("prior_name,family,n", [("crp", "gp", 5), ("pitman_yor", "dc", 6)])
def test_arm_forward_probabilities_and_detailed_balance(prior_name, family, n):
    arm_tests.test_forward_probabilities_sum_to_one(prior_name, family, n)
    arm_tests.test_detailed_balance_and_the_reported_log_ratio(prior_name, family, n)


@pytest.mark.parametrize("prior_name,family,coupling", [("crp", "gp", "ot"), ("finite_dirichlet", "dc", "maximal")])
def test_coupled_gibbs_chains(prior_name, family, coupling):
    coupled_gibbs_tests.test_coupled_chains_keep_the_exact_posterior(coupling, prior_name, family)


@pytest.mark.parametrize("prior_name,family,coupling,pgsm", [
    ("pitman_yor", "gp", "ot", dict(moves=2, num_particles=5)),
    ("crp", "dc", "maximal", dict(moves=2, num_particles=5, num_anchors=3, annealed=False)),
])
def test_coupled_gibbs_pgsm_chains(prior_name, family, coupling, pgsm):
    coupled_pgsm_tests.test_each_coupled_chain_keeps_the_exact_posterior(prior_name, family, coupling, pgsm)


@pytest.mark.parametrize("coupling,prior_name,family", [("ot", "crp", "gp"), ("maximal", "pitman_yor", "dc")])
def test_unbiased_estimates(coupling, prior_name, family):
    unbiased_tests.test_average_of_estimates_matches_the_enumerated_expectation(coupling, 1, 0, 3, prior_name, family)
