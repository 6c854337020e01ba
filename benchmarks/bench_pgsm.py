"""PGSM and SAMS move times next to a Gibbs sweep, and the greediness check of seed 003 Sec. 3.4.

    PYTHONPATH=. python benchmarks/bench_pgsm.py

Prints tables, never fails. Data: 20 Normal clusters (D = 2, means ~ N(0, 8^2)), CRP(1), chains
started at the true labels; then two well-separated groups (n = 200) started merged, counting
the moves until the first split for a small CRP alpha (annealed vs plain targets).
"""

import time

import numpy as np

from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.priors import CRP
from pymc_partitions.samplers.gibbs import GibbsKernel
from pymc_partitions.samplers.pgsm import PGSMKernel
from pymc_partitions.samplers.sams import SAMSKernel


def timing(reps=200):
    rng = np.random.default_rng(0)
    print("n      kernel              ms/step  RNG ms  mean closure  moves")
    for n in (1000, 10000):
        z = rng.integers(20, size=n)
        y = rng.normal(scale=8, size=(20, 2))[z] + rng.normal(size=(n, 2))
        fam = FamilyPack.build([(kernels.DIAG_NORMAL, y, kernels.diag_normal_hyper(0.0, 10.0, 1.0, 2))])
        prior = CRP(1.0)
        for name, kernel in [("pgsm annealed N=20", PGSMKernel(fam, prior.code, prior.kernel_params())),
                             ("pgsm plain N=20", PGSMKernel(fam, prior.code, prior.kernel_params(), annealed=False)),
                             ("sams", SAMSKernel(fam, prior.code, prior.kernel_params())),
                             ("gibbs sweep", GibbsKernel(fam, prior.code, prior.kernel_params()))]:
            labels = z.copy()
            kernel.step(labels, rng)  # compile
            count = reps if name != "gibbs sweep" else reps // 10
            t_rng = t_all = 0.0
            closure, moves = [], {}
            for _ in range(count):
                t0 = time.perf_counter()
                rn = kernel.random_numbers(rng, n)
                t1 = time.perf_counter()
                out = kernel.move(labels, rn) if hasattr(kernel, "move") else kernel.step(labels, rng)
                t2 = time.perf_counter()
                t_rng += t1 - t0
                t_all += t2 - t0 if hasattr(kernel, "move") else t2 - t1
                labels = out[0]
                if isinstance(out[1], dict):
                    closure.append(out[1].get("closure_size", np.nan))
                    moves[out[1]["move"]] = moves.get(out[1]["move"], 0) + 1
            rng_ms = t_rng / count * 1e3 if hasattr(kernel, "move") else float("nan")
            print(f"{n:<6} {name:<19} {t_all / count * 1e3:7.2f} {rng_ms:7.2f} {np.mean(closure) if closure else np.nan:13.0f}"
                  f"  {moves}")


def greediness(reps=20, cap=200):
    rng = np.random.default_rng(0)
    n = 200
    y = np.where((np.arange(n) % 2)[:, None] == 1, 2.5, -2.5) + rng.normal(size=(n, 2))
    fam = FamilyPack.build([(kernels.DIAG_NORMAL, y, kernels.diag_normal_hyper(0.0, 5.0, 1.0, 2))])
    print("\nmoves until the first split from one block (two groups, n = 200), median of", reps)
    for alpha in (1.0, 1e-3, 1e-8):
        prior = CRP(alpha)
        row = []
        for annealed in (True, False):
            kernel = PGSMKernel(fam, prior.code, prior.kernel_params(), annealed=annealed)
            first = []
            for rep in range(reps):
                labels, r = np.zeros(n, np.int64), np.random.default_rng(rep)
                for t in range(cap):
                    labels = kernel.step(labels, r)[0]
                    if labels.max() >= 1:
                        break
                first.append(t + 1 if labels.max() >= 1 else np.inf)
            row.append(np.median(first))
        print(f"alpha = {alpha:g}: annealed {row[0]}, plain {row[1]}")


if __name__ == "__main__":
    timing()
    greediness()
