"""The network likelihood (``pmp.BetaBernoulliNetwork``, the collapsed Bernoulli blockmodel):
its input forms and their validation, the collapsed log likelihood against a direct computation
over node pairs, the PyTensor logp, and pm.sample against the exact posterior (n = 6)."""

import numpy as np
import pymc as pm
import pytest
import scipy.sparse as sp
from scipy.special import betaln

import pymc_partitions as pmp
from enumeration import check_against, exact_posterior
from models import graph
from pymc_partitions.families.kernels import NETWORK, FamilyPack
from pymc_partitions.families.network import as_edges, network_hyper, network_log_likelihood
from pymc_partitions.pymc.compat import posterior_dataset
from pymc_partitions.samplers.gibbs import log_joint

SAMPLE = dict(tune=200, cores=1, progressbar=False, compute_convergence_checks=False)


def random_graph(n, p, directed, rng):
    a = (rng.random((n, n)) < p).astype(np.int64)
    np.fill_diagonal(a, 0)
    if not directed:
        a = np.triu(a, 1)
        a = a + a.T
    return a


def brute_force(labels, adj, a, b, directed):
    """Sum over block pairs of log B(a + e, b + N - e) - log B(a, b), counting e and N over every
    node pair one by one (the definition; O(n^2))."""
    n = len(labels)
    e, pairs = {}, {}
    for i in range(n):
        for j in range(n):
            if i == j or (not directed and j < i):
                continue
            key = (labels[i], labels[j]) if directed else tuple(sorted((labels[i], labels[j])))
            pairs[key] = pairs.get(key, 0) + 1
            e[key] = e.get(key, 0) + int(adj[i, j])
    return sum(betaln(a + e[k], b + pairs[k] - e[k]) - betaln(a, b) for k in pairs)


# ----------------------------------------------------------------------------- the likelihood


@pytest.mark.parametrize("directed", [False, True])
def test_log_likelihood_matches_node_pair_definition(directed):
    rng = np.random.default_rng(1)
    for trial in range(20):
        n = int(rng.integers(2, 12))
        adj = random_graph(n, rng.uniform(0.1, 0.7), directed, rng)
        labels = rng.integers(0, rng.integers(1, n + 1), n)
        a, b = rng.uniform(0.2, 3.0, 2)
        ref = brute_force(labels, adj, a, b, directed)
        forms = [adj, sp.csr_matrix(adj), sp.coo_matrix(adj), np.argwhere(adj if directed else np.triu(adj))]
        if not directed:
            forms.append(np.argwhere(np.triu(adj))[:, ::-1])  # each edge once, either orientation
        for form in forms:
            edges = as_edges(form, n, directed=directed)
            assert network_log_likelihood(labels, edges, a, b, directed) == pytest.approx(ref, abs=1e-10)
            pack = FamilyPack.build([(NETWORK, np.zeros((n, 1)), network_hyper(a, b, edges, n, directed))])
            prior = pmp.CRP(1.0)
            got = log_joint(labels, pack, prior.code, prior.kernel_params()) - prior.log_eppf(labels)
            assert got == pytest.approx(ref, abs=1e-9)


def test_within_block_pairs_count():
    """One block of 3 nodes with 1 edge: 3 pairs inside (the term seed 004's k < k' would drop)."""
    edges = np.array([[0, 1]])
    assert network_log_likelihood([0, 0, 0], edges, 1.0, 1.0) == pytest.approx(betaln(2, 3) - betaln(1, 1))
    assert network_log_likelihood([0, 0, 0], edges, 1.0, 1.0, directed=True) == pytest.approx(
        betaln(2, 6) - betaln(1, 1))


