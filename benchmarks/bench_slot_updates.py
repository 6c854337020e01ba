#!/usr/bin/env python
"""Updates of the occupied slots of NonConjugateGibbs compared per effective sample per CPU second
(issue 21: random-walk Metropolis, slice sampling and HMC per cluster, PyMC's NUTS on the slots).

    PYTHONPATH=$PWD python benchmarks/bench_slot_updates.py
    PYTHONPATH=$PWD python benchmarks/bench_slot_updates.py --only faithful \
        --configs slot_update=metropolis,slot_update=slice,slot_update=hmc:slot_steps=1,slot_update=nuts
    PYTHONPATH=$PWD python benchmarks/bench_slot_updates.py --only faithful --chains 2 --draws 1000 \
        --tune 1000 --seed 7        # PyMC's defaults: does each configuration converge (R-hat)?

The models, data and quantities are those of ``bench_stick_breaking.py`` (Galaxies with Student-t
clusters, Old Faithful with diagonal Normal clusters, alpha ~ Gamma(1, 1), ``pm.sample`` as a user runs
it with ``step=pmp.NonConjugateGibbs([z], **config)``; 'default' is the plain ``pm.sample``), plus the
largest cluster's share of the items and the log joint density (partition, alpha, occupied slots, data).
Each configuration runs in this process after its own warm-up; the ratios are ESS per CPU second against
the first configuration; R-hat is ArviZ's rank-normalised split R-hat over the chains (each chain from
``pm.sample``'s dispersed start). ``slot_update=nuts`` leaves the occupied slots to the NUTS step that
``pm.sample`` assigns to the slot variables. Prints; never fails.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_stick_breaking import ess_mcse, load, ours, step_kwargs  # noqa: E402


def rhat(values):
    """Rank-normalised split R-hat of a (chain, draw) array (NaN for one chain)."""
    import arviz as az

    values = np.asarray(values, float)
    return float(np.asarray(az.rhat(values))) if values.shape[0] > 1 else float("nan")


def quantities(res):
    out = {"K": res["k"], "largest share": res["share"], "log joint": res["joint"]}
    for j in range(res["density"].shape[-1]):
        out[f"density(x{j + 1})"] = res["density"][..., j]
    return out


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="galaxies,faithful")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--configs", default="slot_update=metropolis,slot_update=slice,slot_update=hmc:slot_steps=1,"
                        "slot_update=hmc,slot_update=nuts",
                        help="comma-separated NonConjugateGibbs keywords 'a=1:b=2' or 'default'; the first is the "
                             "baseline of the ratios")
    args = parser.parse_args(argv)
    configs = args.configs.split(",")
    print(f"Python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.2f}; {args.chains} chains x "
          f"{args.draws} draws, tune {args.tune}; CPU = process_time of pm.sample (cores=1, all chains)")
    for name in args.only.split(","):
        y, points = load(name)
        print(f"\n== {name} ==", flush=True)
        base = None
        for config in configs:  # printed as each finishes
            res = ours(name, y, points, args.draws, args.tune, args.chains, args.seed, step_kwargs(config))
            q = quantities(res)
            rates = {}
            print(f"-- {config}: {res['cpu']:.1f} s CPU ({res['wall']:.1f} s wall); K mean {res['k'].mean():.2f}")
            print(f"{'quantity':<14}{'mean':>10}{'ESS':>8}{'ESS/s':>9}{'vs first':>10}{'R-hat':>8}")
            for key, values in q.items():
                ess, _ = ess_mcse(values)
                rates[key] = ess / res["cpu"]
                ratio = "" if base is None else f"{rates[key] / base[key]:.2f}"
                print(f"{key:<14}{values.mean():>10.4f}{ess:>8.0f}{rates[key]:>9.1f}{ratio:>10}{rhat(values):>8.3f}")
            base = base or rates
            sys.stdout.flush()
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
