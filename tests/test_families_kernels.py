"""Compiled family kernels agree with independent oracles, and the PyMC model's logp (PyTensor)
equals the kernel log joint on random partitions."""

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from models import COV, COV0
from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.families.transforms import whiten_full_normal
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.samplers.gibbs import log_joint
from reference_families import (
    ref_log_marginal_beta_bernoulli,
    ref_log_marginal_niw,
    ref_log_marginal_normal_normal,
    ref_log_marginal_normal_normal_full,
    ref_total,
)

NO_PRIOR = pmp.CRP(1.0)


def kernel_log_lik(labels, parts):
    """Collapsed log likelihood from the kernels: log joint minus the prior term."""
    pack = FamilyPack.build(parts)
    return log_joint(labels, pack, NO_PRIOR.code, NO_PRIOR.kernel_params()) - NO_PRIOR.log_eppf(labels)


def random_labels(rng, n):
    return rng.integers(0, rng.integers(1, n + 1), n)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_kernels_match_reference(dim):
    rng = np.random.default_rng(dim)
    n = 9
    y = rng.normal(size=(n, dim)) * 2 + 1
    yb = (rng.random((n, dim)) < 0.4).astype(float)
    mu0 = rng.normal(size=dim)
    s0, s = rng.uniform(0.5, 2, dim), rng.uniform(0.5, 2, dim)
    a_cov = rng.normal(size=(dim, dim))
    cov0 = a_cov @ a_cov.T + np.eye(dim)
    b_cov = rng.normal(size=(dim, dim))
    cov = b_cov @ b_cov.T + 0.5 * np.eye(dim)
    kappa0, nu0 = 0.7, dim + 0.5
    a, b = rng.uniform(0.3, 3, dim), rng.uniform(0.3, 3, dim)
    y2, mu2, sd2, jac = whiten_full_normal(y, mu0, cov0, cov)
    for _ in range(5):
        z = random_labels(rng, n)
        got = kernel_log_lik(z, [(kernels.DIAG_NORMAL, y, kernels.diag_normal_hyper(mu0, s0, s, dim))])
        want = ref_total(z, y, ref_log_marginal_normal_normal, mu0=mu0, sigma0=s0, sigma=s)
        assert got == pytest.approx(want, rel=1e-9)
        got = kernel_log_lik(z, [(kernels.DIAG_NORMAL, y2, kernels.diag_normal_hyper(mu2, sd2, 1.0, dim, jac))])
        want = ref_total(z, y, ref_log_marginal_normal_normal_full, mu0=mu0, cov0=cov0, cov=cov)
        assert got == pytest.approx(want, rel=1e-9)
        got = kernel_log_lik(z, [(kernels.NIW, y, kernels.niw_hyper(mu0, kappa0, nu0, cov, dim, n))])
        want = ref_total(z, y, ref_log_marginal_niw, mu0=mu0, kappa0=kappa0, nu0=nu0, scale0=cov)
        assert got == pytest.approx(want, rel=1e-9)
        got = kernel_log_lik(z, [(kernels.BETA_BERNOULLI, yb, kernels.beta_bernoulli_hyper(a, b, dim))])
        want = ref_total(z, yb, ref_log_marginal_beta_bernoulli, a=a, b=b)
        assert got == pytest.approx(want, rel=1e-9)


def test_niw_add_remove_is_exact_after_many_moves():
    """Cholesky up/downdates over thousands of Gibbs moves leave the state's log joint exact."""
    from pymc_partitions.samplers.gibbs import GibbsKernel  # noqa: PLC0415

    rng = np.random.default_rng(0)
    y = rng.normal(size=(40, 3)) + np.repeat(rng.normal(size=(4, 3)) * 4, 10, axis=0)
    pack = FamilyPack.build([(kernels.NIW, y, kernels.niw_hyper(0.0, 0.1, 5.0, np.eye(3), 3, 40))])
    prior = pmp.CRP(1.0)
    kernel = GibbsKernel(pack, prior.code, prior.kernel_params(), sweeps=200)
    labels, lj = kernel.step(np.zeros(40, np.int64), rng)
    assert lj == pytest.approx(log_joint(labels, pack, prior.code, prior.kernel_params()), rel=1e-10)


