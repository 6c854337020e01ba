"""Every difference between PyMC 5 / ArviZ 0.x and PyMC 6 / ArviZ 1.x, in one place.

Checked against PyMC 5.28 + ArviZ 0.23 (Python 3.11) and PyMC 6.4 + ArviZ 1.3
(Python 3.12), both with xarray 2026.x. PyMC 5 pins ``arviz<1`` and PyMC 6 pins
``arviz>=1.1``, so the PyMC major version also decides the ArviZ major version.

Differences handled here
------------------------
1. Step-method classes. ``BlockedStep``, ``CompoundStep`` and ``STEP_METHODS`` live in
   ``pymc.step_methods`` in both versions; ``Competence`` lives in
   ``pymc.step_methods.compound`` in both and is not exported at PyMC's top level in
   either. In PyMC 6 ``pm.BlockedStep`` / ``pm.CompoundStep`` / ``pm.STEP_METHODS``
   still resolve but emit a ``DeprecationWarning`` (removal announced for 2027), so
   import them from here. ``STEP_METHODS`` is the very list ``pm.sample`` consults
   (``pm.STEP_METHODS`` in PyMC 5's ``sampling/mcmc.py``, a ``from pymc.step_methods
   import STEP_METHODS`` in PyMC 6's): append to it, never rebind it.
2. Per-chain RNG protocol of step methods (read from the installed sources):
   * PyMC 5: ``BlockedStep.set_rng(rng)``; called by ``sampling/mcmc.py::_iter_sample``
     (``step.set_rng(rng)``), ``sampling/parallel.py`` (worker process) and
     ``sampling/population.py``. ``CompoundStep.set_rng`` spawns one child generator
     per sub-step and calls ``method.set_rng(child)``.
   * PyMC 6: ``BlockedStep.setup_chain(rng, tune, draws)`` ("called once per chain,
     right before that chain starts sampling; the same instance may be reused across
     chains, so reset per-chain state"); ``draws`` excludes tuning. Called from the
     same three places; ``CompoundStep.setup_chain`` spawns per sub-step likewise.
     ``BlockedStep`` has no ``set_rng`` any more (``set_rng`` survives only on HMC
     potentials and SMC kernels).
   Both base implementations do ``self.rng = get_random_generator(rng, copy=False)``.
   :class:`ChainSetupMixin` defines both entry points and funnels them into one
   ``reset_chain`` hook; :func:`setup_chain` drives a step by hand on either version.
3. Result objects. ``pm.sample`` returns ``arviz.InferenceData`` (PyMC 5) or
   ``xarray.DataTree`` (PyMC 6). ``result.posterior`` is an ``xarray.Dataset`` in the
   first and a ``DataTree`` node in the second (``.to_dataset()`` needed).
   ``groups`` is a method returning bare names (``['posterior', ...]``) on
   InferenceData and a property returning paths (``('/', '/posterior', ...)``) on
   DataTree. PyMC 6 also writes an (empty) ``observed_data`` group and puts
   ``sample_dims`` / ``tuning_steps`` / ``sampling_time`` in the posterior's attrs.
   See :func:`is_datatree`, :func:`posterior_dataset`, :func:`group_names`.
4. Adding groups. ``InferenceData.add_groups`` mutates in place, refuses existing
   names and silently drops Datasets without data variables; a DataTree takes
   ``tree[name] = xarray.DataTree(ds)`` and must stay aligned with its root.
   See :func:`add_groups`.
5. Saving / loading. InferenceData: ``idata.to_netcdf(path)`` (h5netcdf, zlib by
   default) and ``az.from_netcdf(path)`` (lazy by default). DataTree:
   ``tree.to_netcdf(path)`` and ``xarray.open_datatree(path)`` -- ArviZ 1.x's
   ``az.from_netcdf`` *is* ``xarray.open_datatree``. Both write one netCDF4/HDF5 group
   per ArviZ group, so a file written by either loads with either (tested with files
   written by each line, tests/data). On top of both: atomic writes, attribute values
   netCDF cannot store written as prefixed JSON and decoded on load (same types back),
   and clear errors for files that are not results. See :func:`save`, :func:`load`.
6. Starting values. ``pm.sample(initvals=...)`` turns a value into the variable's dtype with
   ``pt.as_tensor(value).astype(dtype)`` in ``pymc.initial_point.make_initial_point_expression``
   (same keyword-only signature in both lines), so labels ``0.5`` silently become ``0``.
   :func:`guard_initvals` wraps that function so that an op with a ``check_initval(rv, value)``
   method sees the value first.
7. Forward sampling. ``pm.sample_posterior_predictive`` and ``pm.sample_prior_predictive`` both
   compile their draws with ``pymc.sampling.forward.compile_forward_sampling_function(outputs,
   vars_in_trace, basic_rvs=..., ...)``, looked up in that module at call time; the posterior
   predictive passes the trace's variables as ``vars_in_trace``, the prior predictive ``[]``. The
   other keywords differ: PyMC 5 has ``givens_dict``, ``constant_data`` keyed by *name* (the
   values of ``pm.Data`` at sampling time, from the result's ``constant_data`` group) and
   ``constant_coords``; PyMC 6 has ``constant_data`` keyed by *variable*, ``volatile_vars``,
   ``freeze_vars`` and ``model``. Both return ``(function, basic RVs drawn anew)``. PyMC offers no
   hook to condition a forward draw on observed data, so :func:`guard_forward_sampling` wraps that
   function: a collapsed likelihood whose partition comes from the trace is replaced by a draw
   given the labels *and the observed data* at sampling time. Neither line passes the result's
   ``observed_data`` to that function (an observation held in a ``pm.Data`` as it is, e.g.
   (n, D), is recorded there only), so ``sample_posterior_predictive`` is wrapped as well to hand
   it over. PyMC 5.28's ``sample_posterior_predictive`` also appends every observed variable once
   more to ``model.observed_RVs`` whenever the trace has an ``observed_data`` group (after which
   ``model.logp()`` and ``pm.sample`` fail): the wrapper restores the list.
8. Convergence checks. ``pm.sample`` ends with ``run_convergence_checks(idata, model)`` (from
   ``pymc.stats.convergence``, imported into ``pymc.sampling.mcmc``; ArviZ 0.x's ``az.rhat`` /
   ``az.ess`` in PyMC 5, ``arviz_stats`` in PyMC 6) on every free random variable present in the
   posterior, the labels of a partition included. :func:`guard_convergence_checks` wraps it so
   that partitions are judged on label-invariant quantities instead.
9. Variable order. Both lines build the ``posterior`` (and ``warmup_posterior``) group in
   ``posterior_to_xarray`` of the converter in ``pymc.backends.arviz``
   (``InferenceDataConverter`` in PyMC 5, a tuple of Datasets; ``DataTreeConverter`` in PyMC 6,
   a dict of them), and the ``prior`` group in its ``priors_to_xarray``, in the order of the
   trace's variable names (the labels first when the partition is the first random variable).
   :func:`guard_variable_order` wraps both so that each partition's label-invariant
   Deterministics come first and its labels last: plain ``az.summary(result)`` then starts with
   them; and so that each of those groups records which of its variables are partitions
   (:func:`~pymc_partitions.pymc.results.record_partitions`: the attribute ``pmp_partitions``),
   which lets every summary work on the result without the model, saved and reloaded.
   (``pm.sample(trace=ZarrTrace(...))`` in PyMC 6 converts elsewhere: it keeps its order and
   records nothing, and the summaries fall back on the model or the draws.)
10. Steps given to ``pm.sample``. Both lines call ``assign_step_methods(model, step, methods)`` of
   ``pymc.sampling.mcmc`` with the user's steps; PyMC asks ``competence`` only for the variables
   left over, so nothing stops ``pm.Metropolis([z])``. :func:`guard_step_assignment` wraps it.
11. SMC. ``pm.sample_smc`` builds its kernel (a subclass of ``pymc.smc.kernels.SMC_KERNEL``, same
   ``__init__`` signature in both lines) in the calling process; :func:`guard_smc` wraps
   ``SMC_KERNEL.__init__`` so that models with a partition are refused.
12. ``pm.find_MAP`` (``pymc.tuning.starting``) keeps non-optimised variables at their start,
   ``start=`` in PyMC 5 and ``initvals=`` in PyMC 6 (which rewrote it); :func:`guard_find_map` wraps it. ``pm.fit`` needs no wrapper (its
   approximations refuse discrete variables, naming them: ``ParametrizationError``), nor do the
   external NUTS samplers (``pm.sample(nuts_sampler="numpyro" / "nutpie" / "blackjax")`` raises
   ``ValueError`` when any variable, here the partition, needs a step other than NUTS).
13. Model contexts. Both lines keep the ``with model:`` stack in the thread-local list
   ``pymc.model.core.MODEL_MANAGER.active_contexts``; a ``pm.Model()`` created while one is active
   becomes its sub-model (its variables are registered in the parent). :func:`outside_model_contexts`
   empties the stack for a block of code that builds and samples models of its own (``pmp.loo``'s
   ``refit``) and puts it back afterwards.
14. Summary display. ArviZ 1.x's ``az.summary`` (``round_to="auto"``) returns a
   ``SummaryDataFrame`` that keeps raw numbers and displays strings from its ``_fmt_map``: each
   interval bound rounded to two significant digits on its own (a log joint's bounds -2734.5 and
   -2712.3 both show as -2700), a mean to the decimals of twice its MCSE (a constant's 0.5, MCSE 0,
   shows as 0). :func:`readable_summary` gives the bounds the precision of the row's sd and
   constants their value. ArviZ 0.x rounds every number to ``round_to=2`` decimals: nothing to do.

Every wrapper keeps PyMC's function as ``__wrapped__`` and is marked ``_pmp_guard``; each installs
itself only if the function it wraps exists with the parameters it relies on (else it returns False
and ``tests/test_compat.py`` fails), and models without a partition pass straight through.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import json
import os
import shutil
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc
import xarray as xr
from pymc.step_methods import STEP_METHODS, BlockedStep, CompoundStep
from pymc.step_methods.compound import Competence
from pymc.util import get_random_generator

from .._checks import boolean
from ..results.files import (append_checksum, refuse_non_regular, refuse_trailing_separator, remove_stale_temporaries,
                    removed_on_sigterm, temporary_name, verify_checksum)

__all__ = [
    "PYMC_MAJOR",
    "ARVIZ_MAJOR",
    "RESULT_IS_DATATREE",
    "RNG_PROTOCOL",
    "BlockedStep",
    "CompoundStep",
    "Competence",
    "STEP_METHODS",
    "guard_initvals",
    "guard_forward_sampling",
    "guard_convergence_checks",
    "guard_variable_order",
    "guard_step_assignment",
    "guard_smc",
    "guard_find_map",
    "order_variables",
    "readable_summary",
    "concat_summaries",
    "forward_sampling_guarded",
    "ChainSetupMixin",
    "setup_chain",
    "get_random_generator",
    "is_datatree",
    "is_inferencedata",
    "is_multitrace",
    "not_a_result_hint",
    "posterior_dataset",
    "made_group",
    "group_names",
    "add_groups",
    "new_result",
    "outside_model_contexts",
    "save",
    "load",
]


def _major(version: str) -> int:
    return int(version.split(".", 1)[0])


PYMC_MAJOR: int = _major(pymc.__version__)
"""Major version of the installed PyMC (5 or 6)."""

def _arviz():
    """The ``arviz`` module, imported on first use: ArviZ 1.x imports its plotting package and
    matplotlib (about 5 s at a load of 5 on 2 cores), which PyMC 6 itself does not import, so
    importing it here would make ``import pymc_partitions`` that much slower than ``import pymc``.
    (PyMC 5 imports ArviZ 0.x itself.)"""
    import arviz  # noqa: PLC0415

    return arviz


try:  # read from the installed distribution, without importing it
    from importlib.metadata import version as _version

    ARVIZ_MAJOR: int = _major(_version("arviz"))
except Exception:  # pragma: no cover - arviz is a hard dependency of PyMC
    ARVIZ_MAJOR = 0

#: True when ``pm.sample`` returns an ``xarray.DataTree`` (PyMC >= 6), False for InferenceData.
RESULT_IS_DATATREE: bool = PYMC_MAJOR >= 6

#: Name of the method PyMC calls on a step method at the start of every chain.
RNG_PROTOCOL: str = "setup_chain" if hasattr(BlockedStep, "setup_chain") else "set_rng"

_DataTree = getattr(xr, "DataTree", None)  # xarray >= 2024.10


# ---------------------------------------------------------------------------------------
# Step-method RNG protocol
# ---------------------------------------------------------------------------------------
class ChainSetupMixin:
    """Give a ``BlockedStep`` subclass one per-chain reset on both PyMC 5 and PyMC 6.

    Put it *before* ``BlockedStep`` in the bases::

        class MyStep(ChainSetupMixin, BlockedStep):
            def reset_chain(self, tune, draws):
                self._accepted = 0

    PyMC 5 calls ``set_rng(rng)`` and PyMC 6 calls ``setup_chain(rng, tune, draws)``
    once per chain; both end up storing ``self.rng`` (a ``numpy.random.Generator``)
    and calling ``reset_chain(tune, draws)``. ``tune`` / ``draws`` are ``None`` under
    PyMC 5, which does not pass them. Use ``self.rng`` for all randomness.
    """

    def set_rng(self, rng) -> None:  # PyMC 5 entry point
        self._chain_setup(rng, None, None)

    def setup_chain(self, rng, tune, draws) -> None:  # PyMC 6 entry point
        self._chain_setup(rng, tune, draws)

    def _chain_setup(self, rng, tune, draws) -> None:
        self.rng = get_random_generator(rng, copy=False)
        self.reset_chain(tune, draws)

    def reset_chain(self, tune: int | None, draws: int | None) -> None:
        """Reset per-chain state; override. Called after ``self.rng`` is set."""


@contextlib.contextmanager
def outside_model_contexts():
    """Run a block with no ``with model:`` context active (restored afterwards, also on errors), so
    that the models it builds are models of their own, not sub-models of the caller's."""
    manager = getattr(getattr(pymc.model, "core", None), "MODEL_MANAGER", None)
    stack = getattr(manager, "active_contexts", None)
    if not isinstance(stack, list):
        raise RuntimeError("pymc_partitions: this PyMC keeps no pymc.model.core.MODEL_MANAGER.active_contexts list; "
                           "call this function outside any 'with model:' block")
    saved = stack[:]
    stack.clear()
    try:
        yield
    finally:
        stack[:] = saved


