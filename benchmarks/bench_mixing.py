"""Mixing suite (issue 20): effective samples per CPU second of plain ``pm.sample`` step configurations.

For each data set and each step configuration, ``--chains`` chains (default 4) of ``--tune`` +
``--draws`` draws (default 1000 + 1000, PyMC's own defaults) run in one process (``cores=1``) from
the default start: each chain from its own dispersed partition (``pmp.Partition``'s default), after
a short warm-up run so that nothing is compiled while timed. Reported per configuration: R-hat
across the chains and bulk ESS (summed over chains) of the number of clusters K, the
largest-cluster share and the log joint; the CPU seconds of sampling (``time.process_time`` from
the first to the last draw, through ``pm.sample``'s ``callback``: the model's setup and PyMC's
result conversion are not counted, PyMC's per-draw loop is); ESS of K per CPU second, and the
ratios to Gibbs alone's of the ESS per CPU second of K and of the slowest of the three.

Data sets (``--only``):

* ``galaxies``: the 82 velocities (1000 km/s); CRP(alpha), alpha ~ Gamma(1, 1);
  NormalNormal(mu0 = 20, sigma0 = 10, sigma = 1), as ``examples/demo.py``.
* ``faithful``: Old Faithful, both columns standardised; CRP(alpha), alpha ~ Gamma(1, 1);
  NormalInverseWishart(mu0 = 0, kappa0 = 0.1, nu0 = 4, scale0 = I) (``--kappa0``, ``--nu0``,
  ``--scale0`` change it; ``--raw``: the data in minutes with mu0 = their mean).
* ``gene``: the gene data (n = 200, D = 50); CRP(1); NormalNormal(mu0 = 0, sigma0 = 0.5,
  sigma = 1.3), as ``examples/unbiased_gene.py``.
* ``planted``: undirected planted partition, n = 200 in 4 blocks, mean degree 10, 6 times denser
  inside blocks (``benchmarks/bench_arm.py``'s ``planted_edges(200, 4, 10, 6, seed 200)``);
  BetaBernoulliNetwork(a = b = 1), CRP(1).
* ``karate``: Zachary's karate club, the same infinite relational model.
* ``mix2d``: n = 10^4 points from 8 two-dimensional Gaussians (means and covariances drawn from
  seed 2; some overlap); CRP(alpha), alpha ~ Gamma(1, 1); NIW(mu0 = 0, kappa0 = 0.1, nu0 = 4,
  scale0 = I) on the standardised data.
* ``mix10d``: n = 10^4 points from 10 Gaussians in D = 10 (means ~ N(0, 3^2 I), unit
  covariance, seed 0); CRP(1); NIW(mu0 = 0, kappa0 = 0.1, nu0 = 12, scale0 = I). Also: the CPU
  seconds from one block to the first draw whose labels have an adjusted Rand index >= 0.95 with
  the true ones, per chain (``--ari-seeds`` runs of ``--chains`` chains, at most ``--ari-draws``
  draws each).

Configurations (``--configs``; ``name:key=value,...`` passes arguments to the move):
``gibbs`` (``pmp.CollapsedGibbs`` alone), ``pgsm``, ``sams``, ``sm`` (Gibbs + ``pmp.PGSM`` / ``pmp.SAMS``
/ ``pmp.SplitMerge``, one move per draw unless ``moves=``), ``default`` (no ``step=``: what
``pm.sample`` assigns, ``pmp.GibbsSplitMerge``), ``gsm`` (``pmp.GibbsSplitMerge`` with the
arguments given, e.g. ``gsm:sweeps=5,moves=2``), ``sub`` (``pmp.SubClusterSplitMerge``, the default's
composition with sub-cluster split-merge moves instead of SAMS, e.g. ``sub:scans=0``). ``pgsm`` and ``sams`` do not apply to networks
(shown as n/a).

Run: ``python benchmarks/bench_mixing.py`` (every data set and configuration: about an hour on 2
cores); ``--only faithful,gene --configs gibbs,default`` for a subset; ``--quick`` for 300 + 300
draws and one ARI run.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
import warnings

import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.partition import contingency

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_arm import planted_edges  # noqa: E402

DATASETS = ["galaxies", "faithful", "gene", "planted", "karate", "mix2d", "mix10d"]
CONFIGS = ["gibbs", "pgsm", "sams", "sm", "default", "gsm", "sub"]
NETWORKS = {"planted", "karate"}
MOVES = {"pgsm": "PGSM", "sams": "SAMS", "sm": "SplitMerge"}
QUANTITIES = [("z_n_clusters", "K"), ("z_largest_share", "largest share"), ("log_joint", "log joint")]


# ----------------------------------------------------------------------------- data sets and models


def _crp(alpha_random):
    return pmp.CRP(pm.Gamma("alpha", 1.0, 1.0)) if alpha_random else pmp.CRP(1.0)


def model_galaxies(args):
    y = pmp.datasets.load_galaxies() / 1000.0
    with pm.Model() as model:
        z = pmp.Partition("z", _crp(True), n=len(y))
        pmp.NormalNormal("y", partition=z, mu0=20.0, sigma0=10.0, sigma=1.0, observed=y)
    return model, None


def model_faithful(args):
    y = pmp.datasets.load_faithful()
    mu0 = y.mean(0) if args.raw else 0.0
    if not args.raw:
        y = (y - y.mean(0)) / y.std(0)
    with pm.Model() as model:
        z = pmp.Partition("z", _crp(True), n=len(y))
        pmp.NormalInverseWishart("y", partition=z, mu0=mu0, kappa0=args.kappa0, nu0=args.nu0,
                                 scale0=args.scale0 * np.eye(2), observed=y)
    return model, None


def model_gene(args):
    y = pmp.datasets.load_gene()
    with pm.Model() as model:
        z = pmp.Partition("z", _crp(False), n=len(y))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=0.5, sigma=1.3, observed=y)
    return model, None


def _network(edges, n, truth):
    with pm.Model() as model:
        z = pmp.Partition("z", _crp(False), n=n)
        pmp.BetaBernoulliNetwork("A", partition=z, a=1.0, b=1.0, observed=edges)
    return model, truth


def model_planted(args):
    edges, truth = planted_edges(200, 4, 10.0, 6.0, 200)
    return _network(edges, 200, truth)


def model_karate(args):
    return _network(pmp.datasets.load_karate(), 34, pmp.datasets.load_karate_factions())


def mixture_2d(n=10_000, k=8, seed=2):
    """(standardised data, true labels): k Gaussians in 2-D, means in [-6, 6]^2, random covariances."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(-6.0, 6.0, (k, 2))
    truth = rng.integers(0, k, n)
    y = np.empty((n, 2))
    for c in range(k):
        a = rng.normal(size=(2, 2)) * 0.6
        cov = a @ a.T + 0.15 * np.eye(2)
        idx = truth == c
        y[idx] = rng.multivariate_normal(means[c], cov, idx.sum())
    return (y - y.mean(0)) / y.std(0), truth


