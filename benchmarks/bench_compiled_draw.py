#!/usr/bin/env python
"""The compiled draw of ``pmp.NonConjugateGibbs`` against its Python draw on Old Faithful's slot model
(``bench_stick_breaking.py``'s: n = 272, diagonal Normal clusters, CRP(alpha)): the figures
docs/nonconjugate.md quotes.

* per step: the step alone, driven by hand from one point (after 100 warm-up steps), CPU microseconds per
  step for ``compiled=True`` and ``compiled=False`` at m = 3 and m = 1 (the same chain either way: checked);
* the cost of building: in a fresh process each, the time to construct the step and to run a plain
  ``pm.sample()`` (2 chains x (1000 + 1000), cores=2), with and without the compiled draw (numba's and
  PyTensor's caches warm: run the script twice and read the second run).

Run: ``python benchmarks/bench_compiled_draw.py`` (about two minutes).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_stick_breaking as sb  # noqa: E402


def model():
    return sb.slot_model("faithful", sb.load("faithful")[0])


def per_step(m_aux, steps=1000):
    import pymc_partitions as pmp  # noqa: PLC0415
    from pymc_partitions.pymc.compat import setup_chain  # noqa: PLC0415

    mdl = model()
    out, ends = {}, {}
    for compiled in (True, False):
        step = pmp.NonConjugateGibbs([mdl["z"]], model=mdl, m=m_aux, compiled=compiled)
        assert step.compiled == compiled
        setup_chain(step, 3)
        point = mdl.initial_point(0)
        for _ in range(100):
            point, _ = step.step(point)
        start = time.process_time()
        for _ in range(steps):
            point, _ = step.step(point)
        out[compiled] = (time.process_time() - start) / steps * 1e6
        ends[compiled] = point
    same = np.array_equal(ends[True]["z"], ends[False]["z"]) and np.allclose(ends[True]["mu"], ends[False]["mu"])
    return out, same


def build_child(compiled):
    """(in a fresh process) seconds to construct the step, and to run a plain pm.sample with it."""
    import pymc as pm  # noqa: PLC0415

    import pymc_partitions as pmp  # noqa: PLC0415

    mdl = model()
    with mdl:
        start = time.perf_counter()
        step = pmp.NonConjugateGibbs([mdl["z"]], compiled=compiled)
        built = time.perf_counter() - start
        start = time.perf_counter()
        pm.sample(step=[step], progressbar=False, compute_convergence_checks=False, random_seed=1)
        sampled = time.perf_counter() - start
    print(f"RESULT {built:.2f} {sampled:.2f}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        build_child(sys.argv[2] == "1")
        return
    print(f"Old Faithful slot model; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'per step (the step alone)':30s} {'compiled us':>12s} {'Python us':>10s} {'ratio':>6s} same chain")
    for m_aux in (3, 1):
        us, same = per_step(m_aux)
        print(f"{f'm = {m_aux}':30s} {us[True]:12.0f} {us[False]:10.0f} {us[False] / us[True]:6.2f} {same}")
    print(f"{'fresh process (wall s)':30s} {'step built':>12s} {'pm.sample':>10s} {'total':>6s}")
    for compiled in (True, False):
        proc = subprocess.run([sys.executable, __file__, "--child", "1" if compiled else "0"], capture_output=True,
                              text=True, check=True)
        built, sampled = map(float, proc.stdout.split("RESULT")[-1].split())
        print(f"{f'compiled={compiled}':30s} {built:12.2f} {sampled:10.2f} {built + sampled:6.2f}")


if __name__ == "__main__":
    main()
