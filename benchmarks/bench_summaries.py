"""Benchmarks of the partition summaries (prints tables; never fails: tests assert, this measures).

    python benchmarks/bench_summaries.py           # full run (~5 min on 2 shared cores)
    python benchmarks/bench_summaries.py --quick   # smaller n, ~1 min

Draws are real posterior draws: collapsed Gibbs sweeps of the package's kernel on a DPMM
(CRP(1), NormalNormal, D = 2) fitted to a mixture of 10 overlapping Gaussian clusters (centres
~ N(0, 4²), unit sd), started from the truth after 100 burn-in sweeps, so the posterior has real
uncertainty (~12 clusters per draw, items between clusters change hands).

1. Similarity matrix, n = 1000 and 5000, 1000 draws: ``pmp.coclustering`` against the numpy a
   user would write (``(z[:, :, None] == z[:, None, :])`` averaged, in chunks of draws), timed in
   the same process; the ratio is what counts on a shared machine.
2. Point estimate under VI with the default settings (16 runs on all cores), n = 1000 with 2000
   draws and n = 10⁴ with 500 draws: seconds and expected loss, against (a) the draw with the
   lowest expected loss (``method="draws"``) and (b) random-restart greedy searches given the same
   wall time: random initial labels + sweetening only (no sequential allocation, no zealous
   updates), as many restarts as fit in SALSO's time. Expected losses are recomputed from the draws.
3. Memory of the n = 10⁴ estimate: the peak RSS (VmHWM) of a fresh process before and after it,
   against an n x n float64 matrix.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pymc_partitions as pmp  # noqa: E402
from pymc_partitions.families import kernels  # noqa: E402
from pymc_partitions.families.kernels import FamilyPack  # noqa: E402
from pymc_partitions.priors import CRP  # noqa: E402
from pymc_partitions.samplers.gibbs import GibbsKernel  # noqa: E402


def gibbs_draws(n: int, draws: int, burn: int = 100, k: int = 10, spread: float = 4.0, seed: int = 0):
    """(draws, n) label draws of a DPMM on a 10-cluster 2-d mixture, and the true labels."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=spread, size=(k, 2))
    truth = rng.integers(0, k, n)
    y = centres[truth] + rng.normal(size=(n, 2))
    hyper = kernels.diag_normal_hyper([0.0, 0.0], [spread, spread], [1.0, 1.0], 2)
    pack = FamilyPack.build([(kernels.DIAG_NORMAL, y, hyper)])
    prior = CRP(1.0)
    kernel = GibbsKernel(pack, prior.code, prior.kernel_params())
    labels = truth.astype(np.int64)
    out = np.empty((draws, n), np.int64)
    for t in range(burn + draws):
        labels, _ = kernel.step(labels, rng)
        if t >= burn:
            out[t - burn] = labels
    return out, truth


