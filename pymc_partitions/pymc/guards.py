"""Every wrapper of a PyMC internal, each installed once by :func:`install` (``import pymc_partitions``).

PyMC has no plug-in points for what a partition variable needs from ``pm.sample`` and its
neighbours: refusing a starting value before it is cast, judging convergence on label-invariant
quantities, ordering and marking the groups it builds, conditioning forward draws on the observed
data, refusing step methods and samplers that cannot move a partition. So each of those PyMC
functions is wrapped where PyMC looks it up at call time. Every wrapper:

* keeps PyMC's function as ``__wrapped__`` and is marked ``_pmp_guard`` (installing twice is a no-op);
* installs itself only if the function exists with the parameters it relies on, else returns False
  and leaves PyMC alone (a test below then fails, naming the PyMC change);
* passes models without a partition straight to PyMC.

What each wraps, and the test that fails if a PyMC release changes the wrapped function:

* :func:`guard_initvals`: ``pymc.initial_point.make_initial_point_expression``;
  tests/test_compat.py::test_guarded_pymc_functions_keep_their_signatures.
* :func:`guard_convergence_checks`: ``pymc.sampling.mcmc.run_convergence_checks``; the same, and
  tests/test_idioms.py::test_convergence_checks_judge_label_invariant_quantities.
* :func:`guard_variable_order`: ``posterior_to_xarray`` / ``priors_to_xarray`` of the trace
  converter in ``pymc.backends.arviz``; tests/test_idioms.py::test_variable_order_in_every_group_pymc_builds.
* :func:`guard_forward_sampling`: ``pymc.sampling.forward.compile_forward_sampling_function`` and
  ``sample_posterior_predictive``; tests/test_posterior_predictive.py::test_the_guard_is_idempotent
  and ::test_replicates_follow_the_exact_posterior_predictive.
* :func:`guard_step_assignment`, :func:`guard_smc`, :func:`guard_find_map`:
  ``pymc.sampling.mcmc.assign_step_methods``, ``pymc.smc.kernels.SMC_KERNEL.__init__``,
  ``pymc.tuning.starting.find_MAP``;
  tests/test_compat.py::test_the_entry_point_guards_are_in_place_and_fail_safe.
* :func:`guard_log_density`: ``pymc.stats.log_density.compute_log_density`` (behind
  ``pm.compute_log_likelihood``; its wrapper is marked ``_pmp_loo``); tests/test_compat.py::test_guarded_pymc_functions_keep_their_signatures.

The numbered differences they refer to are listed in :mod:`pymc_partitions.pymc.compat`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import json

import numpy as np
import pymc
import xarray as xr

from . import compat
from .compat import ancestors, group_names, is_datatree, is_inferencedata, posterior_dataset
from .distributions import CollapsedLikelihoodRV, invariant_names, is_partition
from .nonconjugate import add_nonconjugate_steps, nonconjugate_likelihoods, slot_variables
from .steps import check_find_map, check_partition_steps, refuse_partition, warn_unread_partitions

__all__ = [
    "install",
    "guard_initvals",
    "guard_forward_sampling",
    "guard_convergence_checks",
    "guard_variable_order",
    "guard_step_assignment",
    "guard_smc",
    "guard_find_map",
    "guard_log_density",
    "order_variables",
    "record_partitions",
    "PARTITIONS_ATTR",
    "SLOTS_ATTR",
]

#: The label-invariant view ``pm.sample``'s convergence checks see (``(idata, model) -> idata or
#: None``), given by the results side (:func:`~pymc_partitions.results.invariants.for_convergence_checks`)
#: through :func:`install`; None: the checks see the result as it is.
_CONVERGENCE_VIEW = [None]

#: The pointwise log-likelihood of collapsed likelihoods (``(result, model, var_names=) -> Dataset``),
#: given by the results side (:func:`~pymc_partitions.results.loo.pointwise_log_likelihood`) through
#: :func:`install`; None: ``pm.compute_log_likelihood`` is PyMC's own.
_POINTWISE = [None]


def install(convergence_view=None, pointwise_log_likelihood=None) -> None:
    """Install every guard (idempotent). ``convergence_view``: what ``pm.sample``'s convergence
    checks see instead of the result (the results side's label-invariant view);
    ``pointwise_log_likelihood``: what ``pm.compute_log_likelihood`` gives for collapsed
    likelihoods. The package passes both, so that this model-side module imports nothing of the
    results side."""
    guard_log_density(pointwise_log_likelihood)
    guard_initvals()
    guard_forward_sampling()
    guard_convergence_checks(convergence_view)
    guard_variable_order()
    guard_step_assignment()
    guard_smc()
    guard_find_map()


#: Attribute of the ``posterior`` (and ``warmup_posterior``, ``prior``) group naming the model's
#: partition variables in it, as a JSON list (a string, which every netCDF writer stores as it is),
#: e.g. ``'["z"]'``; ``'[]'`` where the labels were taken out (:func:`~pymc_partitions.label_invariant`).
#: Written by :func:`record_partitions` at sampling time, read by
#: :func:`~pymc_partitions.results.reader.recorded_partitions` only.
PARTITIONS_ATTR = "pmp_partitions"


#: Attribute of the same groups naming, per partition with non-conjugate likelihoods, its slot
#: variables in the group, as a JSON object (e.g. ``'{"z": ["mu", "sigma"]}'``): the variables whose
#: labels switch with the partition's, summarised through label-invariant views
#: (:mod:`pymc_partitions.results.slots`). Written by :func:`record_partitions`.
SLOTS_ATTR = "pmp_slots"


def record_partitions(ds: xr.Dataset, model) -> xr.Dataset:
    """``ds`` (a group PyMC converted from the trace of ``model``) with :data:`PARTITIONS_ATTR`
    naming its ``pmp.Partition`` variables (and :data:`SLOTS_ATTR` their slot variables, if any),
    so that a result says by itself which of its variables are partitions and slots (saved,
    reloaded, without the model); ``ds`` as it is when it holds none."""
    if not isinstance(ds, xr.Dataset) or model is None:
        return ds
    parts = [rv for rv in getattr(model, "free_RVs", ()) if is_partition(rv) and rv.name in ds.data_vars]
    if not parts:
        return ds
    ds = ds.copy(deep=False)
    ds.attrs[PARTITIONS_ATTR] = json.dumps([rv.name for rv in parts])
    slots = {rv.name: [v.name for v in slot_variables(model, rv) if v.name in ds.data_vars] for rv in parts}
    slots = {p: names for p, names in slots.items() if names}
    if slots:
        ds.attrs[SLOTS_ATTR] = json.dumps(slots)
    return ds


def guard_initvals() -> None:
    """Let random-variable ops check starting values before PyMC casts them, and turn their own
    named starts into PyMC's (a Partition's ``"dispersed"``, ``"one_block"``, ...; difference 6).

    Idempotent. ``pymc.initial_point.make_initial_point_fn`` looks the wrapped function up in
    its module at call time, so ``pm.sample``, ``model.initial_point()`` and
    ``pm.sample(initvals=...)`` all pass through it.
    """
    import pymc.initial_point as initial_point  # noqa: PLC0415

    original = getattr(initial_point, "make_initial_point_expression", None)
    if original is None or getattr(original, "_pmp_guard", False):  # a PyMC without it: the steps still check
        return

    def make_initial_point_expression(*args, initval_strategies=None, **kwargs):
        strategies = dict(initval_strategies or {})
        for rv, strategy in strategies.items():
            check = getattr(getattr(rv.owner, "op", None), "check_initval", None)
            if check is not None:
                strategies[rv] = check(rv, strategy)
        return original(*args, initval_strategies=strategies if initval_strategies is not None else None, **kwargs)

    make_initial_point_expression._pmp_guard = True
    make_initial_point_expression.__wrapped__ = original
    initial_point.make_initial_point_expression = make_initial_point_expression


def guard_convergence_checks(view=None) -> bool:
    """Judge partitions on label-invariant quantities in ``pm.sample``'s convergence checks
    (difference 8). Idempotent; returns whether the hook is in place.

    ``pm.sample`` (``pymc/sampling/mcmc.py``, both lines) calls ``run_convergence_checks(idata,
    model)``, imported into that module, on every free variable: for a partition that means R-hat
    and ESS of each item's label, which label switching makes meaningless (and the first label,
    always 0, gives NaN and a numpy ``RuntimeWarning``). The wrapper passes it a copy of the result
    in which each partition's labels are replaced by their label-invariant quantities
    (``view``, kept for later calls: the results side's
    :func:`~pymc_partitions.results.invariants.for_convergence_checks`: number of clusters, largest
    share, log joint; a non-conjugate partition's slot variables replaced by their largest cluster's
    parameter), so its R-hat / ESS warnings are about those. Models without partitions are
    checked exactly as before; ``compute_convergence_checks=False`` still skips the checks.
    """
    import pymc.sampling.mcmc as mcmc  # noqa: PLC0415
    import pymc.stats.convergence as convergence  # noqa: PLC0415

    if view is not None:
        _CONVERGENCE_VIEW[0] = view
    original = getattr(mcmc, "run_convergence_checks", None)
    if original is None:  # a PyMC that checks differently: its warnings stay as they are
        return False
    if getattr(original, "_pmp_guard", False):
        return True

    def run_convergence_checks(idata, model):
        view = _CONVERGENCE_VIEW[0]
        checked = idata if view is None else view(idata, model)
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


_GUARDED = "already guarded"


def _signature_to_wrap(original):
    """The signature of PyMC's function ``original`` when a guard can wrap it; ``_GUARDED`` when it
    is a guard already (installing twice is a no-op); ``None`` when it is missing or cannot be
    introspected (the guard then stays out, and the steps' own checks remain)."""
    if original is None:
        return None
    if getattr(original, "_pmp_guard", False):
        return _GUARDED
    try:
        return inspect.signature(original)
    except (TypeError, ValueError):
        return None


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
    packages on a partition, and a partition given to two steps of one class), then calls PyMC;
    :func:`~pymc_partitions.pymc.steps.warn_unread_partitions` warns first of a partition no likelihood reads.
    Models without a partition, and ``step=None``, go straight to PyMC. A partition with
    non-conjugate likelihoods (slot parameters indexed by it) that no given step covers gets a
    :class:`~pymc_partitions.pymc.nonconjugate.NonConjugateGibbs` blocked over it and its slots
    (competence cannot block variables together), added to the given steps.
    """
    import pymc.sampling.mcmc as mcmc  # noqa: PLC0415

    original = getattr(mcmc, "assign_step_methods", None)
    signature = _signature_to_wrap(original)
    if not isinstance(signature, inspect.Signature):
        return signature is _GUARDED
    if list(signature.parameters)[:2] != ["model", "step"]:
        return False

    def assign_step_methods(*args, **kwargs):
        bound = _bind(signature, args, kwargs)
        if bound is None:
            return original(*args, **kwargs)
        model, step = bound.arguments["model"], bound.arguments.get("step")
        warn_unread_partitions(model)
        if step is not None:
            check_partition_steps(model, step)
        bound.arguments["step"] = add_nonconjugate_steps(model, step)
        return original(*bound.args, **bound.kwargs)

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
    signature = _signature_to_wrap(original)
    if not isinstance(signature, inspect.Signature):
        return signature is _GUARDED
    if "model" not in signature.parameters:
        return False

    def __init__(*args, **kwargs):
        bound = _bind(signature, args, kwargs)
        if bound is not None:
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
    signature = _signature_to_wrap(original)
    if not isinstance(signature, inspect.Signature):
        return signature is _GUARDED
    params = signature.parameters
    start_name = "start" if "start" in params else "initvals" if "initvals" in params else None  # PyMC 5 / 6
    if start_name is None or not {"vars", "model"} <= set(params):
        return False
    extra = next((name for name, p in params.items() if p.kind is p.VAR_KEYWORD), None)

    def find_MAP(*args, **kwargs):  # noqa: N802 - PyMC's name
        bound = _bind(signature, args, kwargs)
        if bound is not None:
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


def guard_forward_sampling() -> bool:
    """Make ``pm.sample_posterior_predictive`` draw collapsed likelihoods correctly (difference 7).

    Wraps ``pymc.sampling.forward.compile_forward_sampling_function`` (and its re-export in
    ``pymc.sampling``). In the graph it is asked to compile, every variable ``rv`` whose op has
    ``posterior_replicate(rv)`` and ``partition_input(rv)`` (the collapsed likelihoods) and whose
    partition is among ``vars_in_trace`` is replaced by ``op.posterior_replicate(rv, data, hyper)``:
    cluster parameters drawn from their conditional posterior given the labels and the observed data.
    Every variable computed from a known partition (``observed=labels``) is drawn given those labels
    (:func:`_known_partitions`), a collapsed likelihood of it replaced likewise; PyMC would redraw the
    partition from its prior and the replicates with it. (The partition's own replicate stays PyMC's.)
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
        return compat._FORWARD_STATE["guarded"]
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
    compat._FORWARD_STATE["guarded"] = True
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
        observed = _OBSERVED_AT_SAMPLING.get()
        known = _known_partitions(outputs, observed) if in_trace else {}  # (the prior predictive: untouched)
        if known:  # every variable computed from a known partition: given its labels, not a redrawn partition
            from pytensor.tensor.random.op import RandomVariable  # noqa: PLC0415

            dependent = sorted(v.name for v in in_trace if v.owner is not None and isinstance(v.owner.op, RandomVariable)
                               and any(k in known for k in ancestors([v]) if k is not v))
            if dependent:  # (Deterministics of it are recomputed from its replicate, as PyMC does)
                raise NotImplementedError(
                    f"pm.sample_posterior_predictive: {dependent} depend on the known partition(s) "
                    f"{sorted(v.name for v in known)}, which PyMC redraws from the prior, so it would redraw them too "
                    "instead of reading their posterior draws. Make the labels data (pm.Data) and index with them.")
            outputs = [o if o in known else r for o, r in zip(outputs, _replace_downstream(
                outputs, known, redraw_random=True))]
            bound.arguments["outputs"] = outputs
        labels = {id(v) for v in known.values()}
        given = [rv for rv in _replaceable(outputs)
                 if rv.owner.op.partition_input(rv) in in_trace or id(rv.owner.op.partition_input(rv)) in labels]
        if not given:
            return original(*bound.args, **bound.kwargs)
        fitted = {rv: _fitted_inputs(rv, observed, bound.arguments.get("constant_data") or {}) for rv in given}
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


