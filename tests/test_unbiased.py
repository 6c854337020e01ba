"""Unbiased estimators from lagged coupled chains: their average matches the enumerated
posterior expectation, while the plain MCMC average of the same runs does not."""

import numpy as np
import pytest

from enumeration import exact_posterior
from models import PRIORS, pack
from pymc_partitions.coupling.aggregate import aggregate, default_groups, median_of_means, trimmed_mean
from pymc_partitions.coupling.functions import CoClustering, LargestProportions
from pymc_partitions.coupling.functions import PredictiveDensity, largest_proportion
from pymc_partitions.coupling.functions import n_clusters
from pymc_partitions.coupling.parallel import UnbiasedJob
from pymc_partitions.coupling.unbiased import bias_correction_weight, suggest_k_m
from pymc_partitions.families.kernels import DIAG_NORMAL, FamilyPack, diag_normal_hyper
from pymc_partitions.samplers.gibbs import log_joint


@pytest.mark.parametrize("lag", [1, 2, 3])
@pytest.mark.parametrize("k,m", [(0, 0), (0, 4), (2, 2), (3, 10)])
def test_bias_correction_weight_counts_the_single_time_estimators(k, m, lag):
    """H_{k:m} is the average of H_l, l = k..m, and H_l holds Delta_t for t = l + j lag, j >= 1."""
    for t in range(k + lag, m + 5 * lag):
        count = sum(1 for l in range(k, m + 1) for j in range(1, 50) if l + j * lag == t)
        assert bias_correction_weight(t, k, m, lag) == pytest.approx(count / (m - k + 1))


def both(labels):
    return np.array([n_clusters(labels), largest_proportion(labels)])


@pytest.mark.parametrize(
    "coupling,lag,k,m,prior_name,family",
    [("ot", 1, 0, 3, "crp", "diag"), ("ot", 2, 1, 4, "pitman_yor", "niw"), ("maximal", 1, 1, 2, "crp", "diag"),
     ("crn", 1, 0, 2, "finite_dirichlet", "bb"), ("aligned", 1, 0, 3, "pitman_yor", "diag")],
)
def test_average_of_estimates_matches_the_enumerated_expectation(coupling, lag, k, m, prior_name, family):
    n = 7
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    job = UnbiasedJob(fam, prior.code, prior.kernel_params(), both, k, m, lag, 1000, coupling, 0.0, "singletons")
    check_estimates_match_enumeration(job, n)


def check_estimates_match_enumeration(job, n, pairs=2500):
    """The mean of H_{k:m} for E[K] and the largest share over ``pairs`` pairs of ``job`` (h =
    ``both``, started at singletons) is within 3 SE of the enumerated value; the plain MCMC average
    of the same runs is > 5 SE off (the check has power)."""
    fam, prior_code, prior_params = job.pack, job.prior_code, job.prior_params
    parts, post = exact_posterior(n, lambda p: log_joint(p, fam, prior_code, prior_params))
    exact = np.array([post @ (parts.max(axis=1) + 1), post @ [largest_proportion(p) for p in parts]])
    results = [job.run(s) for s in np.random.SeedSequence(2024).spawn(pairs)]
    assert all(r.met for r in results)
    est = np.array([r.estimate for r in results])
    se = est.std(axis=0, ddof=1) / np.sqrt(pairs)
    z = np.abs(est.mean(axis=0) - exact) / se
    assert z.max() < 3.0, f"estimates {est.mean(axis=0)} vs exact {exact}, z = {z}"
    # power: the plain MCMC average over k..m of the same runs is biased (started at singletons)
    plain = np.array([r.mcmc for r in results])
    z_plain = np.abs(plain.mean(axis=0) - exact) / (plain.std(axis=0, ddof=1) / np.sqrt(pairs))
    assert z_plain[0] > 5.0, f"the test has no power: plain average z = {z_plain}"


