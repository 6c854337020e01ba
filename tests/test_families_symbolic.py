"""Symbolic collapsed likelihoods vs. independent numpy/scipy oracles."""

import importlib.util
import os
import sys

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path.insert(0, _HERE)

import reference_families as ref  # noqa: E402


def _load(name):
    try:
        return importlib.import_module(f"pymc_partitions.families.{name}")
    except Exception:  # package __init__ missing / broken while under construction
        path = os.path.join(_ROOT, "pymc_partitions", "families", f"{name}.py")
        spec = importlib.util.spec_from_file_location(f"_pp_families_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod


symbolic = _load("symbolic")
draws = _load("draws")
transforms = _load("transforms")

RTOL = 1e-8
ATOL = 1e-8


# --------------------------------------------------------------------------- fixtures
def _partitions(rng, n):
    """A few partitions, including all-in-one, singletons and sparse label values."""
    parts = [
        np.zeros(n, dtype=np.int64),
        np.arange(n, dtype=np.int64),
        rng.integers(0, 3, size=n),
        rng.choice([1, n - 1, n // 2], size=n),  # gaps: many empty label values
    ]
    return [np.asarray(p, dtype=np.int64) for p in parts]


def _spd(rng, D, scale=1.0):
    A = rng.normal(size=(D, D))
    return scale * (A @ A.T / D + 0.5 * np.eye(D))


@pytest.fixture(scope="module")
def fns():
    labels = pt.lvector("labels")
    Y = pt.matrix("Y")
    mu0 = pt.vector("mu0")
    s0 = pt.vector("sigma0")
    s = pt.vector("sigma")
    cov0 = pt.matrix("cov0")
    cov = pt.matrix("cov")
    k0 = pt.scalar("kappa0")
    nu0 = pt.scalar("nu0")
    a = pt.vector("a")
    b = pt.vector("b")
    out = {}
    out["nn"] = pytensor.function([labels, Y, mu0, s0, s], symbolic.normal_normal_logp(labels, Y, mu0, s0, s))
    out["full"] = pytensor.function(
        [labels, Y, mu0, cov0, cov], symbolic.normal_normal_full_logp(labels, Y, mu0, cov0, cov)
    )
    out["niw"] = pytensor.function(
        [labels, Y, mu0, k0, nu0, cov0], symbolic.niw_logp(labels, Y, mu0, k0, nu0, cov0)
    )
    out["bb"] = pytensor.function([labels, Y, a, b], symbolic.beta_bernoulli_logp(labels, Y, a, b))
    return out


# --------------------------------------------------------------------------- values
@pytest.mark.parametrize("D", [1, 2, 3])
def test_normal_normal_diag(fns, D):
    rng = np.random.default_rng(D)
    n = 9
    for rep in range(2):
        Y = rng.normal(size=(n, D)) * 2
        mu0 = rng.normal(size=D)
        s0 = rng.uniform(0.3, 3, size=D)
        s = rng.uniform(0.3, 2, size=D)
        for lab in _partitions(rng, n):
            got = fns["nn"](lab, Y, mu0, s0, s)
            want = ref.ref_total(lab, Y, ref.ref_log_marginal_normal_normal, mu0=mu0, sigma0=s0, sigma=s)
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_normal_normal_scalar_hyper():
    rng = np.random.default_rng(11)
    Y = rng.normal(size=(7, 3))
    lab = np.array([0, 0, 2, 2, 2, 5, 0])
    got = symbolic.normal_normal_logp(lab, Y, 0.5, 2.0, 0.7).eval()
    want = ref.ref_total(lab, Y, ref.ref_log_marginal_normal_normal, mu0=0.5, sigma0=2.0, sigma=0.7)
    np.testing.assert_allclose(got, want, rtol=RTOL)


@pytest.mark.parametrize("D", [1, 2, 3])
def test_normal_normal_full(fns, D):
    rng = np.random.default_rng(10 + D)
    n = 8
    for rep in range(2):
        Y = rng.normal(size=(n, D)) * 2
        mu0 = rng.normal(size=D)
        cov0 = _spd(rng, D, 2.0)
        cov = _spd(rng, D, 0.7)
        for lab in _partitions(rng, n):
            got = fns["full"](lab, Y, mu0, cov0, cov)
            want = ref.ref_total(lab, Y, ref.ref_log_marginal_normal_normal_full, mu0=mu0, cov0=cov0, cov=cov)
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    # isotropic case (M has fully repeated eigenvalues)
    lab = rng.integers(0, 3, size=n)
    got = fns["full"](lab, Y, mu0, 2.0 * np.eye(D), 0.5 * np.eye(D))
    want = ref.ref_total(
        lab, Y, ref.ref_log_marginal_normal_normal_full, mu0=mu0, cov0=2.0 * np.eye(D), cov=0.5 * np.eye(D)
    )
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("D", [1, 2, 3])
def test_whiten_full_normal_transform(fns, D):
    rng = np.random.default_rng(20 + D)
    n = 8
    Y = rng.normal(size=(n, D))
    mu0 = rng.normal(size=D)
    cov0 = _spd(rng, D, 1.5)
    cov = _spd(rng, D, 0.8)
    Y2, mu0_2, sigma0_2, logjac = transforms.whiten_full_normal(Y, mu0, cov0, cov)
    assert Y2.shape == (n, D) and mu0_2.shape == (D,) and sigma0_2.shape == (D,)
    for lab in _partitions(rng, n):
        want = ref.ref_total(lab, Y, ref.ref_log_marginal_normal_normal_full, mu0=mu0, cov0=cov0, cov=cov)
        got = (
            ref.ref_total(lab, Y2, ref.ref_log_marginal_normal_normal, mu0=mu0_2, sigma0=sigma0_2, sigma=1.0)
            + n * logjac
        )
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
        # and the diagonal symbolic form on the transformed data
        sym = fns["nn"](lab, Y2, mu0_2, sigma0_2, np.ones(D)) + n * logjac
        np.testing.assert_allclose(sym, want, rtol=1e-9, atol=1e-9)


def _niw_wrong_gamma(lab, Y, mu0, kappa0, nu0, scale0):
    """Paper's (wrong) Gamma_D(x) = pi^.. prod Gamma(x + (d-1)/2); for contrast only."""
    D = Y.shape[1]
    tot = 0.0
    for k in np.unique(lab):
        Yb = Y[lab == k]
        m = len(Yb)
        km, nm = kappa0 + m, nu0 + m
        r = Yb - mu0
        Sm = scale0 + r.T @ r - np.outer(r.sum(0), r.sum(0)) / km
        lg = lambda x: sum(special.gammaln(x + (d - 1) / 2) for d in range(1, D + 1))  # noqa: E731
        tot += (
            -m * D / 2 * np.log(np.pi) + lg(nm / 2) - lg(nu0 / 2)
            + nu0 / 2 * np.linalg.slogdet(scale0)[1] - nm / 2 * np.linalg.slogdet(Sm)[1]
            + D / 2 * np.log(kappa0 / km)
        )
    return tot


@pytest.mark.parametrize("D", [1, 2, 3])
def test_niw(fns, D):
    rng = np.random.default_rng(30 + D)
    n = 9
    for rep in range(3):
        Y = rng.normal(size=(n, D)) * 1.5
        mu0 = rng.normal(size=D)
        kappa0 = rng.uniform(0.2, 3)
        nu0 = D - 1 + rng.uniform(0.2, 4)
        scale0 = _spd(rng, D, rng.uniform(0.5, 2))
        for lab in _partitions(rng, n):
            got = fns["niw"](lab, Y, mu0, kappa0, nu0, scale0)
            want = ref.ref_total(lab, Y, ref.ref_log_marginal_niw, mu0=mu0, kappa0=kappa0, nu0=nu0, scale0=scale0)
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
            if D >= 2:  # the oracle discriminates the paper's Gamma_D typo
                wrong = _niw_wrong_gamma(lab, Y, mu0, kappa0, nu0, scale0)
                assert abs(wrong - want) > 1e-3


@pytest.mark.parametrize("D", [1, 2, 3])
def test_beta_bernoulli(fns, D):
    rng = np.random.default_rng(40 + D)
    n = 10
    for rep in range(2):
        Y = (rng.random((n, D)) < 0.4).astype(float)
        a = rng.uniform(0.2, 3, size=D)
        b = rng.uniform(0.2, 3, size=D)
        for lab in _partitions(rng, n):
            got = fns["bb"](lab, Y, a, b)
            want = ref.ref_total(lab, Y, ref.ref_log_marginal_beta_bernoulli, a=a, b=b)
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_beta_bernoulli_int_data_scalar_hyper():
    rng = np.random.default_rng(5)
    Y = (rng.random((6, 2)) < 0.5).astype(np.int64)
    lab = np.array([3, 3, 0, 1, 1, 3])
    got = symbolic.beta_bernoulli_logp(lab, Y, 0.5, 2.0).eval()
    want = ref.ref_total(lab, Y, ref.ref_log_marginal_beta_bernoulli, a=0.5, b=2.0)
    np.testing.assert_allclose(got, want, rtol=RTOL)


# --------------------------------------------------------------------------- invalid input
@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")
def test_invalid_labels_give_minus_inf(fns):
    rng = np.random.default_rng(0)
    n, D = 6, 2
    Y = rng.normal(size=(n, D))
    Yb = (Y > 0).astype(float)
    bad = [np.array([0, 1, 2, 3, 4, n]), np.array([0, -1, 0, 0, 0, 0]), np.array([0, 0, 0, 0, 0, 100])]
    for lab in bad:
        assert fns["nn"](lab, Y, np.zeros(D), np.ones(D), np.ones(D)) == -np.inf
        assert fns["full"](lab, Y, np.zeros(D), np.eye(D), np.eye(D)) == -np.inf
        assert fns["niw"](lab, Y, np.zeros(D), 1.0, 3.0, np.eye(D)) == -np.inf
        assert fns["bb"](lab, Yb, np.ones(D), np.ones(D)) == -np.inf
    lab = np.zeros(n, dtype=np.int64)
    assert fns["niw"](lab, Y, np.zeros(D), 1.0, 0.5, np.eye(D)) == -np.inf  # nu0 <= D - 1
    assert fns["full"](lab, Y, np.zeros(D), np.eye(D), -np.eye(D)) == -np.inf  # cov not SPD
    assert fns["full"](lab, Y, np.zeros(D), -np.eye(D), np.eye(D)) == -np.inf  # cov0 not SPD
    assert fns["niw"](lab, Y, np.zeros(D), 1.0, 3.0, -np.eye(D)) == -np.inf  # scale0 not SPD
    assert fns["niw"](np.arange(n), Y, np.zeros(D), -1.0, 3.0, np.eye(D)) == -np.inf  # kappa0 <= 0
    assert fns["nn"](lab, Y, np.zeros(D), np.ones(D), -np.ones(D)) == -np.inf  # sigma <= 0
    assert fns["bb"](lab, Yb + 0.5, np.ones(D), np.ones(D)) == -np.inf  # non-binary data


# --------------------------------------------------------------------------- gradients
def test_gradients_finite_and_match_fd():
    rng = np.random.default_rng(7)
    n, D = 8, 2
    Y = rng.normal(size=(n, D))
    Yb = (Y > 0).astype(float)
    lab = np.array([0, 0, 1, 1, 1, 4, 4, 0])

    # free parameters: vector theta, mapped to all hyperparameters
    th = pt.vector("theta")
    mu0 = th[0:2]
    s0 = pt.exp(th[2:4])
    s = pt.exp(th[4:6])
    A = pt.reshape(th[6:10], (2, 2))
    cov = A @ A.T + 0.5 * pt.eye(2)
    Bm = pt.reshape(th[10:14], (2, 2))
    cov0 = Bm @ Bm.T + 0.3 * pt.eye(2)
    kappa0 = pt.exp(th[14])
    nu0 = 1.0 + pt.exp(th[15])
    a = pt.exp(th[16:18])
    b = pt.exp(th[18:20])
    total = (
        symbolic.normal_normal_logp(lab, Y, mu0, s0, s)
        + symbolic.normal_normal_full_logp(lab, Y, mu0, cov0, cov)
        + symbolic.niw_logp(lab, Y, mu0, kappa0, nu0, cov)
        + symbolic.beta_bernoulli_logp(lab, Yb, a, b)
    )
    f = pytensor.function([th], [total, pytensor.grad(total, th)])
    theta = rng.normal(size=20) * 0.5
    val, g = f(theta)
    assert np.isfinite(val) and np.all(np.isfinite(g))
    eps = 1e-6
    fd = np.array([(f(theta + eps * e)[0] - f(theta - eps * e)[0]) / (2 * eps) for e in np.eye(20)])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5)

    # isotropic covariances: repeated eigenvalues must not break gradients
    sc = pt.scalar("sc")
    iso = symbolic.normal_normal_full_logp(lab, Y, np.zeros(D), sc * np.eye(D), 0.5 * np.eye(D))
    giso = pytensor.function([sc], pytensor.grad(iso, sc))(2.0)
    assert np.isfinite(giso)


def test_pymc_model_compile_logp():
    pm = pytest.importorskip("pymc")
    rng = np.random.default_rng(3)
    Y = rng.normal(size=(12, 2))
    lab = rng.integers(0, 3, size=12)
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0, shape=2)
        kappa0 = pm.Gamma("kappa0", 2.0, 2.0)
        pm.Potential("nn", symbolic.normal_normal_logp(lab, Y, 0.0, 1.0, sigma))
        pm.Potential("niw", symbolic.niw_logp(lab, Y, np.zeros(2), kappa0, 4.0, np.eye(2)))
    ip = model.initial_point()
    assert np.isfinite(model.compile_logp()(ip))
    assert np.all(np.isfinite(model.compile_dlogp()(ip)))


# --------------------------------------------------------------------------- draws
def test_draw_shapes_and_support():
    rng = np.random.default_rng(1)
    lab = np.array([0, 0, 3, 3, 3, 7, 1, 1])
    n = len(lab)
    Y = draws.draw_normal_normal(lab, np.zeros(3), np.ones(3), np.ones(3), rng)
    assert Y.shape == (n, 3)
    assert draws.draw_normal_normal(lab, 0.0, 1.0, 1.0, rng, size=(4,)).shape == (4, n, 1)
    assert draws.draw_normal_normal_full(lab, np.zeros(2), np.eye(2), np.eye(2), rng).shape == (n, 2)
    Yn = draws.draw_niw(lab, np.zeros(3), 1.0, 5.0, np.eye(3), rng)
    assert Yn.shape == (n, 3) and np.all(np.isfinite(Yn))
    assert draws.draw_niw(lab, 0.0, 1.0, 2.0, 1.0, rng).shape == (n, 1)
    Yb = draws.draw_beta_bernoulli(lab, np.full(4, 0.5), np.full(4, 0.5), rng)
    assert Yb.shape == (n, 4) and set(np.unique(Yb)) <= {0.0, 1.0}
    assert draws.draw_beta_bernoulli(lab, 1.0, 1.0, rng, D=3).shape == (n, 3)
    # draws have finite collapsed likelihood
    assert np.isfinite(symbolic.beta_bernoulli_logp(lab, Yb, 0.5, 0.5).eval())


def test_draw_moments():
    rng = np.random.default_rng(2)
    n, R = 40, 3000
    lab = np.zeros(n, dtype=np.int64)
    mu0, s0, s = np.array([1.0, -2.0]), np.array([2.0, 0.5]), np.array([1.0, 3.0])
    Y = draws.draw_normal_normal(lab, mu0, s0, s, rng, size=R)  # (R, n, 2)
    means = Y.mean(axis=1)
    assert np.all(np.abs(means.mean(0) - mu0) < 4 * np.sqrt(s0**2 + s**2 / n) / np.sqrt(R))
    np.testing.assert_allclose(means.var(0), s0**2 + s**2 / n, rtol=0.1)
    within = (Y - means[:, None, :]).var(axis=(0, 1)) * n / (n - 1)
    np.testing.assert_allclose(within, s**2, rtol=0.05)

    # full covariance: within-block covariance ~ cov, block-mean covariance ~ cov0 + cov/n
    cov = np.array([[1.0, 0.6], [0.6, 2.0]])
    cov0 = np.array([[3.0, -1.0], [-1.0, 1.0]])
    lab2 = np.repeat(np.arange(400), 20)
    Yf = draws.draw_normal_normal_full(lab2, np.zeros(2), cov0, cov, rng).reshape(400, 20, 2)
    bm = Yf.mean(1)
    np.testing.assert_allclose(np.cov(bm.T), cov0 + cov / 20, atol=0.5)
    np.testing.assert_allclose(np.cov((Yf - bm[:, None]).reshape(-1, 2).T) * 20 / 19, cov, atol=0.1)

    # NIW: E[Sigma] = scale0 / (nu0 - D - 1)
    scale0 = np.array([[2.0, 0.5], [0.5, 1.0]])
    nu0 = 8.0
    lab3 = np.repeat(np.arange(300), 30)
    Yn = draws.draw_niw(lab3, np.zeros(2), 1.0, nu0, scale0, rng).reshape(300, 30, 2)
    S_hat = np.mean([np.cov(blk.T) for blk in Yn], axis=0)
    np.testing.assert_allclose(S_hat, scale0 / (nu0 - 3), atol=0.05)

    # Beta-Bernoulli: marginal mean a / (a + b)
    a, b = np.array([1.0, 4.0]), np.array([3.0, 1.0])
    Yb = draws.draw_beta_bernoulli(np.repeat(np.arange(2000), 5), a, b, rng)
    np.testing.assert_allclose(Yb.mean(0), a / (a + b), atol=0.03)
