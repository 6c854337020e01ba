"""The network likelihood (collapsed Bernoulli blockmodel, ``kernels.NETWORK``) in the compiled
kernels: exact posteriors by enumeration of all partitions of n = 6-7 nodes, every prior,
undirected, directed, and with a Normal likelihood on the same partition."""

import numpy as np
import pytest

from enumeration import check_against, exact_posterior
from models import NETWORK_FAMILIES, PRIORS, family_parts, graph, pack
from pymc_partitions.families.network import network_log_likelihood
from pymc_partitions.priors import CRP
from pymc_partitions.samplers.gibbs import GibbsKernel, log_joint

CASES = [(prior, fam, 6 + (i + j) % 2) for i, prior in enumerate(PRIORS) for j, fam in enumerate(NETWORK_FAMILIES)]


def run_chain(kernel, labels, n_steps, seed):
    rng = np.random.default_rng(seed)
    out = np.empty((n_steps, len(labels)), np.int64)
    lj = np.empty(n_steps)
    for t in range(n_steps):
        labels, lj[t] = kernel.step(labels, rng)
        out[t] = labels
    return out, lj


def reference_log_joint(prior, family, n):
    """log p(z) + log p(A | z) from scipy's betaln (and the kernel's Normal term for 'netmix')."""
    directed = family == "netdir"
    edges = graph(n, directed)
    normal = pack("diag", n) if family == "netmix" else None
    unit = CRP(1.0)

    def lj(labels):
        out = prior.log_eppf(labels) + network_log_likelihood(labels, edges, 0.6, 1.4, directed)
        if normal is not None:
            out += log_joint(labels, normal, unit.code, unit.kernel_params()) - unit.log_eppf(labels)
        return out

    return lj


def wrong_log_joint(prior, family, n):
    """The blockmodel without its within-block pairs (seed 004's k < k' read literally): a
    plausible wrong likelihood the tests must reject."""
    directed = family == "netdir"
    edges = graph(n, directed)
    base = reference_log_joint(prior, family, n)

    def lj(labels):
        _, z = np.unique(labels, return_inverse=True)
        inside = edges[z[edges[:, 0]] == z[edges[:, 1]]]
        within = 0.0
        for k in range(z.max() + 1):  # the within-block terms, removed
            m = int(np.sum(z == k))
            e = int(np.sum(z[inside[:, 0]] == k))
            pairs = m * (m - 1) if directed else m * (m - 1) // 2
            from scipy.special import betaln  # noqa: PLC0415
            within += betaln(0.6 + e, 1.4 + pairs - e) - betaln(0.6, 1.4)
        return base(labels) - within

    return lj


@pytest.mark.parametrize("family", NETWORK_FAMILIES)
def test_kernel_log_joint_matches_reference(family):
    prior = PRIORS["pitman_yor"]
    n = 8
    fam = pack(family, n)
    ref = reference_log_joint(prior, family, n)
    rng = np.random.default_rng(3)
    for _ in range(30):
        labels = rng.integers(0, rng.integers(1, n + 1), n)
        assert log_joint(labels, fam, prior.code, prior.kernel_params()) == pytest.approx(ref(labels), abs=1e-10)


@pytest.mark.parametrize("prior_name,family,n", CASES)
def test_gibbs_matches_enumeration(prior_name, family, n):
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts, exact = exact_posterior(n, reference_log_joint(prior, family, n))
    kernel_exact = np.array([log_joint(p, fam, prior.code, prior.kernel_params()) for p in parts])
    with np.errstate(divide="ignore"):  # finite Dirichlet: partitions with more than k blocks
        np.testing.assert_allclose(kernel_exact - kernel_exact.max(), np.log(exact) - np.log(exact).max(), atol=1e-9)
    _, wrong = exact_posterior(n, wrong_log_joint(prior, family, n))
    kernel = GibbsKernel(fam, prior.code, prior.kernel_params())
    samples, lj = run_chain(kernel, np.zeros(n, np.int64), 20000, seed=n)
    k = samples.max(axis=1)
    check_against(parts, exact, samples[500:], [lj[500:], k[500:]], wrong=wrong)


@pytest.mark.parametrize("owner", ["PGSMKernel", "SAMSKernel", "CoupledGibbsPGSM"])
def test_kernels_without_block_pair_terms_refuse_the_network(owner):
    """(The coupled Gibbs sweeps support the network: tests/test_coupled_gibbs.py; their PGSM
    moves do not.)"""
    from pymc_partitions.coupling.split_merge import GibbsPGSM  # noqa: PLC0415
    from pymc_partitions.coupling.sweep import GibbsSweeps  # noqa: PLC0415
    from pymc_partitions.samplers.pgsm import PGSMKernel  # noqa: PLC0415
    from pymc_partitions.samplers.sams import SAMSKernel  # noqa: PLC0415

    prior = PRIORS["crp"]
    fam = pack("netmix", 6)
    make = {"PGSMKernel": lambda: PGSMKernel(fam, prior.code, prior.kernel_params()),
            "SAMSKernel": lambda: SAMSKernel(fam, prior.code, prior.kernel_params()),
            "CoupledGibbsPGSM": lambda: GibbsPGSM(GibbsSweeps(fam, prior.code, prior.kernel_params()))}[owner]
    with pytest.raises(NotImplementedError, match="network likelihood.*NETWORK"):
        make()
