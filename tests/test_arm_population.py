"""ARM across chains, by exact enumeration at n = 4 (Bell(4) = 15 partitions per chain).

For every pair of reference partitions, the one-chain ARM kernel K[za, zb] is computed exactly: the
average over the pair selection (uniform over the pairs the references disagree on) and over all
24 orderings of the MH kernel built from the kernel's forced-path proposal probabilities. Then:

* the alternating scheme of :func:`alternating_roles` (the one ``pmp.ARM`` runs) leaves the
  product posterior pi^S exactly invariant: S = 3 (round robin) and S = 4 (two groups), joint
  state spaces of 15^3 and 15^4 states;
* the simultaneous-snapshot scheme (every chain moves, with references from the other chains'
  states at the start of the draw, as PyMC's population sampler would give them) is not: its
  pi^3 K differs from pi^3 by far more than rounding (power check);
* a pool of references fixed in advance (mode "frozen" after tuning) is invariant, and using the
  chain's own current state as a reference (seed 004's window includes it) is biased;
* with synthetic references (a Jain-Neal proposal from a passive state, at the law the code
  draws them) and pair-focused references, the alternating scheme still leaves pi^S invariant;
  the same options reading the moving chain's state do not (power check); and a population run
  through ``ARMKernel.step`` with the options samples the product posterior (Monte Carlo).
"""

import itertools

import numpy as np
import pytest

from enumeration import check_against, ess, tv_tolerance
from models import PRIORS, pack
from pymc_partitions.partition import canonicalize, enumerate_partitions
from pymc_partitions.samplers.arm import _focused, _order, _proposal_matrix, _synthetic_reference, alternating_roles
from pymc_partitions.samplers.arm import ARMKernel
from pymc_partitions.samplers.gibbs import GibbsKernel, log_joint
from test_pgsm_enumeration import posteriors

N = 4


def mh_matrix(lt, lp):
    """The MH transition matrix of one phi from log T (forced paths) and log pi."""
    b = lt.shape[0]
    with np.errstate(invalid="ignore"):
        r = (lp[None, :] - lp[:, None]) + (lt.T - lt)
    r = np.where(lt.T == -np.inf, -np.inf, r)
    m = np.exp(lt) * np.exp(np.minimum(r, 0.0))
    np.fill_diagonal(m, 0.0)
    m[np.arange(b), np.arange(b)] = 1.0 - m.sum(axis=1)
    return m


def kernel_given(za, zb, parts, fam, prior):
    """K[za, zb]: the pair uniform over the (unordered) pairs the references disagree on, oriented
    as the move needs; the ranks uniform over all orderings. (The move is symmetric in the order of
    i and j; test_pair_order_does_not_matter checks it.)"""
    together_a = za[:, None] == za[None, :]
    together_b = zb[:, None] == zb[None, :]
    pairs = [(i, j) for i in range(N) for j in range(i + 1, N) if together_a[i, j] != together_b[i, j]]
    orders = [(np.array(p), np.argsort(p)) for p in itertools.permutations(range(N))]
    k = np.zeros((len(parts), len(parts)))
    for i, j in pairs:
        ra, rb = (za, zb) if together_a[i, j] else (zb, za)
        for perm, rank in orders:
            lt, lp = _proposal_matrix(parts, parts, fam, prior.code, prior.kernel_params(), ra, rb, (i, j), perm, rank)
            k += mh_matrix(lt, lp)
    return k / (len(pairs) * len(orders))


@pytest.fixture(scope="module")
def setting():
    """(partitions, exact posterior, family, prior) at n = N."""
    prior = PRIORS["pitman_yor"]
    fam = pack("bb", N)
    parts = enumerate_partitions(N)
    lp = np.array([log_joint(p, fam, prior.code, prior.kernel_params()) for p in parts])
    pi = np.exp(lp - lp.max())
    return parts, pi / pi.sum(), fam, prior


@pytest.fixture(scope="module")
def model(setting):
    parts, pi, fam, prior = setting
    b = len(parts)
    kernels = np.empty((b, b, b, b))
    for a in range(b):
        kernels[a, a] = np.eye(b)  # equal references: no move
        for c in range(a + 1, b):
            kernels[a, c] = kernels[c, a] = kernel_given(parts[a], parts[c], parts, fam, prior)
    return parts, pi, kernels, fam, prior


LETTERS = "abcdefgh"


def move_chain(joint, c, p, q, kernels):
    """Chain c moves by K[x_p, x_q] (p, q are other axes of the joint law, left unchanged)."""
    s = joint.ndim
    src = LETTERS[:s]
    out = src.replace(src[c], "z")
    return np.einsum(f"{src},{src[p]}{src[q]}{src[c]}z->{out}", joint, kernels)


