"""Tests of the compiled exact transport solver against POT's ``ot.emd``."""

import numba
import numpy as np
import pytest

from pymc_partitions.coupling.transport import (
    _strongly_feasible,
    make_workspace,
    transport_plan,
    transport_plan_info,
    transport_plan_pot,
    transport_plan_ws,
    workspace_sizes,
)


# ---------------------------------------------------------------------------------------
# helpers


def solve(a, b, cost, pad=0):
    """Run transport_plan_info on (optionally padded) copies; return dense plan, count, status."""
    na, nb = len(a), len(b)
    ap = np.concatenate([a, np.full(pad, 7.0)])  # entries past na / nb must be ignored
    bp = np.concatenate([b, np.full(pad, 7.0)])
    cp = np.full((na + pad, nb + pad), -100.0)
    cp[:na, :nb] = cost
    rows = np.full(na + nb + pad, -1, np.int64)
    cols = np.full(na + nb + pad, -1, np.int64)
    mass = np.full(na + nb + pad, np.nan)
    iw, fw = make_workspace(na, nb)
    count, pivots, status = transport_plan_info(ap, na, bp, nb, cp, rows, cols, mass, iw, fw)
    plan = np.zeros((na, nb))
    for r, c, m in zip(rows[:count], cols[:count], mass[:count]):
        assert 0 <= r < na and 0 <= c < nb
        assert plan[r, c] == 0.0, "cell listed twice"
        plan[r, c] = m
    return plan, count, status, mass[:count]


def is_forest(rows, cols, na):
    """True if the support graph (rows and columns as nodes) has no cycle."""
    parent = list(range(na + 1000))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r, c in zip(rows, cols):
        x, y = find(r), find(na + c)
        if x == y:
            return False
        parent[x] = y
    return True


def check_against_pot(a, b, cost, pad=0):
    na, nb = len(a), len(b)
    plan, count, status, m = solve(a, b, cost, pad)
    assert status == 0
    ref = transport_plan_pot(a, b, cost)
    an = a / a.sum()
    bn = b / b.sum()
    c_ours = float((plan * cost).sum())
    c_ref = float((ref * cost).sum())
    assert abs(c_ours - c_ref) <= 1e-9 * max(1.0, abs(c_ref)), (c_ours, c_ref)
    np.testing.assert_allclose(plan.sum(axis=1), an, rtol=0, atol=1e-10)
    np.testing.assert_allclose(plan.sum(axis=0), bn, rtol=0, atol=1e-10)
    assert np.all(m > 0)
    assert count <= na + nb - 1
    assert np.all(plan[a <= 0, :] == 0) and np.all(plan[:, b <= 0] == 0)
    rr, cc = np.nonzero(plan)
    assert is_forest(rr, cc, na), "support of a basic solution must be a forest"
    return plan


def random_masses(rng, n, p_zero=0.25):
    w = rng.random(n) ** rng.choice([1.0, 3.0])
    w[rng.random(n) < p_zero] = 0.0
    if w.sum() == 0:
        w[rng.integers(n)] = 1.0
    return w / w.sum()


def hamming_cost(rng, na, nb):
    """2 (s_i + t_j - 2 n_ij) from a random contingency table, whose last row and column
    are an empty 'new block'."""
    n = np.zeros((na, nb))
    if na > 1 and nb > 1:
        shape = (na - 1, nb - 1)
        n[:-1, :-1] = rng.integers(0, 4, size=shape) * (rng.random(shape) < 0.4)
    s = n.sum(axis=1)
    t = n.sum(axis=0)
    return 2.0 * (s[:, None] + t[None, :] - 2.0 * n)


# ---------------------------------------------------------------------------------------
# random problems against POT