def mixture_10d(n=10_000, d=10, k=10, seed=0):
    """(data, true labels): k unit-covariance Gaussians in d dimensions with means ~ N(0, 3^2 I)."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, 3.0, (k, d))
    truth = rng.integers(0, k, n)
    return means[truth] + rng.normal(size=(n, d)), truth


def model_mix2d(args):
    y, truth = mixture_2d()
    with pm.Model() as model:
        z = pmp.Partition("z", _crp(True), n=len(y))
        pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=0.1, nu0=4.0, scale0=np.eye(2), observed=y)
    return model, truth


def model_mix10d(args):
    y, truth = mixture_10d()
    d = y.shape[1]
    with pm.Model() as model:
        z = pmp.Partition("z", _crp(False), n=len(y))
        pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=0.1, nu0=d + 2.0, scale0=np.eye(d), observed=y)
    return model, truth


MODELS = {name: globals()[f"model_{name}"] for name in DATASETS}


# ----------------------------------------------------------------------------- configurations


def parse_config(text):
    """("sams:moves=5") -> ("sams", {"moves": 5})."""
    name, _, rest = text.partition(":")
    if name not in CONFIGS:
        raise SystemExit(f"unknown configuration {name!r}; choose from {CONFIGS}")
    kwargs = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        kwargs[key] = int(value) if value.lstrip("-").isdigit() else float(value) if value[:1].isdigit() else value
    return name, kwargs


def split_configs(text):
    """Split ``--configs`` on commas that start a new configuration (``sams:moves=5,gibbs``)."""
    out = []
    for part in text.split(","):
        if out and "=" in part and part.split("=")[0] not in CONFIGS and ":" not in part:
            out[-1] += "," + part
        else:
            out.append(part)
    return out


def steps(model, name, kwargs):
    """The ``step=`` of a configuration (``None``: pm.sample's automatic assignment)."""
    z = model["z"]
    if name == "default":
        return None
    with model:
        if name == "gibbs":
            return [pmp.CollapsedGibbs([z], **kwargs)]
        if name == "gsm":
            return [pmp.GibbsSplitMerge([z], **kwargs)]
        if name == "sub":
            return [pmp.SubClusterSplitMerge([z], **kwargs)]
        return [pmp.CollapsedGibbs([z]), getattr(pmp, MOVES[name])([z], **kwargs)]


def applies(dataset, name):
    return not (dataset in NETWORKS and name in ("pgsm", "sams"))


# ----------------------------------------------------------------------------- measurements


def adjusted_rand(a, b):
    table = contingency(a, b).astype(float)
    comb = lambda v: float(np.sum(v * (v - 1.0) / 2.0))  # noqa: E731
    index, rows, cols = comb(table), comb(table.sum(axis=1)), comb(table.sum(axis=0))
    expected = rows * cols / comb(np.array([float(len(a))]))
    return (index - expected) / (0.5 * (rows + cols) - expected)


class DrawClock:
    """``pm.sample`` callback: CPU seconds per chain from its first draw, less the time spent in
    ``watch`` (e.g. an ARI computation); ``watch(chain, point, seconds)`` may return True to stop
    watching that chain."""

    def __init__(self, watch=None):
        self.watch = watch
        self.first = None
        self.last = None
        self.excluded = 0.0
        self.chain_start = {}
        self.done = set()

    def __call__(self, trace=None, draw=None, **_):
        now = time.process_time()
        chain = draw.chain
        if self.first is None:
            self.first = now
        if chain not in self.chain_start:
            self.chain_start[chain] = (now, self.excluded)
        if self.watch is not None and chain not in self.done:
            start, excluded_then = self.chain_start[chain]
            seconds = now - start - (self.excluded - excluded_then)
            if self.watch(chain, draw.point, seconds):
                self.done.add(chain)
            self.excluded += time.process_time() - now
        self.last = time.process_time()

    @property
    def seconds(self):
        return (self.last - self.first) - self.excluded


def sample(model, step, draws, tune, chains, seed, initvals=None, callback=None):
    with model, warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning)
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        return pm.sample(draws=draws, tune=tune, chains=chains, cores=1, step=step, random_seed=seed,
                         initvals=initvals, progressbar=False, compute_convergence_checks=False, callback=callback)


