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
  chain's own current state as a reference (seed 004's window includes it) is biased.
"""

import itertools

import numpy as np
import pytest

from models import PRIORS, pack
from pymc_partitions.partition import enumerate_partitions
from pymc_partitions.samplers.arm import _order, _proposal_matrix, alternating_roles
from pymc_partitions.samplers.gibbs import log_joint

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
def model():
    prior = PRIORS["pitman_yor"]
    fam = pack("bb", N)
    parts = enumerate_partitions(N)
    b = len(parts)
    kernels = np.empty((b, b, b, b))
    for a in range(b):
        kernels[a, a] = np.eye(b)  # equal references: no move
        for c in range(a + 1, b):
            kernels[a, c] = kernels[c, a] = kernel_given(parts[a], parts[c], parts, fam, prior)
    lp = np.array([log_joint(p, fam, prior.code, prior.kernel_params()) for p in parts])
    pi = np.exp(lp - lp.max())
    return parts, pi / pi.sum(), kernels, fam, prior


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
