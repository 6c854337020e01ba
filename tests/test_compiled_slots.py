"""The compiled draw's kernels (samplers/compiled_slots.py) on their own, with hand-written C densities of a
conjugate model (items N(mu, 1), mu ~ N(0, SIGMA0^2), the data in the context): label sweeps and Metropolis
steps of the occupied means reproduce the exact posterior over all partitions for every prior (and a wrong
base measure is detected), the table grows when it must, and bad input is refused, never read out of
bounds. No PyMC here (the step's own tests, with the densities compiled from a PyMC graph, are in
test_nonconjugate.py), so the file also runs under numba's bounds checks (test_boundscheck.py)."""

import math

import numba
import numpy as np
import pytest

from enumeration import check_against, exact_posterior
from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.priors import CRP, FiniteDirichlet, PitmanYor
from pymc_partitions.samplers.compiled_slots import (BASE_SIGNATURE, ITEM_SIGNATURE, evaluate_base, evaluate_items,
                                                     label_sweep, slot_metropolis)
from pymc_partitions.samplers.gibbs import log_joint

Y = np.array([-2.1, -1.6, -1.9, 1.8, 2.3, 0.4])
N = len(Y)
SIGMA0 = 2.0
PRIORS = {"crp": CRP(1.2), "pitman_yor": PitmanYor(0.5, 0.3), "finite_dirichlet": FiniteDirichlet(0.7, 3)}
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.cfunc(ITEM_SIGNATURE)
def _items(context_p, table_p, r, index_p, out_p):
    y = numba.carray(context_p, (N + 1,), np.float64)  # (the data, then the base measure's sd)
    table = numba.carray(table_p, (r, 1), np.float64)
    index = numba.carray(index_p, (N,), np.int64)
    out = numba.carray(out_p, (N,), np.float64)
    for i in range(N):
        e = y[i] - table[index[i], 0]
        out[i] = -0.5 * e * e - LOG_SQRT_2PI


@numba.cfunc(BASE_SIGNATURE)
def _base(context_p, table_p, r, out_p):
    context = numba.carray(context_p, (N + 1,), np.float64)
    table = numba.carray(table_p, (r, 1), np.float64)
    out = numba.carray(out_p, (r,), np.float64)
    sd = context[N]
    for j in range(r):
        e = table[j, 0] / sd
        out[j] = -0.5 * e * e - math.log(sd) - LOG_SQRT_2PI


def exact(prior, sigma0=SIGMA0):
    pack = FamilyPack.build([(kernels.DIAG_NORMAL, Y[:, None], kernels.diag_normal_hyper([0.0], [sigma0], [1.0], 1))])
    return exact_posterior(N, lambda p: log_joint(p, pack, prior.code, prior.kernel_params()))


def run(prior, draws, seed, m=1, sigma0=SIGMA0, steps=3):
    """Draws of the step's law: a label sweep (m fresh auxiliaries per item, fresh free slots), then ``steps``
    Metropolis steps of the occupied means; the labels per draw."""
    rng = np.random.default_rng(seed)
    S = prior.k if isinstance(prior, FiniteDirichlet) else N
    context = np.r_[Y, sigma0]
    params = np.asarray(prior.kernel_params(), np.float64)
    labels = np.zeros(N, np.int64)
    slots = rng.normal(0.0, sigma0, (S, 1))
    out = np.empty((draws, N), np.int64)
    for t in range(draws):
        K = int(labels.max()) + 1
        table = np.empty((K + m + 4, 1))
        table[:K] = slots[:K]
        aux = rng.normal(0.0, sigma0, (m, N, 1))
        slots = rng.normal(0.0, sigma0, (S, 1))
        code, K, _ = label_sweep(_items.address, context, table, K, labels, aux, rng.permutation(N), rng.random(N),
                                 prior.code, params, slots)
        assert code == 0
        step = 1.0 / np.sqrt(np.bincount(labels, minlength=K)[:K])
        slot_metropolis(_items.address, _base.address, context, slots, K, labels, step,
                        rng.standard_normal((steps, K, 1)), np.log(rng.random((steps, K))))
        out[t] = labels
    return out


@pytest.mark.parametrize("prior_name", list(PRIORS))
def test_compiled_kernels_match_enumeration(prior_name):
    """TV at the iid floor against the collapsed NormalNormal's exact partition posterior, with power against a
    base measure three times wider."""
    prior = PRIORS[prior_name]
    parts, p = exact(prior)
    _, wrong = exact(prior, sigma0=3 * SIGMA0)
    samples = run(prior, 4000, seed=3)
    k = samples.max(axis=1).astype(float)
    together = (samples[:, 0] == samples[:, 1]).astype(float)
    tv, tol = check_against(parts, p, samples, [k, together], wrong=wrong)
    assert tv < tol