def timed(fn, repeats: int = 1):
    """(result of the last call, median wall seconds, median CPU seconds)."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return out, float(np.median(walls)), float(np.median(cpus))


def numpy_similarity(z: np.ndarray, chunk: int = 50) -> np.ndarray:
    n = z.shape[1]
    total = np.zeros((n, n))
    for lo in range(0, len(z), chunk):
        block = z[lo:lo + chunk]
        total += (block[:, :, None] == block[:, None, :]).sum(axis=0)
    return total / len(z)


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "?"


def similarity_table(sizes, draws_for):
    print("\n## 1. Similarity matrix (1000 draws)\n")
    print("| n | draws | pmp.coclustering wall | CPU | numpy (chunked ==) wall | ratio | max abs diff |")
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        z = draws_for(n)[:1000]
        pmp.coclustering(z[:5])  # warm-up (compiled kernels loaded)
        ours, wall, cpu = timed(lambda: pmp.coclustering(z).values, repeats=3)
        if n <= 2000:
            ref, ref_wall, _ = timed(lambda: numpy_similarity(z))
            ratio, diff = f"{ref_wall / wall:.0f}x", f"{np.abs(ours - ref).max():.1e}"
            ref_text = f"{ref_wall:.2f} s"
        else:
            ratio = diff = "-"
            ref_text = "not run (n² x draws bytes per chunk)"
        print(f"| {n} | {len(z)} | {wall:.3f} s | {cpu:.3f} s | {ref_text} | {ratio} | {diff} |")


def estimate_table(cases, draws_for):
    print("\n## 2. Point estimate under VI (default: 16 runs, all cores)\n")
    print("| n | draws | SALSO wall | CPU | CPU per run | E[VI] SALSO | K | runs' E[VI] min / median / max "
          "| best draw: wall | E[VI] | greedy restarts, same wall time: restarts | best E[VI] | median E[VI] |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n, s in cases:
        z = draws_for(n)[:s]
        pmp.point_estimate(z[:3, :50], random_seed=0)  # warm-up
        est, wall, cpu = timed(lambda: pmp.point_estimate(z, loss="vi", random_seed=1))
        best, best_wall, _ = timed(lambda: pmp.point_estimate(z, loss="vi", method="draws"))
        greedy = pmp.point_estimate(z, loss="vi", runs=100000, prob_sequential_allocation=0.0, max_zealous_attempts=0,
                                    seconds=wall, random_seed=1)
        g = greedy.stats
        restarts = g["runs_completed"] + g["runs_truncated"]
        losses = np.array(est.stats["run_losses"])
        print(f"| {n} | {s} | {wall:.2f} s | {cpu:.2f} s | {cpu / len(losses):.2f} s | {est.expected_loss:.4f} | "
              f"{est.n_clusters} | {losses.min():.4f} / {np.median(losses):.4f} / {losses.max():.4f} | "
              f"{best_wall:.2f} s | {best.expected_loss:.4f} | {restarts} | {greedy.expected_loss:.4f} | "
              f"{np.median(g['run_losses']):.4f} |")


def memory_check(z: np.ndarray, workdir: Path) -> None:
    """Peak RSS of a fresh process that loads the draws and the package (warmed up), before and
    after the estimate."""
    path = workdir / "draws.npy"
    np.save(path, z)
    # VmHWM (the peak RSS of this process image) rather than ru_maxrss, which a child inherits
    # from its parent through fork and exec
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); import numpy as np;"
            "hwm = lambda: int([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]);"
            "import pymc_partitions as pmp; pmp.point_estimate(np.zeros((2, 60), int), random_seed=0);"
            f"z = np.load({str(path)!r}); before = hwm(); pmp.point_estimate(z, random_seed=1); print(before, hwm())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after = (int(v) / 1024 for v in out.stdout.split())
    n, s = z.shape[1], z.shape[0]
    print(f"\n## 3. Memory of the n = {n} estimate ({s} draws)\n")
    print(f"peak RSS of a fresh process: {before:.0f} MB with the package and the draws loaded, {after:.0f} MB "
          f"after the estimate: +{after - before:.0f} MB for the search, against {n * n * 8 / 2**20:.0f} MB for "
          f"one n x n float64 matrix (the draws: {z.nbytes / 2**20:.0f} MB as int64)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller n (~1 min)")
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"# bench_summaries ({'quick' if args.quick else 'full'}): {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{os.cpu_count()} cores, load average {load()} at start")
    big = 2000 if args.quick else 10_000
    sim_sizes = (1000, 2000) if args.quick else (1000, 5000)
    need = {1000: 2000, big: 500}
    for n in sim_sizes:
        need[n] = max(need.get(n, 0), 1000)
    cache = {}
    w = time.perf_counter()
    for n, s in sorted(need.items()):
        cache[n], _ = gibbs_draws(n, s)
    print(f"posterior draws made in {time.perf_counter() - w:.1f} s: "
          + ", ".join(f"n = {n}: {s} draws, mean K {np.mean([np.unique(r).size for r in cache[n]]):.1f}"
                      for n, s in sorted(need.items())))
    similarity_table(sim_sizes, cache.__getitem__)
    estimate_table([(1000, 2000), (big, 500)], cache.__getitem__)
    if not args.quick:
        with tempfile.TemporaryDirectory() as tmp:
            memory_check(cache[big][:500], Path(tmp))
    print(f"\nload average {load()} at the end; total {time.perf_counter() - start:.0f} s; max RSS of this process "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
