"""The ARM kernel (seed 004, Algorithm 3) with fixed references, by enumeration at n = 5-7, for every
prior x the Beta-Bernoulli, Normal and Normal-inverse-Wishart families (every check on all nine
pairs; sum-to-one and the sampled proposals at n = 5, 6 and 7, detailed balance at every n):

* the forced-path probabilities of all proposals from a state sum to one (each proposal has one
  path, and the forced path finds it);
* the kernel's log pi is the enumerated one, its reported log ratio is
  log pi(y) - log pi(x) + log T(x|y) - log T(y|x), and detailed balance holds to 1e-12;
* proposals drawn by the sampler (separate code from the forced path) follow the forced T
  (chi-square);
* a chain whose references do not depend on its state has the exact posterior, and does not
  when the reverse probability is dropped from the ratio (the tests can fail): plain ARM, and
  ARM with synthetic and pair-focused references (the defaults);
* a synthetic reference is one Jain-Neal split or merge of the reference it comes from, drawn
  from it and the seed alone; pair-focused references are coarsenings of the references that
  still disagree on the pair, and give moves of one split or merge with exact forced paths;
* the move is deterministic in its random numbers, the pair selection is uniform over the pairs
  the references disagree on, and the record describes the move.
"""

import math

import numpy as np
import pytest
from scipy import stats

from enumeration import check_against, chi_square_pvalue, exact_posterior
from models import NETWORK_FAMILIES, PRIORS, pack
from pymc_partitions.partition import as_labels, canonicalize, contingency, enumerate_partitions
from pymc_partitions.samplers import arm
from pymc_partitions.samplers.arm import ARMKernel, _order, _proposal_matrix, arm_log_proposal, arm_move
from pymc_partitions.samplers.arm import arm_select_pair
from pymc_partitions.samplers.gibbs import GibbsKernel, check_model, log_joint
from test_pgsm_enumeration import posteriors


def random_phi(parts, rng):
    """(references oriented for the move, pair, order seed), drawn independently of any state."""
    while True:
        za, zb = parts[rng.integers(len(parts))], parts[rng.integers(len(parts))]
        chosen = arm_select_pair((za, zb), int(rng.integers(2**63)))
        if chosen is not None:
            pair, refs = chosen
            return refs, pair, int(rng.integers(2**63))


def matrix(starts, targets, fam, prior, phi):
    refs, pair, order_seed = phi
    perm, rank = _order(starts.shape[1], np.uint64(order_seed))
    return _proposal_matrix(starts, targets, fam, prior.code, prior.kernel_params(), refs[0], refs[1], pair, perm, rank)


CASES = [(p, f, 5 + (i + j) % 3) for i, p in enumerate(PRIORS) for j, f in enumerate(["bb", "diag", "niw"])]
# the network likelihood (block-pair terms: not separable over blocks), alone and with a Normal one
CASES += [(p, f, 5 + (i + j) % 3) for i, p in enumerate(PRIORS) for j, f in enumerate(NETWORK_FAMILIES)]


@pytest.mark.parametrize("prior_name,family,n", CASES)
def test_forward_probabilities_sum_to_one(prior_name, family, n):
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts = enumerate_partitions(n)
    rng = np.random.default_rng(n)
    carried = 0
    for _ in range(3):
        phi = random_phi(parts, rng)
        starts = parts if n < 7 else parts[rng.choice(len(parts), 25, replace=False)]
        lt, _ = matrix(starts, parts, fam, prior, phi)
        total = np.exp(lt).sum(axis=1)
        assert np.abs(total - 1.0).max() < 1e-12, total
        (i, j) = phi[1]
        for a, b in zip(*np.nonzero(lt > -np.inf)):  # an item of another block joins i or j: not a split-merge
            x, y = starts[a], parts[b]
            outside = np.flatnonzero((x != x[i]) & (x != x[j]))
            carried += any(y[h] == y[i] or y[h] == y[j] for h in outside)
    assert carried > 0


DB_CASES = [(p, f, 5 + (i + j) % 2) for i, p in enumerate(PRIORS)
            for j, f in enumerate(["bb", "diag", "niw"] + NETWORK_FAMILIES)]


