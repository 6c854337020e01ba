"""Neal's Algorithm 8 label sweep (samplers/algorithm8.py) reproduces the exact posterior over all
partitions of a conjugate model run through the non-conjugate path, for every prior; a wrong base
measure is detected by the same statistic; bad input is refused before the compiled loop."""

import numpy as np
import pytest
from scipy import stats

from enumeration import check_against, ess, exact_posterior, total_variation, frequencies, tv_tolerance
from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.partition import canonicalize
from pymc_partitions.priors import CRP, FiniteDirichlet, PitmanYor
from pymc_partitions.samplers.algorithm8 import NonFiniteLogLikelihood, algorithm8_sweep
from pymc_partitions.samplers.gibbs import log_joint

Y = np.array([-2.1, -1.6, -1.9, 1.8, 2.3, 0.4])
SIGMA0 = 2.0  # base measure N(0, SIGMA0^2) of the cluster means; items N(mean, 1)
PRIORS = {"crp": CRP(1.2), "pitman_yor": PitmanYor(0.5, 0.3), "finite_dirichlet": FiniteDirichlet(0.7, 3)}


def exact(prior, y=Y, sigma0=SIGMA0):
    pack = FamilyPack.build([(kernels.DIAG_NORMAL, y[:, None], kernels.diag_normal_hyper([0.0], [sigma0], [1.0], 1))])
    return exact_posterior(len(y), lambda p: log_joint(p, pack, prior.code, prior.kernel_params()))


def run(prior, sweeps, seed, m=2, sigma0=SIGMA0, y=Y):
    """Algorithm 8 sweeps, each followed by the exact conjugate draw of the occupied means given the
    labels; auxiliaries and the means' prior from N(0, sigma0^2). (labels per sweep, log joint trace)."""
    rng = np.random.default_rng(seed)
    n = len(y)
    labels = np.zeros(n, np.int64)
    phi = np.array([rng.normal(0.0, sigma0)])
    out = np.empty((sweeps, n), np.int64)
    k_trace = np.empty(sweeps)
    mean0 = np.empty(sweeps)
    for t in range(sweeps):
        K = labels.max() + 1
        L = stats.norm.logpdf(y[:, None], phi[None, :K], 1.0)
        aux = rng.normal(0.0, sigma0, (n, m))
        table = dict(enumerate(phi[:K]))

        def open_block(i, j, slot):
            table[slot] = aux[i, j]
            return stats.norm.logpdf(y, aux[i, j], 1.0)

        slot_of, _ = algorithm8_sweep(labels, L, stats.norm.logpdf(y[:, None], aux, 1.0), rng.permutation(n),
                                      rng.random(n), prior.code, prior.kernel_params(), open_block)
        labels = canonicalize(slot_of)
        K = labels.max() + 1
        counts = np.bincount(labels, minlength=K)
        sums = np.bincount(labels, y, minlength=K)
        var = 1.0 / (1.0 / sigma0**2 + counts)
        phi = rng.normal(var * sums, np.sqrt(var))
        out[t] = labels
        k_trace[t] = K
        mean0[t] = phi[labels[0]]
    return out, k_trace, mean0


@pytest.mark.parametrize("prior_name", list(PRIORS))
def test_algorithm8_matches_enumeration(prior_name):
    prior = PRIORS[prior_name]
    parts, p = exact(prior)
    _, wrong = exact(prior, sigma0=3 * SIGMA0)
    samples, k, _ = run(prior, 8000, seed=1)
    together = (samples[:, 0] == samples[:, 1]).astype(float)
    tv, tol = check_against(parts, p, samples[200:], [k[200:], together[200:]], wrong=wrong)
    assert tv < tol


def test_algorithm8_with_a_wrong_base_measure_is_detected():
    """Power: the same sampler with the base measure's sd tripled fails the same check (the
    correct one passes it above with the same number of draws)."""
    prior = PRIORS["crp"]
    parts, p = exact(prior)
    samples, k, _ = run(prior, 8000, seed=1, sigma0=3 * SIGMA0)
    freq = frequencies(parts, samples[200:])
    n_eff = min(len(samples) - 200, ess(k[200:]))
    assert total_variation(freq, p) > tv_tolerance(p, n_eff, 2.0)


def test_algorithm8_cluster_mean_matches_exact_law():
    """KS: the mean of item 0's cluster is a mixture over partitions of conjugate Normal posteriors."""
    prior = PRIORS["crp"]
    parts, p = exact(prior)
    samples, k, mean0 = run(prior, 6000, seed=3)
    comps = []
    for part, w in zip(parts, p):
        b = part == part[0]
        var = 1.0 / (1.0 / SIGMA0**2 + b.sum())
        comps.append((w, var * Y[b].sum(), np.sqrt(var)))

    def cdf(x):
        return sum(w * stats.norm.cdf(x, m, s) for w, m, s in comps)

    thin = max(1, int(np.ceil(len(mean0) / ess(mean0))))
    assert stats.kstest(mean0[200::thin], cdf).pvalue > 1e-3
    shifted = stats.kstest(mean0[200::thin] + 0.5, cdf).pvalue  # power: a shift of 0.5 is seen
    assert shifted < 1e-3


def test_algorithm8_grows_its_table_and_refuses_bad_input():
    prior = CRP(5.0)
    n = 6
    rng = np.random.default_rng(0)
    calls = []

    def open_block(i, j, slot):
        calls.append(slot)
        return np.zeros(n)

    L = np.zeros((n, 1))  # one slot: a new block needs the table to grow
    slot_of, L2 = algorithm8_sweep(np.zeros(n, int), L, np.zeros((n, 3)), np.arange(n), rng.random(n) * 0 + 0.999,
                                   prior.code, prior.kernel_params(), open_block)
    assert L2.shape[1] >= 2 and calls and max(calls) < L2.shape[1]
    assert slot_of.max() < L2.shape[1]
    good = dict(slot_of=np.zeros(n, int), L=np.zeros((n, 2)), Laux=np.zeros((n, 2)), order=np.arange(n),
                uniforms=np.full(n, 0.5), prior_code=prior.code, prior_params=prior.kernel_params(),
                open_block=open_block)
    bad = [
        ({"slot_of": np.full(n, 2)}, "slot_of"),
        ({"slot_of": np.zeros(n - 1, int)}, "slot_of"),
        ({"L": np.zeros((n + 1, 2))}, "Laux"),
        ({"Laux": np.zeros((n, 0))}, "Laux"),
        ({"L": np.full((n, 2), np.nan)}, "NaN"),
        ({"order": np.array([0, n])}, "order"),
        ({"uniforms": np.full(n, 1.0)}, "uniforms"),
        ({"prior_params": [-1.0, 0.0, 0.0]}, "prior"),
        ({"open_block": None}, "open_block"),
    ]
    for change, word in bad:
        with pytest.raises((ValueError, TypeError), match=word):
            algorithm8_sweep(**{**good, **change})
    with pytest.raises(NonFiniteLogLikelihood):  # (the type NonConjugateGibbs turns into an error naming the items)
        algorithm8_sweep(**{**good, "Laux": np.full((n, 2), np.inf)})
    with pytest.raises(ValueError, match="open_block"):
        algorithm8_sweep(**{**good, "uniforms": np.full(n, 0.999), "prior_params": CRP(50.0).kernel_params(),
                            "open_block": lambda i, j, s: np.zeros(n + 1)})