def test_sparse_input_is_never_densified(monkeypatch):
    n = 20000
    rng = np.random.default_rng(0)
    rows = rng.integers(0, n, 3000)
    cols = rng.integers(0, n, 3000)
    keep = rows != cols
    m = sp.coo_matrix((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=(n, n))
    m = ((m + m.T) > 0).astype(np.int8)
    monkeypatch.setattr(sp.csr_matrix, "toarray", lambda *a, **k: pytest.fail("densified"))
    monkeypatch.setattr(sp.coo_matrix, "toarray", lambda *a, **k: pytest.fail("densified"))
    edges = as_edges(m, n)
    assert edges.shape[0] == m.nnz // 2 and np.all(edges[:, 0] < edges[:, 1])


# ----------------------------------------------------------------------------- hostile inputs

BAD_INPUTS = [
    (np.array([[0, 1], [1, np.nan]]), 2, False, ValueError, "NaN"),
    (np.array([[0, 0.5], [0.5, 0]]), 2, False, ValueError, "0/1"),
    (np.array([[0, 2], [2, 0]]), 2, False, ValueError, "0/1"),
    (np.array([[0, 1], [0, 0]]), 2, False, ValueError, "not symmetric.*directed=True"),
    (np.array([[1, 1], [1, 0]]), 2, False, ValueError, "self-loops"),
    (np.array([[1, 1], [1, 0]]), 2, True, ValueError, "self-loops"),
    (sp.csr_matrix(np.array([[0, 1], [0, 0]])), 2, False, ValueError, "not symmetric"),
    (sp.csr_matrix(np.eye(2)), 2, True, ValueError, "self-loops"),
    (sp.csr_matrix(np.array([[0, 3.0], [3.0, 0]])), 2, False, ValueError, "0/1"),
    (sp.csr_matrix(np.ones((3, 3))), 2, False, ValueError, "n x n"),
    (np.array([[0, 3]]), 3, False, ValueError, "outside \\[0, 3\\)"),
    (np.array([[-1, 2]]), 3, False, ValueError, "outside"),
    (np.array([[1, 1]]), 3, False, ValueError, "self-loops"),
    (np.array([[0, 1], [1, 0]]), 3, False, ValueError, "repeats the edge \\(0, 1\\)"),
    (np.array([[0, 1], [0, 1]]), 3, True, ValueError, "repeats"),
    (np.array([[0.5, 1]]), 3, False, ValueError, "integer"),
    (np.array([[np.nan, 1]]), 3, False, ValueError, "NaN"),
    (np.array([[True, False]]), 3, False, TypeError, "integer"),
    (np.zeros((3, 3, 3)), 3, False, ValueError, "shape"),
    (np.zeros((4, 3)), 3, False, ValueError, "shape"),
    (np.array([["a", "b"]]), 3, False, TypeError, "numeric"),
    ([[0, 1], [2]], 3, False, TypeError, "adjacency matrix or an"),
]


@pytest.mark.parametrize("value,n,directed,error,match", BAD_INPUTS)
def test_bad_observed_is_refused_by_name(value, n, directed, error, match):
    with pytest.raises(error, match=match):
        as_edges(value, n, directed=directed, name="A")
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        with pytest.raises(error, match="'A'"):
            pmp.BetaBernoulliNetwork("A", partition=z, observed=value, directed=directed)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(a=0.0), ValueError, "a must be a finite scalar > 0"),
    (dict(b=-1.0), ValueError, "b must be"),
    (dict(a=np.nan), ValueError, "a must be"),
    (dict(b=np.inf), ValueError, "b must be"),
    (dict(a=[1.0, 2.0]), ValueError, "a must be"),
    (dict(directed="yes"), TypeError, "directed must be True or False"),
    (dict(directed=1), TypeError, "directed must be True or False"),
    (dict(observed=None), TypeError, "needs observed data"),
    (dict(shape=(3, 2)), TypeError, "shape is not supported"),
    (dict(partition="z"), TypeError, "partition must be a pmp.Partition"),
    (dict(a=1e305), ValueError, "exceeds"),
])
def test_bad_arguments_are_refused_by_name(kwargs, error, match):
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=4)
        args = dict(partition=z, observed=np.array([[0, 1], [2, 3]]))
        args.update(kwargs)
        with pytest.raises(error, match=match):
            pmp.BetaBernoulliNetwork("A", **args)


def test_pm_data_is_refused():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=3)
        d = pm.Data("d", np.array([[0, 1]]))
        with pytest.raises(TypeError, match="pm.Data is not supported"):
            pmp.BetaBernoulliNetwork("A", partition=z, observed=d)


