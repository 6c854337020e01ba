"""pymc_partitions: Bayesian clustering with partition priors for PyMC.

Partition priors (:class:`CRP`, :class:`PitmanYor`, :class:`FiniteDirichlet`), the
:class:`Partition` random variable, collapsed conjugate likelihoods (:class:`NormalNormal`,
:class:`NormalInverseWishart`, :class:`BetaBernoulli`, :class:`GammaPoisson` for counts,
:class:`DirichletCategorical` for categorical variables, :class:`NormalLinearRegression` for
clusters of regressions; a pointwise log-likelihood for
``az.loo``: :func:`pointwise_log_likelihood`, also filled in by ``pm.compute_log_likelihood``;
:func:`loo`, ``az.loo`` with items whose Pareto tail is a single value handled exactly)
and step methods for ``pm.sample``
(:class:`GibbsSplitMerge`, collapsed Gibbs sweeps with split-merge moves, assigned automatically;
:class:`CollapsedGibbs` alone; the split-merge moves :class:`PGSM`, :class:`SAMS` and
:class:`SplitMerge` (Jain-Neal) and the population step :class:`ARM` (adaptive reconfiguration
moves across chains) to interleave with Gibbs; :class:`EscobarWest` and
:class:`PriorSlice` for prior parameters; :class:`NonConjugateGibbs`, Neal's Algorithm 8, for any
PyMC likelihood whose cluster parameters are slots indexed by the partition, also assigned
automatically). Unbiased estimates from coupled chains: :func:`sample_unbiased`,
:func:`summarize_unbiased`, with functions of the partition in :mod:`pymc_partitions.h` (that is,
:mod:`pymc_partitions.coupling.functions`).
Centered W2 diagnostics: :func:`w2_convergence` (warns with :class:`W2ConvergenceWarning` when the
chains have not reached stationarity), :func:`plot_w2_convergence`, :func:`w2_bias`.
Results: :func:`posterior_dataset` (any group as an ``xarray.Dataset``, from PyMC 5's InferenceData
or PyMC 6's DataTree), :func:`label_invariant`, :func:`summary` and :func:`plot_trace` (ArviZ on
label-invariant quantities, not on arbitrary labels), :func:`slot_views` (label-invariant views of a
non-conjugate model's slot parameters), :func:`save`, :func:`load`, :func:`add_groups`.
Partition summaries (:mod:`pymc_partitions.summaries` for the algorithms): :func:`coclustering`,
:func:`point_estimate` (SALSO), :func:`credible_ball`, :func:`partition_traces`,
:func:`summarize_clustering` (the ``clustering`` group), and the plots :func:`plot_coclustering`,
:func:`plot_n_clusters`, :func:`plot_clustering`, :func:`plot_credible_ball`. Predictive:
:func:`predictive_density` (Rao-Blackwellised, with a band; :func:`plot_predictive_density`),
:func:`join_probabilities`, :func:`cluster_parameters`, :func:`sample_posterior_predictive` (and
``pm.sample_posterior_predictive`` itself draws collapsed likelihoods given the observed data).
"""

from . import _numba_cache  # noqa: F401  (first: numba cache stamps before any njit module is imported)
from . import datasets, partition
from .priors import CRP, FiniteDirichlet, PitmanYor
from .pymc.compat import add_groups, posterior_dataset
from .results.files import load, save
from .pymc.distributions import BetaBernoulli, BetaBernoulliNetwork, NormalInverseWishart, NormalNormal, Partition
from .pymc.distributions import DirichletCategorical, GammaPoisson, NormalLinearRegression
from .results.loo import loo, pointwise_log_likelihood
from .coupling import functions as h  # pmp.h: the functions of a partition for sample_unbiased
import sys as _sys

_sys.modules[f"{__name__}.h"] = h  # so that `from pymc_partitions.h import n_clusters` works too
from .coupling.unbiased import suggest_k_m
from .pymc.steps import PGSM, SAMS, CollapsedGibbs, EscobarWest, GibbsSplitMerge, PriorSlice, SplitMerge
from .pymc.steps import SubClusterSplitMerge
from .pymc.steps import register as _register
from .pymc.guards import install as _install_guards
from .pymc.numba_draws import register as _register_numba_draws
from .pymc.arm_step import ARM
from .pymc.nonconjugate import NonConjugateGibbs
from .diagnostics.convergence import W2ConvergenceWarning
from .results.diagnostics import plot_w2_convergence, w2_bias, w2_convergence
from .pymc.unbiased import sample_unbiased, summarize_unbiased
from .results.summaries import coclustering, credible_ball, partition_traces, point_estimate, summarize_clustering
from .results.predictive import cluster_parameters, join_probabilities, predictive_density, sample_posterior_predictive
from .results.invariants import label_invariant, plot_trace, summary
from .results.slots import slot_views
from .results.invariants import for_convergence_checks as _for_convergence_checks
from .results.plots import plot_clustering, plot_coclustering, plot_credible_ball, plot_n_clusters, plot_predictive_density
from . import summaries

from ._version import __version__

__all__ = [
    "CRP",
    "PitmanYor",
    "FiniteDirichlet",
    "Partition",
    "NormalNormal",
    "NormalInverseWishart",
    "BetaBernoulli",
    "BetaBernoulliNetwork",
    "GammaPoisson",
    "pointwise_log_likelihood",
    "loo",
    "DirichletCategorical",
    "NormalLinearRegression",
    "CollapsedGibbs",
    "GibbsSplitMerge",
    "SubClusterSplitMerge",
    "PGSM",
    "SAMS",
    "SplitMerge",
    "ARM",
    "NonConjugateGibbs",
    "EscobarWest",
    "PriorSlice",
    "add_groups",
    "posterior_dataset",
    "label_invariant",
    "summary",
    "slot_views",
    "plot_trace",
    "save",
    "load",
    "w2_convergence",
    "plot_w2_convergence",
    "w2_bias",
    "W2ConvergenceWarning",
    "sample_unbiased",
    "summarize_unbiased",
    "suggest_k_m",
    "coclustering",
    "point_estimate",
    "credible_ball",
    "partition_traces",
    "summarize_clustering",
    "plot_coclustering",
    "plot_n_clusters",
    "plot_clustering",
    "plot_credible_ball",
    "predictive_density",
    "join_probabilities",
    "cluster_parameters",
    "sample_posterior_predictive",
    "plot_predictive_density",
    "summaries",
    "h",
    "datasets",
    "partition",
]

_register()
_install_guards(convergence_view=_for_convergence_checks, pointwise_log_likelihood=pointwise_log_likelihood)
_register_numba_draws()