def setup_chain(step, rng=None, tune: int = 0, draws: int = 0) -> None:
    """Prepare ``step`` for a new chain the way the installed PyMC would.

    Calls ``step.setup_chain(rng, tune, draws)`` if the step has it (PyMC 6 or
    :class:`ChainSetupMixin`), else ``step.set_rng(rng)`` (PyMC 5). Useful to drive a
    step method by hand (tests, custom loops). ``rng`` may be a seed or Generator.
    """
    rng = get_random_generator(rng, copy=False)
    if hasattr(step, "setup_chain"):
        step.setup_chain(rng, tune, draws)
    else:
        step.set_rng(rng)


def guard_initvals() -> None:
    """Let random-variable ops refuse starting values before PyMC casts them (difference 6).

    Idempotent. ``pymc.initial_point.make_initial_point_fn`` looks the wrapped function up in
    its module at call time, so ``pm.sample``, ``model.initial_point()`` and
    ``pm.sample(initvals=...)`` all pass through it.
    """
    import pymc.initial_point as initial_point  # noqa: PLC0415

    original = getattr(initial_point, "make_initial_point_expression", None)
    if original is None or getattr(original, "_pmp_guard", False):  # a PyMC without it: the steps still check
        return

    def make_initial_point_expression(*args, initval_strategies=None, **kwargs):
        for rv, strategy in (initval_strategies or {}).items():
            check = getattr(getattr(rv.owner, "op", None), "check_initval", None)
            if check is not None:
                check(rv, strategy)
        return original(*args, initval_strategies=initval_strategies, **kwargs)

    make_initial_point_expression._pmp_guard = True
    make_initial_point_expression.__wrapped__ = original
    initial_point.make_initial_point_expression = make_initial_point_expression