def test_kernel_pack_refuses_a_corrupt_adjacency():
    edges = np.array([[0, 1], [1, 2]])
    hp = network_hyper(1.0, 1.0, edges, 3, False)
    FamilyPack.build([(NETWORK, np.zeros((3, 1)), hp)])
    for index, value in [(4 + 1, 5.0), (4 + 4 + 1, 7.0), (4 + 4, 0.0), (4 + 4 + 2, 0.0), (3, 3.0), (0, -1.0), (2, 0.5)]:
        bad = hp.copy()
        bad[index] = value
        with pytest.raises(ValueError, match="NETWORK"):
            FamilyPack.build([(NETWORK, np.zeros((3, 1)), bad)])
    with pytest.raises(ValueError, match="NETWORK"):
        FamilyPack.build([(NETWORK, np.zeros((3, 1)), hp[:-1])])


# ----------------------------------------------------------------------------- PyMC


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("form", ["dense", "sparse", "edges"])
def test_model_logp_matches_definition(directed, form):
    rng = np.random.default_rng(4)
    n = 9
    adj = random_graph(n, 0.35, directed, rng)
    observed = {"dense": adj, "sparse": sp.csr_matrix(adj), "edges": np.argwhere(adj if directed else np.triu(adj))}[form]
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.3), n=n)
        pmp.BetaBernoulliNetwork("A", partition=z, a=0.7, b=1.9, observed=observed, directed=directed)
    logp = model.compile_logp()
    for _ in range(10):
        labels = rng.integers(0, rng.integers(1, n + 1), n)
        ref = brute_force(labels, adj, 0.7, 1.9, directed) + pmp.CRP(1.3).log_eppf(labels)
        assert logp({"z": labels}) == pytest.approx(ref, abs=1e-9)
    assert logp({"z": np.full(n, n)}) == -np.inf


def test_random_hyperparameters_gradient_and_sampling():
    rng = np.random.default_rng(2)
    n = 8
    adj = random_graph(n, 0.4, False, rng)
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 2.0)
        b = pm.Gamma("b", 2.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.BetaBernoulliNetwork("A", partition=z, a=a, b=b, observed=adj)
    point = {"a_log__": np.log(0.8), "b_log__": np.log(1.7), "z": np.array([0, 0, 1, 1, 0, 2, 2, 1])}
    logp = model.compile_logp()
    ref = brute_force(point["z"], adj, 0.8, 1.7, False)
    ref += pmp.CRP(1.0).log_eppf(point["z"])
    ref += pm.logp(pm.Gamma.dist(2.0, 2.0), 0.8).eval() + np.log(0.8) + pm.logp(pm.Gamma.dist(2.0, 1.0), 1.7).eval() \
        + np.log(1.7)
    assert logp(point) == pytest.approx(ref, abs=1e-9)
    dlogp = model.compile_dlogp(vars=[model["a"], model["b"]])
    h = 1e-6
    for name in ("a_log__", "b_log__"):
        up, down = dict(point), dict(point)
        up[name] = point[name] + h
        down[name] = point[name] - h
        numeric = (logp(up) - logp(down)) / (2 * h)
        got = dlogp(point)[["a_log__", "b_log__"].index(name)]
        assert got == pytest.approx(numeric, rel=1e-5, abs=1e-6)
    with model:
        idata = pm.sample(draws=100, chains=1, random_seed=1, **SAMPLE)
    assert np.all(posterior_dataset(idata)["a"].values > 0)


PRIOR_CASES = [(pmp.CRP(1.2), False), (pmp.PitmanYor(0.5, 0.3), True), (pmp.FiniteDirichlet(0.7, 3), False)]


@pytest.mark.parametrize("prior,directed", PRIOR_CASES, ids=["crp", "py-directed", "fd"])
def test_pm_sample_gibbs_matches_enumeration(prior, directed):
    """CollapsedGibbs, assigned by pm.sample, against the exact posterior; a likelihood without the
    within-block pairs is rejected (the test has power)."""
    n = 6
    edges = graph(n, directed)
    with pm.Model():
        z = pmp.Partition("z", prior, n=n)
        pmp.BetaBernoulliNetwork("A", partition=z, a=0.6, b=1.4, observed=edges, directed=directed)
        idata = pm.sample(draws=4000, chains=2, random_seed=5, **SAMPLE)
    like = lambda p: network_log_likelihood(p, edges, 0.6, 1.4, directed)  # noqa: E731
    parts, exact = exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))
    _, wrong = exact_posterior(n, lambda p: like(p) - _within(p, edges, directed) + prior.log_eppf(p))
    post = posterior_dataset(idata)
    st = posterior_dataset(idata, "sample_stats")
    zs = post["z"].values.reshape(-1, n)
    check_against(parts, exact, zs, [st["log_joint"].values.ravel(), st["n_clusters"].values.ravel()], wrong=wrong)


