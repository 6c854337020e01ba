"""Partition summaries against their definitions and against exact posteriors by enumeration
(n = 7 and 8): losses, co-clustering probabilities, the SALSO search's minimiser, the best draw,
credible balls, per-draw traces, and the search's determinism, time budget and caps."""

import math

import numpy as np
import pytest
from scipy.special import gammaln

import pymc_partitions as pmp
from pymc_partitions.partition import enumerate_partitions
from pymc_partitions.summaries import label_draws, pair_losses
from pymc_partitions.summaries.losses import LOSSES, candidate_losses

# --- references written from the definitions ---------------------------------------------------


def pair_counts(a, b):
    """(pairs together in a, together in b, together in both), by looping over pairs."""
    n = len(a)
    x = y = z = 0
    for i in range(n):
        for j in range(i + 1, n):
            x += a[i] == a[j]
            y += b[i] == b[j]
            z += a[i] == a[j] and b[i] == b[j]
    return x, y, z


def entropy(labels):
    _, c = np.unique(labels, axis=0, return_counts=True)
    p = c / c.sum()
    return float(-(p * np.log2(p)).sum())


def reference_loss(a, b, loss):
    a, b = np.asarray(a), np.asarray(b)
    n = len(a)
    if loss == "binder":  # disagreeing ordered pairs / n^2
        return float(np.sum((a[:, None] == a[None, :]) != (b[:, None] == b[None, :]))) / n**2
    if loss == "vi":  # 2 H(A, B) - H(A) - H(B)
        return 2 * entropy(np.stack([a, b], axis=1)) - entropy(a) - entropy(b)
    x, y, z = pair_counts(a, b)
    pairs = n * (n - 1) / 2
    if n < 2 or (x == y == 0) or (x == y == pairs):
        return 0.0
    e = x * y / pairs
    return 1.0 - (z - e) / ((x + y) / 2 - e)


def reference_expected(parts, weights):
    """{loss: expected loss of every partition in ``parts`` under ``weights`` on ``parts``}, from
    one-hot contingency tables in numpy (chunked)."""
    n = parts.shape[1]
    onehot = np.eye(n)[parts]  # (B, n, n)
    out = {loss: np.empty(len(parts)) for loss in LOSSES}
    xlx = lambda v: np.where(v > 0, v * np.log2(np.maximum(v, 1)), 0.0)  # noqa: E731
    pairs = n * (n - 1) / 2
    for lo in range(0, len(parts), 64):
        c = np.einsum("aik,bil->abkl", onehot[lo:lo + 64], onehot)  # (chunk, B, n, n)
        a, b = c.sum(3), c.sum(2)
        binder = ((a**2).sum(2) + (b**2).sum(2) - 2 * (c**2).sum((2, 3))) / n**2
        vi = (xlx(a).sum(2) + xlx(b).sum(2) - 2 * xlx(c).sum((2, 3))) / n
        x, y, z = ((a * (a - 1)).sum(2) / 2, (b * (b - 1)).sum(2) / 2, (c * (c - 1)).sum((2, 3)) / 2)
        e = x * y / pairs
        trivial = ((x == 0) & (y == 0)) | ((x == pairs) & (y == pairs))
        omari = np.where(trivial, 0.0, 1.0 - (z - e) / np.where(trivial, 1.0, (x + y) / 2 - e))
        for loss, value in zip(LOSSES, (binder, vi, omari)):
            out[loss][lo:lo + 64] = value @ weights
    return out


# --- an exact posterior: CRP(1) prior, Normal likelihood with Normal prior on block means -------

Y = np.array([-2.1, -1.8, -1.4, -0.2, 0.3, 1.5, 2.0, 2.3])


def exact_posterior(n, alpha=1.0, mu0=0.0, sigma0=2.0, sigma=0.7):
    parts = enumerate_partitions(n)
    y = Y[:n]
    logp = np.empty(len(parts))
    for r, lab in enumerate(parts):
        sizes = np.bincount(lab)
        lp = len(sizes) * math.log(alpha) + gammaln(sizes).sum()
        for b, m in enumerate(sizes):
            d = y[lab == b] - mu0
            lp += (-0.5 * math.log(1 + m * sigma0**2 / sigma**2)
                   - (d @ d - sigma0**2 * d.sum() ** 2 / (sigma**2 + m * sigma0**2)) / (2 * sigma**2))
        logp[r] = lp
    p = np.exp(logp - logp.max())
    return parts, p / p.sum()


