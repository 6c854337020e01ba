"""W2 convergence traces against exact W2 (Gaussian Gibbs sampler; enumerable DPMM), and the
PyMC-facing diagnostics on real pm.sample output."""

import numpy as np
import ot
import pymc as pm
import pytest
from scipy.linalg import sqrtm

import pymc_partitions as pmp
from enumeration import exact_posterior
from models import PRIORS, pack
from pymc_partitions.diagnostics.convergence import suggest_window, w2_traces
from pymc_partitions.diagnostics.partition_cost import mirkin_cost_matrix
from pymc_partitions.partition import enumerate_partitions
from pymc_partitions.pymc.compat import group_names, is_datatree
from pymc_partitions.results.files import load, save
from pymc_partitions.samplers.gibbs import GibbsKernel, log_joint


def gaussian_w2sq(s1, s2):
    """W2^2 between N(0, s1) and N(0, s2)."""
    r = sqrtm(s2)
    return float(np.trace(s1 + s2 - 2 * np.real(sqrtm(r @ s1 @ r))))


def periodic_ar1(d=6, rho=0.6):
    """Precision of a Gaussian periodic AR(1) (seed 002, Sec. 5.4.1) and the linear map of one
    systematic-scan Gibbs sweep: x' = A x + noise with covariance B."""
    shift = np.roll(np.eye(d), 1, axis=1)
    q = (1 + rho**2) * np.eye(d) - rho * (shift + shift.T)
    a, b = np.eye(d), np.zeros((d, d))
    for j in range(d):
        m = np.eye(d)
        m[j] = -q[j] / q[j, j]
        m[j, j] = 0.0
        a = m @ a
        b = m @ b @ m.T
        b[j, j] += 1.0 / q[j, j]
    return q, a, b


def run_gibbs(r, t_count, scale, seed, d=6):
    q, a, b = periodic_ar1(d)
    rng = np.random.default_rng(seed)
    chol = np.linalg.cholesky(b)
    x = rng.normal(scale=scale, size=(r, d))
    out = np.empty((r, t_count, d))
    for t in range(t_count):
        out[:, t] = x
        x = x @ a.T + rng.normal(size=(r, d)) @ chol.T
    sigma = scale**2 * np.eye(d)
    exact = []
    target = np.linalg.inv(q)
    for _ in range(t_count):
        exact.append(gaussian_w2sq(sigma, target))
        sigma = a @ sigma @ a.T + b
    return out, np.array(exact)


@pytest.mark.parametrize("method", ["time_averaged", "split"])
def test_gaussian_gibbs_traces_bound_the_exact_w2(method):
    """Overdispersed start: U_t is an upper and L_t a lower bound of the exact W2^2(pi_t, pi)
    (within their intervals), and both fall to ~0."""
    draws, exact = run_gibbs(r=256, t_count=40, scale=4.0, seed=0)
    out = w2_traces(draws, method=method)
    # the last saved iteration is the reference: not reported
    np.testing.assert_array_equal(out["iterations"], np.arange(39))
    exact = exact[out["iterations"]]
    early = slice(0, 6)
    assert (out["U_upper"] >= exact)[early].all() and (out["U_upper"] >= exact).mean() >= 0.9
    assert (out["L_lower"] <= exact).mean() >= 0.9
    assert (out["U"][early] > 0.5 * exact[early]).all()  # informative, not trivially wide
    assert out["U_lower"][0] > 0 and out["L_lower"][0] > 0  # far from stationarity: detected
    late = slice(25, 35)
    assert (out["U_lower"][late] <= 0.05).all() and (out["L_lower"][late] <= 0.05).all()


def exact_sweep_laws(parts, post, start, n, sweeps):
    """Exact law of a random-scan Gibbs chain after 0..sweeps sweeps from ``start``."""
    from enumeration import encode  # noqa: PLC0415
    from pymc_partitions.partition import canonicalize  # noqa: PLC0415
    import itertools  # noqa: PLC0415

    groups = []
    for i in range(n):
        rest = np.array([encode(canonicalize(np.delete(p, i)))[0] for p in parts])
        groups.append(np.unique(rest, return_inverse=True)[1])
    keys = encode(parts)
    v = np.zeros(len(parts))
    v[np.nonzero(keys == encode(canonicalize(start))[0])[0][0]] = 1.0
    # the sweep's kernel averaged over orders: apply the mean of the n! products to v, sweep by sweep
    orders = list(itertools.permutations(range(n)))
    laws = [v]
    for _ in range(sweeps):
        out = np.zeros_like(v)
        for order in orders:
            w = v
            for i in order:
                g = groups[i]
                w = np.bincount(g, weights=w)[g] * post / np.bincount(g, weights=post)[g]
            out += w
        v = out / len(orders)
        laws.append(v)
    return laws