def alternating_draw(joint, draw, kernels):
    """One draw of the alternating scheme, roles from the function pmp.ARM uses; an active chain
    takes two passive chains, uniformly. The passive chains do not move, so the active chains'
    kernels (which read only passive axes) apply one after the other."""
    active, passive = alternating_roles(joint.ndim, draw)
    pairs = list(itertools.combinations(passive, 2))
    for c in active:
        joint = sum(move_chain(joint, c, p, q, kernels) for p, q in pairs) / len(pairs)
    return joint


def product(pi, s):
    out = pi
    for _ in range(s - 1):
        out = np.multiply.outer(out, pi)
    return out


def tv(a, b):
    return 0.5 * float(np.abs(a - b).sum())


def test_each_kernel_given_its_references_is_a_stochastic_pi_invariant_matrix(model):
    _, pi, kernels, _, _ = model
    assert np.abs(kernels.sum(axis=-1) - 1.0).max() < 1e-12 and kernels.min() > -1e-15
    assert np.abs(np.einsum("x,abxy->aby", pi, kernels) - pi).max() < 1e-14
    assert (kernels[0, 5] != np.eye(len(pi))).any()  # it moves


@pytest.mark.parametrize("n_chains", [3, 4])
def test_alternating_scheme_keeps_the_product_posterior_invariant(model, n_chains):
    parts, pi, kernels, _, _ = model
    target = product(pi, n_chains)
    joint = target
    for draw in range(n_chains if n_chains == 3 else 2):
        moved = alternating_draw(target, draw, kernels)
        assert tv(moved, target) < 1e-12
        assert tv(moved, target) >= 0
        joint = alternating_draw(joint, draw, kernels)
    assert tv(joint, target) < 1e-12
    # the scheme moves chains that disagree, and cannot move chains that all agree
    for state, moves in (((0, 5, 9, 14)[:n_chains], True), ((3,) * n_chains, False)):
        start = np.zeros_like(target)
        start[state] = 1.0
        spread = alternating_draw(alternating_draw(start, 0, kernels), 1, kernels)
        assert ((spread > 0).sum() > 1) == moves


def test_simultaneous_snapshot_scheme_is_detectably_wrong(model):
    """Every chain moving at once with the others' snapshot states as references: pi^3 is not
    invariant, by far more than rounding (the exact scheme's deviation is below 1e-12)."""
    _, pi, kernels, _, _ = model
    target = product(pi, 3)
    moved = np.einsum("abc,bcad,acbe,abcf->def", target, kernels, kernels, kernels)
    assert abs(moved.sum() - 1.0) < 1e-12
    assert tv(moved, target) > 0.02
    # each chain's marginal is still pi (its references are pi-distributed and independent of it):
    # what breaks is the joint law
    assert np.abs(moved.sum(axis=(1, 2)) - pi).max() < 1e-12


def test_frozen_pool_is_invariant_and_the_current_state_as_reference_is_not(model):
    parts, pi, kernels, _, _ = model
    rng = np.random.default_rng(0)
    pool = rng.choice(len(parts), 6, replace=False)
    frozen = np.mean([kernels[a, b] for a in pool for b in pool if a != b], axis=0)
    assert np.abs(pi @ frozen - pi).max() < 1e-14
    # seed 004 draws one reference from the chain's own history, its current state included:
    # with the current state and a stationary second reference the chain leaves pi
    own = np.einsum("xwxy,w->xy", kernels, pi)
    assert np.abs(own.sum(axis=1) - 1).max() < 1e-12
    assert tv(pi @ own, pi) > 0.02


def test_pair_order_does_not_matter(model):
    """The move treats (i, j) and (j, i) alike, so the enumeration may use unordered pairs."""
    parts, _, _, fam, prior = model
    rng = np.random.default_rng(1)
    checked = 0
    while checked < 5:
        za, zb = parts[rng.integers(len(parts))], parts[rng.integers(len(parts))]
        i, j = rng.choice(N, 2, replace=False)
        if za[i] != za[j] or zb[i] == zb[j]:
            continue
        perm, rank = _order(N, np.uint64(rng.integers(2**63)))
        one = _proposal_matrix(parts, parts, fam, prior.code, prior.kernel_params(), za, zb, (i, j), perm, rank)[0]
        two = _proposal_matrix(parts, parts, fam, prior.code, prior.kernel_params(), za, zb, (j, i), perm, rank)[0]
        assert np.array_equal(one == -np.inf, two == -np.inf)
        np.testing.assert_allclose(np.exp(one), np.exp(two), rtol=1e-13, atol=1e-15)
        checked += 1