def guard_convergence_checks() -> bool:
    """Judge partitions on label-invariant quantities in ``pm.sample``'s convergence checks
    (difference 8). Idempotent; returns whether the hook is in place.

    ``pm.sample`` (``pymc/sampling/mcmc.py``, both lines) calls ``run_convergence_checks(idata,
    model)``, imported into that module, on every free variable: for a partition that means R-hat
    and ESS of each item's label, which label switching makes meaningless (and the first label,
    always 0, gives NaN and a numpy ``RuntimeWarning``). The wrapper passes it a copy of the result
    in which each partition's labels are replaced by their label-invariant quantities
    (:func:`~pymc_partitions.pymc.invariants.for_convergence_checks`: number of clusters, largest
    share, log joint), so its R-hat / ESS warnings are about those. Models without partitions are
    checked exactly as before; ``compute_convergence_checks=False`` still skips the checks.
    """
    import pymc.sampling.mcmc as mcmc  # noqa: PLC0415
    import pymc.stats.convergence as convergence  # noqa: PLC0415

    original = getattr(mcmc, "run_convergence_checks", None)
    if original is None:  # a PyMC that checks differently: its warnings stay as they are
        return False
    if getattr(original, "_pmp_guard", False):
        return True

    def run_convergence_checks(idata, model):
        from ..results.invariants import for_convergence_checks  # noqa: PLC0415

        checked = for_convergence_checks(idata, model)
        if checked is None:  # only partitions, all constant: no R-hat / ESS to compute
            return convergence.warn_divergences(idata) + convergence.warn_treedepth(idata)
        return original(checked, model)

    run_convergence_checks._pmp_guard = True
    run_convergence_checks.__wrapped__ = original
    mcmc.run_convergence_checks = run_convergence_checks
    return True


def order_variables(ds: xr.Dataset, model) -> xr.Dataset:
    """``ds`` with the variables reordered: each partition's label-invariant Deterministics
    (``<z>_n_clusters``, ``<z>_largest_share``) first, then every other variable in its order,
    the partitions' labels last. ``ds`` itself when it holds no partition of ``model``."""
    from .distributions import invariant_names, is_partition  # noqa: PLC0415

    if not isinstance(ds, xr.Dataset) or model is None:
        return ds
    names = list(ds.data_vars)
    parts = [rv.name for rv in getattr(model, "free_RVs", ()) if is_partition(rv) and rv.name in ds.data_vars]
    if not parts:
        return ds
    first = [v for p in parts for v in invariant_names(p) if v in ds.data_vars]
    order = first + [v for v in names if v not in first and v not in parts] + parts
    if order == names:
        return ds
    return ds[order]


def guard_variable_order() -> bool:
    """Put label-invariant quantities before the labels in the groups PyMC builds, and record in
    them which variables are partitions (difference 9). Idempotent; returns whether the hook is in
    place."""
    import pymc.backends.arviz as backend  # noqa: PLC0415

    converter = getattr(backend, "DataTreeConverter", None) or getattr(backend, "InferenceDataConverter", None)
    if converter is None:  # a PyMC that converts differently: its order stays as it is
        return False
    placed = False
    for method in ("posterior_to_xarray", "priors_to_xarray"):
        original = getattr(converter, method, None)
        if original is None:
            continue
        placed = True
        if getattr(original, "_pmp_guard", False):
            continue
        setattr(converter, method, _ordering_wrapper(original))
    return placed


def _ordering_wrapper(original):
    def convert(self, *args, **kwargs):
        from ..results.reader import record_partitions  # noqa: PLC0415

        out = original(self, *args, **kwargs)
        model = getattr(self, "model", None)

        def place(ds):
            return record_partitions(order_variables(ds, model), model)

        if isinstance(out, tuple):
            return tuple(place(ds) for ds in out)
        if isinstance(out, dict):
            return {k: place(ds) for k, ds in out.items()}
        return place(out)

    convert._pmp_guard = True
    convert.__wrapped__ = original
    convert.__name__ = original.__name__
    convert.__doc__ = original.__doc__
    return convert


