"""Jain-Neal restricted-Gibbs split-merge (seed 004 Algorithm 1) by enumeration (n = 5-7), every
prior x the Beta-Bernoulli, Normal and Normal-inverse-Wishart families: with a fixed launch the
final scan's probabilities sum to one, the reported log ratio is the enumerated one and detailed
balance holds to 1e-12 (all partitions at n = 5, 30 random starts at n = 6 and 7); sampled splits
follow the forced probabilities (chi-square) and report them; chains alone and with Gibbs have the
exact posterior, and miss it when the ratio is broken."""

import math

import numpy as np
import pytest

from enumeration import check_against, chi_square_pvalue
from models import NETWORK_FAMILIES, PRIORS, pack
from pymc_partitions.partition import canonicalize, enumerate_partitions
from pymc_partitions.samplers import jain_neal
from pymc_partitions.samplers.gibbs import GibbsKernel, log_joint
from pymc_partitions.samplers.jain_neal import JainNealKernel, jain_neal_log_proposal, jain_neal_move
from test_pgsm_enumeration import posteriors, run


@pytest.mark.parametrize("prior_name,family", [(p, f) for p in PRIORS for f in ("bb", "diag", "niw", *NETWORK_FAMILIES)])
def test_fixed_launch_detailed_balance(prior_name, family):
    n = 5
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    args = (fam, prior.code, prior.kernel_params())
    parts = enumerate_partitions(n)
    lp = np.array([log_joint(p, *args) for p in parts])
    rng = np.random.default_rng(1)
    for _ in range(2):
        pair = tuple(int(v) for v in rng.choice(n, 2, replace=False))
        launch, seed = int(rng.integers(2**63)), int(rng.integers(2**63))
        scans = int(rng.integers(0, 4))
        lt = np.array([[jain_neal_log_proposal(x, y, *args, (pair, seed), scans, launch_seed=launch) for y in parts]
                       for x in parts])
        assert np.abs(np.exp(lt).sum(axis=1) - 1.0).max() < 1e-12
        for a, b in np.argwhere(lt > -np.inf):
            if a == b or not (np.isfinite(lp[a]) and np.isfinite(lp[b])):
                continue
            _, fwd = jain_neal_move(parts[a], *args, (pair, seed), scans, launch_seed=launch, propose=parts[b])
            _, back = jain_neal_move(parts[b], *args, (pair, seed), scans, launch_seed=launch, propose=parts[a])
            assert fwd["log_ratio"] == pytest.approx(lp[b] - lp[a] + lt[b, a] - lt[a, b], abs=1e-10)
            flow_ab = math.exp(lp[a] + lt[a, b] + min(0.0, fwd["log_ratio"]))
            flow_ba = math.exp(lp[b] + lt[b, a] + min(0.0, back["log_ratio"]))
            assert abs(flow_ab - flow_ba) <= 1e-12 * max(flow_ab, flow_ba)


@pytest.mark.parametrize("prior_name,family,n", [(p, f, 6 + (i + j) % 2) for i, p in enumerate(PRIORS)
                                                 for j, f in enumerate(["bb", "diag", "niw"])])
def test_fixed_launch_detailed_balance_from_random_starts(prior_name, family, n):
    """The same at n = 6 and 7, from 30 random starts (split and merge launches) to every partition."""
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    args = (fam, prior.code, prior.kernel_params())
    parts = enumerate_partitions(n)
    lp = np.array([log_joint(p, *args) for p in parts])
    rng = np.random.default_rng(7 + n)
    checked = 0
    for _ in range(2):
        pair = tuple(int(v) for v in rng.choice(n, 2, replace=False))
        launch, seed = int(rng.integers(2**63)), int(rng.integers(2**63))
        scans = int(rng.integers(0, 4))
        starts = rng.choice(len(parts), 30, replace=False)
        for a in starts:
            lt = np.array([jain_neal_log_proposal(parts[a], y, *args, (pair, seed), scans, launch_seed=launch)
                           for y in parts])
            assert abs(np.exp(lt).sum() - 1.0) < 1e-12
            for b in np.flatnonzero(lt > -np.inf):
                if b == a or not (np.isfinite(lp[a]) and np.isfinite(lp[b])):
                    continue
                back_t = jain_neal_log_proposal(parts[b], parts[a], *args, (pair, seed), scans, launch_seed=launch)
                _, fwd = jain_neal_move(parts[a], *args, (pair, seed), scans, launch_seed=launch, propose=parts[b])
                _, back = jain_neal_move(parts[b], *args, (pair, seed), scans, launch_seed=launch, propose=parts[a])
                assert fwd["log_ratio"] == pytest.approx(lp[b] - lp[a] + back_t - lt[b], abs=1e-10)
                flow_ab = math.exp(lp[a] + lt[b] + min(0.0, fwd["log_ratio"]))
                flow_ba = math.exp(lp[b] + back_t + min(0.0, back["log_ratio"]))
                assert abs(flow_ab - flow_ba) <= 1e-12 * max(flow_ab, flow_ba)
                checked += 1
    assert checked > 20


@pytest.mark.parametrize("prior_name,family,n", [(p, f, 5 + (i + 2 * j + 2) % 3) for i, p in enumerate(PRIORS)
                                                 for j, f in enumerate(["bb", "diag", "niw"])]
                         + [("pitman_yor", "netdir", 7)])