@pytest.mark.parametrize("prior_name,family,n", DB_CASES)
def test_detailed_balance_and_the_reported_log_ratio(prior_name, family, n):
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts = enumerate_partitions(n)
    exact_lp = np.array([log_joint(p, fam, prior.code, prior.kernel_params()) for p in parts])
    rng = np.random.default_rng(10 + n)
    checked = 0
    for _ in range(2):
        phi = random_phi(parts, rng)
        lt, lp = matrix(parts, parts, fam, prior, phi)
        finite = np.isfinite(exact_lp)
        np.testing.assert_allclose(lp[finite], exact_lp[finite], rtol=1e-11, atol=1e-11)
        assert np.array_equal(np.isfinite(lp), finite)
        reachable = np.argwhere((lt > -np.inf) & finite[:, None] & finite[None, :])
        for a, b in reachable[rng.choice(len(reachable), min(120, len(reachable)), replace=False)]:
            refs, pair, order_seed = phi
            seed = int(rng.integers(2**63))
            kw = dict(order_seed=order_seed)
            _, fwd = arm_move(parts[a], fam, prior.code, prior.kernel_params(), refs, pair, seed, propose=parts[b], **kw)
            want = exact_lp[b] - exact_lp[a] + lt[b, a] - lt[a, b]
            assert fwd["log_ratio"] == pytest.approx(want, abs=1e-10) if np.isfinite(want) else fwd["log_ratio"] == want
            assert fwd["log_forward"] == lt[a, b] and (fwd["log_reverse"] == lt[b, a])
            if lt[b, a] > -np.inf:
                _, back = arm_move(parts[b], fam, prior.code, prior.kernel_params(), refs, pair, seed,
                                   propose=parts[a], **kw)
                flow_ab = math.exp(exact_lp[a] + lt[a, b] + min(0.0, fwd["log_ratio"]))
                flow_ba = math.exp(exact_lp[b] + lt[b, a] + min(0.0, back["log_ratio"]))
                assert abs(flow_ab - flow_ba) <= 1e-12 * max(flow_ab, flow_ba)
            else:
                assert fwd["log_ratio"] == -np.inf
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("prior_name,family", [(p, f) for p in PRIORS for f in ("bb", "diag", "niw")])
def test_detailed_balance_at_n7(prior_name, family):
    """The same checks at n = 7 (877 partitions) from 30 random starts to every partition, the way
    back computed for the pairs checked."""
    n = 7
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    args = (fam, prior.code, prior.kernel_params())
    parts = enumerate_partitions(n)
    rng = np.random.default_rng(20 + len(prior_name) + len(family))
    exact_lp = np.array([log_joint(p, *args) for p in parts])
    checked = 0
    for _ in range(2):
        phi = random_phi(parts, rng)
        refs, pair, order_seed = phi
        rows = rng.choice(len(parts), 30, replace=False)
        lt, lp = matrix(parts[rows], parts, fam, prior, phi)
        assert np.abs(np.exp(lt).sum(axis=1) - 1.0).max() < 1e-12
        finite = np.isfinite(exact_lp[rows])
        np.testing.assert_allclose(lp[finite], exact_lp[rows][finite], rtol=1e-11, atol=1e-11)
        assert np.array_equal(np.isfinite(lp), finite)
        reachable = np.argwhere(lt > -np.inf)
        reachable = reachable[np.isfinite(exact_lp[rows[reachable[:, 0]]]) & np.isfinite(exact_lp[reachable[:, 1]])]
        for r, b in reachable[rng.choice(len(reachable), min(60, len(reachable)), replace=False)]:
            a = rows[r]
            seed = int(rng.integers(2**63))
            back_t = arm_log_proposal(parts[b], parts[a], *args, refs, pair, 0, order_seed=order_seed)
            _, fwd = arm_move(parts[a], *args, refs, pair, seed, propose=parts[b], order_seed=order_seed)
            want = exact_lp[b] - exact_lp[a] + back_t - lt[r, b]
            assert fwd["log_forward"] == lt[r, b] and fwd["log_reverse"] == back_t
            if back_t == -np.inf:
                assert fwd["log_ratio"] == -np.inf
                continue
            assert fwd["log_ratio"] == pytest.approx(want, abs=1e-10)
            _, back = arm_move(parts[b], *args, refs, pair, seed, propose=parts[a], order_seed=order_seed)
            flow_ab = math.exp(exact_lp[a] + lt[r, b] + min(0.0, fwd["log_ratio"]))
            flow_ba = math.exp(exact_lp[b] + back_t + min(0.0, back["log_ratio"]))
            assert abs(flow_ab - flow_ba) <= 1e-12 * max(flow_ab, flow_ba)
            checked += 1
    assert checked > 40