def _within(labels, edges, directed):
    _, z = np.unique(labels, return_inverse=True)
    out = 0.0
    for k in range(z.max() + 1):
        m = int(np.sum(z == k))
        e = int(np.sum((z[edges[:, 0]] == k) & (z[edges[:, 1]] == k)))
        pairs = m * (m - 1) if directed else m * (m - 1) // 2
        out += betaln(0.6 + e, 1.4 + pairs - e) - betaln(0.6, 1.4)
    return out


def test_unsupported_steps_and_forward_draws_are_refused_clearly():
    n = 6
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.BetaBernoulliNetwork("A", partition=z, observed=graph(n))
        with pytest.raises(NotImplementedError, match="BetaBernoulliNetwork"):
            pm.sample(draws=5, tune=0, chains=1, step=[pmp.PGSM([z])], progressbar=False, compute_convergence_checks=False)
        with pytest.raises(NotImplementedError, match="BetaBernoulliNetwork"):
            pm.sample(draws=5, tune=0, chains=1, step=[pmp.SAMS([z])], progressbar=False, compute_convergence_checks=False)
        idata = pm.sample(draws=20, tune=0, chains=1, random_seed=1, progressbar=False, compute_convergence_checks=False)
        with pytest.raises(NotImplementedError, match="BetaBernoulliNetwork: forward draws"):
            pm.sample_posterior_predictive(idata, progressbar=False)
        with pytest.raises(NotImplementedError, match="BetaBernoulliNetwork: forward draws"):
            pm.sample_prior_predictive(draws=5)


@pytest.mark.parametrize("steps", ["gibbs+arm", "gibbs+splitmerge", "splitmerge"])
def test_pm_sample_with_arm_and_split_merge_matches_enumeration(steps):
    """ARM (4 chains, a population step) and SplitMerge (Jain-Neal) through pm.sample, with and
    without Gibbs sweeps, on the network likelihood: the exact posterior, and not the one
    without the within-block pairs."""
    n = 6
    prior = pmp.PitmanYor(0.8, 0.2)
    edges = graph(n)
    with pm.Model():
        z = pmp.Partition("z", prior, n=n)
        pmp.BetaBernoulliNetwork("A", partition=z, a=0.6, b=1.4, observed=edges)
        step = {"gibbs+arm": [pmp.CollapsedGibbs([z]), pmp.ARM([z])],
                "gibbs+splitmerge": [pmp.CollapsedGibbs([z]), pmp.SplitMerge([z])],
                "splitmerge": [pmp.SplitMerge([z])]}[steps]
        idata = pm.sample(draws=2500 if steps != "splitmerge" else 5000, chains=4, random_seed=7, step=step, **SAMPLE)
    like = lambda p: network_log_likelihood(p, edges, 0.6, 1.4)  # noqa: E731
    parts, exact = exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))
    _, wrong = exact_posterior(n, lambda p: like(p) - _within(p, edges, False) + prior.log_eppf(p))
    zs = posterior_dataset(idata)["z"].values
    traces = [np.array([len(np.unique(r)) for r in zs[c]]) for c in range(zs.shape[0])]
    n_eff_traces = [np.concatenate(traces)]
    check_against(parts, exact, zs.reshape(-1, n), n_eff_traces, wrong=wrong)