def _known_partitions(outputs, observed) -> dict:
    """{partition: its labels} for the observed partitions (``observed=labels``: known partitions)
    among the ancestors of ``outputs``, their labels as recorded in the result's ``observed_data``
    when it holds them. PyMC would redraw such a partition from its prior and everything computed
    from it with it: replicates of data given some other partition."""
    import pytensor.tensor as pt  # noqa: PLC0415

    known = {}
    for var in ancestors(outputs):
        labels = getattr(var.tag, "observations", None) if is_partition(var) else None
        if labels is None:
            continue
        if observed is not None and var.name in observed.data_vars:
            labels = pt.constant(np.asarray(observed[var.name].values, dtype=np.int64))
        known[var] = labels
    return known


def _replaceable(outputs):
    """The collapsed likelihoods among the ancestors of ``outputs`` (variables whose op can replace them)."""
    return [v for v in ancestors(outputs) if v.owner is not None and hasattr(v.owner.op, "posterior_replicate")
            and hasattr(v.owner.op, "partition_input") and v is v.owner.outputs[1]]


def _replace_downstream(outputs, replacements, *, keep_random=False, redraw_random=False):
    """``outputs`` with ``replacements`` applied, cloning only the nodes between them (the rest of
    the graph, trace variables included, keeps its identity). A random variable downstream of a
    replacement is refused, or with ``keep_random`` kept as it is (its value comes from the trace),
    or with ``redraw_random`` cloned too (drawn anew from the replaced inputs)."""
    from pytensor.graph.traversal import toposort  # noqa: PLC0415
    from pytensor.tensor.random.op import RandomVariable  # noqa: PLC0415

    memo = dict(replacements)
    for node in toposort(outputs):
        if not any(i in memo for i in node.inputs):
            continue
        if isinstance(node.op, RandomVariable) and not redraw_random:
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


