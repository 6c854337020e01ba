"""Centered plug-in W2 estimators (pymc_partitions.diagnostics.wasserstein): exactness of the
POT solve and its potentials, Gaussian closed forms, standard errors, hedging, batch means."""

import numpy as np
import pytest
from scipy.linalg import sqrtm
from scipy.optimize import linear_sum_assignment, linprog

from pymc_partitions.diagnostics import wasserstein as w
from pymc_partitions.diagnostics.wasserstein import (
    Estimate,
    batch_means_se,
    centered_l,
    centered_u,
    hedged,
    plugin_w2,
    sgnsq,
    squared_euclidean,
    variance_reduction,
)


def gaussian_w2sq(m1, s1, m2, s2):
    r2 = np.real(sqrtm(s2))
    cross = np.real(sqrtm(r2 @ s1 @ r2))
    return float(np.sum((m1 - m2) ** 2) + np.trace(s1 + s2 - 2 * cross))


# --- small helpers -----------------------------------------------------------------------


def test_sgnsq():
    assert sgnsq(-3.0) == -9.0
    assert sgnsq(2) == 4.0
    assert isinstance(sgnsq(0.5), float)
    np.testing.assert_array_equal(sgnsq(np.array([[-2.0, 0.0, 1.5]])), [[-4.0, 0.0, 2.25]])


def test_squared_euclidean_shapes_and_values():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(7, 3))
    m = squared_euclidean(a, b)
    assert m.shape == (5, 7) and m.dtype == np.float64
    np.testing.assert_allclose(m, ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1), rtol=1e-13)
    np.testing.assert_allclose(squared_euclidean(a[:, 0], b[:, 0]), (a[:, :1] - b[:, 0]) ** 2, rtol=1e-13)
    np.testing.assert_array_equal(squared_euclidean(np.arange(3), np.arange(2)), [[0, 1], [1, 0], [4, 1]])
    with pytest.raises(ValueError, match="dimension"):
        squared_euclidean(a, b[:, :2])


# --- plugin_w2 ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 13, 200])
def test_plugin_matches_assignment_and_potentials(n):
    rng = np.random.default_rng(n)
    x, y = rng.normal(size=(n, 2)) * 2, rng.normal(size=(n, 2)) + 1
    cost = squared_euclidean(x, y)
    p = plugin_w2(cost)
    r, c = linear_sum_assignment(cost)
    assert p.value == pytest.approx(cost[r, c].sum() / n, rel=1e-12, abs=1e-14)
    assert p.f.shape == (n,) and p.g.shape == (n,)
    assert p.value == pytest.approx(p.f.mean() + p.g.mean(), rel=1e-9, abs=1e-14)
    # dual feasibility, tight on the optimal assignment
    assert np.min(cost - p.f[:, None] - p.g[None, :]) > -1e-9
    np.testing.assert_allclose(p.f[r] + p.g[c], cost[r, c], atol=1e-9)


def test_plugin_unequal_sizes_against_lp():
    """n != m and an arbitrary (partly negative) cost: optimum of the transport LP."""
    rng = np.random.default_rng(3)
    n, m = 7, 11
    cost = rng.normal(size=(n, m))
    p = plugin_w2(cost)
    aeq = np.vstack([np.kron(np.eye(n), np.ones(m)), np.kron(np.ones(n), np.eye(m))])
    beq = np.concatenate([np.full(n, 1 / n), np.full(m, 1 / m)])
    lp = linprog(cost.ravel(), A_eq=aeq, b_eq=beq, bounds=(0, None), method="highs")
    assert lp.status == 0
    assert p.value == pytest.approx(lp.fun, rel=1e-9)
    assert p.value == pytest.approx(p.f.mean() + p.g.mean(), rel=1e-9)
    assert np.min(cost - p.f[:, None] - p.g[None, :]) > -1e-9


def test_plugin_large_problem_is_optimal():
    """n = 2500, d = 20, overdispersed: POT's default numItermax (1e5) stops early here
    (result_code 3 with POT 0.9.7); the default cap of plugin_w2 reaches the optimum."""
    rng = np.random.default_rng(1)
    n, d = 2500, 20
    cost = squared_euclidean(rng.normal(size=(n, d)) * 2, rng.normal(size=(n, d)))
    p = plugin_w2(cost)
    r, c = linear_sum_assignment(cost)
    assert p.value == pytest.approx(cost[r, c].sum() / n, rel=1e-10)
    assert p.value == pytest.approx(p.f.mean() + p.g.mean(), rel=1e-9)


