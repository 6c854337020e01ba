"""Leave-one-out on real data: how many items PSIS cannot handle, and the exact refit where it fails.

For each fit (below) the script reports, for two pointwise values:

* ``integrated`` -- what ``pmp.pointwise_log_likelihood`` / ``pm.compute_log_likelihood`` give:
  log p(y_i | z_{-i}, phi, y_{-i}), item i's own cluster integrated out under the prior's
  conditional (the normaliser of its collapsed Gibbs conditional; "integrated importance sampling",
  Vehtari et al. 2016);
* ``own cluster`` -- log p(y_i | z, phi, y_{-i}) = log p(y_i | the other items of i's sampled
  cluster), for which the importance-sampling identity also holds;

the number of items whose Pareto k exceeds 0.7 and ArviZ's ``good_k``, the largest k, elpd_loo and
p_loo from ``pmp.loo``. Then, on a handful of items (the ``--items`` with the largest k and two with
a small k), the exact leave-one-out predictive from refitting without the item
(``pmp.loo(refit=...)``: the plain average of p(y_i | z_{-i}, phi, y_{-i}) over the refitted
posterior), with its Monte Carlo error (the spread of the per-chain averages / sqrt(chains)),
against both PSIS estimates; and with ``--refit-all`` the whole ``pmp.loo(refit=...)``.

Fits (4 chains, dispersed starts, ``--tune`` + ``--draws`` draws, ``cores=1``):

* ``wine, defaults``: the 178 wines standardised, ``pmp.NormalInverseWishart`` with nothing given
  (mu0 = 0, kappa0 = 1, nu0 = D + 2, scale0 = I), CRP(alpha), alpha ~ Gamma(1, 1), automatic steps:
  what issue 24 reported (55 of 178 items with k > 0.7);
* ``wine, data-scaled``: ``**pmp.NormalInverseWishart.hyperparameters_from_data(x)``, Gibbs + PGSM;
* ``galaxies``: the Dirichlet-process model of docs/model_comparison.md (velocities / 1000,
  NIW(mu0 = 20, kappa0 = 0.05, nu0 = 3, scale0 = 2)), automatic steps.

Refits use the fit's own settings with 2 chains. Run: ``python benchmarks/bench_loo.py``
(about 15 minutes on 2 idle cores; ``--refit-all`` adds one refit per flagged item);
options ``--fits``, ``--draws``, ``--tune``, ``--items``, ``--seed``.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time
import warnings

import numba
import numpy as np
import pymc as pm
import xarray as xr

import pymc_partitions as pmp
from pymc_partitions.families.kernels import pack_init, pack_log_preds, pack_update
from pymc_partitions.pymc.compat import new_result, posterior_dataset
from pymc_partitions.pymc.distributions import partition_size
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.samplers.gibbs import _build


@numba.njit(error_model="numpy")
def own_cluster_log_preds(labels, codes, dims, data_off, stat_off, hyper_off, hyper, data, width):
    """log p(y_i | the other items of i's block) for every item (fixed likelihood hyperparameters)."""
    n = labels.shape[0]
    scratch = np.empty(max(1, data.shape[1]))
    slot, sizes, st, _, k = _build(labels, codes, dims, data_off, stat_off, hyper_off, hyper, data, width, scratch)
    pack_init(codes, dims, stat_off, hyper_off, hyper, st, k)  # row k: an empty block
    out = np.zeros(n)
    block = np.empty(1, np.int64)
    value = np.zeros(1)
    for i in range(n):
        b = slot[i]
        block[0] = b if sizes[b] > 1 else k
        if sizes[b] > 1:
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, st, b, data, i, -1.0, scratch)
        value[0] = 0.0
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, st, block, 1, data, i, scratch, value)
        out[i] = value[0]
        if sizes[b] > 1:
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, st, b, data, i, 1.0, scratch)
    return out


def build(fit, keep=None):
    """(model, step factory) of the fit ``fit`` on the items ``keep`` (all by default)."""
    if fit.startswith("wine"):
        x = pmp.datasets.load_wine()
        x = (x - x.mean(axis=0)) / x.std(axis=0)
        hyper = pmp.NormalInverseWishart.hyperparameters_from_data(x) if fit == "wine-scaled" else {}
        pgsm = fit == "wine-scaled"
    else:
        x = pmp.datasets.load_galaxies() / 1000.0
        hyper, pgsm = dict(mu0=20.0, kappa0=0.05, nu0=3.0, scale0=2.0), False
    x = x if keep is None else x[keep]
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=len(x))
        pmp.NormalInverseWishart("y", partition=z, **hyper, observed=x)
    steps = (lambda: [pmp.CollapsedGibbs([z]), pmp.PGSM([z])]) if pgsm else (lambda: None)
    return model, steps


def sample(model, steps, chains, args, seed):
    rng = np.random.default_rng(seed)
    initvals = [{"z": rng.integers(0, 10, partition_size(model["z"]))} for _ in range(chains)]
    with model:
        return pm.sample(draws=args.draws, tune=args.tune, chains=chains, cores=1, random_seed=seed, step=steps(),
                         initvals=initvals, progressbar=False, compute_convergence_checks=False)


