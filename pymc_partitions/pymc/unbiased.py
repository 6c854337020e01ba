"""``pmp.sample_unbiased``: unbiased estimates of posterior expectations from coupled chains.

This module only reads the model (the partition, its prior and likelihoods) and shapes the
output; the chains, estimators and executors are in :mod:`pymc_partitions.coupling`.
"""

from __future__ import annotations

import datetime
import math
import warnings

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from ..coupling.functions import largest_proportion, n_clusters
from ..coupling.parallel import INITS, UnbiasedJob, run_pairs
from ..coupling.split_merge import pgsm_settings
from ..coupling.sweep import COUPLINGS
from ..coupling.unbiased import suggest_k_m
from .compat import made_group, new_result
from .distributions import is_partition
from .terms import PartitionTerms

__all__ = ["sample_unbiased", "summarize_unbiased"]


class _StackedH:
    """Several named functions of the partition as one flat vector (what the workers compute)."""

    def __init__(self, functions: dict, n: int):
        self.functions = functions
        probe = np.arange(n)
        self.shapes = {name: np.shape(fn(probe)) for name, fn in functions.items()}

    def __call__(self, labels):
        return np.concatenate([np.ravel(np.asarray(fn(labels), float)) for fn in self.functions.values()])

    def split(self, flat):
        """{name: array (pairs, *shape)} from (pairs, total) values."""
        out, at = {}, 0
        for name, shape in self.shapes.items():
            size = int(np.prod(shape))
            out[name] = flat[:, at:at + size].reshape((flat.shape[0],) + shape)
            at += size
        return out


def _functions(h, pack, prior_code, prior_params):
    if h is None:
        h = {"n_clusters": n_clusters, "largest_proportion": largest_proportion}
    elif callable(h):
        name = getattr(h, "__name__", "h")
        h = {name if name.isidentifier() and name != "<lambda>" else "h": h}
    elif not isinstance(h, dict) or not h:
        raise TypeError("h must be a callable of the labels or a non-empty dict name -> callable")
    out = {}
    for name, fn in h.items():
        if not callable(fn):
            raise TypeError(f"h[{name!r}] is not callable")
        out[name] = fn.bind(pack, prior_code, prior_params) if hasattr(fn, "bind") else fn
    return out


def _partition_of(model):
    parts = [rv for rv in model.free_RVs if is_partition(rv)]
    others = [rv.name for rv in model.free_RVs if not is_partition(rv)]
    if not parts:
        raise ValueError("the model has no pmp.Partition variable")
    if len(parts) > 1:
        raise ValueError(f"sample_unbiased handles one partition, the model has {[p.name for p in parts]}")
    if others:
        raise ValueError(
            f"sample_unbiased needs the partition to be the only free variable, but {others} are free too; "
            "fix them (use numbers or pm.Data) — coupled hyperparameter steps are not supported yet"
        )
    return parts[0]


def _dims(name, fn, shape):
    dims = getattr(fn, "dims", None)
    if dims is None or len(dims) != len(shape):
        dims = tuple(f"{name}_dim_{i}" for i in range(len(shape)))
    coords = {d: c for d, c in (getattr(fn, "coords", None) or {}).items() if d in dims}
    return dims, coords


