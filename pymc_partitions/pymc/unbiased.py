"""``pmp.sample_unbiased``: unbiased estimates of posterior expectations from coupled chains.

This module only reads the model (the partition, its prior and likelihoods) and shapes the
output; the chains, estimators and executors are in :mod:`pymc_partitions.coupling`.
"""

from __future__ import annotations

import datetime
import inspect
import math
import time
import warnings

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from .._checks import boolean, choice, integer, probability, real
from ..coupling.aggregate import Aggregate, aggregate, check_aggregation, default_groups
from ..coupling.functions import largest_proportion, n_clusters
from ..coupling.hyper import HyperUnbiasedJob
from ..coupling.parallel import (Interrupts, RunReport, UnbiasedJob, check_init, check_mp_ctx, check_seed,
                                 check_timeout, run_pairs)
from ..coupling.split_merge import pgsm_settings, refuse_pgsm_network
from ..coupling.sweep import COUPLINGS
from ..coupling.unbiased import check_h_value, check_k_m, suggest_k_m
from ..families.kernels import has_network
from .compat import made_group, new_result
from .distributions import is_partition, no_partition_found
from .terms import PartitionTerms
from .unbiased_hyper import PyMCHyperModel, free_hyperparameters

__all__ = ["sample_unbiased", "summarize_unbiased"]


