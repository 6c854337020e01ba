#!/usr/bin/env python
"""What a draw of ``pmp.PriorSlice`` costs, against the way it evaluated its log density before
(session 39): a PyMC point function of every value variable, each argument checked per call.

The step slice-samples a prior parameter (alpha, discount) from its own prior density times the EPPF;
each draw evaluates the log density about seven times (stepping out and shrinkage). Now it calls a
function of only the value variables that density reads, without re-checking arguments that already have
the right type (``TypedCall``). Printed: microseconds per evaluation of both functions (same values) and
per ``PriorSlice.step``, on a Pitman-Yor model with random alpha and discount.

Run: ``python benchmarks/bench_prior_slice.py`` (under a minute, numba caches warm).
"""

from __future__ import annotations

import time

import numpy as np
import pymc as pm

import pymc_partitions as pmp


def per_call(fn, repeats):
    start = time.process_time()
    for _ in range(repeats):
        fn()
    return (time.process_time() - start) / repeats * 1e6


def main():
    y = pmp.datasets.load_galaxies()
    with pm.Model() as model:
        discount = pm.Beta("d", 1.0, 3.0)
        alpha = pm.Exponential("a", 1.0)
        z = pmp.Partition("z", pmp.PitmanYor(alpha, discount), n=len(y))
        pmp.NormalNormal("y", partition=z, mu0=20.0, sigma0=5.0, sigma=2.0, observed=y)
        step = pmp.PriorSlice([discount])
        point = model.initial_point()
        rv = model["d"]
        own = model.logp(vars=[rv], jacobian=True, sum=True)
        params = model.replace_rvs_by_values(list(z.owner.inputs[-4:-2]))
        before = model.compile_fn([own, *params], inputs=model.value_vars, on_unused_input="ignore", point_fn=True)
    now_args = [point[name] for name in step._inputs]
    assert np.allclose([float(v) for v in before(point)], [float(v) for v in step._fn(*now_args)])
    for _ in range(200):  # warm-up (numba, PyTensor)
        point, _ = step.step(point)
    repeats = 20000
    t_before = per_call(lambda: before(point), repeats)
    t_now = per_call(lambda: step._fn(*now_args), repeats)
    t_step = per_call(lambda: step.step(point), 5000)
    print(f"log density evaluation: point function of every value variable {t_before:.1f} us, "
          f"now {t_now:.1f} us ({t_before / t_now:.1f}x)")
    print(f"PriorSlice.step: {t_step:.1f} us per draw")


if __name__ == "__main__":
    main()
