"""The aligned coupling (maximal coupling under a pairing of the two chains' blocks by overlap):
each index has exactly its own law, whatever the pairing (with a power check: a coupling that
copies the partner for chain y is caught), paired atoms agree with the largest possible
probability, and the greedy pairing pairs identical blocks. The sweep-level checks (exact Gibbs
transition by enumeration, faithfulness) are parametrized over every coupling in
tests/test_coupled_gibbs.py and tests/test_coupled_pgsm.py."""

import numba
import numpy as np
import pytest

from pymc_partitions.coupling.draws import draw_aligned
from pymc_partitions.coupling.sweep import _align


@numba.njit(cache=True)
def _joint(p, q, partner, uniforms, broken):
    """Counts of the pairs drawn by draw_aligned (or, ``broken``, by a coupling whose y index is
    the x index's partner whenever it has one: the x law is right, the y law is not)."""
    cx, cy = p.shape[0], q.shape[0]
    out = np.zeros((cx, cy))
    wp, wq = np.empty(cx), np.empty(cy)
    for r in range(uniforms.shape[0]):
        a, b = draw_aligned(p, cx, q, cy, partner, uniforms[r, 0], uniforms[r, 1], uniforms[r, 2], wp, wq)
        if broken and partner[a] >= 0:
            b = partner[a]
        out[a, b] += 1
    return out


def _case(rng, cx, cy):
    p = rng.dirichlet(np.full(cx, 0.7))
    q = rng.dirichlet(np.full(cy, 0.7))
    partner = np.full(cx, -1, np.int64)
    paired = min(cx, cy) - 1  # leave an atom of each side unpaired, and pair in a scrambled order
    partner[rng.permutation(cx)[:paired]] = rng.permutation(cy)[:paired]
    return p, q, partner


@pytest.mark.parametrize("cx,cy", [(2, 2), (4, 3), (3, 5), (6, 6)])
def test_each_index_has_its_own_law_and_paired_atoms_agree_maximally(cx, cy):
    rng = np.random.default_rng(cx * 10 + cy)
    reps = 200_000
    for _ in range(3):
        p, q, partner = _case(rng, cx, cy)
        u = rng.random((reps, 3))
        joint = _joint(p, q, partner, u, False) / reps
        se_p = np.sqrt(p * (1 - p) / reps)
        se_q = np.sqrt(q * (1 - q) / reps)
        assert np.all(np.abs(joint.sum(axis=1) - p) < 5 * se_p + 1e-12)
        assert np.all(np.abs(joint.sum(axis=0) - q) < 5 * se_q + 1e-12)
        # the paired cells carry min(p_a, q_partner(a)), the most any coupling can put there
        for a in range(cx):
            if partner[a] >= 0:
                want = min(p[a], q[partner[a]])
                got = joint[a, partner[a]]
                assert abs(got - want) < 5 * np.sqrt(want * (1 - want) / reps) + 1e-12


def test_the_marginal_check_catches_a_coupling_with_the_wrong_law_for_one_chain():
    """Power of the check above: a coupling whose y index copies the partner of x's (when it has
    one) keeps x's law and fails on y's."""
    p, q = np.array([0.7, 0.2, 0.1]), np.array([0.1, 0.3, 0.6])
    partner = np.array([0, 1, -1], np.int64)
    reps = 200_000
    u = np.random.default_rng(0).random((reps, 3))
    se_p, se_q = np.sqrt(p * (1 - p) / reps), np.sqrt(q * (1 - q) / reps)
    good = _joint(p, q, partner, u, False) / reps
    bad = _joint(p, q, partner, u, True) / reps
    assert np.all(np.abs(good.sum(axis=0) - q) < 5 * se_q)
    assert np.all(np.abs(bad.sum(axis=1) - p) < 5 * se_p)  # (x is still right)
    assert np.any(np.abs(bad.sum(axis=0) - q) > 5 * se_q)


def test_equal_laws_on_paired_atoms_always_agree():
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(5))
    perm = rng.permutation(5)
    q = np.empty(5)
    q[perm] = p  # q is p on relabelled atoms
    wp, wq = np.empty(5), np.empty(5)
    for u in rng.random((2000, 3)):
        a, b = draw_aligned(p, 5, q, 5, perm, u[0], u[1], u[2], wp, wq)
        assert b == perm[a]


def test_the_greedy_pairing_by_overlap():
    # chain x slots 0..3 (3 free), chain y slots 0..2, with active orders not the slot order
    inter = np.array([[5, 1, 0], [4, 6, 0], [0, 0, 2], [0, 0, 0]], np.int64)
    act_x = np.array([1, 0, 2, 3], np.int64)
    act_y = np.array([2, 1, 0], np.int64)
    mx, my = np.full(4, -1, np.int64), np.full(3, -1, np.int64)
    _align(inter, act_x, 3, act_y, 3, mx, my)
    # largest overlap first: (1, 1) = 6, then (0, 0) = 5 ((1, 0) = 4 is taken), then (2, 2) = 2
    assert mx.tolist() == [0, 1, 2, -1] and my.tolist() == [0, 1, 2]
    # identical blocks are paired whatever the slot numbering: a permuted contingency table
    perm = np.array([2, 0, 1])
    table = np.zeros((3, 3), np.int64)
    table[np.arange(3), perm] = [7, 3, 4]
    mx, my = np.full(3, -1, np.int64), np.full(3, -1, np.int64)
    _align(table, np.arange(3), 3, np.arange(3), 3, mx, my)
    assert mx.tolist() == perm.tolist()