def test_lag_beyond_the_burn_in_from_one_block_is_unbiased():
    """The setting of benchmarks/README "Fig. 2B with a lag": aligned coupling, a lag longer than
    the burn-in k, every chain started from one block (a start the plain average never forgets
    by m: the power check)."""
    n = 7
    prior = PRIORS["crp"]
    job = UnbiasedJob(pack("diag", n), prior.code, prior.kernel_params(), both, 1, 4, 3, 1000, "aligned", 0.0,
                      "one_block")
    check_estimates_match_enumeration(job, n)


def test_pairs_that_do_not_meet_are_reported_not_dropped():
    n = 30
    prior = PRIORS["crp"]
    job = UnbiasedJob(pack("diag", n), prior.code, prior.kernel_params(), both, 0, 2, 1, 3, "independent")
    result = job.run(np.random.SeedSequence(0))
    assert not result.met and result.tau == -1
    assert np.isnan(result.estimate).all()
    assert result.iterations == 3


def test_suggest_k_m():
    assert suggest_k_m([3, 5, 8, 12, 4], quantile=1.0) == (12, 120)
    assert suggest_k_m([1, 1, 2], quantile=0.5, multiple=5) == (1, 5)
    with pytest.raises(ValueError, match="did not meet"):
        suggest_k_m([3, -1, -1], quantile=0.9)


