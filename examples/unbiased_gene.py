"""Unbiased estimate of the share of cells in the largest cluster of the gene data (seed 000,
Fig. 2B), with a 95% interval, and how soon each coupling makes the chains meet.

    python examples/unbiased_gene.py            # 200 pairs for the estimate, 100 per coupling
    python examples/unbiased_gene.py --quick    # a small run (about half a minute)

Writes ``unbiased_gene.png``: meeting-time histograms per coupling, and the running estimate with
its 95% band against the number of pairs.
"""

from __future__ import annotations

import argparse
import time
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_partitions as pmp  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="unbiased_gene.png")
    args = parser.parse_args()
    pairs, compare, cap = (16, 12, 150) if args.quick else (200, 100, 1000)

    y = pmp.datasets.load_gene()
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(y))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=0.5, sigma=1.3, observed=y)

    start = time.perf_counter()
    result = pmp.sample_unbiased(model, h={"largest": pmp.h.largest_proportion}, n_pairs=pairs, random_seed=0,
                                 progressbar=False)
    row = pmp.summarize_unbiased(result).loc["largest"]
    attrs = result["unbiased"].attrs
    print(f"E[share of cells in the largest cluster | data] = {row['mean']:.3f} "
          f"(SE {row['se']:.3f}; 95% CI {row['ci_lower']:.3f} to {row['ci_upper']:.3f}) "
          f"from {int(row['n_pairs'])} pairs, k = {attrs['k']}, m = {attrs['m']}, "
          f"{time.perf_counter() - start:.1f} s")

    taus = {}
    for coupling in ("ot", "maximal", "crn"):
        with warnings.catch_warnings():  # pairs that do not meet within the cap are expected here
            warnings.filterwarnings("ignore", message=".*did not meet")
            meet = pmp.sample_unbiased(model, h=pmp.h.n_clusters, n_pairs=compare, coupling=coupling, k=0, m=0,
                                       max_iter=cap, random_seed=1, progressbar=False)["meeting"]
        met = meet["met"].values
        taus[coupling] = np.where(met, meet["tau"].values, cap)
        print(f"{coupling:8s} meeting time median {np.median(taus[coupling]):.0f}, "
              f"met within {cap}: {met.mean():.0%}")

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    bins = np.linspace(0, cap, 31)
    for coupling, tau in taus.items():
        left.hist(tau, bins=bins, histtype="step", linewidth=1.5, label=coupling)
    left.set(xlabel=f"meeting time (sweeps; {cap} = not met)", ylabel="pairs", title="Meeting times, gene data")
    left.legend()
    est = result["unbiased"]["largest"].values
    count = np.arange(1, len(est) + 1)
    mean = np.cumsum(est) / count
    se = np.array([est[:c].std(ddof=1) / np.sqrt(c) if c > 1 else np.nan for c in count])
    right.plot(count, mean, color="C0")
    right.fill_between(count, mean - 1.96 * se, mean + 1.96 * se, color="C0", alpha=0.25, label="95% band")
    right.set(xlabel="pairs", ylabel="largest-cluster share", title="Unbiased estimate (OT coupling)")
    right.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