def test_plugin_raises_when_not_optimal(monkeypatch):
    rng = np.random.default_rng(2)
    cost = squared_euclidean(rng.normal(size=(60, 2)), rng.normal(size=(60, 2)))
    plugin_w2(cost)  # fine with the default cap
    with pytest.raises(RuntimeError, match="optimal"):
        plugin_w2(cost, num_iter_max=5)
    monkeypatch.setattr(w, "NUM_ITER_MAX_MIN", 5)
    monkeypatch.setattr(w, "NUM_ITER_MAX_FACTOR", 0)
    with pytest.raises(RuntimeError, match="optimal"):
        plugin_w2(cost)
    with pytest.raises(RuntimeError):
        centered_u(rng.normal(size=(60, 2)), rng.normal(size=(60, 2)), rng.normal(size=(60, 2)))


def test_plugin_validation():
    with pytest.raises(ValueError, match="2-D"):
        plugin_w2(np.zeros(4))
    with pytest.raises(ValueError, match="2-D"):
        plugin_w2(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        plugin_w2(np.array([[0.0, np.nan], [1.0, 0.0]]))


# --- Gaussian closed form: bias and uncertainty quantification -----------------------------


@pytest.fixture(scope="module")
def gaussian_replicates():
    """mu = N(0, 4 I) overdispersed relative to nu = N(0.5, I) in d = 3, n = 200, 100 replicates."""
    rng = np.random.default_rng(20240611)
    d, n, reps = 3, 200, 100
    m_nu = np.full(d, 0.5)
    truth = gaussian_w2sq(np.zeros(d), 4 * np.eye(d), m_nu, np.eye(d))
    out = {k: [] for k in ("U", "U_se", "U_lo", "U_hi", "L", "Lbar_se", "P")}
    for _ in range(reps):
        x = 2 * rng.normal(size=(n, d))
        y, y2 = rng.normal(size=(n, d)) + m_nu, rng.normal(size=(n, d)) + m_nu
        u, lo = centered_u(x, y, y2), centered_l(x, y, y2)
        out["U"].append(u.value)
        out["U_se"].append(u.se)
        out["U_lo"].append(u.lower)
        out["U_hi"].append(u.upper)
        out["L"].append(lo.value)
        out["Lbar_se"].append(lo.se)
        out["P"].append(plugin_w2(squared_euclidean(x, y2)).value)
    return truth, {k: np.array(v) for k, v in out.items()}


def test_gaussian_truth_formula():
    assert gaussian_w2sq(np.zeros(3), 4 * np.eye(3), np.full(3, 0.5), np.eye(3)) == pytest.approx(3.75)


def test_gaussian_bias_ordering(gaussian_replicates):
    truth, r = gaussian_replicates
    se_rep = {k: r[k].std(ddof=1) / np.sqrt(r[k].size) for k in ("U", "L", "P")}
    assert r["U"].mean() >= truth - 3 * se_rep["U"]  # conservative (in fact clearly above truth)
    assert r["L"].mean() <= truth + 3 * se_rep["L"]
    assert r["P"].mean() > truth + 10 * se_rep["P"]  # the uncentred plug-in is far more biased
    assert np.all(r["P"] > r["U"])  # U = P - W2^2(Y, Y') with the centring term >= 0


def test_gaussian_standard_errors_and_coverage(gaussian_replicates):
    _, r = gaussian_replicates
    assert r["U_se"].mean() == pytest.approx(r["U"].std(ddof=1), rel=0.3)
    lbar = np.sign(r["L"]) * np.sqrt(np.abs(r["L"]))
    assert r["Lbar_se"].mean() == pytest.approx(lbar.std(ddof=1), rel=0.3)
    np.testing.assert_allclose(r["U_hi"] - r["U"], 1.959963984540054 * r["U_se"], rtol=1e-12)
    cover = np.mean((r["U_lo"] <= r["U"].mean()) & (r["U"].mean() <= r["U_hi"]))
    assert 0.85 <= cover <= 1.0


def test_interval_shapes():
    rng = np.random.default_rng(4)
    x, y, y2 = rng.normal(size=(3, 50, 2))
    x = 1.5 * x + 0.3
    u = centered_u(x, y, y2, ci=0.9)
    assert isinstance(u, Estimate)
    assert u.lower == pytest.approx(u.value - 1.6448536269514722 * u.se)
    assert u.upper == pytest.approx(u.value + 1.6448536269514722 * u.se)
    lo = centered_l(x, y, y2, ci=0.9)
    lbar = np.sign(lo.value) * np.sqrt(abs(lo.value))
    assert lo.lower == pytest.approx(sgnsq(lbar - 1.6448536269514722 * lo.se))
    assert lo.upper == pytest.approx(sgnsq(lbar + 1.6448536269514722 * lo.se))
    wp = plugin_w2(squared_euclidean(x, y2)).value
    wc = plugin_w2(squared_euclidean(y, y2)).value
    assert u.value == pytest.approx(wp - wc, rel=1e-12)
    assert lbar == pytest.approx(np.sqrt(wp) - np.sqrt(wc), rel=1e-12)


# --- location: U responds to a shift exactly as W2^2 does ---------------------------------


def test_shift_identities():
    """Shifting x by c changes both W2^2(mu, nu) and U by |c|^2 + 2 c.(mean x - mean y'):
    U's bias is location-free (Theorem 1(iii)); shifting every sample leaves U unchanged."""
    rng = np.random.default_rng(5)
    x, y, y2 = 2 * rng.normal(size=(80, 2)), rng.normal(size=(80, 2)), rng.normal(size=(80, 2))
    c = np.array([3.0, -2.0])
    u0 = centered_u(x, y, y2).value
    gap = x.mean(0) - y2.mean(0)
    assert centered_u(x + c, y, y2).value - u0 == pytest.approx(c @ c + 2 * c @ gap, abs=1e-9)
    assert centered_u(x, y + c, y2 + c).value - u0 == pytest.approx(c @ c - 2 * c @ gap, abs=1e-9)
    assert centered_u(x + c, y + c, y2 + c).value == pytest.approx(u0, abs=1e-9)


# --- hedging and variance reduction --------------------------------------------------------


def test_hedged_picks_larger_u():
    rng = np.random.default_rng(6)
    n, d = 120, 5
    over = lambda: 2 * rng.normal(size=(n, d))  # noqa: E731
    under = lambda: rng.normal(size=(n, d)) + 0.5  # noqa: E731
    x, x2, y, y2 = over(), over(), under(), under()
    h = hedged(x, x2, y, y2)
    assert h["U_mu_nu"] == centered_u(x, y, y2)
    assert h["U_nu_mu"] == centered_u(y, x, x2)
    assert h["L_mu_nu"] == centered_l(x, y, y2)
    assert h["L_nu_mu"] == centered_l(y, x, x2)
    # centring with the less dispersed nu gives the larger (conservative) U
    assert h["centring"] == "nu"
    assert h["V"] == h["U_mu_nu"] and h["L"] == h["L_mu_nu"]
    assert h["U_mu_nu"].value > h["U_nu_mu"].value
    assert h["variance_reduction"] == pytest.approx(variance_reduction(x, y, y2))
    # roles swapped: the mu-centred pair is now active
    h2 = hedged(y, y2, x, x2)
    assert h2["centring"] == "mu"
    assert h2["V"] == h2["U_nu_mu"] and h2["L"] == h2["L_nu_mu"]
    assert h2["V"].value == max(h2["U_mu_nu"].value, h2["U_nu_mu"].value)
    assert h2["variance_reduction"] == pytest.approx(variance_reduction(x, y, y2))


def test_variance_reduction_coupled_and_independent():
    """y_i = 0.9 x_i + 0.1 e_i (nu slightly less dispersed, mu close to nu): the coupled pairs
    reduce the variance of U about threefold, and the estimate says so; independent ~ 1."""
    rng = np.random.default_rng(7)
    n, d = 200, 2
    sd_nu = np.sqrt(0.82)
    u_c, u_i, vr_c, vr_i = [], [], [], []
    for _ in range(60):
        x = rng.normal(size=(n, d))
        y = 0.9 * x + 0.1 * rng.normal(size=(n, d))
        y_ind, y2 = sd_nu * rng.normal(size=(n, d)), sd_nu * rng.normal(size=(n, d))
        u_c.append(centered_u(x, y, y2).value)
        u_i.append(centered_u(x, y_ind, y2).value)
        vr_c.append(variance_reduction(x, y, y2))
        vr_i.append(variance_reduction(x, y_ind, y2))
    assert min(vr_c) > 1.2 and np.mean(vr_c) > 2.5
    assert 0.85 < np.mean(vr_i) < 1.2
    assert np.var(u_i) / np.var(u_c) > 1.8  # the reduction is real, not just estimated


# --- batch means ---------------------------------------------------------------------------


def test_batch_means_se_by_hand():
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert batch_means_se(v, [0, 0, 1, 1, 2, 2]) == pytest.approx(np.sqrt(4.0 / 3.0))
    # labels need be neither sorted nor contiguous: block means 2, 3, 5.5 -> var 3.25
    assert batch_means_se(v, [7, 0, 7, 0, 3, 3]) == pytest.approx(np.sqrt(3.25 / 3))
    assert batch_means_se(v, np.arange(6)) == pytest.approx(v.std(ddof=1) / np.sqrt(6))


def test_batches_identity_equals_iid():
    rng = np.random.default_rng(8)
    x, y, y2 = rng.normal(size=(3, 40, 2))
    x = 2 * x
    for f in (centered_u, centered_l):
        a, b = f(x, y, y2), f(x, y, y2, batches=np.arange(40))
        assert a.value == b.value
        assert a.se == pytest.approx(b.se, rel=1e-12)
    blocked = centered_u(x, y, y2, batches=np.repeat(np.arange(8), 5))
    assert blocked.value == centered_u(x, y, y2).value and blocked.se > 0


def test_custom_cost_on_label_samples():
    """Samples are whatever the cost accepts, e.g. (R, n) label arrays with a Hamming cost."""
    rng = np.random.default_rng(9)

    def hamming(a, b):
        return (a[:, None, :] != b[None, :, :]).sum(-1).astype(float)

    x, y, y2 = (rng.integers(0, k, size=(30, 6)) for k in (4, 2, 2))
    u = centered_u(x, y, y2, cost=hamming)
    expect = plugin_w2(hamming(x, y2)).value - plugin_w2(hamming(y, y2)).value
    assert u.value == pytest.approx(expect)
    # identical centring samples: W2(Y, Y') = 0 contributes no delta-method term
    lo = centered_l(x, y, y, cost=hamming)
    assert lo.value == pytest.approx(plugin_w2(hamming(x, y)).value) and np.isfinite(lo.se)


# --- validation ----------------------------------------------------------------------------


def test_input_validation():
    rng = np.random.default_rng(10)
    x, y, y2 = rng.normal(size=(3, 10, 2))
    for f in (centered_u, centered_l):
        with pytest.raises(ValueError, match="same length"):
            f(x, y[:9], y2)
        with pytest.raises(ValueError, match="same length"):
            f(x, y, y2[:9])
        with pytest.raises(ValueError, match="at least 2"):
            f(x[:1], y[:1], y2[:1])
        for ci in (0.0, 1.0, 1.5, -0.1, np.nan):
            with pytest.raises(ValueError, match="ci"):
                f(x, y, y2, ci=ci)
        for ci in ("0.95", True, None):  # the wrong kind: TypeError (pymc_partitions._checks convention)
            with pytest.raises(TypeError, match="ci must be a number"):
                f(x, y, y2, ci=ci)
        with pytest.raises(ValueError, match="length 10"):
            f(x, y, y2, batches=np.arange(9))
        with pytest.raises(ValueError, match="2 blocks"):
            f(x, y, y2, batches=np.zeros(10, dtype=int))
        with pytest.raises(ValueError, match="integer"):
            f(x, y, y2, batches=np.linspace(0, 1, 10))
        with pytest.raises(ValueError, match="matrix"):
            f(x, y, y2, cost=lambda a, b: np.zeros((3, 3)))
    with pytest.raises(ValueError, match="same length"):
        hedged(x, x[:9], y, y2)
    with pytest.raises(ValueError, match="same length"):
        variance_reduction(x, y[:9], y2)
    with pytest.raises(ValueError, match="2 blocks"):
        batch_means_se(np.arange(4.0), [1, 1, 1, 1])
    with pytest.raises(ValueError, match="length 4"):
        batch_means_se(np.arange(4.0), [0, 1])


def test_hostile_samples_and_costs():
    """NaN draws, a cost that is not a function or returns NaN, a bad iteration cap: clear errors
    naming the culprit, not a failure deep inside POT."""
    rng = np.random.default_rng(11)
    x, y, y2 = rng.normal(size=(3, 10, 2))
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="a holds NaN or infinite values"):
        squared_euclidean(bad, y)
    for f in (centered_u, centered_l):
        with pytest.raises(ValueError, match="NaN or infinite"):
            f(bad, y, y2)
        with pytest.raises(TypeError, match="cost must be a function"):
            f(x, y, y2, cost="sqeuclidean")
        with pytest.raises(ValueError, match=r"cost\(a, b\) returned NaN"):
            f(x, y, y2, cost=lambda a, b: np.full((len(a), len(b)), np.nan))
    with pytest.raises(ValueError, match="NaN or infinite"):
        hedged(x, x, y, np.where(y2 > 0, np.inf, y2))
    with pytest.raises(ValueError, match="num_iter_max must be an integer >= 1"):
        plugin_w2(squared_euclidean(x, y), num_iter_max=0)
    with pytest.raises(TypeError, match="num_iter_max must be an integer"):
        plugin_w2(squared_euclidean(x, y), num_iter_max="many")
    with pytest.raises(ValueError, match="NaN or infinite"):
        batch_means_se(np.array([1.0, np.nan, 2.0, 3.0]), [0, 0, 1, 1])