def test_partition_traces_fall_to_zero_and_bound_the_exact_w2():
    """Enumerable DPMM (n = 6) from all-singletons, 256 chains: the exact law after t sweeps is
    known, so is its W2^2 to the posterior under the Mirkin cost."""
    n, r, t_count = 6, 256, 16
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    parts, post = exact_posterior(n, lambda p: log_joint(p, fam, prior.code, prior.kernel_params()))
    laws = exact_sweep_laws(parts, post, np.arange(n), n, t_count - 1)
    cost = mirkin_cost_matrix(parts).astype(float)
    exact = np.array([ot.emd2(law, post, cost, numItermax=10**7) for law in laws])
    kernel = GibbsKernel(fam, prior.code, prior.kernel_params())
    rng = np.random.default_rng(7)
    draws = np.empty((r, t_count, n), np.int64)
    for c in range(r):
        labels = np.arange(n)
        for t in range(t_count):
            draws[c, t] = labels
            labels, _ = kernel.step(labels, rng)
    out = w2_traces(draws, cost=mirkin_cost_matrix, window=(8, 14))
    assert len(out["U"]) == t_count - 1  # the last iteration is the reference itself (w = 0): dropped
    assert exact[0] > 1.0 and exact[-1] < 0.02 * exact[0]
    # a point-mass start is not overdispersed, so U need not be conservative; it is close to the
    # truth where the distance is large, L stays below it, and the trace falls to ~0
    assert out["U_lower"][0] > 0 and abs(out["U"][0] - exact[0]) < 0.1 * exact[0]
    assert (out["L_lower"] <= exact[:-1]).mean() >= 0.9
    late = slice(6, 14)
    assert ((out["U_lower"][late] <= 0) & (out["U_upper"][late] >= 0)).mean() >= 0.75  # covers 0 once mixed


def test_suggest_window_and_errors():
    w = np.concatenate([np.linspace(10, 0.1, 10), np.full(30, 0.05)])
    first, last = suggest_window(w)
    assert 9 <= first <= 20 and last == int(0.9 * 39)
    with pytest.raises(ValueError, match="at least 4"):
        suggest_window([1.0, 2.0])
    with pytest.raises(ValueError, match="at least 2 chains"):
        w2_traces(np.zeros((1, 5, 2)))
    with pytest.raises(ValueError, match="method must be"):
        w2_traces(np.zeros((4, 5, 2)), method="both")
    with pytest.raises(ValueError, match="at least 4 chains"):
        w2_traces(np.zeros((3, 5, 2)), method="split")


def sampled_dpmm(chains=32, draws=36, n=40, gibbs_step=False):
    """A DPMM on the first n galaxies from n singletons (mu from 0 to 40 across the chains):
    pm.sample assigns the steps, or with ``gibbs_step`` the partition's is pmp.CollapsedGibbs."""
    y = pmp.datasets.load_galaxies()[:n] / 1000.0
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(y), initval="singletons")
        mu = pm.Normal("mu", 20.0, 5.0)
        pm.Normal("noise", mu, 1.0, observed=y.mean())
        pmp.NormalNormal("y", partition=z, mu0=20.0, sigma0=10.0, sigma=1.0, observed=y)
        idata = pm.sample(draws=draws, tune=0, chains=chains, cores=1, random_seed=3, progressbar=False,
                          compute_convergence_checks=False, step=[pmp.CollapsedGibbs([z])] if gibbs_step else None,
                          initvals=[{"mu": v} for v in np.linspace(0.0, 40.0, chains)])
    return model, idata


def test_w2_convergence_group_on_pm_sample_output(tmp_path):
    model, idata = sampled_dpmm()
    out = pmp.w2_convergence(idata, model=model)
    assert is_datatree(out) == is_datatree(idata) and "w2_convergence" in group_names(out)
    group = out["w2_convergence"]
    for name in ("z", "continuous"):
        for est in ("U", "U_lower", "U_upper", "L", "L_lower", "L_upper", "w"):
            assert f"{name}_{est}" in group
    assert group.attrs["partition_vars"] == ["z"] and group.attrs["continuous_vars"] == ["mu"]
    assert group["z_U_lower"].values[0] > 0  # 40 singletons are far from the posterior
    back = load(save(out, tmp_path / "w2.nc"))
    assert np.allclose(back["w2_convergence"]["z_U"].values, group["z_U"].values)
    axes = pmp.plot_w2_convergence(out)
    assert len(axes) == 2
    thinned = pmp.w2_convergence(idata, model=model, thin=5, method="split", overwrite=True)
    # draws 0, 5, ..., 35; the last (35) is the reference and is not reported
    np.testing.assert_array_equal(thinned["w2_convergence"]["draw"].values, np.arange(0, 31, 5))
    assert thinned["w2_convergence"].attrs["reference_draw"] == 35


def test_w2_convergence_errors():
    model, idata = sampled_dpmm(chains=4, draws=6)
    with pytest.warns(UserWarning, match="only 4 chains"):
        pmp.w2_convergence(idata, model=model)
    with pytest.raises(ValueError, match="not in the posterior"):
        pmp.w2_convergence(idata, var_names=["nope"])
    with pytest.raises(ValueError, match="thin must be"):
        pmp.w2_convergence(idata, thin=0)


def test_w2_bias_detects_an_underdispersed_approximation():
    rng = np.random.default_rng(0)
    exact = rng.normal(size=(2, 300, 2))  # two chains of N(0, I)
    approx = 0.5 * rng.normal(size=(600, 2))  # N(0, I/4)
    truth = gaussian_w2sq(np.eye(2), 0.25 * np.eye(2))  # = 2 * (1 - 0.5)^2 = 0.5
    table = pmp.w2_bias(exact, approx)
    assert table.loc["V", "lower"] > 0 and table.loc["L", "lower"] > 0
    assert table.loc["L", "lower"] <= truth <= table.loc["V", "upper"]
    same = pmp.w2_bias(exact, rng.normal(size=(600, 2)))
    assert same.loc["L", "lower"] <= 0 <= same.loc["V", "upper"] or same.loc["V", "value"] < 0.05