def checked_once(x, fam, prior, phi):
    """arm_move(x, fam, prior.code, prior.kernel_params(), refs, pair, seed, order_seed=...) as a function
    of the seed, its arguments checked once (the checks cost more than the move, done 24000 times below);
    the same result as arm_move for a first seed."""
    refs, pair, order_seed = phi
    n = x.size
    code, params = check_model(fam, prior.code, prior.kernel_params(), "test", network=True)
    labels, za, zb = (as_labels(v, n) for v in (x, *refs))
    perm, rank = _order(n, np.uint64(order_seed))

    def move(seed):
        return arm._run(labels, fam, code, params, za, zb, int(pair[0]), int(pair[1]), perm, rank, np.uint64(seed),
                        None)

    state, info = move(12345)
    want_state, want = arm_move(x, fam, prior.code, prior.kernel_params(), refs, pair, 12345, order_seed=order_seed)
    assert np.array_equal(state, want_state) and np.array_equal(info["proposal"], want["proposal"])
    assert (info["log_forward"], info["accepted"]) == (want["log_forward"], want["accepted"])
    return move


@pytest.mark.parametrize("prior_name,family,n", [(p, f, 5 + (i + 2 * j + 1) % 3) for i, p in enumerate(PRIORS)
                                                 for j, f in enumerate(["bb", "diag", "niw"])]
                         + [("crp", "net", 6), ("pitman_yor", "netdir", 6), ("finite_dirichlet", "netmix", 5)])
def test_sampled_proposals_follow_the_forced_probabilities(prior_name, family, n):
    """The sampler draws the choices with uniforms; the forced path recomputes them from the target:
    separate code, which must agree (chi-square over 12000 proposals of one state and phi), and the
    log T the sampler reports with each proposal is the forced one."""
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts = enumerate_partitions(n)
    lp = np.array([log_joint(p, fam, prior.code, prior.kernel_params()) for p in parts])
    rng = np.random.default_rng(3)
    for _ in range(2):
        phi = random_phi(parts, rng)
        refs, pair, order_seed = phi
        x = parts[rng.integers(len(parts))]
        lt, _ = matrix(x[None, :], parts, fam, prior, phi)
        p = np.exp(lt[0])
        index = {tuple(y): b for b, y in enumerate(parts)}
        counts = np.zeros(len(parts))
        a = index[tuple(x)]
        move = checked_once(x, fam, prior, phi)
        for _ in range(12000):
            _, info = move(int(rng.integers(2**63)))
            b = index[tuple(info["proposal"])]
            counts[b] += 1
            assert abs(info["log_forward"] - lt[0, b]) <= 1e-12  # (finite: b was drawn)
            if counts[b] == 1 and np.isfinite(lp[a]):  # each proposal's reported ratio once, against enumeration
                back = arm_log_proposal(parts[b], x, fam, prior.code, prior.kernel_params(), refs, pair, 0,
                                        order_seed=order_seed)
                want = lp[b] - lp[a] + back - lt[0, b]
                assert info["log_ratio"] == pytest.approx(want, abs=1e-10) if np.isfinite(want) else (
                    info["log_ratio"] == want)
        assert counts[p == 0].sum() == 0
        assert chi_square_pvalue(counts, p) > 1e-3


PLAIN = dict(synthetic=0.0, focus=0.0)  # the paper's move: references used as given