@pytest.fixture(scope="module")
def post7():
    return exact_posterior(7)


@pytest.fixture(scope="module")
def post8():
    """All partitions of 8 items, their posterior probabilities and expected losses."""
    parts, p = exact_posterior(8)
    draws = label_draws(parts, p)
    k = parts.max(axis=1) + 1
    return parts, p, {loss: candidate_losses(parts, k, draws, code) for code, loss in enumerate(LOSSES)}


# --- losses -------------------------------------------------------------------------------------


def test_losses_match_definitions_on_random_pairs():
    rng = np.random.default_rng(1)
    for _ in range(120):
        n = int(rng.integers(1, 11))
        a = rng.integers(0, rng.integers(1, 6), n) * 3 + 7  # any labelling
        b = rng.integers(0, rng.integers(1, 6), n)
        for loss in LOSSES:
            got = pmp.summaries.partition_loss(a, b, loss)
            assert got == pytest.approx(reference_loss(a, b, loss), abs=1e-12), (a, b, loss)
            assert got == pytest.approx(pmp.summaries.partition_loss(b, a, loss), abs=1e-12)  # symmetric
            assert pmp.summaries.partition_loss(a, a[::-1][::-1] + 1, loss) == 0.0


def test_loss_conventions_and_ranges():
    singletons, one = np.arange(6), np.zeros(6, int)
    loss = pmp.summaries.partition_loss
    assert loss(singletons, singletons, "omari") == 0.0 and loss(one, one, "omari") == 0.0  # ARI := 1
    assert loss(singletons, one, "omari") == pytest.approx(1.0)
    assert loss([0], [0], "omari") == 0.0
    assert loss(singletons, one, "vi") == pytest.approx(math.log2(6))  # the VI maximum, log2 n bits
    assert loss(singletons, one, "binder") == pytest.approx(1 - 1 / 6)  # all 30 ordered pairs / 36
    # Binder = (1 - Rand) (n - 1) / n
    rand = 1 - loss([0, 0, 1, 1, 2], [0, 1, 1, 1, 2], "binder") * 5 / 4
    x, y, z = pair_counts([0, 0, 1, 1, 2], [0, 1, 1, 1, 2])
    assert rand == pytest.approx((10 - x - y + 2 * z) / 10)


def test_expected_loss_is_the_weighted_mean():
    draws = np.array([[0, 0, 1, 1], [0, 0, 0, 1], [1, 2, 3, 4]])
    est = [3, 3, 9, 9]
    for loss in LOSSES:
        each = [reference_loss(est, d, loss) for d in draws]
        assert pmp.summaries.expected_loss(est, draws, loss) == pytest.approx(np.mean(each))
        w = [0.2, 0.0, 0.8]
        assert pmp.summaries.expected_loss(est, draws, loss, weights=w) == pytest.approx(np.dot(w, each))


def test_candidate_losses_match_numpy_reference(post7):
    parts, p = post7
    draws = label_draws(parts, p)
    reference = reference_expected(parts, p)
    for code, loss in enumerate(LOSSES):
        got = candidate_losses(parts, parts.max(axis=1) + 1, draws, code)
        np.testing.assert_allclose(got, reference[loss], atol=1e-10)


# --- co-clustering ------------------------------------------------------------------------------


def exact_coclustering(parts, p):
    return np.einsum("b,bij->ij", p, (parts[:, :, None] == parts[:, None, :]).astype(float))


def test_coclustering_equals_the_exact_posterior(post7):
    parts, p = post7
    exact = exact_coclustering(parts, p)
    weighted = pmp.coclustering(parts, weights=p)
    np.testing.assert_allclose(weighted.values, exact, atol=1e-12)
    assert weighted.dims == ("item", "item_other")
    # i.i.d. draws from the exact posterior, relabelled arbitrarily: within Monte Carlo error
    rng = np.random.default_rng(7)
    s = 4000
    draws = parts[rng.choice(len(parts), size=s, p=p)]
    draws = draws * 5 + rng.integers(0, 3, size=(s, 1))  # non-canonical labels
    mc = pmp.coclustering(draws).values
    se = np.sqrt(np.maximum(exact * (1 - exact), 1e-12) / s)
    z = np.abs(mc - exact) / se
    assert z.max() < 4.5, z.max()
    assert np.abs(mc - exact).max() > 0  # really Monte Carlo
    wrong = exact_coclustering(*exact_posterior(7, alpha=4.0))  # a different posterior is detected
    assert (np.abs(mc - wrong) / se).max() > 4.5