@pytest.mark.parametrize("directed", [False, True])
def test_block_probabilities_and_replicated_graphs(directed):
    """Beta posterior draws of the block-pair probabilities (moments), and graphs replicated from
    them (every node pair with its block pair's probability, each once)."""
    from pymc_partitions.families.network import block_edge_counts, block_probabilities, replicate_edges  # noqa: PLC0415

    rng = np.random.default_rng(8)
    n = 13
    adj = random_graph(n, 0.3, directed, rng)
    labels = np.array([2, 2, 0, 0, 0, 1, 1, 1, 1, 5, 5, 5, 5])
    edges = as_edges(adj, n, directed=directed)
    e, m = block_edge_counts(labels, edges, directed)
    pairs = np.outer(m, m) - (np.diag(m) if directed else np.diag(m * (m + 1) // 2))
    draws = np.array([block_probabilities(labels, adj, 0.5, 2.0, directed, rng) for _ in range(4000)])
    mean = (0.5 + e) / (2.5 + pairs)
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=0.02)
    if not directed:
        assert np.array_equal(draws, np.swapaxes(draws, 1, 2))
    theta = rng.uniform(0.05, 0.95, (4, 4))
    if not directed:
        theta = np.triu(theta) + np.triu(theta, 1).T
    counts = np.zeros((n, n))
    reps = 3000
    for _ in range(reps):
        rep = replicate_edges(labels, theta, directed, rng)
        counts[rep[:, 0], rep[:, 1]] += 1
    _, z = np.unique(labels, return_index=True)
    canon = np.argsort(np.argsort(z))[np.unique(labels, return_inverse=True)[1]]
    want = theta[canon[:, None], canon[None, :]]
    mask = ~np.eye(n, dtype=bool) & (True if directed else np.triu(np.ones((n, n), bool), 1))
    assert np.all(counts[~mask] == 0)
    np.testing.assert_allclose(counts[mask] / reps, want[mask], atol=0.04)


@pytest.mark.parametrize("coupling", ["ot", "maximal", "crn"])
def test_sample_unbiased_matches_enumeration(coupling):
    """pmp.sample_unbiased (coupled Gibbs with the block-pair terms) on a network model of n = 7
    nodes: the averages of the unbiased estimators of E[K] and of a co-clustering probability
    match the enumerated posterior expectations (within 4 standard errors), and are far from
    those of the blockmodel without its within-block pairs (power)."""
    n = 7
    prior = pmp.PitmanYor(0.8, 0.2)
    edges = graph(n)
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        pmp.BetaBernoulliNetwork("A", partition=z, a=0.6, b=1.4, observed=edges)
    h = {"k": pmp.h.n_clusters, "together": pmp.h.CoClustering([[0, 2], [0, 1]])}
    result = pmp.sample_unbiased(model, h=h, n_pairs=400, k=2, m=10, coupling=coupling, cores=1, random_seed=11,
                                 progressbar=False, init="singletons")
    assert result["meeting"]["met"].values.all()
    summary = pmp.summarize_unbiased(result)
    like = lambda p: network_log_likelihood(p, edges, 0.6, 1.4)  # noqa: E731
    parts, exact = exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))
    _, wrong = exact_posterior(n, lambda p: like(p) - _within(p, edges, False) + prior.log_eppf(p))
    values = {"k": parts.max(axis=1) + 1.0, "together[0]": (parts[:, 0] == parts[:, 2]) * 1.0,
              "together[1]": (parts[:, 0] == parts[:, 1]) * 1.0}
    for name, v in values.items():
        row = summary.loc[name]
        assert abs(row["mean"] - exact @ v) < 4 * row["se"], (name, row["mean"], exact @ v, row["se"])
    assert abs(summary.loc["k", "mean"] - wrong @ values["k"]) > 8 * summary.loc["k", "se"]


def test_sample_unbiased_with_pgsm_refuses_the_network_clearly():
    n = 6
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.BetaBernoulliNetwork("A", partition=z, observed=graph(n))
    with pytest.raises(NotImplementedError, match=r"sample_unbiased: PGSM moves \(pgsm=\) do not support the network"):
        pmp.sample_unbiased(model, h={"k": pmp.h.n_clusters}, n_pairs=2, k=1, m=2, random_seed=0, pgsm=1,
                            progressbar=False)
    # the default (pgsm="auto") runs Gibbs sweeps alone on it
    result = pmp.sample_unbiased(model, h={"k": pmp.h.n_clusters}, n_pairs=2, k=1, m=2, random_seed=0, cores=1,
                                 progressbar=False)
    attrs = (result["unbiased"].to_dataset() if hasattr(result["unbiased"], "to_dataset") else result["unbiased"]).attrs
    assert attrs["pgsm_moves"] == 0
