"""When do split-merge moves pay? Gibbs alone against Gibbs + PGSM on Old Faithful (2-D, NIW).

Model: the 272 eruptions standardised per column; z ~ CRP(alpha), alpha ~ Gamma(1, 1)
(EscobarWest, automatic); NormalInverseWishart(mu0 = 0, kappa0 = 0.5, nu0 = 4, scale0 = 0.5 I).
Each configuration runs ``--chains`` chains of ``--tune`` + ``--draws`` draws in one process
(``cores=1``), after a short warm-up run so that no numba compilation is timed. Reported: R-hat and
bulk ESS of the label-invariant quantities (log joint, number of clusters, largest-cluster share),
sampling time (PyMC's ``sampling_time``), and ESS per second.

Run: ``python benchmarks/bench_mixing.py`` (about 5-15 minutes on 2 cores), options ``--draws``,
``--tune``, ``--chains``, ``--moves 1,5``, ``--seed``; the model: ``--raw`` (minutes, not
standardised, mu0 = the data mean), ``--kappa0``, ``--nu0``, ``--scale0`` (times the identity).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import pymc as pm

import pymc_partitions as pmp


def model_faithful(raw=False, kappa0=0.5, nu0=4.0, scale0=0.5):
    """The model above; ``raw``: the data in minutes, not standardised, with mu0 = the data mean
    (what a first model written from scratch often looks like); ``scale0`` times the identity."""
    y = pmp.datasets.load_faithful()
    mu0 = y.mean(0) if raw else 0.0
    if not raw:
        y = (y - y.mean(0)) / y.std(0)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=len(y))
        pmp.NormalInverseWishart("y", partition=z, mu0=mu0, kappa0=kappa0, nu0=nu0, scale0=scale0 * np.eye(2),
                                 observed=y)
    return model


def run(model, moves, draws, tune, chains, seed):
    with model:
        z = model["z"]
        step = [pmp.CollapsedGibbs([z])] + ([pmp.PGSM([z], moves=moves)] if moves else [])
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, step=step, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    seconds = float(pmp.posterior_dataset(idata).attrs["sampling_time"])
    table = pmp.summary(idata, var_names=["log_joint", "z_n_clusters", "z_largest_share"], model=model,
                        kind="diagnostics")
    ess_col = "ess_bulk"
    return seconds, table[["r_hat", ess_col]].rename(columns={ess_col: "ess_bulk"})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--moves", default="0,5", help="PGSM moves per draw to compare (0: Gibbs alone)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--raw", action="store_true", help="data in minutes (not standardised), mu0 = data mean")
    parser.add_argument("--kappa0", type=float, default=0.5)
    parser.add_argument("--nu0", type=float, default=4.0)
    parser.add_argument("--scale0", type=float, default=0.5, help="scale0 = this times the 2x2 identity")
    args = parser.parse_args(argv)
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else "n/a"
    print(f"Old Faithful ({'raw, mu0 = mean' if args.raw else 'standardised'}), NIW(kappa0 = {args.kappa0}, "
          f"nu0 = {args.nu0}, scale0 = {args.scale0} I); {args.chains} chains x ({args.tune} + {args.draws}) draws, "
          f"cores=1, seed {args.seed}; PyMC {pm.__version__}; {os.cpu_count()} CPUs, load average {' '.join(load)}")
    model = model_faithful(args.raw, args.kappa0, args.nu0, args.scale0)
    run(model, 1, 5, 5, 1, 0)  # compile everything first
    base = None
    for moves in [int(m) for m in args.moves.split(",")]:
        seconds, table = run(model, moves, args.draws, args.tune, args.chains, args.seed)
        label = "Gibbs" if moves == 0 else f"Gibbs + PGSM(moves={moves})"
        base = base or seconds
        print(f"\n{label}: {seconds:.1f} s sampling ({seconds / base:.1f}x)")
        for name, row in table.iterrows():
            print(f"  {name:16s} R-hat {row['r_hat']:.3f}  ESS {row['ess_bulk']:7.0f}  ESS/s {row['ess_bulk'] / seconds:6.1f}")


if __name__ == "__main__":
    main()