@pytest.mark.parametrize("kind", ["int_ties", "hamming", "continuous", "zero_one"])
def test_random_problems_match_pot(kind):
    rng = np.random.default_rng(["int_ties", "hamming", "continuous", "zero_one"].index(kind))
    for it in range(250):
        na = int(rng.integers(1, 41))
        nb = int(rng.integers(1, 41))
        if kind == "int_ties":
            cost = rng.integers(0, 4, size=(na, nb)).astype(float)
        elif kind == "hamming":
            cost = hamming_cost(rng, na, nb)
        elif kind == "continuous":
            cost = rng.normal(size=(na, nb)) * 10.0 ** rng.integers(-3, 4)
        else:
            cost = (rng.random((na, nb)) < 0.5).astype(float)
        a = random_masses(rng, na)
        b = a.copy() if (na == nb and it % 3 == 0) else random_masses(rng, nb)
        check_against_pot(a, b, cost, pad=it % 3)


def test_degenerate_masses_match_pot():
    """Masses on a coarse grid (many equal partial sums) with 0/1/2 costs: maximal
    degeneracy, also for sizes of a few hundred."""
    rng = np.random.default_rng(7)
    for it in range(300):
        big = it % 60 == 0
        na = int(rng.integers(150, 260)) if big else int(rng.integers(1, 30))
        if it % 2 == 0:
            nb = na
        else:
            nb = int(rng.integers(150, 260)) if big else int(rng.integers(1, 30))
        q = int(rng.integers(1, 4))
        a = rng.integers(0, q + 1, na).astype(float)
        b = a.copy() if (it % 2 == 0) else rng.integers(0, q + 1, nb).astype(float)
        if a.sum() == 0:
            a[0] = 1.0
        if b.sum() == 0:
            b[-1] = 1.0
        cost = rng.integers(0, 3, size=(na, nb)).astype(float)
        # unnormalised masses with different totals: the plan uses a/sum(a), b/sum(b)
        check_against_pot(a, b, cost)


def test_final_basis_is_strongly_feasible():
    """The anti-cycling rule keeps the basis tree strongly feasible (zero-flow cells point
    towards the root); check it on the final tree of highly degenerate problems."""
    rng = np.random.default_rng(5)
    for it in range(400):
        na = int(rng.integers(2, 35))
        nb = na if it % 2 == 0 else int(rng.integers(2, 35))
        a = rng.integers(1, 4, na).astype(float)
        b = a.copy() if it % 2 == 0 else rng.integers(1, 4, nb).astype(float)
        cost = hamming_cost(rng, na, nb) if it % 3 == 0 else rng.integers(0, 3, (na, nb)) * 1.0
        rows = np.empty(na + nb, np.int64)
        cols = np.empty(na + nb, np.int64)
        mass = np.empty(na + nb)
        iw, fw = make_workspace(na, nb)
        count, pivots, status = transport_plan_info(a, na, b, nb, cost, rows, cols, mass, iw, fw)
        assert status == 0
        assert _strongly_feasible(na, nb, iw, fw, 0.0)
        ref = transport_plan_pot(a, b, cost)
        ours = float((mass[:count] * cost[rows[:count], cols[:count]]).sum())
        assert abs(ours - (ref * cost).sum()) <= 1e-9 * max(1.0, (ref * cost).sum())