def diagnostics(idata, model):
    """{quantity: (R-hat, bulk ESS)} of the label-invariant quantities (ArviZ, unrounded)."""
    import arviz as az  # noqa: PLC0415

    posterior = pmp.posterior_dataset(pmp.label_invariant(idata, model=model))
    out = {}
    for q, _ in QUANTITIES:
        x = np.asarray(posterior[q].transpose("chain", "draw").values, dtype=float)
        out[q] = (float(az.rhat(x)), float(az.ess(x, method="bulk")))
    return out


def measure(model, name, kwargs, args):
    clock = DrawClock()
    idata = sample(model, steps(model, name, kwargs), args.draws, args.tune, args.chains, args.seed, callback=clock)
    return clock.seconds, diagnostics(idata, model)


def time_to_ari(model, truth, name, kwargs, args, seed):
    """Per chain: CPU seconds from one block to the first draw with ARI >= 0.95 (None if never)."""
    hit = {}

    def watch(chain, point, seconds):
        if adjusted_rand(np.asarray(point["z"]), truth) >= 0.95:
            hit[chain] = seconds
            return True
        return False

    n = len(truth)
    clock = DrawClock(watch)
    sample(model, steps(model, name, kwargs), args.ari_draws, 0, args.chains, seed,
           initvals={"z": np.zeros(n, np.int64)}, callback=clock)
    return [hit.get(c) for c in range(args.chains)]