# ----------------------------------------------------------------------------- synthetic and focused references

SYNTHETIC, FOCUS, SCANS = 0.5, 0.5, 1
SOME_ORDERS = [(np.array(p), np.argsort(p)) for p in itertools.permutations(range(N))][::8]  # 3 of the 24


def focused_kernel_given(za, zb, parts, fam, prior, focus_of=None):
    """The kernel given references (za, zb) with pair-focused references with probability FOCUS (the
    two sides by a fair coin), over 3 fixed orderings (each ordering's kernel is an MH kernel, so
    any mixture of them is a valid kernel to test invariance with). ``focus_of(x, zb, i, j)``
    (power check) replaces the focusing by one that reads the moving state x."""
    together_a = za[:, None] == za[None, :]
    together_b = zb[:, None] == zb[None, :]
    pairs = [(i, j) for i in range(N) for j in range(i + 1, N) if together_a[i, j] != together_b[i, j]]
    args = (fam, prior.code, prior.kernel_params())
    k = np.zeros((len(parts), len(parts)))
    for i, j in pairs:
        ra, rb = (za, zb) if together_a[i, j] else (zb, za)
        for perm, rank in SOME_ORDERS:
            k += (1 - FOCUS) * mh_matrix(*_proposal_matrix(parts, parts, *args, ra, rb, (i, j), perm, rank))
            for isolate_i in (True, False):
                if focus_of is None:
                    fa, fb = _focused(rb, i, j, isolate_i)
                    k += FOCUS / 2 * mh_matrix(*_proposal_matrix(parts, parts, *args, fa, fb, (i, j), perm, rank))
                    continue
                for x in range(len(parts)):  # references read from the moving state: one row at a time
                    fa, fb = focus_of(parts[x], rb, i, j)
                    k[x] += FOCUS / 2 * mh_matrix(*_proposal_matrix(parts, parts, *args, fa, fb, (i, j), perm,
                                                                    rank))[x]
    return k / (len(pairs) * len(SOME_ORDERS))


def synthetic_law(parts, fam, prior, draws=300):
    """Q[a, s]: the frequency with which ARMKernel's synthetic reference from state a is state s,
    over ``draws`` seeds (the code's own function; any law Q gives an invariant kernel, since
    the synthetic reference reads only the passive state)."""
    index = {tuple(p): b for b, p in enumerate(parts)}
    q = np.zeros((len(parts), len(parts)))
    rng = np.random.default_rng(12)
    for a, za in enumerate(parts):
        for _ in range(draws):
            zs = _synthetic_reference(za, fam, prior.code, prior.kernel_params(), np.uint64(rng.integers(2**63)), SCANS)
            q[a, index[tuple(zs)]] += 1
    assert (np.diagonal(q) == 0).all()  # a synthetic reference always differs from its source
    return q / draws


@pytest.fixture(scope="module")
def options_model(setting):
    """K[za, zb] of ARM with synthetic (probability SYNTHETIC) and focused (FOCUS) references,
    for every pair of passive states; and the parts to build the wrong variants."""
    parts, pi, fam, prior = setting
    b = len(parts)
    focused = np.empty((b, b, b, b))
    for a in range(b):
        focused[a, a] = np.eye(b)
        for c in range(a + 1, b):
            focused[a, c] = focused[c, a] = focused_kernel_given(parts[a], parts[c], parts, fam, prior)
    q = synthetic_law(parts, fam, prior)
    from_a = np.einsum("as,asxy->axy", q, focused)  # the synthetic reference from the first passive state
    kernels = (1 - SYNTHETIC) * focused + SYNTHETIC * from_a[:, None]
    return kernels, focused, q


def test_options_kernel_given_its_references_is_pi_invariant(setting, options_model):
    parts, pi, _, _ = setting
    kernels, _, q = options_model
    assert np.abs(kernels.sum(axis=-1) - 1.0).max() < 1e-12 and kernels.min() > -1e-15
    assert np.abs(np.einsum("x,abxy->aby", pi, kernels) - pi).max() < 1e-14
    # equal passive states: plain ARM cannot move, the synthetic reference still can
    assert (kernels[3, 3] != np.eye(len(pi))).any()
    assert (q > 0).sum(axis=1).min() >= 2  # splits and merges of each state with 2 blocks or more