def chain(fam, prior, pool, n_draws, arm_moves, seed, options=PLAIN):
    """Gibbs sweep + ``arm_moves`` ARM moves per iteration, references two different members of a
    fixed pool of partitions (independent of the chain's state)."""
    rng = np.random.default_rng(seed)
    gibbs = GibbsKernel(fam, prior.code, prior.kernel_params())
    kernel = ARMKernel(fam, prior.code, prior.kernel_params(), **options)
    n = fam.data.shape[0]
    labels = np.zeros(n, np.int64)
    out = np.empty((n_draws, n), np.int64)
    accepted = 0
    for t in range(n_draws):
        labels = gibbs.step(labels, rng)[0]
        for _ in range(arm_moves):
            a, b = rng.choice(len(pool), 2, replace=False)
            labels, info = kernel.step(labels, (pool[a], pool[b]), rng)
            accepted += info["accepted"]
        out[t] = labels
    return out, accepted


OPTIONS = {"plain": PLAIN, "default": {}, "synthetic-focused": dict(synthetic=0.6, synthetic_scans=1, focus=0.5)}


@pytest.mark.parametrize("family,options", [("bb", "plain"), ("net", "plain"), ("bb", "default"),
                                            ("net", "synthetic-focused")])
def test_chain_with_state_independent_references_matches_enumeration(monkeypatch, family, options):
    n = 6
    prior = PRIORS["crp"]
    fam = pack(family, n)
    parts, exact, wrong = posteriors(prior, fam, n)
    pool = parts[np.random.default_rng(0).choice(len(parts), 12, replace=False)]
    samples, accepted = chain(fam, prior, pool, 8000, 3, seed=1, options=OPTIONS[options])
    assert accepted > 2000
    check_against(parts, exact, samples[200:], [samples[200:].max(axis=1)], wrong=wrong)
    # the same chain with the reverse probability left out of the ratio misses the posterior
    monkeypatch.setattr(arm, "_log_ratio", lambda lpx, lpy, lf, lr: (lpy - lpx) - lf if lr > -np.inf else -np.inf)
    samples, _ = chain(fam, prior, pool, 8000, 3, seed=1, options=OPTIONS[options])
    with pytest.raises(AssertionError, match="TV|number of clusters"):
        check_against(parts, exact, samples[200:], [samples[200:].max(axis=1)])


def test_move_is_deterministic_in_its_random_numbers():
    n = 9
    prior = PRIORS["pitman_yor"]
    fam = pack("diag", n)
    kernel = ARMKernel(fam, prior.code, prior.kernel_params())
    rng = np.random.default_rng(4)
    labels = np.zeros(n, np.int64)
    seen = set()
    for _ in range(300):
        refs = (rng.integers(0, 3, n), rng.integers(0, 3, n))
        seed = int(rng.integers(2**63))
        a, info_a = kernel.move(labels, refs, seed)
        b, info_b = kernel.move(labels.copy(), (refs[0].copy(), refs[1].copy()), seed)
        assert np.array_equal(a, b) and info_a["log_ratio"] == info_b["log_ratio"] or (
            np.isnan(info_a["log_ratio"]) and np.isnan(info_b["log_ratio"]))
        assert np.array_equal(a, canonicalize(a))
        seen.add((info_a["move"], info_a["accepted"]))
        labels = a
    assert {("split", True), ("merge", True), ("split", False)} <= seen


def refinement(x, za, zb, i, j):
    """Blocks of the coarsest common refinement of x, za, zb on U = x_i ∪ x_j (numpy)."""
    u = np.flatnonzero((x == x[i]) | (x == x[j]))
    return {(x[h], za[h], zb[h]) for h in u}, u


def test_the_record_describes_the_move():
    n = 10
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    rng = np.random.default_rng(5)
    kernel = ARMKernel(fam, prior.code, prior.kernel_params(), **PLAIN)
    labels = rng.integers(0, 3, n)
    for _ in range(200):
        refs = (rng.integers(0, 4, n), rng.integers(0, 4, n))
        seed = int(rng.integers(2**63))
        new, info = kernel.move(labels, refs, seed)
        (i, j), (za, zb) = arm_select_pair(refs, seed)
        assert info["pair"] == (i, j)
        x = canonicalize(labels)
        blocks, u = refinement(x, za, zb, i, j)
        assert info["u_size"] == len(u) and info["refinement_blocks"] == len(blocks) - 2
        assert info["move"] == ("split" if x[i] == x[j] else "merge")
        assert info["k_before"] == x.max() + 1 and info["delta_k"] == new.max() - x.max()
        y = info["proposal"]
        assert (y[i] == y[j]) == (info["move"] == "merge")
        assert np.array_equal(new, y) if info["accepted"] else np.array_equal(new, x)
        assert info["log_forward"] == pytest.approx(arm_log_proposal(labels, y, fam, prior.code, prior.kernel_params(),
                                                                     (za, zb), (i, j), seed), abs=0)
        labels = new
    same = np.arange(n) % 3
    new, info = kernel.move(labels, (same, same + 1), 1)  # the same partition twice: no move
    assert info["skipped"] and np.array_equal(new, canonicalize(labels))