def test_sampled_splits_follow_the_final_scan(prior_name, family, n):
    """Splits drawn by the sampler against the forced final scan (chi-square, 8000 proposals of one
    state and launch); each reports the forced log T, and its ratio is the enumerated one."""
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    args = (fam, prior.code, prior.kernel_params())
    parts = enumerate_partitions(n)
    lp = np.array([log_joint(p, *args) for p in parts])
    rng = np.random.default_rng(2)
    index = {tuple(y): b for b, y in enumerate(parts)}
    big_block = parts[[np.bincount(y).max() >= 4 for y in parts]]  # a split of a block of 4 or more
    for _ in range(2):
        for _ in range(100):  # a state, pair and launch whose split is not nearly certain (a test with power)
            x = big_block[rng.integers(len(big_block))]
            i, j = rng.choice(np.flatnonzero(x == np.bincount(x).argmax()), 2, replace=False)
            launch = int(rng.integers(2**63))
            lt = np.array([jain_neal_log_proposal(x, y, *args, ((int(i), int(j)), 0), 5, launch_seed=launch)
                           for y in parts])
            p = np.exp(lt)
            if p.max() < 0.9:
                break
        counts = np.zeros(len(parts))
        for _ in range(8000):
            _, info = jain_neal_move(x, *args, ((int(i), int(j)), int(rng.integers(2**63))), 5, launch_seed=launch)
            assert info["move"] == "split"
            b = index[tuple(info["proposal"])]
            counts[b] += 1
            assert abs(info["log_final_scan"] - lt[b]) <= 1e-12  # (finite: b was drawn)
            if counts[b] == 1 and np.isfinite(lp[index[tuple(x)]]):
                want = lp[b] - lp[index[tuple(x)]] - lt[b]  # the merge back is certain
                assert info["log_ratio"] == pytest.approx(want, abs=1e-10) if np.isfinite(want) else (
                    info["log_ratio"] == want)
        assert counts[p == 0].sum() == 0
        assert chi_square_pvalue(counts, p) > 1e-3


CHAINS = [(p, f, 6 + (i + j) % 2) for i, p in enumerate(PRIORS) for j, f in enumerate(["diag", "bb"])]
CHAINS += [(p, "net", 6) for p in PRIORS]  # (split-merge alone mixes slowly on the network at n = 7)


@pytest.mark.parametrize("prior_name,family,n", CHAINS)
def test_alone_matches_enumeration(prior_name, family, n):
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts, exact, wrong = posteriors(prior, fam, n)
    samples, k = run([JainNealKernel(fam, prior.code, prior.kernel_params(), intermediate_scans=2)], n, 30000, n)
    check_against(parts, exact, samples[500:], [k[500:]], wrong=wrong)


@pytest.mark.parametrize("family", ["niw", "netmix"])
def test_with_gibbs_matches_enumeration_and_a_broken_ratio_does_not(monkeypatch, family):
    n = 7
    prior = PRIORS["finite_dirichlet"]
    fam = pack(family, n)
    parts, exact, wrong = posteriors(prior, fam, n)

    def chain():
        kernels = [GibbsKernel(fam, prior.code, prior.kernel_params())] + [
            JainNealKernel(fam, prior.code, prior.kernel_params())] * 3
        return run(kernels, n, 12000, seed=5)

    samples, k = chain()
    check_against(parts, exact, samples[300:], [k[300:]], wrong=wrong)
    monkeypatch.setattr(jain_neal, "_log_ratio", lambda split, d, t: d if split else -d)  # T left out
    samples, k = chain()
    with pytest.raises(AssertionError, match="TV|number of clusters"):
        check_against(parts, exact, samples[300:], [k[300:]])


def test_deterministic_in_its_random_numbers():
    n = 9
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    kernel = JainNealKernel(fam, prior.code, prior.kernel_params())
    rng = np.random.default_rng(3)
    labels = np.zeros(n, np.int64)
    seen = set()
    for _ in range(300):
        rn = kernel.random_numbers(rng, n)
        a, info = kernel.move(labels, rn)
        b, _ = jain_neal_move(labels.copy(), fam, prior.code, prior.kernel_params(), (rn[0].copy(), int(rn[1])))
        assert np.array_equal(a, b) and np.array_equal(a, canonicalize(a))
        if not info["accepted"]:
            assert np.array_equal(a, canonicalize(labels))
        seen.add((info["move"], info["accepted"]))
        labels = a
    assert {("split", True), ("merge", True)} <= seen


@pytest.mark.parametrize("family", ["diag", "net"])
def test_propose_gives_the_proposal_of_the_move(family):
    """JainNealKernel.propose (ARM's synthetic references): for a split, the proposal the move with the
    same randomness makes (without the ratio); for a merge, the two blocks joined (no scans)."""
    n = 7
    prior = PRIORS["pitman_yor"]
    fam = pack(family, n)
    kernel = JainNealKernel(fam, prior.code, prior.kernel_params(), intermediate_scans=2)
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(100):
        labels = rng.integers(0, 3, n)
        randomness = kernel.random_numbers(rng, n)
        proposal = kernel.propose(labels, randomness)
        _, info = kernel.move(labels, randomness)
        i, j = randomness[0]
        if labels[i] == labels[j]:
            assert np.array_equal(proposal, info["proposal"])
        else:
            assert np.array_equal(proposal, canonicalize(np.where(labels == labels[j], labels[i], labels)))
        assert np.array_equal(proposal, canonicalize(proposal))
        seen.add(info["move"])
    assert seen == {"split", "merge"}
    with pytest.raises(ValueError, match="distinct"):
        kernel.propose(np.zeros(n, int), ((1, 1), 3))
    with pytest.raises(ValueError, match="labels must have length 7"):
        kernel.propose(np.zeros(n - 1, int), ((0, 1), 3))