@contextlib.contextmanager
def _default_partition_initvals(model):
    """PyMC cannot clone a model with starting values (``fgraph_from_model``); a Partition's value
    only matters for sampling, so it is set aside while PyMC computes the other variables."""
    saved = {rv: v for rv, v in model.rvs_to_initial_values.items() if is_partition(rv) and v is not None}
    for rv in saved:
        model.rvs_to_initial_values[rv] = None
    try:
        yield
    finally:
        model.rvs_to_initial_values.update(saved)


def _log_density_wrapper(original):
    signature = inspect.signature(original)

    def compute_log_density(*args, **kwargs):
        import pymc as pm  # noqa: PLC0415

        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arg = bound.arguments
        model = pm.modelcontext(arg.get("model"))
        collapsed = [rv.name for rv in model.observed_RVs if isinstance(rv.owner.op, CollapsedLikelihoodRV)]
        for part in model.free_RVs:  # a partition's non-conjugate likelihoods: its cluster integrated out too
            if is_partition(part):
                collapsed.extend(o.name for o in nonconjugate_likelihoods(model, part))
        has_partition = any(is_partition(rv) for rv in model.free_RVs + model.observed_RVs)  # known ones too
        if not has_partition or _POINTWISE[0] is None:
            return original(*bound.args, **bound.kwargs)
        if arg.get("kind", "likelihood") != "likelihood" or not collapsed:
            with _default_partition_initvals(model):
                return original(*bound.args, **bound.kwargs)
        names = arg.get("var_names")
        names = [rv.name for rv in model.observed_RVs] if names is None else list(names)
        ours = [v for v in names if v in collapsed]
        rest = [v for v in names if v not in collapsed]
        if tuple(arg.get("sample_dims", ("chain", "draw"))) != ("chain", "draw"):
            raise NotImplementedError("collapsed likelihoods: the pointwise log-likelihood needs sample_dims "
                                      "('chain', 'draw')")
        idata = arg["idata"]
        extend = arg.get("extend_inferencedata", True)
        parts = []
        if rest:
            arg["var_names"] = rest
            arg["extend_inferencedata"] = False
            with _default_partition_initvals(model):
                parts.append(original(*bound.args, **bound.kwargs))
        if ours:
            parts.append(_POINTWISE[0](idata, model, var_names=ours))
        ds = xr.merge(parts, combine_attrs="drop_conflicts") if len(parts) > 1 else parts[0]
        if not extend:
            return ds
        if is_datatree(idata):
            idata["log_likelihood"] = ds
        else:
            idata.add_groups({"log_likelihood": ds})
        return idata

    compute_log_density._pmp_loo = True
    compute_log_density.__wrapped__ = original
    compute_log_density.__doc__ = original.__doc__
    return compute_log_density