def own_cluster(idata, model):
    terms = PartitionTerms(model, "z")
    _, pack = terms.kernel_inputs(model.initial_point())  # the likelihood's hyperparameters are fixed here
    labels = posterior_dataset(idata)["z"].values
    chains, draws, n = labels.shape
    out = np.empty((chains * draws, n))
    for s, lab in enumerate(labels.reshape(-1, n)):
        out[s] = own_cluster_log_preds(lab.astype(np.int64), pack.codes, pack.dims, pack.data_off, pack.stat_off,
                                       pack.hyper_off, pack.hyper, pack.data, pack.width)
    ll = xr.Dataset({"y": (("chain", "draw", "y_dim_0"), out.reshape(chains, draws, n))})
    return new_result({"posterior": posterior_dataset(idata), "log_likelihood": ll})


def fields(res):
    if hasattr(res, "elpd_i"):
        return float(res.elpd), float(res.p), np.asarray(res.elpd_i.values), np.asarray(res.pareto_k.values), \
            float(res.good_k)
    return float(res["elpd_loo"]), float(res["p_loo"]), np.asarray(res["loo_i"].values), \
        np.asarray(res["pareto_k"].values), float(res["good_k"])


def quiet_loo(result, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return pmp.loo(result, **kwargs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fits", default="wine-defaults,wine-scaled,galaxies")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--items", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--refit-all", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    load_avg = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "n/a"
    print(f"bench_loo: 4 chains x ({args.tune} + {args.draws}) draws per fit, refits 2 chains; seed {args.seed}; "
          f"Python {platform.python_version()}, PyMC {pm.__version__}; load average {load_avg}")
    for fit in args.fits.split(","):
        model, steps = build(fit)
        idata = sample(model, steps, 4, args, args.seed)
        with model:
            pm.compute_log_likelihood(idata, progressbar=False)
        start = time.process_time()
        integrated = quiet_loo(idata)
        other = quiet_loo(own_cluster(idata, model))
        print(f"\n## {fit} (n = {partition_size(model['z'])}), pmp.loo in {time.process_time() - start:.1f} s CPU")
        print("| pointwise value | k > 0.7 | k > good_k | max k | elpd_loo | p_loo |\n|---|---|---|---|---|---|")
        table = {}
        for label, res in [("integrated (pmp)", integrated), ("own cluster", other)]:
            elpd, p, elpd_i, k, good = fields(res)
            table[label] = (elpd_i, k)
            print(f"| {label} | {(k > 0.7).sum()} | {(k > good).sum()} (good_k {good:.2f}) | {k.max():.2f} | "
                  f"{elpd:.1f} | {p:.1f} |")
        elpd_i, k = table["integrated (pmp)"]
        order = np.argsort(-k)
        low = order[-2:] if len(order) > 2 else order[:0]
        chosen = np.r_[order[:args.items], low]
        print("\n| item | k integrated | k own cluster | PSIS integrated | PSIS own cluster | refit (exact) | MC error | refit CPU s |")
        print("|---|---|---|---|---|---|---|---|")
        seeds = iter(range(1000, 2000))
        for i in chosen:
            start = time.process_time()
            sub, sub_steps = build(fit, np.delete(np.arange(len(elpd_i)), i))
            refitted = sample(sub, sub_steps, 2, args, next(seeds))
            value = refit_value(model, idata, refitted, i)
            cpu = time.process_time() - start
            chains = [refit_value(model, idata, new_result({"posterior": posterior_dataset(refitted).isel(chain=[c])}), i)
                      for c in range(2)]
            print(f"| {i} | {k[i]:.2f} | {table['own cluster'][1][i]:.2f} | {elpd_i[i]:.3f} | "
                  f"{table['own cluster'][0][i]:.3f} | {value:.3f} | {np.std(chains, ddof=1) / np.sqrt(2):.3f} | "
                  f"{cpu:.1f} |", flush=True)
        if args.refit_all:
            start = time.process_time()
            with model:
                full = quiet_loo(idata, refit=lambda keep: sample(*build(fit, keep), 2, args, next(seeds)))
            # (every flagged item refitted: k_threshold defaults to ArviZ's good_k)
            elpd, p, _, k_after, good = fields(full)
            print(f"\npmp.loo(refit=...): {int((k > good).sum())} items refitted, elpd_loo {elpd:.1f} (PSIS "
                  f"{fields(integrated)[0]:.1f}), p_loo {p:.1f}, items left with k > good_k: {(k_after > good).sum()}; "
                  f"{time.process_time() - start:.0f} s CPU")
    load_avg = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "n/a"
    print(f"\nload average at the end: {load_avg}")


def refit_value(model, idata, refitted, i):
    """The refit estimate of item i's elpd from the posterior ``refitted`` of the other items: what
    ``pmp.loo(refit=...)`` puts in for a flagged item (the same function)."""
    from pymc_partitions.results.loo import _refitted_log_predictive  # noqa: PLC0415

    return _refitted_log_predictive(refitted, idata, model, model["z"], model["y"], int(i), "bench_loo")


if __name__ == "__main__":
    main()
