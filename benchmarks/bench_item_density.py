#!/usr/bin/env python
"""What one evaluation of a non-conjugate model's item log-likelihood costs, by the way it is compiled
(issue 21: how cheap a compiled draw of ``pmp.NonConjugateGibbs`` could be when it calls the user's
PyTensor graph instead of a hand-coded likelihood).

Old Faithful's slot model (``bench_stick_breaking.py``: n = 272 items, diagonal Normal clusters in 2-D,
mu ~ Normal(0, 2), sigma ~ InverseGamma(3, 1)). Every item's log-likelihood under one row of slot values
per item, n rows, evaluated:

* C backend, from Python: the step's own compiled function (``NonConjugateModel.item_loglik``, the call
  the Python step makes about twenty times per draw), and the per-slot log density it evaluates in each
  Metropolis step (``cluster_logp``: the items' terms scattered into their slots plus the base measure);
* NUMBA backend, in a compiled loop (``f.vm.jit_fn`` called from an njit function, no Python per call):
  the same graph with the labels replaced by ``arange(n)`` and the slot values by the rows (two gathers
  ``slot[z]`` per slot variable stay in it); with the labels an index into a table of K = 5 slots (the
  compiled draw's ``item_rows``, ``samplers/compiled_slots.py``: the transforms run on K rows); the graph with each gather ``slot[z]`` replaced by an (n, ...)
  input ("gather-free"), with PyMC's parameter checks and without them; the base measure's log density
  of all S = n slots (PyMC's graph broadcasts it to the slot variables' shape: it cannot be evaluated at
  the K occupied slots alone);
* hand-coded numba (``bench_draw_cost.py``'s likelihood), the floor.

Printed: microseconds per evaluation and nanoseconds per item. Run: ``python benchmarks/bench_item_density.py``
(about a minute, most of it compiling).
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_stick_breaking as sb  # noqa: E402

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit
def _jit_loop(fn, T, *args):
    """``T`` calls of the numba-compiled function ``fn(*args)`` in a compiled loop."""
    s = 0.0
    for _ in range(T):
        s += fn(*args)[0][0]
    return s


@numba.njit
def _hand_coded(y, mu, sigma, out):
    for i in range(y.shape[0]):
        s = 0.0
        for d in range(y.shape[1]):
            r = (y[i, d] - mu[i, d]) / sigma[i, d]
            s += -0.5 * r * r - math.log(sigma[i, d]) - LOG_SQRT_2PI
        out[i] = s


@numba.njit
def _hand_loop(y, mu, sigma, out, T):
    for _ in range(T):
        _hand_coded(y, mu, sigma, out)


def per_call(fn, T):
    fn(1)  # compile / warm
    start = time.perf_counter()
    fn(T)
    return (time.perf_counter() - start) / T * 1e6


def main():
    import pytensor  # noqa: PLC0415
    import pytensor.tensor as pt  # noqa: PLC0415
    from pytensor.compile.mode import get_mode  # noqa: PLC0415
    from pytensor.graph.replace import clone_replace  # noqa: PLC0415

    from pymc_partitions.pymc.compat import ancestors  # noqa: PLC0415
    from pymc_partitions.pymc.nonconjugate import _INDEX_OPS, NonConjugateModel  # noqa: PLC0415

    y, _ = sb.load("faithful")
    n = len(y)
    model = sb.slot_model("faithful", y)
    z = model["z"]
    nc = NonConjugateModel(model, z)
    rng = np.random.default_rng(0)
    mu_rows, log_sigma_rows = 0.5 * rng.standard_normal((n, 2)), 0.3 * rng.standard_normal((n, 2))
    sigma_rows = np.exp(log_sigma_rows)
    values = nc.values(model.initial_point(0))
    labels = np.arange(n, dtype=nc.terms.dtype)
    slots = [mu_rows, log_sigma_rows]  # (the value variables: mu, log sigma; S = n slots, item i in slot i)
    T = 20000
    results = []

    def from_python(fn):
        def run(count):
            for _ in range(count):
                fn()
        return run

    args = nc._with(values, labels, slots)
    item_fn, cluster_fn = nc._item_ll.trusted, nc._cluster_logp.trusted
    results.append(("C backend from Python: item log-likelihoods", per_call(from_python(lambda: item_fn(*args)), T)))
    results.append(("C backend from Python: per-slot log density", per_call(from_python(lambda: cluster_fn(*args)), T)))

    value_labels = nc.value_vars[nc.value_names.index(nc.terms.value_name)]
    rows = [pt.tensor(dtype="float64", shape=(None, 2), name=f"{v.name}_rows") for v in nc.slot_values]
    gathered = clone_replace(nc.item_graph, replace={value_labels: pt.arange(n).astype(value_labels.dtype),
                                                     **dict(zip(nc.slot_values, rows))}, rebuild_strict=False)
    f = pytensor.function(rows, gathered, mode="NUMBA")
    results.append(("NUMBA in a loop: labels := arange(n), slots := rows",
                    per_call(lambda c: _jit_loop(f.vm.jit_fn, c, mu_rows, log_sigma_rows), T)))
    index = pt.tensor(dtype=value_labels.dtype, shape=(n,), name="index")
    indexed, _ = nc.graphs_of_rows(index, rows)  # (what the compiled draw's item_rows evaluates)
    h = pytensor.function([index] + rows, indexed, mode="NUMBA")
    K = 5
    labels_K = (np.arange(n) % K).astype(value_labels.dtype)
    table_mu, table_sigma = np.ascontiguousarray(mu_rows[:K]), np.ascontiguousarray(log_sigma_rows[:K])
    results.append((f"NUMBA in a loop: labels := index into K = {K} slots",
                    per_call(lambda c: _jit_loop(h.vm.jit_fn, c, labels_K, table_mu, table_sigma), T)))
    gathers = {v.owner.inputs[0].name or str(v.owner.inputs[0]): v for v in ancestors([nc.item_graph])
               if v.owner is not None and isinstance(v.owner.op, _INDEX_OPS)}
    mu_gather = next(v for k, v in gathers.items() if k == "mu")
    sigma_gather = next(v for k, v in gathers.items() if k != "mu")  # exp(sigma_log__)[z]
    per_item = [pt.tensor(dtype="float64", shape=(n, 2), name=name) for name in ("mu_item", "sigma_item")]
    free = clone_replace(nc.item_graph, replace={mu_gather: per_item[0], sigma_gather: per_item[1]},
                         rebuild_strict=False)
    for label, mode in (("with PyMC's parameter checks", "NUMBA"),
                        ("without them", get_mode("NUMBA").including("local_remove_check_parameter"))):
        g = pytensor.function(per_item, free, mode=mode, on_unused_input="ignore")
        assert np.allclose(g(mu_rows, sigma_rows), f(mu_rows, log_sigma_rows))
        results.append((f"NUMBA in a loop: gather-free, {label}",
                        per_call(lambda c, g=g: _jit_loop(g.vm.jit_fn, c, mu_rows, sigma_rows), T)))
    base = clone_replace(nc.base_graph, replace=dict(zip(nc.slot_values, rows)), rebuild_strict=False)
    b = pytensor.function(rows, base, mode="NUMBA")
    results.append(("NUMBA in a loop: base measure at all S slots",
                    per_call(lambda c: _jit_loop(b.vm.jit_fn, c, mu_rows, log_sigma_rows), T)))
    out = np.empty(n)
    _hand_coded(y, mu_rows, sigma_rows, out)
    assert np.allclose(out, f(mu_rows, log_sigma_rows))
    results.append(("hand-coded numba in a loop", per_call(lambda c: _hand_loop(y, mu_rows, sigma_rows, out, c), T)))

    print(f"Old Faithful slot model, n = {n} items x 2 coordinates; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'item log-likelihood evaluation':60s} {'us / call':>10s} {'ns / item':>10s}")
    for name, us in results:
        print(f"{name:60s} {us:10.2f} {us * 1e3 / n:10.1f}")


if __name__ == "__main__":
    main()