def test_pair_selection_is_uniform_over_the_disagreeing_pairs():
    rng = np.random.default_rng(6)
    n = 9
    for _ in range(3):
        za, zb = rng.integers(0, 3, n), rng.integers(0, 3, n)
        together_a = za[:, None] == za[None, :]
        together_b = zb[:, None] == zb[None, :]
        disagree = [(i, j) for i in range(n) for j in range(n) if i != j and together_a[i, j] != together_b[i, j]]
        counts = dict.fromkeys(disagree, 0)
        for _ in range(6000):
            (i, j), (ra, rb) = arm_select_pair((za, zb), int(rng.integers(2**63)))
            assert ra[i] == ra[j] and rb[i] != rb[j]
            assert (ra is za and rb is zb) or (ra is zb and rb is za)
            counts[(i, j)] += 1
        _, pvalue = stats.chisquare(list(counts.values()))
        assert pvalue > 1e-3
    assert arm_select_pair((np.array([0, 0, 1]), np.array([2, 2, 0])), 3) is None


def is_coarsening(fine, coarse):
    """Every block of ``fine`` lies inside one block of ``coarse``."""
    return bool(((contingency(fine, coarse) > 0).sum(axis=1) == 1).all())


@pytest.mark.parametrize("family", ["diag", "net"])
def test_synthetic_reference_is_one_split_or_merge_of_its_reference(family):
    """ARMKernel(synthetic=...): the second reference is a Jain-Neal proposal from the first --
    one split of a block (by restricted Gibbs scans) or one merge of two -- and a function of the
    first reference and the move's seed only (never of the moving chain)."""
    n = 8
    prior = PRIORS["pitman_yor"]
    fam = pack(family, n)
    rng = np.random.default_rng(7)
    kinds = {"split": 0, "merge": 0}
    for _ in range(300):
        za = canonicalize(rng.integers(0, 4, n))
        seed = np.uint64(rng.integers(2**63))
        zs = arm._synthetic_reference(za, fam, prior.code, prior.kernel_params(), seed, 2)
        again = arm._synthetic_reference(za.copy(), fam, prior.code, prior.kernel_params(), seed, 2)
        assert np.array_equal(zs, again) and np.array_equal(zs, canonicalize(zs))
        k_a, k_s = za.max() + 1, zs.max() + 1
        if k_s == k_a + 1:
            assert is_coarsening(zs, za)  # one block of za split in two, the others kept
            kinds["split"] += 1
        else:
            assert k_s == k_a - 1 and is_coarsening(za, zs)  # two blocks of za joined
            kinds["merge"] += 1
    assert min(kinds.values()) > 30


def test_focused_references_coarsen_the_references_around_the_pair():
    """The focused pair: the first reference one block, the second its block of i (or of j) against
    the rest -- coarsenings of the references that still disagree on (i, j) the way a move needs;
    moves with them split U in two (no refinement blocks moved as units) or merge along them."""
    n = 9
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    rng = np.random.default_rng(8)
    for _ in range(200):
        refs = (rng.integers(0, 4, n), rng.integers(0, 4, n))
        chosen = arm_select_pair(refs, int(rng.integers(2**63)))
        if chosen is None:
            continue
        (i, j), (za, zb) = chosen
        for isolate_i in (True, False):
            fa, fb = arm._focused(zb, i, j, isolate_i)
            assert (fa == 0).all() and fa[i] == fa[j] and fb[i] != fb[j]
            assert is_coarsening(zb, fb) and is_coarsening(za, fa) and fb.max() == 1
            assert (fb == fb[i if isolate_i else j]).sum() == (zb == zb[i if isolate_i else j]).sum()
    kernel = ARMKernel(fam, prior.code, prior.kernel_params(), synthetic=0.0, focus=1.0)
    labels = np.zeros(n, np.int64)
    seen = set()
    for _ in range(300):
        refs = (rng.integers(0, 4, n), rng.integers(0, 4, n))
        labels, info = kernel.step(labels, refs, rng)
        if info["skipped"]:
            continue
        assert info["focused"] and not info["synthetic"]
        assert info["refinement_blocks"] <= (0 if info["move"] == "split" else 2)
        seen.add((info["move"], info["accepted"]))
    assert {("split", True), ("merge", True)} <= seen


