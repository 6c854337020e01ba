#!/usr/bin/env python
"""Does the non-conjugate split-merge move pay? ``pmp.NonConjugateGibbs`` with ``split_merge=0``
(Algorithm 8 + slot Metropolis only) against the same step with split-merge proposals, on real data
with non-conjugate clusters (issue 21, item 2).

    python benchmarks/bench_nonconjugate_split_merge.py                 # both data sets
    python benchmarks/bench_nonconjugate_split_merge.py --only galaxies --moves 0,3,6
    python benchmarks/bench_nonconjugate_split_merge.py --moves 0,1,1i     # "i": split_merge_proposal="informed"

Data sets and models (CRP(1), alpha fixed):

* ``galaxies``: the 82 velocities in 1000 km/s; Student-t clusters with nu = 4,
  mu ~ Normal(20, 10), sigma ~ HalfNormal(3) per slot.
* ``faithful``: Old Faithful, both columns standardised; Normal clusters of unknown diagonal
  variance, mu ~ Normal(0, 2), sigma ~ HalfNormal(1) per slot and coordinate (shape (n, 2)).

Each configuration and seed (``--seeds``): ``--chains`` chains of ``--tune`` + ``--draws`` draws through ``pm.sample``
(``cores=1``), each chain from its own dispersed partition (``pmp.Partition``'s default start) and
the same seed for every configuration. Per configuration: CPU seconds of sampling
(``time.process_time`` between the first and the last draw through ``pm.sample``'s callback, the
callback's own work excluded), R-hat and bulk ESS (ArviZ) of the number of clusters K, the largest
cluster's share and the log joint density of (partition, occupied cluster parameters) (log EPPF +
base measure of the occupied slots + likelihood, computed in the callback), ESS per CPU second, and
its ratio to ``split_merge=0`` in the same seed, and the median of these ratios over the seeds (ESS
of slowly mixing chains varies a lot from seed to seed). Prints tables; never fails on a missed
target.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.priors import log_eppf_sizes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_mixing import DrawClock, sample  # noqa: E402

QUANTITIES = ["K", "largest share", "log joint"]


def model_galaxies():
    y = pmp.datasets.load_galaxies() / 1000.0
    n = len(y)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 20.0, 10.0, shape=n)
        sigma = pm.HalfNormal("sigma", 3.0, shape=n)
        pm.StudentT("y", nu=4.0, mu=mu[z], sigma=sigma[z], observed=y)
    return model


def model_faithful():
    y = pmp.datasets.load_faithful()
    y = (y - y.mean(0)) / y.std(0)
    n = len(y)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 0.0, 2.0, shape=(n, 2))
        sigma = pm.HalfNormal("sigma", 1.0, shape=(n, 2))
        pm.Normal("y", mu=mu[z], sigma=sigma[z], observed=y)
    return model


MODELS = {"galaxies": model_galaxies, "faithful": model_faithful}


class Recorder:
    """Per chain, per draw: (K, largest share, log joint) from the point, on the value scale."""

    def __init__(self, step):
        self.nc = step.nc
        self.code = step.terms.prior_code
        self.rows = {}

    def __call__(self, chain, point):
        nc = self.nc
        z = np.asarray(point["z"])
        sizes = np.bincount(z)
        sizes = sizes[sizes > 0]
        K = sizes.shape[0]
        values = nc.values(point)
        slots = [np.asarray(point[name]) for name in nc.slot_names]
        params = np.array([1.0, 0.0, 0.0])  # CRP(1)
        lj = (log_eppf_sizes(self.code, params, sizes.astype(np.int64)) + nc.base_logp(values, slots)[:K].sum()
              + nc.item_loglik(values, z, slots).sum())
        self.rows.setdefault(chain, []).append((K, sizes.max() / z.shape[0], lj))


def parse_config(text):
    """``"3"``: split_merge=3 with the random-walk proposal; ``"3i"``: with the informed one."""
    informed = text.endswith("i")
    return int(text[:-1] if informed else text), "informed" if informed else "random_walk"


def measure(model, config, args):
    import arviz as az  # noqa: PLC0415

    moves, proposal = parse_config(config)
    step = pmp.NonConjugateGibbs([model["z"]], model=model, split_merge=moves, split_merge_proposal=proposal)
    record = Recorder(step)

    def watch(chain, point, seconds):
        record(chain, point)
        return False

    clock = DrawClock(watch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sample(model, step, args.draws, args.tune, args.chains, args.seed, callback=clock)
    stats = pmp.posterior_dataset(idata, "sample_stats")
    rows = np.array([record.rows[c][-args.draws:] for c in sorted(record.rows)])  # (chain, draw, quantity)
    out = {}
    for q, name in enumerate(QUANTITIES):
        x = rows[:, :, q]
        out[name] = (float(az.rhat(x)), float(az.ess(x, method="bulk")), float(x.mean()))
    accepted = float((stats["splits"] + stats["merges"]).values.mean()) if "splits" in stats else float("nan")
    return clock.seconds, out, accepted


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="galaxies,faithful")
    parser.add_argument("--moves", default="0,3", help="split_merge values, 'i' appended for the informed proposal "
                        "(e.g. 0,1,1i); the first is the baseline")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seeds", default="1,2,3", help="one run of every configuration per seed")
    args = parser.parse_args(argv)
    moves = args.moves.split(",")
    for m in moves:
        parse_config(m)
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"Python {platform.python_version()}, PyMC {pm.__version__}; {args.chains} chains x ({args.tune} tune + "
          f"{args.draws} draws), seeds {seeds}; load average {os.getloadavg()[0]:.1f} at start")
    for dataset in args.only.split(","):
        model = MODELS[dataset]()
        with warnings.catch_warnings():  # warm-up: compile everything before timing
            warnings.simplefilter("ignore")
            for m in moves:
                moves_m, proposal = parse_config(m)
                sample(model, pmp.NonConjugateGibbs([model["z"]], model=model, split_merge=moves_m,
                                                    split_merge_proposal=proposal), 5, 5, 1, 0)
        print(f"\n{dataset}")
        print("| seed | split_merge | CPU s | ms / draw | accepted / draw | " + " | ".join(
            f"{q}: R-hat / ESS / mean / ESS per s" for q in QUANTITIES) + " | ESS/s ratio (K, share, log joint) |")
        print("|" + "---|" * (6 + len(QUANTITIES)), flush=True)
        all_ratios = {m: [] for m in moves}
        for seed in seeds:
            args.seed = seed
            results = {m: measure(model, m, args) for m in moves}
            base_seconds, base, _ = results[moves[0]]
            for m in moves:
                seconds, out, accepted = results[m]
                per_draw = 1e3 * seconds / (args.chains * (args.draws + args.tune))
                cells = []
                ratios = []
                for q in QUANTITIES:
                    rhat, ess, mean = out[q]
                    cells.append(f"{rhat:.3f} / {ess:.0f} / {mean:.3g} / {ess / seconds:.1f}")
                    ratios.append((ess / seconds) / (base[q][1] / base_seconds))
                all_ratios[m].append(ratios)
                print(f"| {seed} | {m} | {seconds:.1f} | {per_draw:.2f} | {accepted:.3f} | " + " | ".join(cells)
                      + " | " + ", ".join(f"{r:.2f}" for r in ratios) + " |", flush=True)
        print(f"{dataset}: median over seeds of the ESS/s ratio to split_merge={moves[0]} (K, share, log joint): "
              + "; ".join(f"split_merge={m}: " + ", ".join(f"{r:.2f}" for r in np.median(all_ratios[m], axis=0))
                          for m in moves[1:]) + f" (load average {os.getloadavg()[0]:.1f} at the end)", flush=True)


if __name__ == "__main__":
    main()
