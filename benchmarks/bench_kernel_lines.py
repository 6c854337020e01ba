#!/usr/bin/env python
"""Per-sweep CPU time of the compiled kernels, to compare the Python 3.11 and 3.12 lines.

    PYTHONPATH=$PWD python3 benchmarks/bench_kernel_lines.py
    PYTHONPATH=$PWD /work/venv312/bin/python benchmarks/bench_kernel_lines.py

The two lines run different numba / llvmlite releases (0.65 / LLVM 20 and 0.68 / LLVM 22), so
the same kernel can compile to different code: this prints, for each kernel, the median CPU time
(``time.process_time``) of one sweep over repeats, after warm-up (compilation excluded), and a
digest of the kernel's output (labels and log joint) so that two runs can be checked to compute
bit-for-bit the same chain. Cases: collapsed Gibbs (NormalNormal D = 2, n = 10^4, K ~ 10; NIW
D = 2, n = 10^4), the Gibbs + SAMS kernel (one move and one sweep) and the coupled Gibbs sweep
(two chains, optimal-transport coupling). Each case also runs a plain compiled loop (lgamma over
an array) as a baseline of the machine's speed in the same process, and prints the ratio.
Measures, never fails.
"""

from __future__ import annotations

import hashlib
import math
import os
import platform
import sys
import time

import numba
import numpy as np

from pymc_partitions.coupling.sweep import GibbsSweeps
from pymc_partitions.families.kernels import DIAG_NORMAL, NIW, FamilyPack, diag_normal_hyper, niw_hyper
from pymc_partitions.priors import CRP
from pymc_partitions.samplers.gibbs import gibbs_sweeps
from pymc_partitions.samplers.gibbs_sams import GibbsSAMSKernel

N = 10_000
K_TRUE = 10
REPS = 21


@numba.njit(cache=True)
def _baseline(x):
    """A plain compiled loop: the machine's speed in this process."""
    out = 0.0
    for v in x:
        out += math.lgamma(v)
    return out


def _data(rng):
    truth = rng.integers(0, K_TRUE, N)
    return truth, rng.normal(size=(N, 2)) + truth[:, None] * 4.0


def _median_cpu(run, reps=REPS):
    run()  # warm-up: compilation and the first (slot-table growing) sweep
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        run()
        times.append(time.process_time() - t0)
    return float(np.median(times))


def _digest(*arrays):
    h = hashlib.sha1()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:12]


def gibbs_case(pack, truth, seed):
    """Median CPU seconds of one collapsed Gibbs sweep, and the digest of 5 seeded sweeps."""
    prior = CRP(1.0)
    code, params = prior.code, prior.kernel_params()
    rng = np.random.default_rng(seed)
    state = {"labels": truth.copy()}

    def run():
        order, u = rng.permutation(N)[None], rng.random((1, N))
        state["labels"], _ = gibbs_sweeps(state["labels"], pack, code, params, order, u)

    fixed = np.random.default_rng(1)
    orders = np.stack([fixed.permutation(N) for _ in range(5)])
    labels, lj = gibbs_sweeps(truth, pack, code, params, orders, fixed.random(orders.shape))
    return _median_cpu(run), _digest(labels, np.float64(lj))


def sams_case(pack, truth):
    prior = CRP(1.0)
    kernel = GibbsSAMSKernel(pack, prior.code, prior.kernel_params(), reps=1, moves=1)
    rng = np.random.default_rng(2)
    state = {"labels": truth.copy()}

    def run():
        state["labels"], _, _ = kernel.step(state["labels"], rng)

    t = _median_cpu(run)
    labels, lj, counts = kernel.step(truth, np.random.default_rng(3))
    return t, _digest(labels, np.float64(lj), counts)


def coupled_case(pack, truth):
    prior = CRP(1.0)
    sweeps = GibbsSweeps(pack, prior.code, prior.kernel_params(), coupling="ot")
    x, y = sweeps.start(truth), sweeps.start(np.zeros(N, np.int64))
    inter = sweeps.intersections(x, y)
    rng = np.random.default_rng(4)
    state = {"inter": inter}

    def run():
        state["inter"] = sweeps.coupled_sweep(x, y, state["inter"], sweeps.random_numbers(rng))

    t = _median_cpu(run)
    return t, _digest(x.slot_of, y.slot_of)


def main():
    rng = np.random.default_rng(0)
    truth, y = _data(rng)
    diag = FamilyPack.build([(DIAG_NORMAL, y, diag_normal_hyper(0.0, 5.0, 1.0, 2))])
    niw = FamilyPack.build([(NIW, y, niw_hyper(np.zeros(2), 0.1, 4.0, np.eye(2), 2, N))])
    base_x = rng.uniform(1.0, 50.0, 10**6)
    base = _median_cpu(lambda: _baseline(base_x), reps=9)
    print(f"python {platform.python_version()}  numba {numba.__version__}  numpy {np.__version__}  "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"baseline (lgamma over 1e6 floats): {1e3 * base:.2f} ms CPU")
    print(f"{'kernel (n = 1e4, D = 2, K ~ 10)':<40} {'ms CPU / sweep':>15} {'/ baseline':>11}  digest")
    cases = [
        ("Gibbs, NormalNormal", lambda: gibbs_case(diag, truth, 5)),
        ("Gibbs, NIW", lambda: gibbs_case(niw, truth, 6)),
        ("Gibbs + SAMS (1 move), NormalNormal", lambda: sams_case(diag, truth)),
        ("coupled Gibbs (ot), NormalNormal", lambda: coupled_case(diag, truth)),
    ]
    for name, case in cases:
        t, digest = case()
        print(f"{name:<40} {1e3 * t:>15.2f} {t / base:>11.2f}  {digest}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