def _bind(signature, args, kwargs):
    """``signature.bind(*args, **kwargs)`` with defaults applied, or ``None`` if they do not fit
    (then the wrapper leaves the call to PyMC, which reports the error)."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    return bound


def _wrap(original, wrapper):
    wrapper._pmp_guard = True
    wrapper.__wrapped__ = original
    wrapper.__name__ = getattr(original, "__name__", wrapper.__name__)
    wrapper.__doc__ = getattr(original, "__doc__", None)
    return wrapper


def guard_step_assignment() -> bool:
    """Refuse step assignments that would sample a partition wrongly, before ``pm.sample`` runs
    (difference 10). Idempotent; returns whether the hook is in place.

    Wraps ``pymc.sampling.mcmc.assign_step_methods(model, step=None, methods=None)``, which
    ``pm.sample`` calls (looked up in that module at call time, both lines) with the steps given
    in ``step=`` before instantiating the others. PyMC offers no hook for a variable to refuse a
    step method: ``competence`` is asked only for variables no step was given for, so
    ``step=pm.Metropolis([z])`` or ``pm.Slice([z])`` is accepted, and samples each partition in
    proportion to its number of labellings (its log density is that of the partition, given to
    every label vector), or not at all. The wrapper passes the model and the given steps to
    :func:`~pymc_partitions.pymc.steps.check_partition_steps` (which refuses steps of other
    packages on a partition, and a partition given to two steps of one class), then calls PyMC.
    Models without a partition, and ``step=None``, go straight to PyMC.
    """
    import pymc.sampling.mcmc as mcmc  # noqa: PLC0415

    original = getattr(mcmc, "assign_step_methods", None)
    if original is None:
        return False
    if getattr(original, "_pmp_guard", False):
        return True
    try:
        signature = inspect.signature(original)
    except (TypeError, ValueError):
        return False
    if list(signature.parameters)[:2] != ["model", "step"]:
        return False

    def assign_step_methods(*args, **kwargs):
        bound = _bind(signature, args, kwargs)
        if bound is not None and bound.arguments.get("step") is not None:
            from .steps import check_partition_steps  # noqa: PLC0415

            check_partition_steps(bound.arguments["model"], bound.arguments["step"])
        return original(*args, **kwargs)

    mcmc.assign_step_methods = _wrap(original, assign_step_methods)
    return True


def guard_smc() -> bool:
    """Make ``pm.sample_smc`` refuse models with a partition (difference 11). Idempotent; returns
    whether the hook is in place.

    ``pm.sample_smc`` (``pymc/smc/sampling.py``, both lines) builds its kernel in the calling
    process, ``kernel(draws=..., start=None, model=model, random_seed=..., **kernel_kwargs)``, and
    every kernel (IMH, MH, a user's) derives from ``pymc.smc.kernels.SMC_KERNEL``, whose
    ``__init__(self, draws, start, model, random_seed, threshold, compile_kwargs)`` reads the model.
    Its proposals are continuous (a Gaussian fitted to the particles), which cannot move the
    labels: every draw kept its starting partition, one block, without a word. PyMC gives a model
    variable no say in SMC, so ``SMC_KERNEL.__init__`` is wrapped: with a partition in the model it
    raises :func:`~pymc_partitions.pymc.steps.refuse_partition`'s ``NotImplementedError`` before
    anything runs; other models go straight to PyMC.
    """
    try:
        from pymc.smc.kernels import SMC_KERNEL  # noqa: PLC0415
    except ImportError:
        return False
    original = SMC_KERNEL.__dict__.get("__init__")
    if original is None:
        return False
    if getattr(original, "_pmp_guard", False):
        return True
    try:
        signature = inspect.signature(original)
    except (TypeError, ValueError):
        return False
    if "model" not in signature.parameters:
        return False

    def __init__(*args, **kwargs):
        bound = _bind(signature, args, kwargs)
        if bound is not None:
            from .steps import refuse_partition  # noqa: PLC0415

            refuse_partition(pymc.modelcontext(bound.arguments["model"]), "pm.sample_smc")
        return original(*args, **kwargs)

    SMC_KERNEL.__init__ = _wrap(original, __init__)
    return True


def guard_find_map() -> bool:
    """Make ``pm.find_MAP`` refuse to pass off a conditional mode as a MAP on models with a
    partition (difference 12). Idempotent; returns whether the hook is in place.

    ``pm.find_MAP`` (``pymc/tuning/starting.py``; ``(start=None, vars=None, ..., model=None)`` in
    PyMC 5, ``(method, *, vars=None, initvals=None, ..., model=None, **optimizer_kwargs)`` in PyMC 6,
    which still takes ``start=`` as a deprecated alias) optimises the continuous variables by default
    and keeps every other variable at its start (default: the model's initial point): a partition
    stays at its starting labels, one block, and the result --
    alpha about 1e-6 for a CRP -- is the mode given one block, not a MAP of the model. It has no
    hook, so the function is wrapped, in ``pymc.tuning.starting`` and where PyMC re-exports it
    (``pymc.tuning``, ``pymc``; a ``from pymc import find_MAP`` made before importing
    pymc_partitions keeps PyMC's own). With a partition in the model the call is refused unless
    the start (``start`` / ``initvals``) gives every partition's labels (then it is the mode given
    those labels, as asked),
    and always if ``vars`` names a partition (Powell would move the labels as real numbers); see
    :func:`~pymc_partitions.pymc.steps.check_find_map`. Other models go straight to PyMC.
    """
    import pymc.tuning as tuning  # noqa: PLC0415
    import pymc.tuning.starting as starting  # noqa: PLC0415

    original = getattr(starting, "find_MAP", None)
    if original is None:
        return False
    if getattr(original, "_pmp_guard", False):
        return True
    try:
        signature = inspect.signature(original)
    except (TypeError, ValueError):
        return False
    params = signature.parameters
    start_name = "start" if "start" in params else "initvals" if "initvals" in params else None  # PyMC 5 / 6
    if start_name is None or not {"vars", "model"} <= set(params):
        return False
    extra = next((name for name, p in params.items() if p.kind is p.VAR_KEYWORD), None)

    def find_MAP(*args, **kwargs):  # noqa: N802 - PyMC's name
        bound = _bind(signature, args, kwargs)
        if bound is not None:
            from .steps import check_find_map  # noqa: PLC0415

            given = bound.arguments
            start = given[start_name]
            if start is None and extra is not None:  # PyMC 6 still takes start= (deprecated), or a dict first
                start = given.get(extra, {}).get("start")
                if start is None and isinstance(given.get("method"), dict):
                    start = given["method"]
            check_find_map(pymc.modelcontext(given["model"]), start, given["vars"], start_name)
        return original(*args, **kwargs)

    wrapped = _wrap(original, find_MAP)
    starting.find_MAP = wrapped
    for module in (tuning, pymc):
        if getattr(module, "find_MAP", None) is original:
            module.find_MAP = wrapped
    return True


def concat_summaries(tables, order):
    """One ``az.summary`` table from summaries of disjoint sets of variables (same keywords), rows
    (or, for ArviZ 0.x's ``fmt="long"``, columns; for ``fmt="xarray"``, variables) in the order of
    the variable names ``order``. ArviZ 1.x's display strings (``_fmt_map``, difference 10) are
    merged, which ``pandas.concat`` alone would drop."""
    import pandas as pd  # noqa: PLC0415

    if len(tables) == 1:
        return tables[0]
    if all(isinstance(t, xr.Dataset) for t in tables):
        return xr.merge(tables)[[v for v in order if any(v in t for t in tables)]]
    rank = {name: i for i, name in enumerate(order)}
    wide = any(c in tables[0].columns for c in ("mean", "median", "sd", "r_hat", "ess_bulk", "ess_tail",
                                                 "mcse_mean"))
    table = pd.concat(tables, axis=0 if wide else 1)
    labels = list(table.index if wide else table.columns)
    keys = sorted(range(len(labels)), key=lambda i: (rank.get(str(labels[i]).split("[", 1)[0], len(rank)), i))
    table = table.iloc[keys] if wide else table.iloc[:, keys]
    maps = [getattr(t, "_fmt_map", None) for t in tables]
    if wide and all(isinstance(m, dict) for m in maps):
        merged = {}
        for m in maps:
            for col, cells in m.items():
                merged.setdefault(col, {}).update(cells)
        table = type(tables[0])(table)
        table._fmt_map = merged
    return table


def readable_summary(table, constant=()):
    """``table`` (an ``az.summary``) with the displayed interval bounds at the precision of each
    row's sd (two significant digits of it) and the rows ``constant`` showing their value
    (difference 10). Only ArviZ 1.x's display strings change (its ``_fmt_map``, when present); the
    numbers and any other table are left as they are."""
    fmt = getattr(table, "_fmt_map", None)
    if not isinstance(fmt, dict):
        return table
    columns = [str(c) for c in table.columns]
    spread = next((c for c in ("sd", "mad") if c in columns), None)
    bounds = [c for c in columns if c.endswith(("_lb", "_ub"))]
    values = [c for c in ("mean", "median", *bounds) if c in columns]
    spreads = [c for c in columns if c in ("sd", "mad") or c.startswith("mcse_")]
    for row in table.index:
        if row in constant:  # its value, and no spread (not the sum's rounding error, e.g. 3.6e-15)
            for col in values:
                value = float(table.loc[row, col])
                fmt.setdefault(col, {})[row] = f"{value:.6g}" if np.isfinite(value) else str(value)
            for col in spreads:
                if np.isfinite(float(table.loc[row, col])):
                    fmt.setdefault(col, {})[row] = "0"
            continue
        sd = float(table.loc[row, spread]) if spread else np.nan
        if not (np.isfinite(sd) and sd > 0):
            continue
        decimals = max(0, 1 - int(np.floor(np.log10(sd))))
        for col in bounds:
            value = float(table.loc[row, col])
            if np.isfinite(value):
                text = f"{value:.{decimals}f}"
                fmt.setdefault(col, {})[row] = text.rstrip("0").rstrip(".") if "." in text else text
    return table


#: Why forward draws of collapsed likelihoods are refused when :func:`guard_forward_sampling` could
#: not install itself.
FORWARD_GUARD_MISSING = (
    f"pymc_partitions could not hook PyMC {pymc.__version__}'s forward sampling "
    "(pymc.sampling.forward.compile_forward_sampling_function), so it cannot tell a prior predictive draw of a "
    "collapsed likelihood from a posterior predictive one, which must use the observed data: forward draws are "
    "refused. For replicated data use pmp.sample_posterior_predictive(result, model)."
)
_FORWARD_STATE = {"guarded": False}


def forward_sampling_guarded() -> bool:
    """True once :func:`guard_forward_sampling` has wrapped PyMC's forward-sampling compiler."""
    return _FORWARD_STATE["guarded"]


def guard_forward_sampling() -> bool:
    """Make ``pm.sample_posterior_predictive`` draw collapsed likelihoods correctly (difference 7).

    Wraps ``pymc.sampling.forward.compile_forward_sampling_function`` (and its re-export in
    ``pymc.sampling``). In the graph it is asked to compile, every variable ``rv`` whose op has
    ``posterior_replicate(rv)`` and ``partition_input(rv)`` (the collapsed likelihoods) and whose
    partition is among ``vars_in_trace`` is replaced by ``op.posterior_replicate(rv, data, hyper)``:
    cluster parameters drawn from their conditional posterior given the labels and the observed data.
    Should PyMC decide to draw that partition anew after all (it returns it among the variables it
    resamples: a trace variable with a resampled ancestor on PyMC 5, ``sample_vars`` on PyMC 6),
    the function is compiled again without that replacement (a prior predictive draw, which is
    then right). The prior predictive (``vars_in_trace=[]``) is untouched.

    The labels of the posterior belong to the data it was fitted to, so the replicates are drawn
    given the data *at sampling time*, whatever ``pm.set_data`` did since: the observed values are
    the result's ``observed_data`` (where PyMC records an observation held in a ``pm.Data``: a
    data container observed as it is, e.g. (n, D), is in no other group), and every ``pm.Data`` of
    a data-valued hyperparameter (or of an observation computed from one) is its value in the
    result's ``constant_data``. PyMC passes the latter to the compiler but not the former, so
    ``pm.sample_posterior_predictive`` is wrapped too (:func:`_posterior_predictive_wrapper`) to
    hand the result's ``observed_data`` to the compiler. A likelihood whose data at sampling time
    the trace does not record (a bare posterior Dataset or list of points) is refused, naming
    ``pmp.sample_posterior_predictive``.

    Fail-safe: if the function is missing, has other parameters, or ``sample_posterior_predictive``
    no longer calls it, nothing is wrapped and the collapsed likelihoods refuse every forward draw
    (:data:`FORWARD_GUARD_MISSING`) rather than give prior-drawn replicates. Idempotent; returns
    whether the guard is in place.
    """
    import pymc.sampling as sampling  # noqa: PLC0415
    import pymc.sampling.forward as forward  # noqa: PLC0415

    original = getattr(forward, "compile_forward_sampling_function", None)
    if getattr(original, "_pmp_guard", False):
        return _FORWARD_STATE["guarded"]
    try:
        params = inspect.signature(original).parameters
        callers = [inspect.unwrap(forward.sample_posterior_predictive).__code__.co_names,
                   inspect.unwrap(forward.sample_prior_predictive).__code__.co_names]
    except (TypeError, ValueError, AttributeError):
        return False
    if list(params)[:2] != ["outputs", "vars_in_trace"] or not all(
            "compile_forward_sampling_function" in names for names in callers):
        return False
    wrapped = _forward_sampling_wrapper(original, inspect.signature(original))
    forward.compile_forward_sampling_function = wrapped
    if getattr(sampling, "compile_forward_sampling_function", None) is original:
        sampling.compile_forward_sampling_function = wrapped
    _guard_posterior_predictive(forward, sampling)
    _FORWARD_STATE["guarded"] = True
    return True


#: The ``observed_data`` group of the result ``pm.sample_posterior_predictive`` is drawing from, while
#: it runs (None outside it, or for a trace that is not a whole result): the observed values at
#: sampling time, which PyMC does not pass to the forward-sampling compiler.
_OBSERVED_AT_SAMPLING: contextvars.ContextVar = contextvars.ContextVar("pmp_observed_at_sampling", default=None)


def _guard_posterior_predictive(forward, sampling) -> bool:
    """Wrap ``pm.sample_posterior_predictive`` (every module attribute that is that function) with
    :func:`_posterior_predictive_wrapper`; False when its first parameters are not ``(trace, model)``
    (then likelihoods observed through a ``pm.Data`` are refused, as with a bare posterior)."""
    original = getattr(forward, "sample_posterior_predictive", None)
    if original is None or getattr(original, "_pmp_guard", False):
        return original is not None
    try:
        signature = inspect.signature(original)
    except (TypeError, ValueError):
        return False
    if list(signature.parameters)[:2] != ["trace", "model"]:
        return False
    wrapped = _posterior_predictive_wrapper(original, signature)
    for module in (forward, sampling, pymc):
        if getattr(module, "sample_posterior_predictive", None) is original:
            module.sample_posterior_predictive = wrapped
    return True


def _posterior_predictive_wrapper(original, signature):
    """``pm.sample_posterior_predictive`` that (1) hands the result's ``observed_data`` to the
    forward-sampling compiler (:data:`_OBSERVED_AT_SAMPLING`) and (2) leaves the model as it found
    it: PyMC 5.28 appends every observed variable once more to ``model.observed_RVs`` when the
    trace has an ``observed_data`` group (``observed_vars = model.observed_RVs; observed_vars +=
    [...]`` tests a *name* against a list of variables), after which ``model.logp()`` and
    ``pm.sample`` fail with "Cannot convert None to a tensor variable"; the lists are restored
    here, on success and on error alike."""

    @functools.wraps(original)
    def sample_posterior_predictive(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:  # PyMC's own error
            return original(*args, **kwargs)
        kept = _observed_lists(bound.arguments.get("model"))
        token = _OBSERVED_AT_SAMPLING.set(_observed_group(bound.arguments.get("trace")))
        try:
            return original(*args, **kwargs)
        finally:
            _OBSERVED_AT_SAMPLING.reset(token)
            for current, before in kept:
                if len(current) != len(before) or any(a is not b for a, b in zip(current, before)):
                    list.__delitem__(current, slice(None))  # list's own methods: a PyMC treelist
                    list.extend(current, before)  # would pass them on to the parent model

    sample_posterior_predictive._pmp_guard = True
    return sample_posterior_predictive


def _observed_lists(model) -> list[tuple[list, list]]:
    """(list, copy) of ``observed_RVs`` of the model (given or in context) and of its parents."""
    if model is None:
        try:
            model = pymc.modelcontext(None)
        except TypeError:
            return []
    kept = []
    while isinstance(model, pymc.Model):
        if isinstance(model.observed_RVs, list):
            kept.append((model.observed_RVs, list(model.observed_RVs)))
        model = getattr(model, "parent", None)
    return kept


def _observed_group(trace):
    """The ``observed_data`` group of a whole result as a Dataset; None for anything else."""
    try:
        if (is_datatree(trace) or is_inferencedata(trace)) and "observed_data" in group_names(trace):
            return posterior_dataset(trace, "observed_data")
    except Exception:  # noqa: BLE001  - not a result we can read: PyMC decides what to do with it
        return None
    return None


def _forward_sampling_wrapper(original, signature):
    def compile_forward_sampling_function(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        outputs = list(bound.arguments["outputs"])
        in_trace = set(bound.arguments["vars_in_trace"])
        given = [rv for rv in _replaceable(outputs) if rv.owner.op.partition_input(rv) in in_trace]
        if not given:
            return original(*args, **kwargs)
        fitted = {rv: _fitted_inputs(rv, _OBSERVED_AT_SAMPLING.get(), bound.arguments.get("constant_data") or {})
                  for rv in given}
        while True:
            bound.arguments["outputs"] = _replace_downstream(
                outputs, {rv: rv.owner.op.posterior_replicate(rv, *fitted[rv][:2]) for rv in given})
            fn, resampled = original(*bound.args, **bound.kwargs)
            redrawn = [rv for rv in given if rv.owner.op.partition_input(rv) in resampled]
            if not redrawn:
                break
            given = [rv for rv in given if rv not in redrawn]  # partition drawn anew: a prior draw is right
            if not given:
                bound.arguments["outputs"] = outputs
                return original(*bound.args, **bound.kwargs)
        refused = [fitted[rv][2] for rv in given if fitted[rv][2] is not None]
        if refused:
            raise ValueError(refused[0])
        return fn, set(resampled) | set(given)

    compile_forward_sampling_function._pmp_guard = True
    compile_forward_sampling_function.__wrapped__ = original
    compile_forward_sampling_function.__doc__ = original.__doc__
    return compile_forward_sampling_function


def _replaceable(outputs):
    """The collapsed likelihoods among the ancestors of ``outputs`` (variables whose op can replace them)."""
    return [v for v in ancestors(outputs) if v.owner is not None and hasattr(v.owner.op, "posterior_replicate")
            and hasattr(v.owner.op, "partition_input") and v is v.owner.outputs[1]]


def _replace_downstream(outputs, replacements, *, keep_random=False):
    """``outputs`` with ``replacements`` applied, cloning only the nodes between them (the rest of
    the graph, trace variables included, keeps its identity). A random variable downstream of a
    replacement is refused, or with ``keep_random`` kept as it is (its value comes from the trace)."""
    from pytensor.graph.traversal import toposort  # noqa: PLC0415
    from pytensor.tensor.random.op import RandomVariable  # noqa: PLC0415

    memo = dict(replacements)
    for node in toposort(outputs):
        if not any(i in memo for i in node.inputs):
            continue
        if isinstance(node.op, RandomVariable):
            if keep_random:
                continue
            raise NotImplementedError(
                f"a random variable ({node.outputs[1].name or node.op}) depends on the collapsed likelihood(s) "
                f"{sorted(rv.name for rv in replacements)}: pm.sample_posterior_predictive cannot redraw it. "
                "Use pmp.sample_posterior_predictive(result, model) for the replicated data.")
        new = node.clone_with_new_inputs([memo.get(i, i) for i in node.inputs])
        memo.update(zip(node.outputs, new.outputs))
    return [memo.get(o, o) for o in outputs]


def _shared_data(outputs) -> list:
    """The data containers (shared variables other than random generators) ``outputs`` are computed
    from, not looking past random variables (their values come from the trace)."""
    from pytensor.compile.sharedvalue import SharedVariable  # noqa: PLC0415
    from pytensor.tensor.random.op import RandomVariable  # noqa: PLC0415
    from pytensor.tensor.random.type import RandomType  # noqa: PLC0415

    stack, seen, found = list(outputs), set(), []
    while stack:
        var = stack.pop()
        if var in seen:
            continue
        seen.add(var)
        if var.owner is not None:
            if not isinstance(var.owner.op, RandomVariable):
                stack.extend(var.owner.inputs)
        elif isinstance(var, SharedVariable) and not isinstance(var.type, RandomType):
            found.append(var)
    return found


_REMEDY_FITTED = ("Pass the whole result of pm.sample (it records them in its observed_data and constant_data "
                  "groups), or use pmp.sample_posterior_predictive(result, model)")


def _fitted_inputs(rv, observed, constant_data):
    """(observed data, hyperparameters, refusal) of the collapsed likelihood ``rv`` as they were at
    sampling time: every data container replaced by a constant of its recorded value. ``observed``:
    the result's ``observed_data`` (or None); ``constant_data``: what PyMC passes its compiler, keyed
    by variable (PyMC 6) or by name (PyMC 5). ``refusal`` (a message) when a value is not recorded;
    the data and hyperparameters are then the current ones (used only if the partition is drawn anew)."""
    import pytensor.tensor as pt  # noqa: PLC0415

    op = rv.owner.op
    data, hyper = rv.tag.observations, list(rv.owner.inputs[3:])
    unknown = []
    if _shared_data([data]):
        if observed is not None and rv.name in observed.data_vars:
            from .distributions import partition_size  # noqa: PLC0415

            try:
                value = op.check_observed(rv, np.asarray(observed[rv.name].values),
                                          partition_size(op.partition_input(rv)), op.data_dim(rv))
            except (TypeError, ValueError) as err:
                return data, hyper, (f"pm.sample_posterior_predictive: the result's observed_data of {rv.name!r} is "
                                     f"not data of this model's likelihood ({err}). {_REMEDY_FITTED}.")
            data = pt.constant(np.asarray(value, dtype=data.dtype))
        else:
            data, missing = _at_sampling_time([data], constant_data)
            data, unknown = data[0], unknown + missing
    hyper, missing = _at_sampling_time(hyper, constant_data)
    unknown += [v for v in missing if v not in unknown]
    if unknown:
        return data, hyper, (
            f"pm.sample_posterior_predictive: {rv.name!r} depends on the data {unknown}, whose value at sampling "
            "time the trace does not record, so its replicates cannot be drawn given the data the posterior was "
            f"fitted to. {_REMEDY_FITTED}.")
    return data, hyper, None


def _at_sampling_time(outputs, constant_data):
    """(``outputs`` with each data container replaced by a constant of its value in ``constant_data``,
    names of the containers it does not hold, which are left as they are)."""
    import pytensor.tensor as pt  # noqa: PLC0415

    replace, unknown = {}, []
    for var in _shared_data(outputs):
        fitted = constant_data.get(var, constant_data.get(var.name)) if var.name else constant_data.get(var)
        if fitted is None:
            unknown.append(var.name or str(var))
            continue
        value = np.asarray(fitted, dtype=var.dtype)
        if value.ndim != var.type.ndim:
            unknown.append(var.name or str(var))
            continue
        replace[var] = pt.constant(value, name=var.name)
    if not replace:
        return list(outputs), unknown
    return _replace_downstream(list(outputs), replace, keep_random=True), unknown


# ---------------------------------------------------------------------------------------
# Result objects
# ---------------------------------------------------------------------------------------
def is_datatree(obj: Any) -> bool:
    """True if ``obj`` is an ``xarray.DataTree`` (the PyMC 6 / ArviZ 1.x result type)."""
    return _DataTree is not None and isinstance(obj, _DataTree)


def is_inferencedata(obj: Any) -> bool:
    """True if ``obj`` is an ``arviz.InferenceData`` (the PyMC 5 / ArviZ 0.x result type)."""
    # ArviZ 1.x has no InferenceData: ``az.InferenceData`` there is a module-level
    # ``__getattr__`` returning ``xarray.DataTree`` with a MigrationWarning.
    if ARVIZ_MAJOR >= 1:
        return False
    return isinstance(obj, _arviz().InferenceData)  # (PyMC 5 has imported ArviZ 0.x already)


def is_multitrace(obj: Any) -> bool:
    """True if ``obj`` is a ``pymc.backends.base.MultiTrace`` (``pm.sample(return_inferencedata=False)``)."""
    from pymc.backends.base import MultiTrace  # noqa: PLC0415

    return isinstance(obj, MultiTrace)


def not_a_result_hint(obj: Any) -> str:
    """What to do when ``obj`` was passed where a result is expected: for a MultiTrace, how to
    convert it (the conversion needs the model, which the functions reading draws do not have);
    otherwise nothing."""
    if is_multitrace(obj):
        return ("; that is the MultiTrace of pm.sample(return_inferencedata=False): convert it with "
                "pm.to_inference_data(trace, model=model), or sample with return_inferencedata=True (the default)")
    return ""


def _check_result(result: Any) -> None:
    if not (is_datatree(result) or is_inferencedata(result)):
        raise TypeError(
            "expected an arviz.InferenceData or xarray.DataTree (the result of pm.sample), "
            f"got {type(result).__name__}{not_a_result_hint(result)}"
        )


def group_names(result) -> list[str]:
    """Names of the top-level groups, e.g. ``['posterior', 'sample_stats']``.

    InferenceData: ``result.groups()`` (includes ``warmup_*`` groups). DataTree: the
    names of the root's children (the root node itself is not a group).
    """
    _check_result(result)
    if is_datatree(result):
        return list(result.children)
    return list(result.groups())


def posterior_dataset(result, group: str = "posterior") -> xr.Dataset:
    """Return ``group`` of a sampling result as an ``xarray.Dataset``.

    For a DataTree the node is converted with ``to_dataset()`` (inherited coordinates
    included); for InferenceData the stored Dataset is returned as is. Raises
    ``KeyError`` if the group does not exist.
    """
    _check_result(result)
    if not isinstance(group, str):
        raise TypeError(f"group must be a group name (str), got {group!r}")
    if group not in group_names(result):
        raise KeyError(f"no group {group!r}; available: {group_names(result)}")
    if is_datatree(result):
        return result[group].to_dataset()
    return result[group]


def made_group(result, group: str, maker: str) -> xr.Dataset:
    """:func:`posterior_dataset` of a group that ``maker`` adds; a clear ``ValueError`` if absent."""
    try:
        return posterior_dataset(result, group)
    except KeyError:
        raise ValueError(f"the result has no {group!r} group: was it made by {maker}?") from None


def _validate_groups(groups: Mapping[str, xr.Dataset]) -> dict[str, xr.Dataset]:
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError("groups must be a non-empty mapping of name -> xarray.Dataset")
    out = {}
    for name, ds in groups.items():
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"invalid group name {name!r}")
        if isinstance(ds, xr.DataArray):
            ds = ds.to_dataset(name=ds.name if ds.name is not None else name)
        if not isinstance(ds, xr.Dataset):
            raise TypeError(f"group {name!r}: expected xarray.Dataset, got {type(ds).__name__}")
        if not ds.data_vars:
            # InferenceData silently drops such groups; refuse on both for consistency.
            raise ValueError(f"group {name!r} has no data variables")
        out[name] = ds
    return out


def add_groups(result, groups: Mapping[str, xr.Dataset], *, overwrite: bool = False):
    """Return a copy of ``result`` with ``groups`` added; same type as ``result``.

    Parameters
    ----------
    result : arviz.InferenceData or xarray.DataTree
        Output of ``pm.sample`` (PyMC 5 or 6).
    groups : mapping of str -> xarray.Dataset
        New groups. A ``DataArray`` is accepted and wrapped in a Dataset. Each Dataset
        must have at least one data variable (InferenceData would drop it otherwise).
    overwrite : bool, default False
        Replace groups that already exist instead of raising ``ValueError``.

    Notes
    -----
    The input is not mutated. The copy is *shallow*: the container (InferenceData
    object / tree nodes) is new, but existing groups' arrays are shared with
    ``result``, so it is cheap even for large posteriors. Root attributes
    (``InferenceData.attrs`` / the tree root's ``attrs``) and group attributes are kept.
    """
    _check_result(result)
    overwrite = boolean("overwrite", overwrite, owner="add_groups")
    new = _validate_groups(groups)
    existing = group_names(result)
    clash = [g for g in new if g in existing]
    if clash and not overwrite:
        raise ValueError(f"group(s) {clash} already exist; pass overwrite=True to replace")

    if is_datatree(result):
        out = result.copy(deep=False)
        for name, ds in new.items():
            out[name] = _DataTree(dataset=ds)
        return out

    # InferenceData: rebuild a new container around the same Datasets, then add.
    keep = {g: result[g] for g in existing if g not in new}
    attrs = dict(result.attrs) or None
    out = type(result)(attrs=attrs, **keep)
    with warnings.catch_warnings():
        # custom group names warn on some ArviZ 0.x versions
        warnings.filterwarnings("ignore", message=".*not defined in the InferenceData scheme")
        out.add_groups(new)
    return out


def new_result(groups: Mapping[str, xr.Dataset]):
    """A result object holding only ``groups``: InferenceData under PyMC 5, DataTree under PyMC 6
    (the type ``pm.sample`` returns)."""
    new = _validate_groups(groups)
    if RESULT_IS_DATATREE:
        return _DataTree.from_dict({name: ds for name, ds in new.items()})
    import arviz  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not defined in the InferenceData scheme")
        return arviz.InferenceData(**new)


def _path(path, owner: str) -> str:
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{owner}: path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise ValueError(f"{owner}: path must be a non-empty file name, got {path!r}")
    return path


# --- attributes: netCDF stores numbers, strings, 1-d numeric arrays and lists of >= 2 strings;
# everything else is written as JSON behind a prefix and decoded on load ----------------------

#: Prefix of attribute values that :func:`save` wrote as JSON (and :func:`load` decodes).
ATTR_PREFIX = "pmp-json:"
_TAG = "__pmp_type__"
_NATIVE_KINDS = "iuf"  # signed / unsigned integers and floats (float16 and complex excluded below)
_INT64 = (-(2**63), 2**63 - 1)


def _native_dtype(dtype) -> bool:
    return dtype.kind in _NATIVE_KINDS and dtype.itemsize >= (1 if dtype.kind in "iu" else 4)


def _is_native(value) -> bool:
    """True if netCDF stores ``value`` and gives back an equal value of the same type (up to
    int64 / float64 scalars, which :func:`_decode_attr` turns back into int / float)."""
    if isinstance(value, str):
        return not value.startswith(ATTR_PREFIX)
    if type(value) is int:
        return _INT64[0] <= value <= _INT64[1]
    if type(value) is float:
        return True
    if isinstance(value, np.generic):
        return _native_dtype(value.dtype)
    if isinstance(value, np.ndarray):
        return value.ndim == 1 and value.size >= 2 and _native_dtype(value.dtype)
    if type(value) is list:
        return len(value) >= 2 and all(type(v) is str and not v.startswith(ATTR_PREFIX) for v in value)
    return False


def _to_json(value, where: str):
    """A JSON-able form of ``value`` that :func:`_from_json` turns back into an equal value of the same type."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is list:
        return [_to_json(v, where) for v in value]
    if type(value) is tuple:
        return {_TAG: "tuple", "items": [_to_json(v, where) for v in value]}
    if type(value) is dict:
        bad = [k for k in value if type(k) is not str or k == _TAG]
        if bad:
            raise TypeError(f"pmp.save: attribute {where}: dict keys must be strings (not {_TAG!r}), got {bad!r}")
        return {k: _to_json(v, where) for k, v in value.items()}
    if isinstance(value, (np.generic, np.ndarray)) and value.dtype.kind in "biufU":
        array = np.asarray(value)
        return {_TAG: "ndarray" if isinstance(value, np.ndarray) else "scalar", "dtype": array.dtype.str,
                "shape": list(array.shape), "data": array.ravel().tolist()}
    raise TypeError(f"pmp.save: attribute {where} is of type {type(value).__name__} ({value!r:.80}), which cannot be "
                    "stored; use numbers, strings, bools, None, lists, tuples, dicts with string keys and numpy "
                    "arrays of numbers, bools or strings")


def _from_json(obj: dict):
    kind = obj.get(_TAG)
    if kind is None:
        return obj
    if kind == "tuple":
        return tuple(obj["items"])
    array = np.array(obj["data"], dtype=np.dtype(obj["dtype"])).reshape(obj["shape"])
    return array if kind == "ndarray" else array[()]


def _encode_attr(value, where: str):
    if _is_native(value):
        return value
    return ATTR_PREFIX + json.dumps(_to_json(value, where), ensure_ascii=False, allow_nan=True)


def _decode_attr(value, where: str):
    if isinstance(value, str) and value.startswith(ATTR_PREFIX):
        return json.loads(value[len(ATTR_PREFIX):], object_hook=_from_json)
    if type(value) is np.int64:
        return int(value)
    if type(value) is np.float64:
        return float(value)
    return value


def _map_dataset(ds: xr.Dataset, fn, where: str) -> xr.Dataset:
    """A shallow copy of ``ds`` with ``fn(value, where)`` applied to its and its variables' attrs."""
    ds = ds.copy(deep=False)
    ds.attrs = {k: fn(v, f"{k!r} of {where}") for k, v in ds.attrs.items()}
    for name, var in ds.variables.items():
        var.attrs = {k: fn(v, f"{k!r} of variable {name!r} in {where}") for k, v in var.attrs.items()}
    return ds


def _map_attrs(result, fn):
    """A shallow copy of ``result`` (same type) with ``fn`` applied to every attribute value:
    root, groups and variables."""
    if is_datatree(result):
        out = result.copy(deep=False)
        for node in out.subtree:
            where = "the root" if node.is_root else f"group {node.path.strip('/')!r}"
            node.dataset = _map_dataset(node.to_dataset(inherit=False), fn, where)
        return out
    groups = {g: _map_dataset(result[g], fn, f"group {g!r}") for g in group_names(result)}
    attrs = {k: fn(v, f"{k!r} of the root") for k, v in result.attrs.items()}  # as _map_dataset's
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not defined in the InferenceData scheme")
        return type(result)(attrs=attrs or None, **groups)


# --- files ------------------------------------------------------------------------------------

def save(result, path: str | os.PathLike, *, compress: bool = True) -> str:
    """Write a sampling result to a netCDF4 (HDF5) file with h5netcdf; return the path.

    InferenceData -> ``result.to_netcdf(..., engine="h5netcdf", compress=...)``;
    DataTree -> ``result.to_netcdf(..., engine="h5netcdf")`` with zlib encoding per
    variable when ``compress``. An existing file is replaced.

    The file is written atomically: to a temporary file in the same directory, renamed over
    ``path`` (``os.replace``) only once complete. A failure part-way (an exception, Ctrl-C,
    SIGTERM) leaves any previous file intact and no partial file; the temporary of a writer killed
    outright (SIGKILL) is removed by the next save of the same path once it is certainly stale
    (its process is gone, or it is a day old), never while its writer runs. A path ending with a
    separator (``"x.nc/"``) is refused.

    Every numeric variable is written with HDF5's Fletcher-32 checksum (``compress=False`` too),
    and a SHA-256 of the whole file is appended after the HDF5 data (:func:`.files.append_checksum`;
    HDF5 readers ignore it), so :func:`load` refuses a damaged file instead of returning other
    values, before HDF5 parses a damaged byte.

    Attributes (of the root, the groups and the variables) that netCDF cannot store as they
    are -- bools, None, lists other than of two or more strings, tuples, dicts, arrays of other
    shapes or dtypes -- are written as JSON strings prefixed with ``"pmp-json:"``, which
    :func:`load` decodes: what ``save`` writes, ``load`` gives back with the same types
    (int64 / float64 scalars come back as Python int / float). Other readers see those
    strings. An attribute that cannot be written at all raises ``TypeError`` before anything
    is written.
    """
    _check_result(result)
    compress = boolean("compress", compress, owner="pmp.save")
    name = _path(path, "pmp.save")
    refuse_trailing_separator(name, "pmp.save")
    target = os.path.realpath(name)  # write through a symbolic link, not over it
    if os.path.isdir(target):
        raise IsADirectoryError(f"pmp.save: {name!r} is a directory")
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"pmp.save: the directory of {name!r} does not exist")
    if not group_names(result):
        raise ValueError("pmp.save: the result has no groups; there is nothing to save")
    encoded = _map_attrs(result, _encode_attr)
    remove_stale_temporaries(target)
    temporary = temporary_name(target)
    try:
        with removed_on_sigterm(temporary):
            _write(encoded, temporary, compress)
            append_checksum(temporary)
            if os.path.exists(target):
                shutil.copymode(target, temporary)
            os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise
    return name


def _write(result, path: str, compress: bool) -> None:
    """Write with h5netcdf, each variable encoded by :func:`_encoding`. InferenceData is written
    as ``InferenceData.to_netcdf`` does (root attributes, then one netCDF group per group), with
    the checksums its ``compress`` option cannot ask for."""
    if is_datatree(result):
        encoding = {node.path: enc for node in result.subtree
                    if (enc := _encoding(node.to_dataset(inherit=False), compress))}
        result.to_netcdf(path, mode="w", engine="h5netcdf", encoding=encoding or None)
        return
    mode = "w"
    if result.attrs:
        xr.Dataset(attrs=dict(result.attrs)).to_netcdf(path, mode=mode, engine="h5netcdf", group="/")
        mode = "a"
    for group in result.groups():
        data = result[group]
        data.to_netcdf(path, mode=mode, group=group, engine="h5netcdf", encoding=_encoding(data, compress))
        mode = "a"


def _encoding(ds: xr.Dataset, compress: bool) -> dict:
    """Per variable: Fletcher-32 checksums for arrays of numbers, bools and times (HDF5 cannot
    filter strings, and a scalar is not chunked), zlib when ``compress``."""
    out = {}
    for name, var in ds.variables.items():
        enc = {}
        if var.ndim >= 1 and var.dtype.kind in "biufmM":
            enc["fletcher32"] = True
        if compress and _compressible(var.dtype):
            enc["zlib"] = True
        if enc:
            out[name] = enc
    return out


def _compressible(dtype) -> bool:
    return np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.bool_)


_NOT_NETCDF4 = "is not a netCDF4/HDF5 file written by pmp.save or ArviZ"


def _layout(path: str, name: str):
    """(top-level group names, root variable names, names of groups holding groups) of a netCDF4 file."""
    import h5netcdf  # noqa: PLC0415

    try:
        with h5netcdf.File(path, "r") as f:
            groups = list(f.groups)
            return groups, list(f.variables), [g for g in groups if f.groups[g].groups]
    except Exception as err:  # h5py raises OSError, KeyError, ValueError, RuntimeError ... on damaged files
        raise ValueError(f"pmp.load: {name!r} {_NOT_NETCDF4} (truncated or damaged? {type(err).__name__}: "
                         f"{err})") from err


def load(path: str | os.PathLike):
    """Read a file written by :func:`save` (or by ArviZ/xarray) fully into memory.

    Returns the installed PyMC's result type: ``arviz.InferenceData`` on PyMC 5
    (``az.from_netcdf``), ``xarray.DataTree`` on PyMC 6 (``xarray.open_datatree``,
    which is what ArviZ 1.x's ``az.from_netcdf`` does); a file written under either line loads
    under both. Data are loaded eagerly and the file is closed, so it can be overwritten or
    deleted afterwards. Attributes :func:`save` wrote as JSON are decoded.

    Raises ``FileNotFoundError`` for a missing file, ``IsADirectoryError`` for a directory (or a
    path ending with a separator) and ``ValueError``, naming the path, for what is not a result:
    a named pipe, device or socket (refused before it is opened, since reading one may block
    forever), not netCDF4/HDF5 (truncated, damaged, or something else), damaged metadata or data
    (data :func:`save` wrote carry checksums), netCDF3 (which has no groups, so it cannot hold
    one), a netCDF4 file with no groups (a single dataset: use ``xarray.open_dataset``), or, on
    PyMC 5, a file with data InferenceData cannot hold (variables at the root, groups inside groups).
    """
    import h5py  # noqa: PLC0415

    name = _path(path, "pmp.load")
    refuse_trailing_separator(name, "pmp.load")
    if not os.path.exists(name):
        raise FileNotFoundError(f"pmp.load: no such file: {name!r}")
    if os.path.isdir(name):
        raise IsADirectoryError(f"pmp.load: {name!r} is a directory, not a netCDF4 file (a zarr store? "
                                "pmp.load reads the netCDF4 files pmp.save writes)")
    refuse_non_regular(name, "pmp.load")  # a FIFO would block the read below forever
    if verify_checksum(name) is False:  # before HDF5 parses anything: damaged metadata can make it loop
        raise ValueError(f"pmp.load: {name!r} is damaged: its bytes differ from what pmp.save wrote (the SHA-256 "
                         "it wrote at the end of the file does not match)")
    with open(name, "rb") as fh:
        head = fh.read(4)
    if head[:3] == b"CDF" and head[3:] in (b"\x01", b"\x02", b"\x05"):
        raise ValueError(f"pmp.load: {name!r} is a netCDF3 file. netCDF3 has no groups, so it holds a single "
                         "dataset, not a result (pmp.save and ArviZ write netCDF4 with one group per result "
                         "group); open it with xarray.open_dataset")
    if not h5py.is_hdf5(name):
        raise ValueError(f"pmp.load: {name!r} {_NOT_NETCDF4}{' (it is empty)' if not head else ''}")
    groups, root_vars, nested = _layout(name, name)
    if not groups:
        raise ValueError(f"pmp.load: {name!r} holds a single dataset (a netCDF4 file with no groups"
                         f"{'' if root_vars else ' and no variables'}), not a result with groups such as "
                         "'posterior'; open it with xarray.open_dataset")
    if not RESULT_IS_DATATREE and (root_vars or nested):
        what = [f"variables {root_vars} at the root"] if root_vars else []
        what += [f"groups inside the groups {nested}"] if nested else []
        raise ValueError(f"pmp.load: {name!r} holds {' and '.join(what)}, which arviz.InferenceData cannot hold "
                         "(it would drop them); read it with xarray.open_datatree")
    try:
        if RESULT_IS_DATATREE:
            with xr.open_datatree(name, engine="h5netcdf") as tree:
                result = tree.load()
        else:
            az = _arviz()
            with az.rc_context({"data.load": "eager"}):
                result = az.from_netcdf(name, engine="h5netcdf")
    except Exception as err:  # damaged data fail their checksum (OSError); damaged metadata raise anything
        raise ValueError(f"pmp.load: {name!r} is damaged: {type(err).__name__}: {err}") from err
    if not group_names(result):
        raise ValueError(f"pmp.load: {name!r} holds only empty groups {groups}")
    try:
        return _map_attrs(result, _decode_attr)
    except Exception as err:  # an attribute pmp.save wrote as JSON, damaged
        raise ValueError(f"pmp.load: {name!r} is damaged: an attribute cannot be decoded: {type(err).__name__}: "
                         f"{err}") from err


# ---------------------------------------------------------------------------------------
# PyTensor graph traversal
# ---------------------------------------------------------------------------------------
# ``ancestors`` moved to ``pytensor.graph.traversal``; importing it from
# ``pytensor.graph.basic`` warns on PyTensor 2.3x and may go away.
try:
    from pytensor.graph.traversal import ancestors
except ImportError:  # pragma: no cover - older PyTensor
    from pytensor.graph.basic import ancestors