def test_coclustering_items_pairs_dtype_and_large_labels():
    rng = np.random.default_rng(3)
    draws = rng.integers(0, 4, size=(300, 40)) * 10**9  # labels far above n
    full = pmp.coclustering(draws).values
    reference = (draws[:, :, None] == draws[:, None, :]).mean(0)
    np.testing.assert_allclose(full, reference, atol=1e-12)
    sub = pmp.coclustering(draws, items=[5, 2, 39])
    np.testing.assert_allclose(sub.values, reference[np.ix_([5, 2, 39], [5, 2, 39])], atol=1e-12)
    assert list(sub["item"].values) == [5, 2, 39]
    pairs = pmp.coclustering(draws, pairs=[(0, 1), (3, 3), (39, 7)])
    np.testing.assert_allclose(pairs.values, [reference[0, 1], 1.0, reference[39, 7]], atol=1e-12)
    assert pairs.dims == ("pair",) and list(pairs["item_other"].values) == [1, 3, 7]
    single = pmp.coclustering(draws, dtype="float32")
    assert single.dtype == np.float32 and np.abs(single.values - reference).max() < 1e-6
    w = rng.random(300)
    weighted = pmp.coclustering(draws, weights=w).values
    np.testing.assert_allclose(weighted, np.einsum("s,sij->ij", w / w.sum(), draws[:, :, None] == draws[:, None, :]),
                               atol=1e-12)


def test_coclustering_refuses_large_matrices_and_offers_items_or_pairs():
    draws = np.zeros((2, 300), int)
    with pytest.raises(MemoryError, match=r"items=\[\.\.\.\].*pairs=.*float32"):
        pmp.coclustering(draws, max_bytes=300 * 300 * 8 - 1)
    assert pmp.coclustering(draws, max_bytes=300 * 300 * 4, dtype="float32").shape == (300, 300)
    assert pmp.coclustering(draws, items=range(10), max_bytes=800).shape == (10, 10)
    assert pmp.coclustering(draws, pairs=[(0, 299)], max_bytes=1).values.tolist() == [1.0]


# --- the point estimate -------------------------------------------------------------------------


@pytest.mark.parametrize("loss", LOSSES)
def test_search_finds_the_exact_minimiser_over_all_partitions(post8, loss):
    """Weights = the exact posterior over all 4140 partitions of 8 items: the search's estimate
    is the partition with the smallest expected loss among all of them."""
    parts, p, expected = post8
    values = expected[loss]
    best = int(np.argmin(values))
    assert np.sort(values)[1] > values[best] + 1e-9  # a unique minimiser
    est = pmp.point_estimate(parts, loss=loss, weights=p, random_seed=2)
    assert est.expected_loss == pytest.approx(values[best], abs=1e-12)
    np.testing.assert_array_equal(est.labels, parts[best])
    baseline = pmp.point_estimate(parts, loss=loss, weights=p, method="draws")  # every partition is a draw
    np.testing.assert_array_equal(baseline.labels, parts[best])


def test_the_three_minimisers_differ(post8):
    """So a search that minimised the wrong loss would fail the test above."""
    parts, _, expected = post8
    winners = {tuple(parts[np.argmin(values)]) for values in expected.values()}
    assert len(winners) >= 2, winners


