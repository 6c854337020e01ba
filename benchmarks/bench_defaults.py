"""Hyperparameters for D > 2: the constructors' fixed defaults against the data-scaled ones
(``pmp.NormalInverseWishart.hyperparameters_from_data``, ``pmp.NormalNormal.hyperparameters_from_data``).

Data (columns standardised): wine (178 x 13, 3 cultivars), iris (150 x 4, 3 species), Old
Faithful (272 x 2) and the gene data (200 x 50, already standardised). Partition prior: CRP(alpha),
alpha ~ Gamma(1, 1) (Escobar-West); on gene CRP(1) as ``examples/unbiased_gene.py`` models it.

Rows per data set:
* ``NIW defaults``: ``pmp.NormalInverseWishart(...)`` with nothing given (mu0 = 0, kappa0 = 1,
  nu0 = D + 2, scale0 = I);
* ``NIW data-scaled``: ``**pmp.NormalInverseWishart.hyperparameters_from_data(y)``;
* gene also: ``NN example`` (``pmp.NormalNormal(mu0=0, sigma0=0.5, sigma=1.3)``, seed 000's choice,
  the example's model), ``NN defaults`` (sigma0 = sigma = 1) and ``NN data-scaled``.

Each row runs twice: ``pm.sample``'s automatic steps ("auto": Gibbs + Escobar-West) and
``step=[pmp.CollapsedGibbs([z]), pmp.PGSM([z])]`` ("+PGSM"), which separates the prior's effect from
the default sampler's mixing. ``--chains`` chains of ``--tune`` + ``--draws`` draws in one process
(``cores=1``), each chain from its own random partition into 10 blocks (``--start dispersed``) so
that R-hat can see chains that disagree; ``--start one_block`` uses the package's default start.
Reported: the posterior of the number of clusters K (mean, mode, 5 % and 95 % quantiles), R-hat and bulk
ESS of K, of the largest-cluster share and of the log joint, the mean largest share, and, where
classes are known, the adjusted Rand index (ARI) of the SALSO point estimate (VI loss) to the
classes and the posterior mean ARI; CPU seconds of ``pm.sample`` (``time.process_time``).

Run: ``python benchmarks/bench_defaults.py`` (about 10 minutes on 2 idle cores); options
``--data wine,iris``, ``--draws``, ``--tune``, ``--chains``, ``--seed``, ``--start``.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time
import warnings

import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.summaries import partition_loss

NIW, NN = pmp.NormalInverseWishart, pmp.NormalNormal


def load(name):
    d = pmp.datasets
    x, classes = {"wine": (d.load_wine, d.load_wine_classes), "iris": (d.load_iris, d.load_iris_classes),
                  "faithful": (d.load_faithful, None), "gene": (d.load_gene, None)}[name]
    x = x()
    return (x - x.mean(axis=0)) / x.std(axis=0), (classes() if classes else None)


def rows(name, x):
    """(label, function(z, x) adding the likelihood)."""
    out = [("NIW defaults", lambda z, x: NIW("y", partition=z, observed=x)),
           ("NIW data-scaled", lambda z, x: NIW("y", partition=z, **NIW.hyperparameters_from_data(x), observed=x))]
    if name == "gene":
        out = [("NN example", lambda z, x: NN("y", partition=z, mu0=0.0, sigma0=0.5, sigma=1.3, observed=x)),
               ("NN defaults", lambda z, x: NN("y", partition=z, observed=x)),
               ("NN data-scaled", lambda z, x: NN("y", partition=z, **NN.hyperparameters_from_data(x), observed=x))] + out
    return out


def run(name, x, classes, likelihood, pgsm, args, alpha=None):
    """One ``pm.sample`` and its figures; ``alpha`` a fixed CRP concentration (default: gene 1,
    else alpha ~ Gamma(1, 1))."""
    n = len(x)
    rng = np.random.default_rng(args.seed)
    initvals = None  # one_block: the package's default start
    if args.start == "dispersed":
        initvals = [{"z": rng.integers(0, 10, n)} for _ in range(args.chains)]
    elif args.start == "singletons":
        initvals = [{"z": np.arange(n)} for _ in range(args.chains)]
    with pm.Model() as model:
        if alpha is None:
            alpha = 1.0 if name == "gene" else pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        likelihood(z, x)
        if args.start == "prior":  # each chain from its own draw of the partition prior
            initvals = [{"z": pm.draw(z, random_seed=args.seed + c)} for c in range(args.chains)]
        step = [pmp.CollapsedGibbs([z]), pmp.PGSM([z])] if pgsm else None
        start = time.process_time()
        idata = pm.sample(draws=args.draws, tune=args.tune, chains=args.chains, cores=1, random_seed=args.seed,
                          initvals=initvals, step=step, progressbar=False, compute_convergence_checks=False)
        cpu = time.process_time() - start
    names = ["z_n_clusters", "z_largest_share", "log_joint"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a constant K gives R-hat NaN
        table = pmp.summary(idata, var_names=names, model=model, kind="diagnostics")
    post = pmp.posterior_dataset(idata)
    k = post["z_n_clusters"].values.ravel()
    out = {"K": k.mean(), "Kmode": int(np.bincount(k.astype(np.int64)).argmax()), "K5": np.percentile(k, 5),
           "K95": np.percentile(k, 95), "cpu": cpu,
           "share": float(post["z_largest_share"].mean()),
           "rhat": [float(table.loc[v, "r_hat"]) for v in names], "ess": [float(table.loc[v, "ess_bulk"]) for v in names]}
    if classes is not None:
        estimate = pmp.point_estimate(idata, model=model, random_seed=0)
        out["ari"] = 1.0 - partition_loss(estimate.labels, classes, "omari")
        out["ari_mean"] = float(pmp.partition_traces(idata, reference=classes, model=model)["ari"].mean())
    return out


def main(argv=None):
    logging.getLogger("pymc").setLevel(logging.ERROR)  # no per-run sampler log lines in the table
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="wine,iris,faithful,gene")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", choices=["dispersed", "one_block", "singletons", "prior"], default="dispersed")
    parser.add_argument("--sweep", action="store_true", help="the sweep behind docs/models.md's recipe instead")
    args = parser.parse_args(argv)
    if args.sweep:
        return sweep(args)
    load_avg = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "n/a"
    print(f"bench_defaults: {args.chains} chains x ({args.tune} + {args.draws}) draws, cores=1, seed {args.seed}, "
          f"start {args.start}; Python {platform.python_version()}, PyMC {pm.__version__}; "
          f"{os.cpu_count()} CPUs, load average {load_avg}")
    x, _ = load("iris")  # compile every kernel first: nothing below is compiled while timed
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(pm.Gamma("alpha", 1.0, 1.0)), n=len(x))
        NIW("y", partition=z, observed=x)
        NN("w", partition=z, observed=x)
        pm.sample(draws=5, tune=5, chains=1, step=[pmp.CollapsedGibbs([z]), pmp.PGSM([z])], progressbar=False,
                  compute_convergence_checks=False)
    header = ("| data | hyperparameters | steps | K mean / mode [5%, 95%] | largest share | R-hat K / share / log joint "
              "| ESS K / share / log joint | ARI estimate | ARI mean | CPU s |")
    print("\n" + header)
    print("|" + "---|" * (header.count("|") - 1))
    for name in args.data.split(","):
        x, classes = load(name)
        for label, likelihood in rows(name, x):
            for pgsm in (False, True):
                r = run(name, x, classes, likelihood, pgsm, args)
                ari = (f"{r['ari']:.3f} | {r['ari_mean']:.3f}" if "ari" in r else "- | -")
                rhat = " / ".join("-" if np.isnan(v) else f"{v:.2f}" for v in r["rhat"])
                ess = " / ".join("-" if np.isnan(v) else f"{v:.0f}" for v in r["ess"])
                print(f"| {name} (D={x.shape[1]}) | {label} | {'+PGSM' if pgsm else 'auto'} | {r['K']:.1f} / {r['Kmode']} "
                      f"[{r['K5']:.0f}, {r['K95']:.0f}] | {r['share']:.2f} | {rhat} | {ess} | {ari} | {r['cpu']:.1f} |",
                      flush=True)
    print(f"\nwhole script: {time.process_time():.0f} s CPU")
    print(f"\nload average at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}"
          if os.path.exists("/proc/loadavg") else "")


def sweep(args):
    """The measurements behind the recipe in docs/models.md ("Choosing the hyperparameters"), on wine
    (and Old Faithful for ``within``): one table row per run, ``--chains`` chains of ``--tune`` +
    ``--draws`` draws (the docs quote 4 chains of 500 + 500), dispersed starts unless stated."""
    print(f"bench_defaults --sweep: {args.chains} chains x ({args.tune} + {args.draws}) draws, cores=1, seed "
          f"{args.seed}; Python {platform.python_version()}, PyMC {pm.__version__}; load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3]) if os.path.exists('/proc/loadavg') else 'n/a'}")
    header = "| part | data | setting | steps | start | K mean / mode | max R-hat K / share / log joint | ARI estimate | ARI mean |"
    print("\n" + header + "\n|" + "---|" * (header.count("|") - 1))

    def show(part, name, setting, likelihood, pgsm, run_args, alpha=None):
        x, classes = load(name)
        r = run(name, x, classes, likelihood, pgsm, run_args, alpha)
        rhat = np.nanmax(r["rhat"]) if not np.all(np.isnan(r["rhat"])) else np.nan
        ari = f"{r['ari']:.2f} | {r['ari_mean']:.2f}" if "ari" in r else "- | -"
        print(f"| {part} | {name} | {setting} | {'+PGSM' if pgsm else 'auto'} | {run_args.start} | "
              f"{r['K']:.1f} / {r['Kmode']} | {rhat:.2f} | {ari} |", flush=True)

    dim = load("wine")[0].shape[1]
    # (a) nu0 = D + 2 against 2D + 2 over within x kappa0, both samplers
    for nu0 in (dim + 2.0, 2.0 * dim + 2.0):
        for within in (0.25, 0.5, 0.85):
            for kappa0 in (1.0, 0.1, 0.01):
                for pgsm in (False, True):
                    def lik(z, x, within=within, kappa0=kappa0, nu0=nu0):
                        NIW("y", partition=z, **NIW.hyperparameters_from_data(x, within=within, kappa0=kappa0, nu0=nu0),
                            observed=x)
                    show("a", "wine", f"nu0={nu0:g} within={within} kappa0={kappa0}", lik, pgsm, args)
    # (b) a prior covariance shaped like the data's total covariance (scikit-learn's default shape)
    for nu0 in (float(dim), dim + 2.0):
        def lik(z, x, nu0=nu0):
            NIW("y", partition=z, mu0=x.mean(axis=0), kappa0=1.0, nu0=nu0, scale0=np.cov(x, rowvar=False), observed=x)
        show("b", "wine", f"scale0=cov(x) nu0={nu0:g} kappa0=1", lik, False, args)
    # (c) within for 3 (default), 5 and 2 clusters' volumes
    for name in ("wine", "faithful"):
        for volumes in (3, 5, 2):
            def lik(z, x, volumes=volumes):
                within = volumes ** (-2.0 / x.shape[1])
                NIW("y", partition=z, **NIW.hyperparameters_from_data(x, within=within), observed=x)
            show("c", name, f"within={volumes}^(-2/D)", lik, False, args)
    # (d) the start, with and without PGSM: CRP(1), data-scaled, 2 chains of 100 + 100
    short = argparse.Namespace(**{**vars(args), "chains": 2, "draws": 100, "tune": 100})
    for start in ("one_block", "prior", "singletons"):
        for pgsm in (False, True):
            def lik(z, x):
                NIW("y", partition=z, **NIW.hyperparameters_from_data(x), observed=x)
            show("d", "wine", "data-scaled, CRP(1)", lik, pgsm, argparse.Namespace(**{**vars(short), "start": start}),
                 alpha=1.0)
    print(f"\nwhole script: {time.process_time():.0f} s CPU; load average at the end: "
          f"{' '.join(open('/proc/loadavg').read().split()[:3]) if os.path.exists('/proc/loadavg') else 'n/a'}")


if __name__ == "__main__":
    main()