@pytest.mark.parametrize("n_chains", [3, 4])
def test_alternating_scheme_with_the_options_keeps_the_product_posterior_invariant(setting, options_model, n_chains):
    _, pi, _, _ = setting
    kernels, _, _ = options_model
    target = product(pi, n_chains)
    joint = target
    for draw in range(n_chains if n_chains == 3 else 2):
        assert tv(alternating_draw(target, draw, kernels), target) < 1e-12
        joint = alternating_draw(joint, draw, kernels)
    assert tv(joint, target) < 1e-12
    for c in range(n_chains):  # and so each chain's marginal
        others = tuple(a for a in range(n_chains) if a != c)
        assert np.abs(joint.sum(axis=others) - pi).max() < 1e-13


def test_references_read_from_the_moving_chain_are_detectably_wrong(setting, options_model):
    """Power: the same options with the synthetic reference computed from the moving chain's state
    (in place of a passive chain's), or the focusing reading the moving state, leave pi (and so
    pi^S): exact deviations of 1e-3 or more (measured 0.006-0.05 in total variation after one
    move from pi), where the exact kernels' is below 1e-14."""
    parts, pi, fam, prior = setting
    _, focused, q = options_model
    b = len(parts)
    # synthetic reference from the moving state x: references (x, s), s ~ Q(. | x)
    own = np.einsum("xs,xsxy->xy", q, focused)
    bad = (1 - SYNTHETIC) * focused + SYNTHETIC * own[None, None]
    assert tv(np.einsum("x,abxy->aby", pi, bad)[0, 5], pi) > 1e-3
    # the first passive reference kept, the synthetic one from the moving state: references (a, s(x))
    mixed = np.einsum("xs,asxy->axy", q, focused)
    bad = (1 - SYNTHETIC) * focused + SYNTHETIC * mixed[:, None]
    worst = max(tv(np.einsum("x,xy->y", pi, bad[a, c]), pi) for a in range(b) for c in range(b))
    assert worst > 1e-3
    three = product(pi, 3)
    assert tv(alternating_draw(three, 0, bad), three) > 1e-3

    def reads_x(x, zb, i, j):  # zb's block of i cut down to the moving state's block of i
        fb = np.where((zb == zb[i]) & (x == x[i]), 0, 1)
        return np.zeros_like(zb), fb

    k = focused_kernel_given(parts[0], parts[5], parts, fam, prior, focus_of=reads_x)
    assert np.abs(k.sum(axis=1) - 1).max() < 1e-12
    assert tv(pi @ k, pi) > 1e-3
    assert tv(pi @ focused[0, 5], pi) < 1e-14


def test_population_with_the_options_samples_the_product_posterior():
    """Monte Carlo through the code a population runs (ARMKernel.step with synthetic and focused
    references, the alternating roles, Gibbs sweeps), 3 chains at n = 4: each chain's marginal and
    the joint law of two chains match the enumerated posterior (and each chain's marginal is far
    from a perturbed model's)."""
    prior = PRIORS["crp"]
    fam = pack("bb", N)
    parts, exact, wrong = posteriors(prior, fam, N)
    gibbs = GibbsKernel(fam, prior.code, prior.kernel_params())
    kernel = ARMKernel(fam, prior.code, prior.kernel_params(), synthetic=0.5, synthetic_scans=1, focus=0.5)
    rng = np.random.default_rng(13)
    chains, draws = 3, 12000
    states = [np.zeros(N, np.int64) for _ in range(chains)]
    out = np.empty((draws, chains, N), np.int64)
    made = np.zeros(3, int)  # moves: synthetic, focused, accepted
    for t in range(draws):
        active, passive = alternating_roles(chains, t)
        for c in active:
            a, b = rng.choice(passive, 2, replace=False)
            states[c], info = kernel.step(states[c], (states[a], states[b]), rng)
            made += (info["synthetic"], info["focused"], info["accepted"])
        for c in range(chains):
            states[c] = gibbs.step(states[c], rng)[0]
        out[t] = states
    assert made.min() > 1000
    out = out[200:]
    index = {tuple(p): b for b, p in enumerate(parts)}
    idx = np.array([[index[tuple(canonicalize(x))] for x in row] for row in out])
    traces = []
    for c in range(chains):
        trace = out[:, c].max(axis=1)
        traces.append(trace)
        check_against(parts, exact, out[:, c], [trace], wrong=wrong)
    n_eff = min(len(out), min(ess(t) for t in traces))
    pair_law = np.outer(exact, exact).ravel()
    for c, d in ((0, 1), (1, 2)):
        freq = np.bincount(idx[:, c] * len(parts) + idx[:, d], minlength=len(pair_law)) / len(idx)
        assert tv(freq, pair_law) < tv_tolerance(pair_law, n_eff, 2.0)