@pytest.mark.parametrize("prior_name,family,n", [("crp", "bb", 6), ("pitman_yor", "niw", 5),
                                                 ("finite_dirichlet", "net", 6)])
def test_focused_references_give_exact_moves(prior_name, family, n):
    """With focused references the forced-path probabilities from each state sum to one and the
    reported ratio is pi(y) T(x|y) / (pi(x) T(y|x)) with the same focused references."""
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    args = (fam, prior.code, prior.kernel_params())
    parts = enumerate_partitions(n)
    exact_lp = np.array([log_joint(p, *args) for p in parts])
    rng = np.random.default_rng(9)
    checked = 0
    for _ in range(3):
        (za, zb), (i, j), order_seed = random_phi(parts, rng)
        refs = arm._focused(zb, i, j, bool(rng.integers(2)))
        phi = (refs, (i, j), order_seed)
        lt, _ = matrix(parts, parts, fam, prior, phi)
        assert np.abs(np.exp(lt).sum(axis=1) - 1.0).max() < 1e-12
        reachable = np.argwhere((lt > -np.inf) & np.isfinite(exact_lp)[:, None] & np.isfinite(exact_lp)[None, :])
        for a, b in reachable[rng.choice(len(reachable), min(40, len(reachable)), replace=False)]:
            _, fwd = arm_move(parts[a], *args, refs, (i, j), int(rng.integers(2**63)), propose=parts[b],
                              order_seed=order_seed)
            want = exact_lp[b] - exact_lp[a] + lt[b, a] - lt[a, b]
            assert fwd["log_ratio"] == pytest.approx(want, abs=1e-10) if np.isfinite(want) else fwd["log_ratio"] == want
            checked += 1
    assert checked > 60


def test_the_record_of_a_move_with_synthetic_and_focused_references():
    n = 10
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    rng = np.random.default_rng(10)
    kernel = ARMKernel(fam, prior.code, prior.kernel_params(), synthetic=0.5, synthetic_scans=1, focus=0.5)
    labels = rng.integers(0, 3, n)
    counts = np.zeros((2, 2), int)
    same = np.arange(n) % 3
    for _ in range(400):
        refs = (rng.integers(0, 4, n), rng.integers(0, 4, n)) if rng.random() < 0.8 else (same, same + 1)
        seed = np.uint64(rng.integers(2**63))
        new, info = kernel.move(labels, refs, seed)
        if info["skipped"]:  # equal references and no synthetic one drawn
            assert not info["synthetic"] and np.array_equal(canonicalize(refs[0]), canonicalize(refs[1]))
            continue
        counts[int(info["synthetic"]), int(info["focused"])] += 1
        second = refs[1]
        if info["synthetic"]:
            second = arm._synthetic_reference(as_labels(refs[0], n), fam, prior.code, prior.kernel_params(), seed, 1)
        (i, j), (za, zb) = arm_select_pair((refs[0], second), seed)
        assert info["pair"] == (i, j)
        if info["focused"]:
            za, zb = arm._focused(zb, i, j, info["isolated"] == i)
        blocks, u = refinement(canonicalize(labels), za, zb, i, j)
        assert info["refinement_blocks"] == len(blocks) - 2
        assert info["log_forward"] == pytest.approx(arm_log_proposal(labels, info["proposal"], fam, prior.code,
                                                                     prior.kernel_params(), (za, zb), (i, j), seed),
                                                    abs=0)
        labels = new
    assert counts.min() > 40