class _Progress:
    """A rich progress bar: pairs done and meeting-time quantiles so far."""

    def __init__(self, total, enabled):
        self.bar = None
        if not enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415

        self.bar = Progress(TextColumn("coupled pairs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.description}"))
        self.task = self.bar.add_task("", total=total)
        self.bar.start()

    def __call__(self, report):
        if self.bar is None:
            return
        tau = [r.tau for r in report.results.values() if r.met]
        text = f"tau median {np.median(tau):.0f}, 90% {np.quantile(tau, 0.9):.0f}" if tau else ""
        self.bar.update(self.task, completed=len(report.results) + len(report.failed), description=text)

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def sample_unbiased(model=None, h=None, n_pairs: int | None = 100, coupling: str = "ot", lag: int = 1,
                    k: int | None = None, m: int | None = None, max_iter: int = 10_000, cores: int | None = None,
                    executor=None, random_seed=None, progressbar: bool = True, eps: float = 0.0,
                    init="prior", time_budget: float | None = None, record_distance: bool = False,
                    pilot_pairs: int = 20, mp_ctx=None, pgsm=None):
    """Unbiased estimates of E[h(partition) | data] from pairs of coupled Gibbs chains.

    Each pair runs two lagged collapsed-Gibbs chains whose per-item draws are coupled (by default
    with the optimal transport coupling of seed 000) until they meet, and returns the unbiased
    estimator H_{k:m} of Jacob, O'Leary & Atchadé (2020). Pairs are independent, so they run in
    parallel; their average is unbiased with an honest standard error
    (:func:`summarize_unbiased`). With ``pgsm``, each iteration also applies Particle Gibbs
    Split-Merge moves to both chains with common random numbers.

    Parameters
    ----------
    model : pm.Model, optional
        A model whose only free variable is one ``pmp.Partition`` (hyperparameters fixed).
    h : callable or dict of str -> callable, optional
        Functions of the canonical labels, scalar or array valued. Default: number of clusters
        and proportion of the largest cluster. See :mod:`pymc_partitions.h` for built-ins.
    n_pairs : int
        Number of pairs (ignored when ``time_budget`` is given).
    coupling : {"ot", "maximal", "crn", "independent"}
        How the two chains' Gibbs draws are coupled.
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
        By default a process pool with ``cores`` workers (all cores). Any
        ``concurrent.futures.Executor`` or a ``dask.distributed.Client`` may be given instead.
    random_seed : int or SeedSequence, optional
        Pair i uses the i-th child of ``SeedSequence(random_seed)``: results do not depend on
        the executor or the number of workers.
    eps : float
        Probability of drawing independently instead at each item.
    init : {"prior", "singletons", "one_block"} or callable
        Initial law of both chains (a callable takes a numpy Generator and returns labels).
    time_budget : float, optional
        Seconds per worker: run as many complete pairs as fit (seed 000, Sec. 3.3).
    record_distance : bool
        Also store the Mirkin distance between the chains at each iteration before meeting.
    pilot_pairs : int
        Pairs of the pilot run that chooses ``k`` and ``m`` when they are not given.
    mp_ctx : str or multiprocessing context, optional
        Start method of the default process pool, as in ``pm.sample``.
    pgsm : int or dict, optional
        None (default): Gibbs sweeps only. An int: that many PGSM moves per iteration after the
        coupled Gibbs sweep, with default settings. A dict: ``moves`` (default 1) and any of
        ``num_particles`` (20), ``resample_threshold`` (0.5), ``num_anchors`` (2), ``annealed``
        (True); anchors are uniform (informed proposals adapt per chain and cannot be coupled).
        Both chains' moves use the same random numbers
        (:class:`pymc_partitions.coupling.split_merge.GibbsPGSM`). An iteration then costs more;
        compare meeting times in seconds, not iterations.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        The type ``pm.sample`` returns. Group ``unbiased``: one variable per function, dims
        ``pair`` + the function's dims. Group ``meeting``: ``tau``, ``met``, ``iterations``,
        ``seconds``, ``status`` (and ``distance``) per pair. Both carry the settings as attrs
        (with ``pgsm_moves``, 0 without PGSM, and the other ``pgsm_*`` settings).

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
    model = pm.modelcontext(model)
    if coupling not in COUPLINGS:
        raise ValueError(f"coupling must be one of {sorted(COUPLINGS)}, got {coupling!r}")
    if not (callable(init) or init in INITS):
        raise ValueError(f"init must be one of {INITS} or a callable, got {init!r}")
    for name, value in {"lag": lag, "max_iter": max_iter, "pilot_pairs": pilot_pairs}.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")
    if time_budget is None and (n_pairs is None or int(n_pairs) != n_pairs or n_pairs < 1):
        raise ValueError(f"n_pairs must be a positive integer, got {n_pairs}")
    rv = _partition_of(model)
    terms = PartitionTerms(model, rv)
    pgsm = pgsm_settings(pgsm, terms.n)
    prior_params, pack = terms.kernel_inputs(model.initial_point())
    terms.check_prior_params(prior_params)
    functions = _functions(h, pack, terms.prior_code, prior_params)
    stacked = _StackedH(functions, terms.n)
    job = UnbiasedJob(pack, terms.prior_code, prior_params, stacked, 0, 0, int(lag), int(max_iter), coupling,
                      float(eps), init, bool(record_distance), pgsm)
    root = random_seed if isinstance(random_seed, np.random.SeedSequence) else np.random.SeedSequence(random_seed)
    main_seed, pilot_seed = root.spawn(2)
    pilot_k_m = None
    if k is None or m is None:
        if k is not None or m is not None:
            raise ValueError("give both k and m, or neither (then a pilot run chooses them)")
        pilot = run_pairs(job, n_pairs=int(pilot_pairs), random_seed=pilot_seed, cores=cores, executor=executor,
                          mp_ctx=mp_ctx)
        taus = [r.tau if r.met else -1 for r in pilot.results.values()]
        k, m = suggest_k_m(taus)
        pilot_k_m = (k, m)
    job.k, job.m = int(k), int(m)
    if not 0 <= job.k <= job.m:
        raise ValueError(f"need 0 <= k <= m, got k={k}, m={m}")
    if job.max_iter < max(job.m, job.lag):
        raise ValueError(f"max_iter ({max_iter}) must be at least max(m, lag) = {max(job.m, job.lag)}")

    bar = _Progress(None if time_budget is not None else int(n_pairs), progressbar)
    try:
        report = run_pairs(job, n_pairs=None if time_budget is not None else int(n_pairs), random_seed=main_seed,
                           cores=cores, executor=executor, time_budget=time_budget, progress=bar, mp_ctx=mp_ctx)
    finally:
        bar.close()
    settings = {
        "partition": rv.name, "coupling": coupling, "eps": float(eps), "lag": job.lag, "k": job.k, "m": job.m,
        "max_iter": job.max_iter, "init": init if isinstance(init, str) else "callable",
        "random_seed": str(random_seed), "time_budget": "none" if time_budget is None else float(time_budget),
        "n_pairs_requested": "none" if time_budget is not None else int(n_pairs),
        "k_m_from_pilot": "no" if pilot_k_m is None else f"yes ({pilot_pairs} pilot pairs)",
        "workers": report.workers, "executor": type(executor).__name__ if executor is not None else "process pool",
        "interrupted": int(report.interrupted), "seconds": report.seconds,
        "pgsm_moves": 0 if pgsm is None else pgsm["moves"],
    }
    if pgsm is not None:  # netCDF attrs: numbers and strings only
        settings.update({f"pgsm_{key}": int(v) if isinstance(v, bool) else v
                         for key, v in pgsm.items() if key != "moves"})
    return _result(report, stacked, settings, record_distance)


def _result(report, stacked, settings, record_distance):
    from .. import __version__  # noqa: PLC0415

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
        warnings.warn(
            f"{not_met} of {len(ids)} pairs did not meet or failed (see the 'meeting' group); their estimates are "
            "NaN and an average over the others is biased: raise max_iter or check the model", stacklevel=3)
    groups = {
        "unbiased": xr.Dataset(unbiased, coords={"pair": pair}, attrs=attrs),
        "meeting": xr.Dataset(meeting, coords={"pair": pair}, attrs=attrs),
    }
    return new_result(groups)


def summarize_unbiased(result, var_names=None, ci: float = 0.95) -> pd.DataFrame:
    """Mean over pairs, its standard error and a normal ``ci`` interval, per estimated quantity.

    Rows are named like ArviZ's summary (``name`` or ``name[i, j]``); columns ``mean``, ``se``,
    ``ci_lower``, ``ci_upper``, ``n_pairs`` (pairs averaged) and ``n_met``. Pairs that did not
    meet are left out of the average with a warning, since the average is then biased.
    """
    ds = made_group(result, "unbiased", "pmp.sample_unbiased")
    meeting = made_group(result, "meeting", "pmp.sample_unbiased")
    met = meeting["met"].values
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
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
            x = flat[:, j]
            mean = float(x.mean()) if len(x) else math.nan
            se = float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan
            rows.append((mean, se, mean - z * se, mean + z * se, len(x), int(met.sum())))
            index.append(name if not shape else f"{name}[{', '.join(map(str, np.unravel_index(j, shape)))}]")
    return pd.DataFrame(rows, index=index, columns=["mean", "se", "ci_lower", "ci_upper", "n_pairs", "n_met"])


def _normal_quantile(p):
    from scipy.stats import norm  # noqa: PLC0415

    return norm.ppf(p)