def synthetic_draws(n=120, s=400, k=5, noise=0.15, seed=0):
    """Perturbed copies of a k-block partition: a posterior-like sample with some uncertainty."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(k), n // k)
    draws = np.tile(truth, (s, 1))
    for row in draws:
        moved = rng.random(n) < noise
        row[moved] = rng.integers(0, k + 2, moved.sum())
    return truth, draws


def test_search_beats_the_best_draw_and_recovers_the_blocks():
    truth, draws = synthetic_draws()
    est = pmp.point_estimate(draws, random_seed=1)
    best_draw = pmp.point_estimate(draws, method="draws")
    assert est.expected_loss <= best_draw.expected_loss + 1e-12
    assert est.expected_loss == pytest.approx(pmp.summaries.expected_loss(est.labels, draws))
    assert pmp.summaries.partition_loss(est.labels, truth, "vi") == 0.0
    stats = est.stats
    assert stats["runs_completed"] == 16 and stats["runs_skipped"] == 0 and len(stats["run_losses"]) == 16
    assert stats["initialization"] in ("sequential", "random") and stats["max_clusters"] == draws_k(draws).max()
    assert 0 <= stats["zealous_accepts"] <= stats["zealous_attempts"] <= 10
    assert best_draw.stats["draw_index"] in range(len(draws))
    assert pmp.summaries.partition_loss(best_draw.labels, draws[best_draw.stats["draw_index"]], "vi") == 0.0


def draws_k(draws):
    return np.array([np.unique(r).size for r in draws])


def test_same_seed_same_result_whatever_the_threads():
    _, draws = synthetic_draws(n=90, s=150, noise=0.35, seed=4)
    results = [pmp.point_estimate(draws, loss=loss, runs=6, threads=t, random_seed=11)
               for loss in ("vi", "omari") for t in (1, 2, 3)]
    for group in (results[:3], results[3:]):
        for other in group[1:]:
            np.testing.assert_array_equal(other.labels, group[0].labels)
            assert other.stats["run_losses"] == group[0].stats["run_losses"]


def test_sequential_allocation_alone_recovers_clear_structure():
    """No sweetening, no zealous updates: one sequential allocation must already find the blocks
    of a sharp posterior (a run that picked the worst block would not)."""
    truth, draws = synthetic_draws(n=60, s=100, k=4, noise=0.03, seed=9)
    for loss in LOSSES:
        est = pmp.point_estimate(draws, loss=loss, runs=1, prob_sequential_allocation=1.0, max_scans=0,
                                 max_zealous_attempts=0, random_seed=3)
        assert est.stats["initialization"] == "sequential" and est.stats["scans"] == 0
        assert pmp.summaries.partition_loss(est.labels, truth, "vi") == 0.0, loss


def test_zealous_updates_only_ever_lower_the_loss_and_losses_are_consistent():
    """Zealous updates keep a change only if it lowers the expected loss: a run never ends above
    its loss after sweetening, and some updates are kept; the loss the search tracks is the
    expected loss of the partition it returns."""
    _, draws = synthetic_draws(n=84, s=120, k=6, noise=0.45, seed=10)
    accepted = 0
    for seed in range(4):
        for loss in LOSSES:
            est = pmp.point_estimate(draws, loss=loss, runs=1, prob_sequential_allocation=0.0, random_seed=seed)
            stats = est.stats
            assert stats["run_losses"][0] == pytest.approx(est.expected_loss, rel=1e-9, abs=1e-12)
            assert est.expected_loss <= stats["loss_before_zealous"] + 1e-12
            assert (stats["loss_before_zealous"] - est.expected_loss > 1e-9) == (stats["zealous_accepts"] > 0)
            accepted += stats["zealous_accepts"]
    assert accepted > 0


def test_max_clusters_caps_the_estimate():
    _, draws = synthetic_draws(seed=2)
    free = pmp.point_estimate(draws, loss="binder", random_seed=0)
    capped = pmp.point_estimate(draws, loss="binder", max_clusters=2, random_seed=0)
    assert free.n_clusters == 5 and capped.n_clusters <= 2 and capped.stats["max_clusters"] == 2
    assert capped.expected_loss > free.expected_loss


def test_time_budget_and_lean_settings_still_give_a_partition():
    _, draws = synthetic_draws(n=200, s=300, seed=5)
    est = pmp.point_estimate(draws, seconds=1e-9, runs=50, threads=1, random_seed=0)
    assert est.labels.shape == (200,) and est.stats["runs_skipped"] == 49
    assert est.stats["runs_truncated"] == 1 and est.stats["runs_completed"] == 0
    assert est.expected_loss == pytest.approx(pmp.summaries.expected_loss(est.labels, draws))
    lean = pmp.point_estimate(draws, runs=2, max_zealous_attempts=0, prob_sequential_allocation=0.0,
                              max_scans=0, random_seed=0)
    assert lean.stats["zealous_attempts"] == 0 and lean.stats["scans"] == 0 and lean.stats["initialization"] == "random"


def test_search_refuses_tables_above_max_bytes():
    draws = np.tile(np.arange(50), (40, 1))  # all singletons: 40 x 50 blocks x 50 labels
    with pytest.raises(MemoryError, match="max_clusters"):
        pmp.point_estimate(draws, max_bytes=1000, threads=1)
    assert pmp.point_estimate(draws, max_clusters=3, threads=1, random_seed=0).n_clusters <= 3


# --- credible balls -----------------------------------------------------------------------------


def enumerated_ball(parts, p, estimate, loss, level):
    """The definition over all partitions: smallest radius with mass >= level; bounds."""
    d = np.array([reference_loss(estimate, q, loss) for q in parts])
    radii = np.unique(d)
    radius = next(r for r in radii if p[d <= r + 1e-12].sum() >= level - 1e-12)
    inside = np.flatnonzero(d <= radius + 1e-12)
    k = parts.max(axis=1) + 1
    upper = inside[k[inside] == k[inside].min()]
    lower = inside[k[inside] == k[inside].max()]
    return radius, {name: (d[rows].max(), {tuple(parts[r]) for r in rows if d[r] >= d[rows].max() - 1e-12})
                    for name, rows in (("upper_vertical", upper), ("lower_vertical", lower), ("horizontal", inside))}


@pytest.mark.parametrize("loss", ["vi", "binder"])
def test_credible_ball_matches_enumeration(post7, loss):
    parts, p = post7
    estimate = pmp.point_estimate(parts, loss=loss, weights=p, random_seed=0)
    for level in (0.5, 0.8, 0.95):
        ball = pmp.credible_ball(parts, estimate, loss=loss, level=level, weights=p)
        radius, bounds = enumerated_ball(parts, p, estimate.labels, loss, level)
        assert ball.radius == pytest.approx(radius, abs=1e-12)
        assert ball.probability >= level - 1e-12
        for name, (distance, members) in bounds.items():
            assert getattr(ball, f"{name}_distance") == pytest.approx(distance, abs=1e-12)
            assert tuple(getattr(ball, name)) in members
            assert getattr(ball, f"n_{name}") == len(members)


def test_credible_ball_radius_from_draws_within_monte_carlo_error(post7):
    parts, p = post7
    estimate = pmp.point_estimate(parts, weights=p, random_seed=0).labels
    rng = np.random.default_rng(5)
    s = 3000
    draws = parts[rng.choice(len(parts), size=s, p=p)]
    for level in (0.8, 0.95):
        ball = pmp.credible_ball(draws, estimate, level=level)
        slack = 4 * math.sqrt(level * (1 - level) / s)
        low, _ = enumerated_ball(parts, p, estimate, "vi", level - slack)
        high, _ = enumerated_ball(parts, p, estimate, "vi", min(level + slack, 1.0))
        assert low - 1e-12 <= ball.radius <= high + 1e-12


def test_credible_ball_with_equal_weights_is_mcclust_ext():
    """S equal draws: the radius is the ceil(level S)-th smallest distance."""
    _, draws = synthetic_draws(n=30, s=37, noise=0.3, seed=8)
    est = pmp.point_estimate(draws, random_seed=0)
    d = np.sort(pair_losses(est.labels, label_draws(draws))[:, 1])
    for level in (0.5, 0.9, 0.95):
        assert pmp.credible_ball(draws, est, level=level).radius == d[math.ceil(level * 37) - 1]


# --- per-draw traces ----------------------------------------------------------------------------


def test_partition_traces_are_label_invariant_quantities():
    _, draws = synthetic_draws(n=40, s=60, seed=6)
    chains = draws.reshape(3, 20, 40)
    ref = draws[0]
    traces = pmp.partition_traces(chains, reference=ref)
    assert traces["n_clusters"].dims == ("chain", "draw") and traces.sizes == {"chain": 3, "draw": 20}
    flat = {k: traces[k].values.ravel() for k in traces.data_vars}
    np.testing.assert_array_equal(flat["n_clusters"], draws_k(draws))
    np.testing.assert_array_equal(flat["largest_cluster"], [np.bincount(r).max() for r in draws])
    for s in (0, 7, 59):
        assert flat["vi"][s] == pytest.approx(reference_loss(ref, draws[s], "vi"))
        assert flat["ari"][s] == pytest.approx(1 - reference_loss(ref, draws[s], "omari"))
        x, y, z = pair_counts(ref, draws[s])
        assert flat["rand"][s] == pytest.approx((40 * 39 / 2 - x - y + 2 * z) / (40 * 39 / 2))
    assert set(pmp.partition_traces(draws).data_vars) == {"n_clusters", "largest_cluster"}