# ----------------------------------------------------------------------------- report


def fmt(v, digits=3):
    return "n/a" if v is None else f"{v:.{digits}f}"


def run_dataset(dataset, configs, args):
    model, truth = MODELS[dataset](args)
    n = int(pmp.pymc.distributions.partition_size(model["z"]))
    print(f"\n### {dataset} (n = {n})\n", flush=True)
    for name, kwargs in configs:  # warm-up: compile every kernel (numba) and function (PyTensor) first
        if applies(dataset, name):
            sample(model, steps(model, name, kwargs), 3, 2, 1, 0)
    print("| configuration | CPU s | K: R-hat / ESS / ESS per s | largest share: R-hat / ESS | "
          "log joint: R-hat / ESS | ESS/s vs Gibbs: K / slowest |")
    print("|---|---|---|---|---|---|")
    base = None
    for label, (name, kwargs) in zip(args.config_labels, configs):
        if not applies(dataset, name):
            print(f"| {label} | n/a | | | | |", flush=True)
            continue
        seconds, diag = measure(model, name, kwargs, args)
        (rk, ek), (rs, es), (rl, el) = (diag[q] for q, _ in QUANTITIES)
        rate, slowest = ek / seconds, min(ek, es, el) / seconds
        if name == "gibbs" and not kwargs:
            base = (rate, slowest)
        ratio = f"{rate / base[0]:.1f}x / {slowest / base[1]:.1f}x" if base else ""
        print(f"| {label} | {seconds:.2f} | {rk:.3f} / {ek:.0f} / {rate:.0f} | {rs:.3f} / {es:.0f} | "
              f"{rl:.3f} / {el:.0f} | {ratio} |", flush=True)
    if dataset == "mix10d" and args.ari_seeds > 0:
        print(f"\nCPU seconds from one block to ARI >= 0.95 (per chain; '-': not within {args.ari_draws} draws):\n")
        print("| configuration | runs | CPU s per chain |")
        print("|---|---|---|")
        for label, (name, kwargs) in zip(args.config_labels, configs):
            times = []
            for s in range(args.ari_seeds):
                times += time_to_ari(model, truth, name, kwargs, args, args.seed + 100 + s)
            shown = ", ".join("-" if t is None else f"{t:.2f}" for t in times)
            print(f"| {label} | {len(times)} | {shown} |", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(DATASETS), help="data sets: " + ",".join(DATASETS))
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="configurations: " + ",".join(CONFIGS) + " (name:key=value,... for arguments)")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="300 + 300 draws, one ARI run")
    parser.add_argument("--ari-seeds", type=int, default=2, help="mix10d: runs of --chains chains from one block")
    parser.add_argument("--ari-draws", type=int, default=300, help="mix10d: draws per run from one block")
    parser.add_argument("--raw", action="store_true", help="faithful: data in minutes, mu0 = data mean")
    parser.add_argument("--kappa0", type=float, default=0.1, help="faithful: NIW kappa0")
    parser.add_argument("--nu0", type=float, default=4.0, help="faithful: NIW nu0")
    parser.add_argument("--scale0", type=float, default=1.0, help="faithful: scale0 = this times the identity")
    args = parser.parse_args(argv)
    if args.quick:
        args.draws, args.tune, args.ari_seeds = 300, 300, 1
    datasets = args.only.split(",")
    unknown = sorted(set(datasets) - set(DATASETS))
    if unknown:
        parser.error(f"unknown data sets {unknown}; choose from {DATASETS}")
    args.config_labels = split_configs(args.configs)
    configs = [parse_config(c) for c in args.config_labels]
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "n/a"
    print(f"bench_mixing {datetime.datetime.now():%Y-%m-%d %H:%M}: {' '.join(sys.argv[1:]) or '(defaults)'}")
    print(f"Python {platform.python_version()}, PyMC {pm.__version__}, {os.cpu_count()} CPUs, load average {load}; "
          f"{args.chains} chains x ({args.tune} + {args.draws}) draws, cores=1, seed {args.seed}")
    start = time.time()
    for dataset in datasets:
        run_dataset(dataset, configs, args)
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "n/a"
    print(f"\nTotal {time.time() - start:.0f} s wall; load average at end {load}")


if __name__ == "__main__":
    main()