def _model(family, make_prior, n, rng):
    y = rng.normal(size=(n, 2)) * 2
    with pm.Model() as model:
        z = pmp.Partition("z", make_prior(), n=n)
        if family == "diag":
            s0 = pm.HalfNormal("s0", 2.0)
            pmp.NormalNormal("y", partition=z, mu0=[0.5, -0.2], sigma0=s0, sigma=[1.0, 0.7], observed=y)
        elif family == "full":
            pmp.NormalNormal("y", partition=z, mu0=0.3, cov0=COV0, cov=COV, observed=y)
        elif family == "niw":
            kappa = pm.Gamma("kappa", 2.0, 2.0)
            pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=kappa, nu0=3.5, scale0=COV, observed=y)
        elif family == "bb":
            pmp.BetaBernoulli("y", partition=z, a=0.7, b=[1.0, 2.0], observed=(y > 0).astype(int))
        else:
            pmp.NormalNormal("y", partition=z, sigma0=2.0, sigma=1.0, observed=y)
            pmp.BetaBernoulli("b", partition=z, a=1.0, b=1.0, observed=(y > 0.5).astype(int))
    return model


@pytest.mark.parametrize("family", ["diag", "full", "niw", "bb", "multi"])
@pytest.mark.parametrize(
    "make_prior",
    [lambda: pmp.CRP(pm.Gamma("alpha", 2.0, 1.0)), lambda: pmp.PitmanYor(0.5, pm.Beta("d", 1.0, 1.0)),
     lambda: pmp.FiniteDirichlet(pm.Exponential("alpha", 1.0), 4)],
    ids=["crp", "py", "fd"],
)
def test_pymc_logp_equals_kernel_log_joint(family, make_prior):
    rng = np.random.default_rng(3)
    n = 12
    model = _model(family, make_prior, n, rng)
    logp = model.compile_logp(vars=[model["z"]] + model.observed_RVs, jacobian=False)
    terms = PartitionTerms(model, model["z"])
    point = model.initial_point()
    for _ in range(6):
        for name in point:
            if name != "z":
                point[name] = point[name] + rng.normal() * 0.3
        z = rng.integers(0, 4, n)
        point["z"] = z
        params, pack = terms.kernel_inputs(point)
        want = log_joint(z, pack, terms.prior_code, params)
        assert logp(point) == pytest.approx(want, rel=1e-9, abs=1e-9)


