"""SAMS (Dahl's sequentially-allocated merge-split) reproduces the exact posterior (n = 6-7), alone and
with Gibbs sweeps, and is deterministic in its random numbers."""

import numpy as np
import pytest

from enumeration import check_against
from models import PRIORS, pack
from pymc_partitions.samplers.gibbs import GibbsKernel
from pymc_partitions.samplers.sams import SAMSKernel
from test_pgsm_enumeration import posteriors, run

CASES = [(p, f, 6 + (i + j) % 2) for i, p in enumerate(PRIORS) for j, f in enumerate(["diag", "bb"])]


@pytest.mark.parametrize("prior_name,family,n", CASES)
def test_sams_alone_matches_enumeration(prior_name, family, n):
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts, exact, wrong = posteriors(prior, fam, n)
    samples, k = run([SAMSKernel(fam, prior.code, prior.kernel_params())], n, 40000, seed=n)
    check_against(parts, exact, samples[500:], [k[500:]], wrong=wrong)


@pytest.mark.parametrize("prior_name", list(PRIORS))
def test_sams_with_gibbs_matches_enumeration(prior_name):
    n = 7
    prior = PRIORS[prior_name]
    fam = pack("niw", n)
    parts, exact, wrong = posteriors(prior, fam, n)
    kernels = [GibbsKernel(fam, prior.code, prior.kernel_params()), SAMSKernel(fam, prior.code, prior.kernel_params())]
    samples, k = run(kernels, n, 15000, seed=2)
    check_against(parts, exact, samples[300:], [k[300:]], wrong=wrong)


def test_sams_with_gibbs_samples_uniform_colourings():
    """A hard constraint: splits that put neighbours together are never proposed or accepted."""
    from test_colouring import cycle_with_chord, exact  # noqa: PLC0415
    from pymc_partitions.colouring import greedy_colouring, is_proper  # noqa: PLC0415

    a = cycle_with_chord()
    fam, prior, parts, post = exact(a, 4)
    _, _, _, wrong = exact(a, 5)
    kernels = [SAMSKernel(fam, prior.code, prior.kernel_params()), GibbsKernel(fam, prior.code, prior.kernel_params())]
    rng = np.random.default_rng(0)
    labels = greedy_colouring(a)
    samples = np.empty((15000, len(a)), np.int64)
    for t in range(len(samples)):
        labels = kernels[0].step(labels, rng)[0]
        assert is_proper(a, labels)
        labels = kernels[1].step(labels, rng)[0]
        samples[t] = labels
    check_against(parts, post, samples[200:], [samples[200:].max(axis=1), samples[200:, 0] == samples[200:, 2]],
                  wrong=wrong)


def test_sams_is_deterministic_in_its_random_numbers():
    n = 8
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    kernel = SAMSKernel(fam, prior.code, prior.kernel_params())
    rng = np.random.default_rng(0)
    labels = np.zeros(n, np.int64)
    accepted = set()
    for _ in range(300):
        rn = kernel.random_numbers(rng, n)
        a, info = kernel.move(labels, rn)
        b, _ = kernel.move(labels.copy(), rn)
        assert np.array_equal(a, b)
        if not info["accepted"]:
            assert np.array_equal(a, labels)
        accepted.add((info["move"], info["accepted"]))
        labels = a
    assert {("split", True), ("merge", True)} <= accepted