def test_tiny_masses():
    rng = np.random.default_rng(3)
    for _ in range(100):
        na, nb = int(rng.integers(2, 15)), int(rng.integers(2, 15))
        a = random_masses(rng, na)
        b = random_masses(rng, nb)
        a[rng.integers(na)] = 10.0 ** rng.uniform(-20, -9)
        b[rng.integers(nb)] = 10.0 ** rng.uniform(-20, -9)
        cost = hamming_cost(rng, na, nb)
        plan, count, status, _ = solve(a, b, cost)
        assert status == 0
        ref = transport_plan_pot(a, b, cost)
        assert abs((plan * cost).sum() - (ref * cost).sum()) <= 1e-9 * max(1.0, (ref * cost).sum())
        np.testing.assert_allclose(plan.sum(axis=1), a / a.sum(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(plan.sum(axis=0), b / b.sum(), rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------
# degenerate special cases


@pytest.mark.parametrize("n", [1, 2, 3, 7, 25, 60])
def test_equal_marginals_zero_diagonal_is_diagonal(n):
    rng = np.random.default_rng(n)
    for a in [np.full(n, 1.0 / n), random_masses(rng, n, p_zero=0.3)]:
        cost = 1.0 + rng.integers(0, 3, size=(n, n)).astype(float)
        np.fill_diagonal(cost, 0.0)
        plan = check_against_pot(a, a.copy(), cost)
        np.testing.assert_array_equal(plan, np.diag(np.diag(plan)))
        np.testing.assert_allclose(np.diag(plan), a / a.sum(), rtol=0, atol=1e-15)
        assert (plan * cost).sum() == 0.0


@pytest.mark.parametrize("n", [2, 5, 30])
def test_permuted_identity(n):
    rng = np.random.default_rng(n)
    perm = rng.permutation(n)
    a = random_masses(rng, n, p_zero=0.0)
    b = np.empty(n)
    b[perm] = a
    cost = np.ones((n, n))
    cost[np.arange(n), perm] = 0.0
    plan = check_against_pot(a, b, cost)
    expected = np.zeros((n, n))
    expected[np.arange(n), perm] = a
    np.testing.assert_allclose(plan, expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("na,nb", [(1, 1), (3, 3), (12, 5), (5, 12), (40, 40)])
def test_all_costs_equal(na, nb):
    rng = np.random.default_rng(na * 100 + nb)
    a = random_masses(rng, na)
    b = random_masses(rng, nb)
    plan = check_against_pot(a, b, np.full((na, nb), 3.0))
    assert (plan * 3.0).sum() == pytest.approx(3.0, abs=1e-12)
    plan = check_against_pot(a, b, np.zeros((na, nb)))


@pytest.mark.parametrize("n", [1, 2, 9])
def test_single_row_and_single_column(n):
    rng = np.random.default_rng(n)
    b = random_masses(rng, n)
    cost = rng.integers(0, 5, size=(1, n)).astype(float)
    plan = check_against_pot(np.array([2.5]), b, cost)
    np.testing.assert_allclose(plan[0], b, rtol=0, atol=1e-15)
    plan = check_against_pot(b, np.array([0.5]), cost.T)
    np.testing.assert_allclose(plan[:, 0], b, rtol=0, atol=1e-15)
    # one positive row among zero rows
    a = np.zeros(4)
    a[2] = 1.0
    plan = check_against_pot(a, b, rng.random((4, n)))
    np.testing.assert_allclose(plan[2], b, rtol=0, atol=1e-15)


def test_masses_with_zeros_and_new_block():
    # zero-mass rows/columns have the cheapest costs: they must still get nothing
    a = np.array([0.0, 0.5, 0.0, 0.5, 0.0])
    b = np.array([0.25, 0.0, 0.25, 0.5])
    cost = np.ones((5, 4))
    cost[[0, 2, 4], :] = 0.0
    cost[:, 1] = 0.0
    cost[1, 0] = 0.5
    plan = check_against_pot(a, b, cost)
    assert plan[[0, 2, 4]].sum() == 0.0 and plan[:, 1].sum() == 0.0


def test_no_mass_returns_zero():
    rows = np.empty(6, np.int64)
    cols = np.empty(6, np.int64)
    mass = np.empty(6)
    cost = np.zeros((3, 3))
    assert transport_plan(np.zeros(3), 3, np.ones(3), 3, cost, rows, cols, mass) == 0
    b = np.array([0.0, -1.0, 0.0])
    assert transport_plan(np.ones(3), 3, b, 3, cost, rows, cols, mass) == 0
    iw, fw = make_workspace(3, 3)
    info = transport_plan_info(np.zeros(3), 3, np.ones(3), 3, cost, rows, cols, mass, iw, fw)
    assert info[0] == 0 and info[2] == 2


def test_short_arrays_are_refused_without_exception():
    iw, fw = make_workspace(2, 2)
    rows = np.empty(6, np.int64)
    cols = np.empty(6, np.int64)
    mass = np.empty(6)
    a = np.full(3, 1 / 3)
    count, _, status = transport_plan_info(a, 3, a, 3, np.zeros((3, 3)), rows, cols, mass, iw, fw)
    assert (count, status) == (0, 4)
    iw, fw = make_workspace(3, 3)
    count, _, status = transport_plan_info(a, 3, a, 3, np.zeros((3, 2)), rows, cols, mass, iw, fw)
    assert (count, status) == (0, 4)


def test_workspace_reuse_across_sizes():
    rng = np.random.default_rng(11)
    iw, fw = make_workspace(40, 40)
    ni, nf = workspace_sizes(40, 40)
    assert iw.size == ni and fw.size == nf
    rows = np.empty(80, np.int64)
    cols = np.empty(80, np.int64)
    mass = np.empty(80)
    big_cost = np.full((40, 40), -1.0)
    for _ in range(50):
        na, nb = int(rng.integers(1, 41)), int(rng.integers(1, 41))
        a = random_masses(rng, na)
        b = random_masses(rng, nb)
        cost = hamming_cost(rng, na, nb)
        big_cost[:] = -1.0
        big_cost[:na, :nb] = cost
        count = transport_plan_ws(a, na, b, nb, big_cost, rows, cols, mass, iw, fw)
        plan = np.zeros((na, nb))
        plan[rows[:count], cols[:count]] = mass[:count]
        ref = transport_plan_pot(a, b, cost)
        assert abs((plan * cost).sum() - (ref * cost).sum()) <= 1e-9 * max(1.0, (ref * cost).sum())
        np.testing.assert_allclose(plan.sum(axis=1), a, rtol=0, atol=1e-10)
        np.testing.assert_allclose(plan.sum(axis=0), b, rtol=0, atol=1e-10)


def test_pot_reference_refuses_non_optimal():
    rng = np.random.default_rng(0)
    a, b, cost = rng.random(30), rng.random(30), rng.random((30, 30))
    with pytest.raises(RuntimeError):
        transport_plan_pot(a, b, cost, num_iter_max=2)


# ---------------------------------------------------------------------------------------
# called from jitted code


@numba.njit
def _jitted_batch(A, B, C, NA, NB, use_ws):
    nprob, kmax = A.shape
    plans = np.zeros((nprob, kmax, kmax))
    counts = np.zeros(nprob, dtype=np.int64)
    rows = np.empty(2 * kmax, dtype=np.int64)
    cols = np.empty(2 * kmax, dtype=np.int64)
    mass = np.empty(2 * kmax)
    iw, fw = make_workspace(kmax, kmax)
    for p in range(nprob):
        na = NA[p]
        nb = NB[p]
        if use_ws:
            count = transport_plan_ws(A[p], na, B[p], nb, C[p], rows, cols, mass, iw, fw)
        else:
            count = transport_plan(A[p], na, B[p], nb, C[p], rows, cols, mass)
        counts[p] = count
        for t in range(count):
            plans[p, rows[t], cols[t]] += mass[t]
    return plans, counts


@pytest.mark.parametrize("use_ws", [True, False])
def test_called_from_jitted_loop(use_ws):
    rng = np.random.default_rng(21 + use_ws)
    nprob, kmax = 1000, 12
    A = np.zeros((nprob, kmax))
    B = np.zeros((nprob, kmax))
    C = np.zeros((nprob, kmax, kmax))
    NA = rng.integers(1, kmax + 1, nprob)
    NB = rng.integers(1, kmax + 1, nprob)
    for p in range(nprob):
        na, nb = NA[p], NB[p]
        A[p, :na] = random_masses(rng, na)
        B[p, :nb] = A[p, :nb] if (na == nb and p % 4 == 0) else random_masses(rng, nb)
        C[p, :na, :nb] = hamming_cost(rng, na, nb)
    plans, counts = _jitted_batch(A, B, C, NA, NB, use_ws)
    for p in range(nprob):
        na, nb = NA[p], NB[p]
        plan = plans[p, :na, :nb]
        assert plans[p].sum() == pytest.approx(1.0, abs=1e-12)
        assert counts[p] <= na + nb - 1
        ref = transport_plan_pot(A[p, :na], B[p, :nb], C[p, :na, :nb])
        cost = C[p, :na, :nb]
        assert abs((plan * cost).sum() - (ref * cost).sum()) <= 1e-9 * max(1.0, (ref * cost).sum())
        np.testing.assert_allclose(plan.sum(axis=1), A[p, :na], rtol=0, atol=1e-10)
        np.testing.assert_allclose(plan.sum(axis=0), B[p, :nb], rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------------------
# nearly equal marginals: the common case of two close chains in the coupled sampler

# Saved by the coupled Gibbs sampler (two normalised Gibbs conditionals computed in
# different orders, equal up to ~1e-14; entries past index 4 are garbage). The earlier
# float-flow version with a 1e-14 tie tolerance returned status 3 and no plan.
_SAMPLER_P = [0.3913085560220498, 0.04994285389955173, 0.28315955217548083,
              0.2755890379029178, -6.355781182086616, 0.2831975317341311,
              4.64888777907184e-310, 4.6488867469118e-310]
_SAMPLER_Q = [0.39130855602206166, 0.04994285389955074, 0.2831595521754752,
              0.27558903790291234, 0.04862982385523449, 0.28319753173413126,
              2.446496913283774e-296, 3.0966136262904634e-282]
_SAMPLER_COST = [
    [0.0, 4.0, 2.0, 1.0, 1.0, 1.0, 3.752093494654992e+199, 4.968449768787373e+180],
    [4.0, 0.0, 4.0, 3.0, 1.0, 1.0, 1.1285202865804863e+277, 3.6842047719410177e+180],
    [2.0, 4.0, 0.0, 1.0, 1.0, 1.0, 1.7312575040177735e+185, 1.144487848408671e+243],
    [1.0, 3.0, 1.0, 0.0, 2.0, 1.0, 4.2725569904163475e+180, 1.2862455246608194e+248],
    [1.0, 1.0, 1.0, 2.0, 0.0, 1.0, 5.824714872028773e+257, 2.135228101689133e+185],
    [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 4.161932790759802e+199, 1.5076527959385556e+214],
    [4.238942916787577e+175, 1.5553984060619707e+161, 2.3163399257211256e-152,
     3.3699032691618745e+30, 9724899708414594.0, 9.926786970111975e+247,
     4.238942916776229e+175, 3.607058163875155e-85],
    [5.327511303663913e+233, 5.2987481108728635e+180, 1.3265551019524164e-258,
     6.64234389854007e+246, 1.2869830845166223e+247, 2.465983939130852e-154,
     8.786452778814951e+228, 8.808737050368358e+228],
]


def check_close_to_pot(a, b, cost, pad=0, rng=None):
    """Solve with garbage past na / nb; status 0, POT's optimal cost to 1e-9 relative (1e-12
    absolute near 0), marginals within 1e-10, a basic plan. Returns the dense plan."""
    na, nb = len(a), len(b)
    if rng is None:
        rng = np.random.default_rng(0)
    ap = np.concatenate([a, rng.normal(size=pad) * 10.0])
    bp = np.concatenate([b, rng.normal(size=pad) * 10.0])
    cp = rng.normal(size=(na + pad, nb + pad)) * 1e6
    cp[:na, :nb] = cost
    rows = np.full(na + nb + pad, -1, np.int64)
    cols = np.full(na + nb + pad, -1, np.int64)
    mass = np.full(na + nb + pad, np.nan)
    iw, fw = make_workspace(na, nb)
    count, pivots, status = transport_plan_info(ap, na, bp, nb, cp, rows, cols, mass, iw, fw)
    assert status == 0, (status, a, b, cost)
    assert 0 < count <= na + nb - 1
    assert np.all(mass[:count] > 0)
    plan = np.zeros((na, nb))
    for r, c, m in zip(rows[:count], cols[:count], mass[:count]):
        assert 0 <= r < na and 0 <= c < nb and plan[r, c] == 0.0
        plan[r, c] = m
    assert is_forest(rows[:count], cols[:count], na)
    ref = transport_plan_pot(a, b, cost)
    c_ours = float((plan * cost).sum())
    c_ref = float((ref * cost).sum())
    assert abs(c_ours - c_ref) <= max(1e-9 * abs(c_ref), 1e-12), (c_ours, c_ref)
    np.testing.assert_allclose(plan.sum(axis=1), a / a.sum(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(plan.sum(axis=0), b / b.sum(), rtol=0, atol=1e-10)
    assert np.all(plan[a <= 0, :] == 0) and np.all(plan[:, b <= 0] == 0)
    return plan


def test_sampler_case_nearly_equal_marginals():
    p = np.array(_SAMPLER_P)
    q = np.array(_SAMPLER_Q)
    cost = np.array(_SAMPLER_COST)
    mx = my = 4
    rows = np.zeros(20, np.int64)
    cols = np.zeros(20, np.int64)
    mass = np.zeros(20)
    iw, fw = make_workspace(mx, my)
    count, pivots, status = transport_plan_info(p, mx, q, my, cost, rows, cols, mass, iw, fw)
    assert status == 0 and count > 0
    plan = np.zeros((mx, my))
    plan[rows[:count], cols[:count]] = mass[:count]
    np.testing.assert_allclose(plan.sum(axis=1), p[:mx] / p[:mx].sum(), rtol=0, atol=1e-15)
    np.testing.assert_allclose(plan.sum(axis=0), q[:my] / q[:my].sum(), rtol=0, atol=1e-15)
    # (almost) diagonal: the only off-diagonal mass is the ~1e-14 difference of p and q
    np.testing.assert_allclose(np.diag(plan), np.minimum(p[:mx], q[:my]), rtol=0, atol=1e-15)
    assert plan.sum() - np.trace(plan) < 2e-14
    ref = transport_plan_pot(p[:mx], q[:my], cost[:mx, :my])
    assert abs((plan * cost[:mx, :my]).sum() - (ref * cost[:mx, :my]).sum()) <= 1e-12
    # the same problem through the generic checker, and with the sides swapped
    check_close_to_pot(p[:mx], q[:my], cost[:mx, :my], pad=3)
    check_close_to_pot(q[:my], p[:mx], cost[:mx, :my].T.copy(), pad=3)


_NOISE_SCALES = [0.0, 1e-17, 1e-15, 1e-14, 1e-13, 1e-12, 1e-10]


def _hamming_from_table(t):
    s = t.sum(axis=1)
    u = t.sum(axis=0)
    return 2.0 * (s[:, None] + u[None, :] - 2.0 * t)


def nearly_equal_problem(rng, kind, scale):
    """Masses a and b = (a, permuted for a permutation cost) with relative noise of the
    given scale, optionally renormalised, and a cost with many ties and zero cells."""
    n = int(rng.integers(1, 31))
    a = rng.random(n) ** rng.choice([1.0, 3.0, 10.0])
    a[rng.random(n) < rng.choice([0.0, 0.0, 0.3])] = 0.0
    if a.sum() == 0:
        a[rng.integers(n)] = 1.0
    if rng.random() < 0.5:
        a = a / a.sum()
    perm = np.arange(n)
    if kind == "identical_partitions":  # zero diagonal
        cost = _hamming_from_table(np.diag(rng.integers(1, 6, n)).astype(float))
    elif kind == "permuted_identity":  # zero cost on a permutation
        perm = rng.permutation(n)
        t = np.zeros((n, n))
        t[np.arange(n), perm] = rng.integers(1, 6, n)
        cost = _hamming_from_table(t)
    elif kind == "close_partitions":
        t = np.diag(rng.integers(0, 6, n)).astype(float)
        t += rng.integers(0, 3, (n, n)) * (rng.random((n, n)) < 0.15)
        cost = _hamming_from_table(t)
    elif kind == "random_table":
        cost = _hamming_from_table(rng.integers(0, 4, (n, n)) * (rng.random((n, n)) < 0.4) * 1.0)
    else:  # "int_ties"
        cost = rng.integers(0, 4, (n, n)).astype(float)
        if rng.random() < 0.5:
            np.fill_diagonal(cost, 0.0)
    b = np.empty(n)
    b[perm] = a
    b = b * (1.0 + scale * rng.normal(size=n))
    if rng.random() < 0.5:
        b = b / b.sum()
    return a, b, cost


_KINDS = ["identical_partitions", "permuted_identity", "close_partitions", "random_table",
          "int_ties"]


@pytest.mark.parametrize("scale", _NOISE_SCALES)
def test_nearly_equal_marginals_fuzz(scale):
    """About 4000 problems in all: b = a up to relative noise (1e-17 .. 1e-10), with
    Hamming costs of identical, permuted, close and random partitions and integer costs
    with ties. Every one must be solved (status 0) to POT's optimal cost."""
    rng = np.random.default_rng(int(scale * 1e17) + 1)
    for it in range(600):
        kind = _KINDS[it % len(_KINDS)]
        a, b, cost = nearly_equal_problem(rng, kind, scale)
        plan = check_close_to_pot(a, b, cost, pad=it % 4, rng=rng)
        if kind == "identical_partitions" and np.array_equal(a, b):
            # identical masses, zero diagonal: exactly the diagonal plan, zero cost
            np.testing.assert_array_equal(plan, np.diag(np.diag(plan)))
            assert (plan * cost).sum() == 0.0


def test_ulp_perturbed_and_rescaled_masses():
    """Marginals differing by single ulps, with extreme overall scales and masses spanning
    many orders of magnitude: still status 0 and optimal."""
    rng = np.random.default_rng(42)
    for it in range(1000):
        n = int(rng.integers(1, 31))
        a = 10.0 ** rng.uniform(-18, 0, n) if it % 2 else rng.random(n)
        a = a / a.sum()
        b = a.copy()
        steps = rng.integers(-3, 4, n)
        for _ in range(3):
            b = np.where(steps > 0, np.nextafter(b, np.inf), b)
            b = np.where(steps < 0, np.nextafter(b, -np.inf), b)
            steps = steps - np.sign(steps)
        if it % 3 == 0:
            b = b * 10.0 ** rng.uniform(-250, 250)
        if it % 3 == 1:
            a = a * 10.0 ** rng.uniform(-250, 250)
        if it % 2:
            cost = rng.integers(0, 3, (n, n)).astype(float)
        else:
            cost = hamming_cost(rng, n + 1, n + 1)[:n, :n]
        np.fill_diagonal(cost, 0.0)
        check_close_to_pot(a, b, cost, pad=it % 2, rng=rng)


def test_only_status_zero_for_valid_inputs():
    """A few thousand small random problems of every kind: no status other than 0, and the
    returned masses always sum to 1 (there is always a plan)."""
    rng = np.random.default_rng(99)
    iw, fw = make_workspace(12, 12)
    rows = np.empty(24, np.int64)
    cols = np.empty(24, np.int64)
    mass = np.empty(24)
    for it in range(5000):
        na, nb = int(rng.integers(1, 13)), int(rng.integers(1, 13))
        q = int(rng.integers(1, 4))
        a = rng.integers(0, q + 1, na).astype(float) + (rng.random(na) < 0.3) * 1e-15
        b = rng.integers(0, q + 1, nb).astype(float) + (rng.random(nb) < 0.3) * 1e-15
        if a.sum() == 0:
            a[0] = 1.0
        if b.sum() == 0:
            b[0] = 1.0
        cost = rng.integers(0, 3, (na, nb)).astype(float)
        count, pivots, status = transport_plan_info(a, na, b, nb, cost, rows, cols, mass, iw, fw)
        assert status == 0
        assert 0 < count <= na + nb - 1
        assert abs(mass[:count].sum() - 1.0) <= 1e-14
