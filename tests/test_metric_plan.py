"""The transport shortcut of the OT-coupled Gibbs sweep (coupling/draws.metric_plan): for the
Mirkin cost, a metric between blocks as sets, the plan that keeps the shared points' mass on the
diagonal and solves only the residuals is optimal (its cost equals POT's optimum) and has exactly
the two laws as marginals; equal laws on equal blocks give the diagonal."""

import numpy as np
import pytest

from pymc_partitions.coupling.draws import draw_ot_metric, metric_plan
from pymc_partitions.coupling.transport import make_workspace, transport_plan_pot


def random_blocks(rng, items, k):
    """A random partition of ``items`` into at most k nonempty blocks (frozensets)."""
    labels = rng.integers(0, k, len(items))
    return [frozenset(np.asarray(items)[labels == j].tolist()) for j in range(k) if (labels == j).any()]


def problem(rng, n_items=12, share=0.5):
    """Atoms of the two chains (their blocks + the empty set, the new block), the |A Δ B| cost
    and two laws. Chain y copies some of x's blocks (shared points) and repartitions the rest."""
    items = np.arange(n_items)
    bx = random_blocks(rng, items, int(rng.integers(1, 6)))
    keep = [b for b in bx if rng.random() < share]
    rest = sorted(set(items.tolist()) - set().union(*keep)) if keep else items.tolist()
    by = keep + (random_blocks(rng, rest, int(rng.integers(1, 6))) if rest else [])
    rng.shuffle(by)
    ax = bx + [frozenset()]
    ay = by + [frozenset()]
    cost = np.array([[len(a ^ b) for b in ay] for a in ax], float)
    p = rng.random(len(ax)) ** 3
    q = rng.random(len(ay)) ** 3
    if rng.random() < 0.3:  # some atoms without mass, as below e^-37 in the sampler
        p[rng.integers(len(ax))] = 0.0
        q[rng.integers(len(ay))] = 0.0
    if p.sum() == 0 or q.sum() == 0:
        p[-1] = q[-1] = 1.0
    return ax, ay, cost, p / p.sum(), q / q.sum()


def plan_of(p, q, cost):
    mx, my = len(p), len(q)
    rows = np.empty(2 * (mx + my), np.int64)
    cols = np.empty(2 * (mx + my), np.int64)
    mass = np.empty(2 * (mx + my))
    iw, fw = make_workspace(mx, my)
    count = metric_plan(p, mx, q, my, cost, rows, cols, mass, np.empty(mx), np.empty(my), iw, fw)
    plan = np.zeros((mx, my))
    for r, c, m in zip(rows[:count], cols[:count], mass[:count]):
        plan[r, c] += m
    return plan


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_plan_is_optimal_with_exact_marginals(share):
    rng = np.random.default_rng(int(share * 10))
    shared_cases = 0
    for _ in range(300):
        ax, ay, cost, p, q = problem(rng, share=share)
        plan = plan_of(p, q, cost)
        assert (plan >= 0).all()
        np.testing.assert_allclose(plan.sum(axis=1), p, atol=1e-12)
        np.testing.assert_allclose(plan.sum(axis=0), q, atol=1e-12)
        best = float((transport_plan_pot(p, q, cost) * cost).sum())
        assert float((plan * cost).sum()) == pytest.approx(best, rel=1e-9, abs=1e-9)
        shared_cases += int((cost[:-1, :-1] == 0).any())
    if share > 0:
        assert shared_cases > 50  # the shortcut's diagonal part was exercised, not only the solver


def test_shared_mass_is_kept_in_place():
    """Every shared point carries min(p, q) on its diagonal cell (what makes close chains cheap)."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        ax, ay, cost, p, q = problem(rng, share=0.7)
        plan = plan_of(p, q, cost)
        for a, b in zip(*np.nonzero(cost == 0)):
            assert plan[a, b] == pytest.approx(min(p[a], q[b]), abs=1e-15)


def test_equal_laws_on_equal_blocks_give_the_diagonal():
    """Equal states stay equal: the same blocks (in another order) with the same law are coupled
    on the diagonal exactly, whatever the masses."""
    rng = np.random.default_rng(2)
    for _ in range(100):
        items = np.arange(10)
        bx = random_blocks(rng, items, 4) + [frozenset()]
        perm = rng.permutation(len(bx))
        by = [bx[j] for j in perm]
        cost = np.array([[len(a ^ b) for b in by] for a in bx], float)
        p = rng.random(len(bx))
        p /= p.sum()
        plan = plan_of(p, p[perm], cost)
        off = plan.copy()
        off[cost == 0] = 0.0
        assert (off == 0).all()


def test_non_metric_cost_is_where_the_shortcut_would_be_wrong():
    """Power: with a cost that breaks the triangle inequality the diagonal is not optimal, so the
    optimality check above can fail (it is POT's optimum, not the shortcut's own)."""
    cost = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 5.0], [1.0, 5.0, 0.0]])  # 1 -> 2 costs 5 > 1 + 1
    p = np.array([0.5, 0.5, 0.0])
    q = np.array([0.5, 0.0, 0.5])
    plan = plan_of(p, q, cost)
    best = float((transport_plan_pot(p, q, cost) * cost).sum())
    assert float((plan * cost).sum()) > best + 1.0


def test_draws_have_each_law():
    """Inverting the plan's cumulative mass at uniforms on a fine grid gives each side's law."""
    rng = np.random.default_rng(7)
    grid = (np.arange(20000) + 0.5) / 20000
    for _ in range(20):
        ax, ay, cost, p, q = problem(rng, share=0.5)
        mx, my = len(p), len(q)
        iw, fw = make_workspace(mx, my)
        buf = [np.empty(2 * (mx + my), np.int64), np.empty(2 * (mx + my), np.int64), np.empty(2 * (mx + my))]
        pairs = np.array([draw_ot_metric(p, mx, q, my, cost, u, *buf, np.empty(mx), np.empty(my), iw, fw)
                          for u in grid])
        np.testing.assert_allclose(np.bincount(pairs[:, 0], minlength=mx) / grid.size, p, atol=2e-4)
        np.testing.assert_allclose(np.bincount(pairs[:, 1], minlength=my) / grid.size, q, atol=2e-4)