def test_the_densities_are_called_as_documented():
    """evaluate_items: item i under row index[i]; evaluate_base: each row's base log density."""
    context = np.r_[Y, SIGMA0]
    table = np.array([[0.5], [-1.0], [2.0]])
    index = np.array([0, 1, 2, 2, 1, 0])
    out = np.empty(N)
    evaluate_items(_items.address, context, table, 3, index, out)
    np.testing.assert_allclose(out, -0.5 * (Y - table[index, 0]) ** 2 - LOG_SQRT_2PI)
    base = np.empty(3)
    evaluate_base(_base.address, context, table, 3, base)
    np.testing.assert_allclose(base, -0.5 * (table[:, 0] / SIGMA0) ** 2 - math.log(SIGMA0) - LOG_SQRT_2PI)


def test_the_table_grows_when_every_slot_is_taken():
    """A table of one row and a prior that opens blocks: the sweep doubles it and every item ends in a block
    whose parameter is one of its auxiliaries or the first block's."""
    rng = np.random.default_rng(0)
    prior = CRP(50.0)
    labels = np.zeros(N, np.int64)
    aux = rng.normal(0.0, SIGMA0, (2, N, 1))
    slots = np.zeros((N, 1))
    code, K, opened = label_sweep(_items.address, np.r_[Y, SIGMA0], np.array([[0.0]]), 1, labels, aux,
                                  np.arange(N), np.full(N, 0.999), prior.code, np.asarray(prior.kernel_params()),
                                  slots)
    assert code == 0 and opened >= 1 and K >= 2
    assert labels.max() == K - 1 and set(np.unique(labels)) == set(range(K))
    allowed = set(aux.ravel()) | {0.0}
    assert all(slots[b, 0] in allowed for b in range(K))


def test_bad_input_is_refused_before_any_index():
    prior = CRP(1.0)
    params = np.asarray(prior.kernel_params(), np.float64)
    good = dict(item_rows=_items.address, context=np.r_[Y, SIGMA0], table=np.zeros((4, 1)), K=1,
                labels=np.zeros(N, np.int64), aux=np.zeros((1, N, 1)), order=np.arange(N),
                uniforms=np.full(N, 0.5), prior_code=prior.code, prior_params=params, free_rows=np.zeros((N, 1)))
    bad = [({"K": 5}, "K must"), ({"K": 0}, "K must"), ({"labels": np.full(N, 1, np.int64)}, "labels"),
           ({"order": np.array([0, N])}, "uniform|order"), ({"order": np.r_[np.arange(N - 1), N]}, "order"),
           ({"aux": np.zeros((1, N - 1, 1))}, "aux"), ({"aux": np.zeros((0, N, 1))}, "aux"),
           ({"free_rows": np.zeros((N, 2))}, "free_rows"), ({"prior_params": params[:2]}, "prior"),
           ({"free_rows": np.zeros((1, 1)), "uniforms": np.full(N, 0.999),
             "prior_params": np.asarray(CRP(50.0).kernel_params())}, "more blocks")]
    for change, word in bad:
        args = {**good, **change}
        with pytest.raises(ValueError, match=word):
            label_sweep(*args.values())
    out = np.empty(N)
    with pytest.raises(ValueError, match="index"):
        evaluate_items(_items.address, np.r_[Y, SIGMA0], np.zeros((2, 1)), 2, np.full(N, 2, np.int64), out)
    with pytest.raises(ValueError, match="r rows"):
        evaluate_items(_items.address, np.r_[Y, SIGMA0], np.zeros((2, 1)), 3, np.zeros(N, np.int64), out)
    with pytest.raises(ValueError, match="r rows"):
        evaluate_base(_base.address, np.r_[Y, SIGMA0], np.zeros((2, 1)), 3, np.empty(3))
    slots = np.zeros((3, 1))
    for change, word in [({"K": 4}, "slots"), ({"labels": np.full(N, 2, np.int64)}, "index"),
                         ({"moves": np.zeros((2, 1, 1))}, "moves"), ({"step": np.ones(1)}, "step")]:
        args = {**dict(item_rows=_items.address, base_rows=_base.address, context=np.r_[Y, SIGMA0], slots=slots,
                       K=2, labels=np.zeros(N, np.int64), step=np.ones(2), moves=np.zeros((2, 2, 1)),
                       log_u=np.zeros((2, 2))), **change}
        with pytest.raises(ValueError, match=word):
            slot_metropolis(*args.values())