def guard_log_density(pointwise=None) -> bool:
    """Wrap ``pymc.stats.log_density.compute_log_density`` (which ``pm.compute_log_likelihood`` and
    ``pm.sample``'s ``idata_kwargs={"log_likelihood": True}`` call) so that models with a
    Partition work and collapsed likelihoods (and a partition's non-conjugate likelihoods,
    its cluster integrated out) get their pointwise log-likelihood (``pointwise``,
    kept for later calls: the results side's
    :func:`~pymc_partitions.results.loo.pointwise_log_likelihood`). PyMC has no hook for a
    likelihood whose log density is not elementwise (a collapsed likelihood couples its items).
    Models without a partition go straight to PyMC. Idempotent; returns whether the wrapper is in
    place (False if PyMC's function moved or changed its parameters: then
    ``pm.compute_log_likelihood`` behaves as PyMC's own, and ``pmp.pointwise_log_likelihood``
    remains available).
    """
    if pointwise is not None:
        _POINTWISE[0] = pointwise
    try:
        import pymc.stats.log_density as log_density  # noqa: PLC0415
    except ImportError:
        return False
    original = getattr(log_density, "compute_log_density", None)
    if original is None:
        return False
    if getattr(original, "_pmp_loo", False):
        return True
    params = inspect.signature(original).parameters
    if not {"idata", "var_names", "extend_inferencedata", "model", "kind", "sample_dims"} <= set(params):
        return False
    log_density.compute_log_density = _log_density_wrapper(original)
    return True