def _one_family_packs(n=9):
    """A FamilyPack of each family alone (every code with a dtype of its own), on random data."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=(n, 2))
    counts = rng.poisson(2.0, (n, 2)).astype(float)
    cats = kernels.dirichlet_categorical_data(rng.integers(0, 3, (n, 2)), [3, 3])
    rows = np.column_stack([np.ones(n), rng.normal(size=n), rng.normal(size=n)])  # [x (p = 2), y]
    adj = np.zeros((n, n))
    adj[np.arange(n - 1), np.arange(1, n)] = adj[np.arange(1, n), np.arange(n - 1)] = 1.0
    return {
        kernels.DIAG_NORMAL: FamilyPack.build([(kernels.DIAG_NORMAL, y, kernels.diag_normal_hyper(0.0, 2.0, 1.0, 2))]),
        kernels.NIW: FamilyPack.build([(kernels.NIW, y, kernels.niw_hyper(0.0, 0.5, 4.0, np.eye(2), 2, n))]),
        kernels.BETA_BERNOULLI: FamilyPack.build([(kernels.BETA_BERNOULLI, (y > 0).astype(float),
                                                   kernels.beta_bernoulli_hyper(1.0, 2.0, 2))]),
        kernels.GRAPH: FamilyPack.build([(kernels.GRAPH, adj, np.zeros(0))]),
        kernels.GAMMA_POISSON: FamilyPack.build([(kernels.GAMMA_POISSON, counts,
                                                  kernels.gamma_poisson_hyper(1.0, 1.0, 2))]),
        kernels.DIRICHLET_CATEGORICAL: FamilyPack.build([(kernels.DIRICHLET_CATEGORICAL, cats,
                                                          kernels.dirichlet_categorical_hyper(1.0, [3, 3]))]),
        kernels.LINEAR_REGRESSION: FamilyPack.build([(kernels.LINEAR_REGRESSION, rows,
                                                      kernels.linear_regression_hyper(0.0, 1.0, 2.0, 1.0, 2))]),
    }


def _kernel_values(pack, labels):
    """Every block's statistics and log marginal, and every item's log predictives before it is added."""
    n, k = labels.shape[0], int(labels.max()) + 1
    st = np.zeros((k + 1, pack.width))
    scratch = np.zeros(max(pack.data.shape[1], kernels.merge_work_size(pack.codes, pack.dims)) + 8)
    for b in range(k + 1):
        kernels.pack_init(pack.codes, pack.dims, pack.stat_off, pack.hyper_off, pack.hyper, st, b)
    preds = np.zeros((n, k + 1))
    blocks = np.arange(k + 1)
    for i in range(n):
        kernels.pack_log_preds(pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, st,
                               blocks, k + 1, pack.data, i, scratch, preds[i])
        kernels.pack_update(pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, st,
                            labels[i], pack.data, i, 1.0, scratch)
    marg = [kernels.pack_log_marginal(pack.codes, pack.dims, pack.stat_off, pack.hyper_off, pack.hyper, st, b)
            for b in range(k + 1)]
    return st, preds, np.array(marg)


def test_one_family_codes_compile_that_family_and_give_the_all_family_values():
    """A pack of DIAG_NORMAL alone carries it in the dtype of its codes, for which the kernels compile that
    family's code alone; the values are those of the same pack with int64 codes (every family compiled,
    dispatched at run time), bit for bit. Every other family keeps int64 codes. A codes dtype that names
    another family is refused: the kernels would run that family's code on this one's statistics."""
    labels = np.array([0, 1, 0, 2, 1, 0, 3, 2, 1])
    for code, pack in _one_family_packs().items():
        assert pack.codes.dtype == kernels.CODE_DTYPES.get(code, np.int64)
        every = pack._replace(codes=pack.codes.astype(np.int64))
        kernels.check_pack(every)
        for got, want in zip(_kernel_values(pack, labels), _kernel_values(every, labels)):
            assert np.array_equal(got, want, equal_nan=True), kernels.FAMILY_NAMES[code]
        for other, dtype in kernels.CODE_DTYPES.items():
            if other != code:
                with pytest.raises(ValueError, match="inconsistent"):
                    kernels.check_pack(pack._replace(codes=pack.codes.astype(dtype)), "test")
    assert kernels.CODE_DTYPES  # (a family with a dtype of its own exists: the loop above compared its two forms)


def test_a_one_family_pack_compiles_no_other_family(tmp_path):
    """The point of the codes' dtypes: with an empty numba cache, the pack functions of a DIAG_NORMAL pack
    compile none of the other families' helpers (all seven families were compiled into every kernel)."""
    import json  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    script = """
import json
import numpy as np
from pymc_partitions.families import kernels as K
y = np.random.default_rng(0).normal(size=(12, 2))
p = K.FamilyPack.build([(K.DIAG_NORMAL, y, K.diag_normal_hyper(0.0, 2.0, 1.0, 2))])
st, scratch, out = np.zeros((3, p.width)), np.zeros(8), np.zeros(3)
K.pack_init(p.codes, p.dims, p.stat_off, p.hyper_off, p.hyper, st, 0)
K.pack_update(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, 0, p.data, 1, 1.0, scratch)
K.pack_log_preds(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, np.arange(3), 3, p.data, 2,
                 scratch, out)
K.pack_merge(p.codes, p.dims, p.stat_off, p.hyper_off, p.hyper, st, 1, 0, np.arange(12), 0, 1, np.zeros(8))
K.pack_log_marginal(p.codes, p.dims, p.stat_off, p.hyper_off, p.hyper, st, 1)
compiled = {name: len(getattr(K, name).signatures) for name in
            ["_diag_refresh", "_niw_refresh", "_bb_refresh", "_lr_update", "_lr_refresh", "_counts_update", "_niw_merge"]}
print(json.dumps(compiled))
"""
    env = dict(__import__("os").environ, NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = json.loads(done.stdout.strip().splitlines()[-1])
    assert compiled.pop("_diag_refresh") >= 1
    assert compiled == dict.fromkeys(compiled, 0)