def _takes_params(fn, name) -> bool:
    """Whether ``fn`` is called h(labels, params) (two required positional parameters) rather than
    h(labels); anything else is refused, naming the function."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # (some builtins have no signature: called with the labels)
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    keyword_only = [p.name for p in parameters if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    if keyword_only or len(required) > 2 or (not positional and not any(p.kind == p.VAR_POSITIONAL
                                                                         for p in parameters)):
        raise TypeError(f"h[{name!r}] must be called as h(labels) or h(labels, params) (params: a dict of the "
                        f"hyperparameters' values by name), but its signature is {inspect.signature(fn)}")
    return len(required) == 2


class _StackedH:
    """Several named functions of the partition as one flat vector (what the workers compute).

    A function is called h(labels), or h(labels, params) when it has two required positional
    parameters (params: {name: value} of the model's free hyperparameters). Each function is probed
    once on the all-singletons partition (with ``params``, the values at the model's initial point):
    a value that is not finite numbers is refused here, at the call. Afterwards every value must be
    finite and of the probed shape, or the pair fails with a message naming the function
    (:func:`check_h_value`)."""

    checks_values = True  # run_pair need not check again

    def __init__(self, functions: dict, n: int, params: dict | None = None):
        self.functions = functions
        self.with_params = {name: _takes_params(fn, name) for name, fn in functions.items()}
        probe = np.arange(n)
        self.shapes = {}
        for name, fn in functions.items():
            try:
                value = fn(probe, dict(params or {})) if self.with_params[name] else fn(probe)
                self.shapes[name] = check_h_value(value, name=f"h[{name!r}]").shape
            except ValueError as err:
                raise ValueError(f"{err} on the all-singletons partition: every value of h must be finite "
                                 "numbers") from None

    def __call__(self, labels, params=None):
        params = {} if params is None else params
        return np.concatenate([
            np.ravel(check_h_value(fn(labels, params) if self.with_params[name] else fn(labels), self.shapes[name],
                                   f"h[{name!r}]"))
            for name, fn in self.functions.items()])

    def split(self, flat):
        """{name: array (pairs, *shape)} from (pairs, total) values."""
        out, at = {}, 0
        for name, shape in self.shapes.items():
            size = int(np.prod(shape))
            out[name] = flat[:, at:at + size].reshape((flat.shape[0],) + shape)
            at += size
        return out


def _hyperparameter(name):
    def value(labels, params):
        return params[name]

    value.__name__ = name
    return value


def _functions(h, pack, prior_code, prior_params, hyper_names=()):
    if h is None:
        h = {"n_clusters": n_clusters, "largest_proportion": largest_proportion}
        h.update({name: _hyperparameter(name) for name in hyper_names if name not in h})
    elif callable(h):
        name = getattr(h, "__name__", "h")
        h = {name if name.isidentifier() and name != "<lambda>" else "h": h}
    elif not isinstance(h, dict) or not h:
        raise TypeError("h must be a callable of the labels or a non-empty dict name -> callable")
    out = {}
    for name, fn in h.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"the names of h must be non-empty strings, got {name!r}")
        if not callable(fn):
            raise TypeError(f"h[{name!r}] is not callable")
        out[name] = fn.bind(pack, prior_code, prior_params) if hasattr(fn, "bind") else fn
    return out


def _check_names(stacked):
    """Names and dims that would clash in the output (found now, not after every pair has run)."""
    dims = {name: _dims(name, stacked.functions[name], shape) for name, shape in stacked.shapes.items()}
    taken = {"pair"} | {d for ds, _ in dims.values() for d in ds}
    for name in stacked.shapes:
        if name in taken:
            raise ValueError(f"h[{name!r}]: the name {name!r} is also a dimension of the output "
                             f"({sorted(taken)}); rename it")
    for name, (ds, coords) in dims.items():
        for d, shape_d in zip(ds, stacked.shapes[name]):
            if d in coords and len(coords[d]) != shape_d:
                raise ValueError(f"h[{name!r}]: coords[{d!r}] has {len(coords[d])} values but the function's "
                                 f"output has {shape_d} along {d!r}")


def _partition_of(model):
    parts = [rv for rv in model.free_RVs if is_partition(rv)]
    if not parts:
        raise ValueError(f"the model has {no_partition_found(model)}")
    if len(parts) > 1:
        raise ValueError(f"sample_unbiased handles one partition, the model has {[p.name for p in parts]}")
    return parts[0]


def _dims(name, fn, shape):
    dims = getattr(fn, "dims", None)
    if dims is None or len(dims) != len(shape):
        dims = tuple(f"{name}_dim_{i}" for i in range(len(shape)))
    coords = {d: c for d, c in (getattr(fn, "coords", None) or {}).items() if d in dims}
    return dims, coords


class _Progress:
    """A rich progress bar: pairs done and meeting-time quantiles so far. It starts with the first
    result, after the worker processes have started (its refresh thread is then not forked)."""

    def __init__(self, total, enabled):
        self.bar, self.total, self.enabled = None, total, enabled

    def __call__(self, report):
        if not self.enabled:
            return
        if self.bar is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415

            self.bar = Progress(TextColumn("coupled pairs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                TextColumn("{task.description}"))
            self.task = self.bar.add_task("", total=self.total)
            self.bar.start()
        tau = [r.tau for r in report.results.values() if r.met]
        text = f"tau median {np.median(tau):.0f}, 90% {np.quantile(tau, 0.9):.0f}" if tau else ""
        self.bar.update(self.task, completed=len(report.results) + len(report.failed), description=text)

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def sample_unbiased(model=None, h=None, n_pairs: int | None = 100, coupling: str = "aligned", lag: int = 1,
                    k: int | None = None, m: int | None = None, max_iter: int = 10_000, cores: int | None = None,
                    executor=None, random_seed=None, progressbar: bool = True, eps: float = 0.0,
                    init="prior", time_budget: float | None = None, record_distance: bool = False,
                    pilot_pairs: int = 20, mp_ctx=None, pgsm="auto", retries: int = 2,
                    pair_timeout: float | None = None, hyper_scale: float = 0.5):
    """Unbiased estimates of E[h(partition) | data] from pairs of coupled Gibbs chains.

    Each pair runs two lagged collapsed-Gibbs chains whose per-item draws are coupled (by default
    maximally under an overlap pairing of their clusters, ``coupling="aligned"``) until they meet, and returns the unbiased
    estimator H_{k:m} of Jacob, O'Leary & Atchadé (2020). Pairs are independent, so they run in
    parallel; their average is unbiased with an honest standard error
    (:func:`summarize_unbiased`). With ``pgsm``, each iteration also applies Particle Gibbs
    Split-Merge moves to both chains with common random numbers.

    Parameters
    ----------
    model : pm.Model, optional
        A model with one ``pmp.Partition``; its other free variables (hyperparameters: alpha,
        discount, the likelihoods' parameters, their hyperpriors) must be continuous. They are
        updated in each iteration after the partition's sweep (and its PGSM moves, with ``pgsm``),
        by the coupled Escobar-West step for a scalar Gamma-prior CRP alpha, and otherwise by one
        coupled random-walk Metropolis step on their unconstrained values
        (:mod:`pymc_partitions.coupling.hyper`); both chains
        start them at the model's initial point. A pair meets when the partitions and all
        hyperparameters are equal.
    h : callable or dict of str -> callable, optional
        Functions ``h(labels)`` of the canonical labels, or ``h(labels, params)`` (two required
        positional parameters) where ``params`` is a dict of the free hyperparameters' values by
        name (empty without any); scalar or array valued. Default: number of clusters,
        proportion of the largest cluster, and each free hyperparameter. See
        :mod:`pymc_partitions.h` for built-ins.
    n_pairs : int
        Number of pairs (ignored when ``time_budget`` is given).
    coupling : {"aligned", "ot", "maximal", "crn", "independent"}
        How the two chains' Gibbs draws are coupled (see
        :class:`pymc_partitions.coupling.sweep.GibbsSweeps`). ``"aligned"`` (default) pairs each cluster of
        one chain with the cluster of the other it overlaps most and draws both assignments from
        the maximal coupling under that pairing: no transport problem per item, so a coupled
        sweep costs about half as much as with ``"ot"`` (seed 000's optimal-transport coupling) while
        the chains meet in about as many sweeps (figures in benchmarks/README.md, "Cost of one
        OT-coupled sweep").
    lag : int
        Lag between the chains (>= 1).
    k, m : int, optional
        Burn-in and end of the time average (0 <= k <= m). When omitted, ``pilot_pairs`` extra
        pairs (with their own random numbers) are run first and ``(k, m)`` is set by
        :func:`pymc_partitions.coupling.unbiased.suggest_k_m` from their meeting times.
    max_iter : int
        Iteration cap per pair. A pair that has not met by then is reported (NaN estimate,
        ``met = False``) and a warning is raised: leaving it out biases the average.
    cores, executor :
        By default ``cores`` worker processes (all cores; ``cores=1`` runs in this process). Any
        ``concurrent.futures.Executor`` or a ``dask.distributed.Client`` may be given instead.
    random_seed : int or SeedSequence, optional
        Pair i uses the i-th child of ``SeedSequence(random_seed)``: results do not depend on
        the executor or the number of workers.
    eps : float
        Probability of drawing independently instead at each item.
    init : {"prior", "singletons", "one_block"} or callable
        Initial law of both chains (a callable takes a numpy Generator and returns labels); each
        chain of a pair starts from its own draw of it. The estimates are unbiased whatever the
        start; it changes the meeting times and the estimator's variance (and so the k, m the
        pilot picks and the cost). ``"prior"`` (default: draws from the partition prior) is an
        overdispersed start, so the meeting times reflect how long the chains take to forget
        where they began and the k chosen from them covers the burn-in. ``"one_block"`` starts
        both chains at the same partition (seed 000's runs do this): they meet much sooner (gene
        data, OT coupling: median 6 iterations against ~45 from the prior), but then meeting says
        little about convergence, a k chosen from those meeting times can be short of the
        burn-in, and the bias correction then carries more of the estimate (heavier tails). Use
        ``"one_block"`` to compare with seed 000's figures, ``"prior"`` otherwise.
    time_budget : float, optional
        Seconds (finite, > 0) per worker: run as many complete pairs as fit (seed 000, Sec. 3.3);
        the pairs in flight at the deadline are discarded. A warning says when none finished.
    record_distance : bool
        Also store the Mirkin distance between the chains at each iteration before meeting.
    pilot_pairs : int
        Pairs of the pilot run that chooses ``k`` and ``m`` when they are not given.
    mp_ctx : str or multiprocessing context, optional
        Start method of the default process pool, as in ``pm.sample``.
    pgsm : "auto", int, dict or None
        ``"auto"`` (default): one PGSM move per iteration, except for the network likelihood
        (None there). One move removes the rare pairs that meet late with huge estimates, which
        dominate the variance of Gibbs-only coupling: on the gene data from one block the
        variance x CPU of a pair fell ~30,000-fold, at ~8x the CPU per pair (benchmarks/README.md,
        "Issue 22 item 3 with pgsm=1"). None: Gibbs sweeps only (cheaper per pair where plain
        Gibbs already mixes well). An int: that many PGSM moves per iteration after the
        coupled Gibbs sweep, with default settings. A dict: ``moves`` (default 1) and any of
        ``num_particles`` (20), ``resample_threshold`` (0.5), ``num_anchors`` (2), ``annealed``
        (True); anchors are uniform (informed proposals adapt per chain and cannot be coupled).
        Both chains' moves use the same random numbers
        (:class:`pymc_partitions.coupling.split_merge.GibbsPGSM`). With random hyperparameters
        the moves follow each chain's Gibbs sweep at that chain's own hyperparameters, before
        the hyperparameter steps (:class:`pymc_partitions.coupling.hyper.HyperSweeps`). Refused
        for the network likelihood. An iteration then costs more; compare meeting times in
        seconds, not iterations.
    retries : int
        How many times a pair whose worker process died (or whose executor task failed for a
        reason other than the pair's own error) is run again before it is reported
        ``failed: WorkerDied ...``. Default 2. Finished pairs are never rerun nor lost. On Dask a
        ``KilledWorker`` counts one death per worker that died while running the pair.
    pair_timeout : float, optional
        Seconds after which a running pair is stopped and reported ``failed: timeout after X s``.
        Checked between iterations everywhere; a pair stuck inside one iteration (e.g. in h) is
        stopped 0.5 s later by ending its worker process (the package's own processes; on Dask
        its worker is restarted by its nanny; a thread cannot be stopped and is given up on).
    hyper_scale : float
        Standard deviation (> 0) of the random-walk proposal of the hyperparameters on their
        unconstrained scale (default 0.5); best near 2.4 times their posterior standard deviation
        there. Unused without such hyperparameters.

    Ctrl-C stops every mode within a fraction of a second and returns the finished pairs with
    attrs ``interrupted=1`` and ``interrupted_during`` ("pilot" or "main"); see
    ``docs/unbiased.md``. A second Ctrl-C raises KeyboardInterrupt at once.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        The type ``pm.sample`` returns. Group ``unbiased``: one variable per function, dims
        ``pair`` + the function's dims. Group ``meeting``: ``tau``, ``met``, ``iterations``,
        ``seconds``, ``status`` ("met", "not met" or "failed: <why>") (and ``distance``) per pair.
        Both carry the settings as attrs (with ``pgsm_moves``, 0 without PGSM, and the other
        ``pgsm_*`` settings) and what happened: ``interrupted`` (0/1), ``interrupted_during``
        ("none", "pilot", "main"), ``worker_failures`` (worker processes or executor tasks that
        died under a pair), ``retries``, ``pair_timeout``, ``workers``, ``seconds``.

    Examples
    --------
    >>> import pymc as pm, pymc_partitions as pmp
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=6)
    ...     _ = pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0,
    ...                          observed=[-1.2, -0.9, -1.1, 1.0, 1.3, 0.8])
    >>> result = pmp.sample_unbiased(model, n_pairs=4, k=1, m=5, cores=1, random_seed=0,
    ...                              progressbar=False, pgsm={"moves": 2, "num_particles": 10})
    >>> attrs = result["unbiased"].attrs
    >>> attrs["pgsm_moves"], attrs["pgsm_num_particles"], bool(result["meeting"]["met"].all())
    (2, 10, True)
    """
    owner = "sample_unbiased"
    model = pm.modelcontext(model)
    coupling = choice("coupling", coupling, sorted(COUPLINGS), owner=owner)
    init = check_init(init, owner)
    lag = integer("lag", lag, low=1, owner=owner)
    max_iter = integer("max_iter", max_iter, low=1, owner=owner)
    pilot_pairs = integer("pilot_pairs", pilot_pairs, low=1, owner=owner)
    time_budget = check_timeout("time_budget", time_budget, owner)
    pair_timeout = check_timeout("pair_timeout", pair_timeout, owner)
    if time_budget is None and n_pairs is None:
        raise ValueError(f"{owner}: give n_pairs or time_budget")
    n_pairs = None if n_pairs is None else integer("n_pairs", n_pairs, low=1, owner=owner)
    if (k is None) != (m is None):
        raise ValueError(f"{owner}: give both k and m, or neither (then a pilot run chooses them)")
    if k is not None:
        k, m, lag, max_iter = check_k_m(k, m, lag, max_iter, owner)
    cores = None if cores is None else integer("cores", cores, low=1, owner=owner)
    retries = integer("retries", retries, low=0, owner=owner)
    eps = probability("eps", eps, owner=owner)
    progressbar = boolean("progressbar", progressbar, owner=owner)
    record_distance = boolean("record_distance", record_distance, owner=owner)
    root = check_seed(random_seed, owner)
    if executor is None:
        check_mp_ctx(mp_ctx)
    hyper_scale = real("hyper_scale", hyper_scale, low=0.0, low_open=True, owner=owner)
    rv = _partition_of(model)
    hyper_rvs = free_hyperparameters(model, rv)
    terms = PartitionTerms(model, rv)
    prior_params, pack = terms.kernel_inputs(model.initial_point())
    if isinstance(pgsm, str):
        if pgsm != "auto":
            raise TypeError(f"{owner}: pgsm must be None, a number of moves per iteration, a dict of settings or "
                            f"'auto', got {pgsm!r}")
        pgsm = None if has_network(pack) or terms.n < 2 else 1
    pgsm = pgsm_settings(pgsm, terms.n)
    if pgsm is not None:
        refuse_pgsm_network(pack, owner)  # (before any work)
    terms.check_prior_params(prior_params)
    hyper = PyMCHyperModel(model, rv, terms, hyper_rvs) if hyper_rvs else None
    functions = _functions(h, pack, terms.prior_code, prior_params, [v.name for v in hyper_rvs])
    stacked = _StackedH(functions, terms.n,
                        None if hyper is None else hyper.params(hyper.theta0, hyper.log_alpha0))
    _check_names(stacked)
    if hyper is None:
        job = UnbiasedJob(pack, terms.prior_code, prior_params, stacked, 0, 0, lag, max_iter, coupling, eps, init,
                          record_distance, pgsm)
    else:
        job = HyperUnbiasedJob(pack, terms.prior_code, prior_params, stacked, 0, 0, lag, max_iter, coupling, eps,
                               init, record_distance, pgsm, hyper_model=hyper, hyper_scale=hyper_scale)
    main_seed, pilot_seed = root.spawn(2)
    run = dict(cores=cores, executor=executor, mp_ctx=mp_ctx, retries=retries, pair_timeout=pair_timeout)
    settings = {
        "partition": rv.name, "coupling": coupling, "eps": eps, "lag": lag, "k": "none", "m": "none",
        "max_iter": max_iter, "init": init if isinstance(init, str) else "callable",
        "random_seed": str(random_seed), "time_budget": "none" if time_budget is None else time_budget,
        "n_pairs_requested": "none" if time_budget is not None else n_pairs,
        "k_m_from_pilot": "no" if k is not None else f"yes ({pilot_pairs} pilot pairs)",
        "executor": type(executor).__name__ if executor is not None else ("this process" if cores == 1
                                                                          else "process pool"),
        "retries": retries, "pair_timeout": "none" if pair_timeout is None else pair_timeout,
        "pgsm_moves": 0 if pgsm is None else pgsm["moves"],
        "hyperparameters": ", ".join(v.name for v in hyper_rvs) or "none",
        "escobar_west": "none" if hyper is None or hyper.escobar_west is None else hyper._ew_name,
        "hyper_scale": hyper_scale,
    }
    if pgsm is not None:  # netCDF attrs: numbers and strings only
        settings.update({f"pgsm_{key}": int(v) if isinstance(v, bool) else v
                         for key, v in pgsm.items() if key != "moves"})
    start = time.perf_counter()
    failures = 0
    with Interrupts() as interrupts:
        if k is None:
            pilot = run_pairs(job, n_pairs=pilot_pairs, random_seed=pilot_seed, interrupts=interrupts, **run)
            failures += pilot.worker_failures
            if pilot.interrupted:
                warnings.warn(f"interrupted during the pilot run ({len(pilot.results)} of {pilot_pairs} pilot pairs "
                              "done): k and m were not chosen and the main run was not started; the result holds "
                              "no pairs", stacklevel=2)
                settings.update(interrupted=1, interrupted_during="pilot", worker_failures=failures,
                                workers=pilot.workers, seconds=time.perf_counter() - start)
                return _result(RunReport(), stacked, settings, record_distance)
            k, m = _k_m_from_pilot(pilot)
            k, m, lag, max_iter = check_k_m(k, m, lag, max_iter, owner)
        job.k, job.m = k, m
        settings.update(k=k, m=m)
        bar = _Progress(None if time_budget is not None else n_pairs, progressbar)
        try:
            report = run_pairs(job, n_pairs=None if time_budget is not None else n_pairs, random_seed=main_seed,
                               time_budget=time_budget, progress=bar, interrupts=interrupts, **run)
        finally:
            bar.close()
    if report.interrupted:
        warnings.warn(f"interrupted: returning the {len(report.results)} pairs completed before Ctrl-C; the pairs "
                      "still running were dropped, and since slow pairs are the ones left running, the average of "
                      "the kept pairs leans towards early meetings", stacklevel=2)
    elif time_budget is not None and not report.results:
        warnings.warn(f"no pair finished within time_budget={time_budget:g} s: raise time_budget (or lower m)",
                      stacklevel=2)
    settings.update(interrupted=int(report.interrupted), interrupted_during="main" if report.interrupted else "none",
                    worker_failures=failures + report.worker_failures, workers=report.workers,
                    seconds=time.perf_counter() - start)
    return _result(report, stacked, settings, record_distance)


def _k_m_from_pilot(pilot):
    """(k, m) from the meeting times of the pilot pairs that did not fail (a warning names the others)."""
    if not pilot.results:
        first = next(iter(pilot.failed.values()), "no result")
        raise RuntimeError(f"every pilot pair failed, e.g. {first}; give k and m, or fix the failure")
    if pilot.failed:
        warnings.warn(f"{len(pilot.failed)} pilot pairs failed (e.g. {next(iter(pilot.failed.values()))}); k and m "
                      "are chosen from the others", stacklevel=3)
    taus = [r.tau if r.met else -1 for r in pilot.results.values()]
    return suggest_k_m(taus)


def _result(report, stacked, settings, record_distance):
    from .._version import __version__  # noqa: PLC0415

    ids = sorted(set(report.results) | set(report.failed))
    width = sum(int(np.prod(s)) for s in stacked.shapes.values())
    flat = np.full((len(ids), width), np.nan)
    tau = np.full(len(ids), -1, np.int64)
    iterations = np.zeros(len(ids), np.int64)
    seconds = np.full(len(ids), np.nan)
    status = np.empty(len(ids), dtype=object)
    for j, p in enumerate(ids):
        r = report.results.get(p)
        if r is None:
            status[j] = "failed: " + report.failed[p]
            continue
        flat[j] = r.estimate
        tau[j], iterations[j], seconds[j] = r.tau, r.iterations, r.seconds
        status[j] = "met" if r.met else "not met"
    unbiased = {}
    for name, values in stacked.split(flat).items():
        dims, coords = _dims(name, stacked.functions[name], values.shape[1:])
        unbiased[name] = xr.DataArray(values, dims=("pair",) + dims, coords=coords)
    pair = np.asarray(ids, np.int64)
    meeting = {
        "tau": ("pair", tau), "met": ("pair", tau >= 0), "iterations": ("pair", iterations),
        "seconds": ("pair", seconds), "status": ("pair", status.astype(str)),
    }
    if record_distance:
        longest = max([len(r.distances) for r in report.results.values()] + [1])
        dist = np.full((len(ids), longest), -1, np.int64)
        for j, p in enumerate(ids):
            r = report.results.get(p)
            if r is not None:
                dist[j, : len(r.distances)] = r.distances
        meeting["distance"] = (("pair", "iteration"), dist)
    n_met = int((tau >= 0).sum())
    attrs = dict(settings, n_pairs=len(ids), n_met=n_met, n_failed=len(report.failed),
                 pymc_partitions_version=__version__, created_at=datetime.datetime.now().isoformat())
    not_met = len(ids) - n_met
    if not_met:
        distinct = list(dict.fromkeys(report.failed.values()))
        failures = (f" {len(report.failed)} failed: " + "; ".join(distinct[:3]) + (" ..." if len(distinct) > 3 else "")
                    + ".") if distinct else ""
        warnings.warn(
            f"{not_met} of {len(ids)} pairs did not meet or failed (see the 'meeting' group); their estimates are "
            f"NaN and an average over the others is biased: raise max_iter or check the model.{failures}",
            stacklevel=3)
    groups = {
        "unbiased": xr.Dataset(unbiased, coords={"pair": pair}, attrs=attrs),
        "meeting": xr.Dataset(meeting, coords={"pair": pair}, attrs=attrs),
    }
    return new_result(groups)


def summarize_unbiased(result, var_names=None, ci: float = 0.95, estimator: str = "mean",
                       n_groups: int | None = None, trim: float = 0.05) -> pd.DataFrame:
    """Aggregate of the pairs' estimates, its standard error and a normal ``ci`` interval, per quantity.

    Rows are named like ArviZ's summary (``name`` or ``name[i, j]``); columns ``mean``, ``se``,
    ``ci_lower``, ``ci_upper``, ``n_pairs`` (pairs averaged) and ``n_met``. Pairs that did not
    meet are left out of the average with a warning, since the average is then biased.

    ``estimator="mean"`` (default) is the plain mean: unbiased, with an honest SE when the
    estimates have a finite variance. Unbiased estimates from coupled chains have heavy tails (a
    rare pair that meets late carries a large correction), so two robust aggregators are offered,
    each **biased** (:mod:`pymc_partitions.coupling.aggregate` states the bias exactly):

    * ``"median_of_means"``: the median of the means of ``n_groups`` consecutive groups of pairs
      (default ⌈8 log(1/(1 - ci))⌉, 24 at ci = 0.95, so that, for estimates of variance σ², it is
      within 2σ/sqrt(N/n_groups) of E[h] with probability >= 1 - exp(-n_groups/8) = ci); biased
      when the estimates' law is skewed;
    * ``"trimmed_mean"``: the mean without the ⌊trim N⌋ smallest and largest estimates; biased
      when that law is asymmetric, and the bias does not shrink with N.

    Their first column is named after the estimator (instead of ``mean``), their SE and interval
    are about the estimator's own expectation, and a column ``bias_bound`` bounds |its
    expectation - E[h]| (σ estimated by the sample SD): an interval that must cover E[h] is
    ``ci_lower - bias_bound`` to ``ci_upper + bias_bound``. The settings are in the DataFrame's
    ``attrs``.
    """
    owner = "summarize_unbiased"
    ci = real("ci", ci, low=0.0, high=1.0, low_open=True, high_open=True, owner=owner)
    estimator, n_groups, trim = check_aggregation(estimator, n_groups, trim, owner)
    if estimator == "median_of_means" and n_groups is None:
        n_groups = default_groups(ci)
    ds = made_group(result, "unbiased", "pmp.sample_unbiased")
    meeting = made_group(result, "meeting", "pmp.sample_unbiased")
    met = meeting["met"].values
    if var_names is not None:
        var_names = [var_names] if isinstance(var_names, str) else var_names
        if not isinstance(var_names, (list, tuple)) or not all(isinstance(v, str) for v in var_names):
            raise TypeError(f"summarize_unbiased: var_names must be None, a name or a list of names, got {var_names!r}")
        unknown = [v for v in var_names if v not in ds.data_vars]
        if unknown:
            raise ValueError(f"summarize_unbiased: no estimated quantity named {unknown}; there are "
                             f"{list(ds.data_vars)}")
    n_met = int(met.sum())
    if estimator == "median_of_means" and n_met < n_groups:
        raise ValueError(f"{owner}: median of means with n_groups={n_groups} needs at least {n_groups} pairs that met, "
                         f"got {n_met}: give a smaller n_groups (>= 3) or run more pairs")
    if estimator == "trimmed_mean" and n_met < 2:
        raise ValueError(f"{owner}: the trimmed mean needs at least 2 pairs that met, got {n_met}")
    if not met.all():
        warnings.warn(f"{int((~met).sum())} of {met.size} pairs did not meet or failed: the summary averages the "
                      "others and is biased", stacklevel=2)
    z = float(_normal_quantile(0.5 + ci / 2))
    names = list(ds.data_vars) if var_names is None else list(var_names)
    rows, index = [], []
    for name in names:
        values = ds[name].values[met]
        shape = values.shape[1:]
        flat = values.reshape(values.shape[0], int(np.prod(shape)))
        for j in range(flat.shape[1]):
            if len(flat):
                a = aggregate(flat[:, j], estimator, n_groups, trim)
            else:
                a = Aggregate(math.nan, math.nan, 0.0)
            row = (a.estimate, a.se, a.estimate - z * a.se, a.estimate + z * a.se)
            rows.append(row + ((a.bias_bound,) if estimator != "mean" else ()) + (len(flat), n_met))
            index.append(name if not shape else f"{name}[{', '.join(map(str, np.unravel_index(j, shape)))}]")
    columns = [estimator, "se", "ci_lower", "ci_upper"] + (["bias_bound"] if estimator != "mean" else []) + \
        ["n_pairs", "n_met"]
    out = pd.DataFrame(rows, index=index, columns=columns)
    out.attrs.update(estimator=estimator, ci=ci)
    if estimator == "median_of_means":
        out.attrs["n_groups"] = n_groups
    elif estimator == "trimmed_mean":
        out.attrs["trim"] = trim
    return out


def _normal_quantile(p):
    from scipy.stats import norm  # noqa: PLC0415

    return norm.ppf(p)
