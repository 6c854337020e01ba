"""Every difference between PyMC 5 / ArviZ 0.x and PyMC 6 / ArviZ 1.x, listed in one place.

This module holds the versions, the step-method protocol and the result containers of both lines
(the model side builds results too: ``pm.sample``'s converter, ``pmp.sample_unbiased``). The
wrappers of PyMC internals (differences 6-12) are in :mod:`pymc_partitions.pymc.guards`, saving
and loading (5) in :mod:`pymc_partitions.results.files`, the summary display (14) in
:mod:`pymc_partitions.results.invariants`.

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
   and clear errors for files that are not results. See :func:`pymc_partitions.save`, :func:`pymc_partitions.load`.
6. Starting values. ``pm.sample(initvals=...)`` turns a value into the variable's dtype with
   ``pt.as_tensor(value).astype(dtype)`` in ``pymc.initial_point.make_initial_point_expression``
   (same keyword-only signature in both lines), so labels ``0.5`` silently become ``0``.
   :func:`~.guards.guard_initvals` wraps that function so that an op with a ``check_initval(rv, value)``
   method sees the value first.
7. Forward sampling. ``pm.sample_posterior_predictive`` and ``pm.sample_prior_predictive`` both
   compile their draws with ``pymc.sampling.forward.compile_forward_sampling_function(outputs,
   vars_in_trace, basic_rvs=..., ...)``, looked up in that module at call time; the posterior
   predictive passes the trace's variables as ``vars_in_trace``, the prior predictive ``[]``. The
   other keywords differ: PyMC 5 has ``givens_dict``, ``constant_data`` keyed by *name* (the
   values of ``pm.Data`` at sampling time, from the result's ``constant_data`` group) and
   ``constant_coords``; PyMC 6 has ``constant_data`` keyed by *variable*, ``volatile_vars``,
   ``freeze_vars`` and ``model``. Both return ``(function, basic RVs drawn anew)``. PyMC offers no
   hook to condition a forward draw on observed data, so :func:`~.guards.guard_forward_sampling` wraps that
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
   posterior, the labels of a partition included. :func:`~.guards.guard_convergence_checks` wraps it so
   that partitions are judged on label-invariant quantities instead.
9. Variable order. Both lines build the ``posterior`` (and ``warmup_posterior``) group in
   ``posterior_to_xarray`` of the converter in ``pymc.backends.arviz``
   (``InferenceDataConverter`` in PyMC 5, a tuple of Datasets; ``DataTreeConverter`` in PyMC 6,
   a dict of them), and the ``prior`` group in its ``priors_to_xarray``, in the order of the
   trace's variable names (the labels first when the partition is the first random variable).
   :func:`~.guards.guard_variable_order` wraps both so that each partition's label-invariant
   Deterministics come first and its labels last: plain ``az.summary(result)`` then starts with
   them; and so that each of those groups records which of its variables are partitions
   (:func:`~pymc_partitions.pymc.guards.record_partitions`: the attribute ``pmp_partitions``),
   which lets every summary work on the result without the model, saved and reloaded.
   (``pm.sample(trace=ZarrTrace(...))`` in PyMC 6 converts elsewhere: it keeps its order and
   records nothing, and the summaries fall back on the model or the draws.)
10. Steps given to ``pm.sample``. Both lines call ``assign_step_methods(model, step, methods)`` of
   ``pymc.sampling.mcmc`` with the user's steps; PyMC asks ``competence`` only for the variables
   left over, so nothing stops ``pm.Metropolis([z])``. :func:`~.guards.guard_step_assignment` wraps it.
11. SMC. ``pm.sample_smc`` builds its kernel (a subclass of ``pymc.smc.kernels.SMC_KERNEL``, same
   ``__init__`` signature in both lines) in the calling process; :func:`~.guards.guard_smc` wraps
   ``SMC_KERNEL.__init__`` so that models with a partition are refused.
12. ``pm.find_MAP`` (``pymc.tuning.starting``) keeps non-optimised variables at their start,
   ``start=`` in PyMC 5 and ``initvals=`` in PyMC 6 (which rewrote it); :func:`~.guards.guard_find_map` wraps it. ``pm.fit`` needs no wrapper (its
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
   shows as 0). :func:`~pymc_partitions.results.invariants.readable_summary` gives the bounds the
   precision of the row's sd and constants their value. ArviZ 0.x rounds every number to ``round_to=2`` decimals: nothing to do.

Every wrapper keeps PyMC's function as ``__wrapped__`` and is marked ``_pmp_guard``; each installs
itself only if the function it wraps exists with the parameters it relies on (else it returns False
and a test named in :mod:`~pymc_partitions.pymc.guards` fails), and models without a partition pass
straight through.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Mapping
from typing import Any

import pymc
import xarray as xr
from pymc.step_methods import STEP_METHODS, BlockedStep, CompoundStep
from pymc.step_methods.compound import Competence
from pymc.util import get_random_generator

from .._checks import boolean

__all__ = [
    "PYMC_MAJOR",
    "ARVIZ_MAJOR",
    "RESULT_IS_DATATREE",
    "RNG_PROTOCOL",
    "BlockedStep",
    "CompoundStep",
    "Competence",
    "STEP_METHODS",
    "forward_sampling_guarded",
    "FORWARD_GUARD_MISSING",
    "ancestors",
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


#: The keywords PyMC passes to a step class it instantiates itself (``instantiate_steppers``, PyMC 5 and 6).
PYMC_STEP_KEYWORDS = frozenset({"initial_point", "compile_kwargs"})


def step_keywords(owner: str, kwargs: dict) -> None:
    """Refuse keywords a step's ``__init__`` took in ``**kwargs`` that are not PyMC's own (a misspelt
    argument, ``slot_step=0``, would otherwise be dropped without a word)."""
    unknown = sorted(set(kwargs) - PYMC_STEP_KEYWORDS)
    if unknown:
        raise TypeError(f"{owner} got unexpected keyword argument(s) {unknown}")


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



#: Why forward draws of collapsed likelihoods are refused when :func:`~.guards.guard_forward_sampling` could
#: not install itself.
FORWARD_GUARD_MISSING = (
    f"pymc_partitions could not hook PyMC {pymc.__version__}'s forward sampling "
    "(pymc.sampling.forward.compile_forward_sampling_function), so it cannot tell a prior predictive draw of a "
    "collapsed likelihood from a posterior predictive one, which must use the observed data: forward draws are "
    "refused. For replicated data use pmp.sample_posterior_predictive(result, model)."
)
_FORWARD_STATE = {"guarded": False}


def forward_sampling_guarded() -> bool:
    """True once :func:`~.guards.guard_forward_sampling` has wrapped PyMC's forward-sampling compiler."""
    return _FORWARD_STATE["guarded"]

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


# ---------------------------------------------------------------------------------------
# PyTensor graph traversal
# ---------------------------------------------------------------------------------------
# ``ancestors`` moved to ``pytensor.graph.traversal``; importing it from
# ``pytensor.graph.basic`` warns on PyTensor 2.3x and may go away.
try:
    from pytensor.graph.traversal import ancestors
except ImportError:  # pragma: no cover - older PyTensor
    from pytensor.graph.basic import ancestors