def test_largest_proportions_and_co_clustering():
    labels = np.array([0, 1, 1, 2, 1, 0])
    assert np.allclose(LargestProportions(4)(labels), [3 / 6, 5 / 6, 1.0, 1.0])
    cc = CoClustering([[1, 2], [0, 1], [0, 5]])
    assert np.array_equal(cc(labels), [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="positive integer"):
        LargestProportions(0)
    with pytest.raises(ValueError, match="partition has n=6"):
        CoClustering([[0, 9]]).bind(pack("diag", 6), 0, [1.0, 0.0, 0.0])


@pytest.mark.parametrize("prior_name", ["crp", "pitman_yor", "finite_dirichlet"])
def test_predictive_density_equals_the_ratio_of_joint_probabilities(prior_name):
    """p(x_new | partition, data) = sum_b p(x_new, z_new = b | ...) = sum_b exp(log joint with the new
    point in b - log joint without it): an oracle from the compiled kernels."""
    rng = np.random.default_rng(0)
    n, dim = 9, 2
    y = rng.normal(size=(n, dim))
    hyper = diag_normal_hyper([0.3, -0.2], [2.0, 1.5], [1.0, 0.7], dim)
    prior = PRIORS[prior_name]
    fam = FamilyPack.build([(DIAG_NORMAL, y, hyper)])
    labels = np.array([0, 0, 1, 2, 1, 0, 2, 2, 1])
    grid = rng.normal(size=(5, dim))
    dens = PredictiveDensity(grid).bind(fam, prior.code, prior.kernel_params())(labels)
    base = log_joint(labels, fam, prior.code, prior.kernel_params())
    for g, x in enumerate(grid):
        bigger = FamilyPack.build([(DIAG_NORMAL, np.vstack([y, x]), hyper)])
        total = sum(np.exp(log_joint(np.append(labels, b), bigger, prior.code, prior.kernel_params()) - base)
                    for b in range(labels.max() + 2))
        assert dens[g] == pytest.approx(total, rel=1e-9)


def test_predictive_density_errors():
    with pytest.raises(ValueError, match="only likelihood"):
        PredictiveDensity(np.zeros(3)).bind(pack("niw", 6), 0, [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="dimension 1"):
        PredictiveDensity(np.zeros(3)).bind(pack("diag", 6), 0, [1.0, 0.0, 0.0])
    with pytest.raises(RuntimeError, match="bound"):
        PredictiveDensity(np.zeros(3))(np.zeros(4, np.int64))


@pytest.fixture(scope="module")
def heavy_estimates():
    """(estimates of E[K], exact E[K]): 2000 OT pairs at n = 7 from singletons with k = 0, m = 2,
    so that most of each estimate is bias correction (skewed, heavy-tailed estimates)."""
    n = 7
    prior, fam = PRIORS["crp"], pack("diag", n)
    parts, post = exact_posterior(n, lambda p: log_joint(p, fam, prior.code, prior.kernel_params()))
    job = UnbiasedJob(fam, prior.code, prior.kernel_params(), lambda z: np.array([float(n_clusters(z))]), 0, 2, 1,
                      1000, "ot", 0.0, "singletons")
    est = np.array([job.run(s).estimate[0] for s in np.random.SeedSequence(11).spawn(2000)])
    return est, float(post @ (parts.max(axis=1) + 1))


@pytest.mark.parametrize("estimator", ["mean", "median_of_means", "trimmed_mean"])
def test_aggregates_match_enumeration_within_se_and_bias_bound(heavy_estimates, estimator):
    est, exact = heavy_estimates
    a = aggregate(est, estimator)
    assert abs(a.estimate - exact) < 3 * a.se + a.bias_bound, (a, exact)
    assert (a.bias_bound == 0) == (estimator == "mean")


def test_robust_aggregates_ignore_one_huge_pair(heavy_estimates):
    est, _ = heavy_estimates
    spoiled = est.copy()
    spoiled[123] = -1e6  # one pair that met very late, with an enormous correction
    before, after = aggregate(est, "mean"), aggregate(spoiled, "mean")
    assert abs(after.estimate - before.estimate) > 100  # the mean is ruined
    for estimator in ("median_of_means", "trimmed_mean"):
        before, after = aggregate(est, estimator), aggregate(spoiled, estimator)
        assert abs(after.estimate - before.estimate) < before.se, estimator
        assert after.se < 2 * before.se, estimator


def test_aggregate_arithmetic_and_deterministic_trimming_bound():
    x = np.array([1.0, 2, 3, 4, 5, 6, 100, 8, 9])
    assert median_of_means(x, 3).estimate == 5.0  # group means 2, 5, 39
    assert trimmed_mean(np.arange(10.0), 0.1).estimate == 4.5  # 0 and 9 dropped
    assert trimmed_mean(np.arange(10.0), 0.05).estimate == 4.5  # nothing dropped: the mean
    assert trimmed_mean(np.arange(10.0), 0.05).bias_bound == 0.0
    assert default_groups(0.95) == 24
    rng = np.random.default_rng(0)
    for _ in range(50):  # |trimmed mean - mean| <= the bound with the sample SD, for every sample
        x = rng.standard_t(1.5, size=rng.integers(5, 60))
        a = trimmed_mean(x, 0.2)
        assert abs(a.estimate - x.mean()) <= a.bias_bound * (1 + 1e-12)


def test_median_of_means_bias_is_real_and_within_its_bound():
    """A skewed law (Bernoulli(0.02)): the median of 10 group means of 5 is biased (mostly 0), and
    its expectation stays within sigma sqrt((K-1)/N) of the mean, as documented."""
    p, groups, size = 0.02, 10, 5
    rng = np.random.default_rng(1)
    mom = np.array([median_of_means((rng.random(groups * size) < p).astype(float), groups).estimate
                    for _ in range(4000)])
    bias = mom.mean() - p
    assert bias < -0.5 * p  # biased: the median of means misses the rare ones
    assert abs(bias) <= np.sqrt(p * (1 - p)) * np.sqrt((groups - 1) / (groups * size))


def test_aggregate_arguments_are_checked():
    x = np.arange(30.0)
    with pytest.raises(ValueError, match="estimator must be one of"):
        aggregate(x, "median")
    with pytest.raises(ValueError, match="n_groups.*use estimator='mean'"):
        aggregate(x, "median_of_means", n_groups=2)
    with pytest.raises(ValueError, match="n_groups must be an integer"):
        aggregate(x, "median_of_means", n_groups=2.5)
    with pytest.raises(TypeError, match="n_groups must be an integer"):
        aggregate(x, "median_of_means", n_groups="4")
    for bad in (0.0, 0.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match="trim"):
            aggregate(x, "trimmed_mean", trim=bad)
    with pytest.raises(ValueError, match="needs at least 40 estimates"):
        median_of_means(x, 40)
    with pytest.raises(ValueError, match="finite"):
        aggregate(np.array([1.0, np.nan, 2.0]), "median_of_means", n_groups=3)
    with pytest.raises(ValueError, match="one-dimensional"):
        trimmed_mean(np.ones((3, 3)), 0.1)
