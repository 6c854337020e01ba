"""Step methods for ``pm.sample``: collapsed Gibbs, PGSM, SAMS and Jain-Neal split-merge on a
Partition, and prior-parameter updates (ARM, a population step, is in :mod:`.arm_step`).

The steps are thin: they read the labels and the current hyperparameter values from the point,
call a compiled kernel from :mod:`pymc_partitions.samplers`, and write the labels back.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pymc as pm

from .. import _checks
from .._numeric import draw_seed, keyed_sweep_numbers
from ..priors import PITMAN_YOR, log_eppf_sizes, valid_parameters
from ..samplers.concentration import escobar_west_log
from ..families.kernels import has_network
from ..samplers.gibbs import check_prior, gibbs_sweeps
from ..samplers.gibbs_sams import GibbsSAMSKernel
from ..samplers.gibbs_sams import _run as gibbs_sams_run
from ..samplers.jain_neal import JainNealKernel
from ..samplers.pgsm import PGSMKernel
from ..samplers.sams import SAMSKernel
from ..samplers.subclusters import GibbsSubClusterKernel
from ..samplers.subclusters import _run as gibbs_subcluster_run
from ..samplers.tuning import sweeps_for
from .compat import STEP_METHODS, BlockedStep, ChainSetupMixin, Competence, ancestors, step_keywords
from .distributions import constant_value, is_partition, prior_parameter_model
from .nonconjugate import NonConjugateGibbs
from .terms import PartitionTerms, _resolve_rv
from .typed_call import TypedCall

__all__ = ["CollapsedGibbs", "GibbsSplitMerge", "SubClusterSplitMerge", "PGSM", "SAMS", "SplitMerge", "EscobarWest", "PriorSlice",
           "register"]


class _PartitionStep(ChainSetupMixin, BlockedStep):
    """What every step on one Partition shares: finding it, reading and writing its labels."""

    default_blocked = False

    def __init__(self, vars, model, rng):
        model = pm.modelcontext(model)
        if vars is None:
            vars = [v for v in model.free_RVs if is_partition(v)]
        vars = list(vars) if isinstance(vars, (list, tuple)) else [vars]
        if len(vars) != 1:
            raise ValueError(f"{type(self).__name__} updates one partition per step, got {len(vars)} variables")
        self.terms = PartitionTerms(model, vars[0])
        self.vars = [model.rvs_to_values[_resolve_rv(model, vars[0])]]
        self.rng = np.random.default_rng(rng)

    def _need_two_items(self):
        """Refuse a partition of one item for a move that picks two (split-merge, ARM)."""
        if self.terms.n < 2:
            raise ValueError(f"{type(self).__name__}: the partition {self.terms.name!r} has {self.terms.n} item, too few "
                             "for its moves, which pick two items (with one item there is one partition: nothing to "
                             "sample)")

    def _inputs(self, point):
        """(labels, prior params, FamilyPack) at ``point``."""
        prior_params, pack = self.terms.kernel_inputs(point)
        self.terms.check_prior_params(prior_params)
        return self.terms.labels(point), prior_params, pack

    def _with_labels(self, point, labels):
        point = dict(point)
        point[self.terms.value_name] = labels.astype(self.terms.dtype, copy=False)
        return point

    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE


class CollapsedGibbs(_PartitionStep):
    """Collapsed Gibbs sampler for a ``pmp.Partition`` variable (Neal 2000, Algorithm 3).

    Each draw is ``sweeps`` full random-scan sweeps: every item is removed from its block and
    reassigned given all others, with the cluster parameters integrated out, in one compiled
    loop. Hyperparameters (alpha, likelihood parameters) are read from the current point, so
    other steps (NUTS, Slice, :class:`EscobarWest`) may update them in the same ``pm.sample``.

    ``pm.sample`` assigns this step automatically to every Partition variable.

    Parameters
    ----------
    vars : list
        The Partition variable(s); one step is made per partition.
    sweeps : int, default 1
        Gibbs sweeps per draw.

    Sampler statistics: ``n_clusters`` (label-invariant) and ``log_joint`` (log prior of the
    partition + collapsed log likelihood, at the hyperparameter values used in the draw).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(5), np.ones(5) * 6.0]
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=10)
    ...     obs = pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=1.0, observed=y)
    ...     idata = pm.sample(draws=50, tune=10, chains=1, step=pmp.CollapsedGibbs([z]),
    ...                       progressbar=False, compute_convergence_checks=False, random_seed=1)
    """

    name = "collapsed_gibbs"
    stats_dtypes_shapes = {"n_clusters": (np.int64, []), "log_joint": (np.float64, [])}

    def __init__(self, vars=None, model=None, sweeps=1, rng=None, blocked=None, **kwargs):
        step_keywords(type(self).__name__, kwargs)
        self.sweeps = _checks.integer("sweeps", sweeps, low=1, owner="CollapsedGibbs")
        super().__init__(vars, model, rng)
        self._compile_now(pm.modelcontext(model), kwargs.get("initial_point"))

    def _compile_now(self, model, initial_point):
        """Compile the sweep (or load it from numba's cache) here, in the process that builds the
        step. With ``cores > 1`` PyMC's worker processes then inherit it (fork) or load it from the
        cache (spawn, forkserver) instead of each compiling it from scratch on a cold cache (tens
        of CPU seconds each). Errors are left to the first draw, which reports them as before."""
        try:
            point = initial_point if initial_point is not None else model.initial_point()
            labels, prior_params, pack = self._inputs(point)
            none = np.zeros((0, 0), np.int64)
            gibbs_sweeps(labels, pack, self.terms.prior_code, prior_params, none, none.astype(np.float64))
        except Exception:  # noqa: BLE001 - only a warm-up
            pass

    def step(self, point):
        labels, prior_params, pack = self._inputs(point)
        orders, uniforms, _, _ = keyed_sweep_numbers(self.terms.n, self.sweeps, 0, draw_seed(self.rng))
        new, lj = gibbs_sweeps(labels, pack, self.terms.prior_code, prior_params, orders, uniforms)
        return self._with_labels(point, new), [{"n_clusters": int(new.max()) + 1, "log_joint": float(lj)}]

    @staticmethod
    def competence(var, has_grad):
        """COMPATIBLE for partitions: :class:`GibbsSplitMerge` (IDEAL) is what ``pm.sample`` assigns."""
        return Competence.COMPATIBLE if is_partition(var) else Competence.INCOMPATIBLE


def _split_merge_moves(kernel, labels, moves, rng, prefix):
    """``moves`` split-merge proposals of ``kernel``; (labels, the ``<prefix>_*`` statistics of the draw)."""
    stats = {f"{prefix}_splits": 0, f"{prefix}_merges": 0, f"{prefix}_proposed_splits": 0}
    for _ in range(moves):
        labels, info = kernel.step(labels, rng)
        split = info["move"] == "split"
        stats[f"{prefix}_proposed_splits"] += split
        stats[f"{prefix}_splits"] += split and info["accepted"]
        stats[f"{prefix}_merges"] += (not split) and info["accepted"]
    stats[f"{prefix}_log_ratio"] = info["log_ratio"]
    return labels, stats


def _check_moves(step_name, moves):
    return _checks.integer("moves", moves, low=1, owner=step_name)


class PGSM(_PartitionStep):
    """Particle Gibbs Split-Merge moves on a ``pmp.Partition`` (Bouchard-Côté, Doucet & Roth 2017).

    A move picks anchors, takes the blocks that hold them (the *closure*), and redraws the
    clustering of the closure with a conditional SMC whose reference path is the current one: it
    can split a block, merge blocks or reallocate their items in one move, which a Gibbs sweep
    (one item at a time) may take forever to do when clusters are large or well separated. The
    move is exact for any number of particles. Interleave it with Gibbs sweeps, as the paper
    recommends: ``step=[pmp.CollapsedGibbs([z]), pmp.PGSM([z])]``.

    Parameters
    ----------
    vars : list
        The Partition variable.
    num_particles : int, default 20
    resample_threshold : float, default 0.5
        Resample (conditional multinomial) when the relative ESS falls below it.
    num_anchors : int, default 2
        More anchors (App. D) let one move merge and split at once, e.g. for finite-Dirichlet priors.
    anchor_proposal : {"uniform", "cluster", "threshold"}, default "uniform"
        How anchors are drawn (Sec. 4.3, App. F). The informed proposals score a reference
        clustering, rebuilt when the number of clusters breaks its record *during tuning* only
        (at most ``adapt_iterations`` draws); from the first kept draw on they are frozen, and
        the chain is exact. With ``tune=0`` the reference is the initial state.
    annealed : bool, default True
        Annealed intermediate targets (Sec. 3.4), which keep the SMC from merging greedily.
    moves : int, default 1
        PGSM moves per draw.
    adapt_iterations : int, optional
        Cap on the adaptation draws (default: the whole tuning phase).

    Sampler statistics (per draw, summed over its moves unless said): ``pgsm_splits``,
    ``pgsm_merges``, ``pgsm_changes`` (moves that changed the partition; a change that is
    neither a split nor a merge reallocates items), ``pgsm_resamplings``; of the last move:
    ``pgsm_closure_size``, ``pgsm_size_before_j`` / ``pgsm_size_after_j`` for j < ``num_anchors``
    (restricted block sizes, blocks ranked by their first anchor; 0 where there are fewer
    blocks), ``pgsm_ess`` (final relative ESS),
    ``pgsm_early_exit`` (all particles merged).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(20), np.ones(20) * 8.0] + np.random.default_rng(0).normal(size=40)
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=40)
    ...     obs = pmp.NormalNormal("y", partition=z, mu0=4.0, sigma0=5.0, sigma=1.0, observed=y)
    ...     idata = pm.sample(draws=50, tune=10, chains=1, step=[pmp.CollapsedGibbs([z]), pmp.PGSM([z])],
    ...                       initvals={"z": np.zeros(40, int)}, progressbar=False,
    ...                       compute_convergence_checks=False, random_seed=1)
    >>> int(idata.sample_stats["pgsm_splits"].sum()) >= 1  # the one initial block was split
    True
    """

    name = "pgsm"

    def __init__(self, vars=None, model=None, num_particles=20, resample_threshold=0.5, num_anchors=2,
                 anchor_proposal="uniform", annealed=True, moves=1, adapt_iterations=None, threshold=0.01, rng=None,
                 blocked=None, **kwargs):
        step_keywords(type(self).__name__, kwargs)
        super().__init__(vars, model, rng)
        self._need_two_items()
        self.moves = _check_moves("PGSM", moves)
        self.adapt_iterations = 2**62 if adapt_iterations is None else _checks.integer(
            "adapt_iterations", adapt_iterations, low=0, owner="PGSM")
        _checks.integer("num_anchors", num_anchors, low=2, high=self.terms.n, owner=f"PGSM on {self.terms.name!r} "
                        f"(n={self.terms.n})")
        self.settings = dict(num_particles=num_particles, resample_threshold=resample_threshold,
                             num_anchors=num_anchors, annealed=annealed, anchor_proposal=anchor_proposal,
                             threshold=threshold)
        self.reset_chain(None, None)  # also validates the settings
        a = self.kernel.num_anchors
        self.stats_dtypes_shapes = {
            "pgsm_splits": (np.int64, []), "pgsm_merges": (np.int64, []), "pgsm_changes": (np.int64, []),
            "pgsm_resamplings": (np.int64, []), "pgsm_closure_size": (np.int64, []),
            **{f"pgsm_size_{when}_{j}": (np.int64, []) for when in ("before", "after") for j in range(a)},
            "pgsm_ess": (np.float64, []), "pgsm_early_exit": (bool, []),
        }  # per instance (one size per anchor; PyMC 5's trace stores scalars only): replaces the class's
        self.stats_dtypes = [{name: dtype for name, (dtype, _) in self.stats_dtypes_shapes.items()}]

    def reset_chain(self, tune, draws):
        """A new chain: a new kernel, whose informed anchor proposal adapts afresh."""
        self.kernel = PGSMKernel(None, self.terms.prior_code, np.zeros(3), **self.settings,
                                 adapt_iterations=self.adapt_iterations)

    def stop_tuning(self):
        """End of tuning: freeze the anchor proposal (the kept draws are from an exact chain)."""
        self.kernel.stop_adapting()

    def step(self, point):
        labels, prior_params, pack = self._inputs(point)
        self.kernel.set_model(pack, prior_params)
        a = self.kernel.num_anchors
        stats = {"pgsm_splits": 0, "pgsm_merges": 0, "pgsm_changes": 0, "pgsm_resamplings": 0}
        for _ in range(self.moves):
            labels, info = self.kernel.step(labels, self.rng)
            stats["pgsm_splits"] += info["move"] == "split"
            stats["pgsm_merges"] += info["move"] == "merge"
            stats["pgsm_changes"] += info["move"] != "keep"
            stats["pgsm_resamplings"] += info["n_resamplings"]
        stats["pgsm_closure_size"] = info["closure_size"]
        for when in ("before", "after"):
            sizes = info[f"sizes_{when}"]
            for j in range(a):
                stats[f"pgsm_size_{when}_{j}"] = int(sizes[j]) if j < len(sizes) else 0
        stats["pgsm_ess"] = info["ess"]
        stats["pgsm_early_exit"] = info["early_exit"]
        return self._with_labels(point, labels), [stats]


class SAMS(_PartitionStep):
    """Sequentially-allocated merge-split moves on a ``pmp.Partition`` (Dahl 2003).

    A Metropolis-Hastings split-merge move: two random items; if they share a cluster, propose to
    split it by allocating its other items one by one, else propose to merge their clusters. The
    baseline that seed 003 compares PGSM against; interleave with Gibbs sweeps like :class:`PGSM`.

    Parameters
    ----------
    vars : list
        The Partition variable.
    moves : int, default 1
        SAMS moves per draw.

    Sampler statistics (summed over the draw's moves): ``sams_splits`` and ``sams_merges``
    (accepted), ``sams_proposed_splits``; of the last move: ``sams_log_ratio`` (log acceptance
    ratio).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(20), np.ones(20) * 8.0] + np.random.default_rng(0).normal(size=40)
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=40)
    ...     obs = pmp.NormalNormal("y", partition=z, mu0=4.0, sigma0=5.0, sigma=1.0, observed=y)
    ...     idata = pm.sample(draws=50, tune=10, chains=1, step=[pmp.CollapsedGibbs([z]), pmp.SAMS([z], moves=5)],
    ...                       progressbar=False, compute_convergence_checks=False, random_seed=1)
    """

    name = "sams"
    stats_dtypes_shapes = {"sams_splits": (np.int64, []), "sams_merges": (np.int64, []),
                           "sams_proposed_splits": (np.int64, []), "sams_log_ratio": (np.float64, [])}

    def __init__(self, vars=None, model=None, moves=1, rng=None, blocked=None, **kwargs):
        step_keywords(type(self).__name__, kwargs)
        super().__init__(vars, model, rng)
        self._need_two_items()
        self.moves = _check_moves("SAMS", moves)

    def step(self, point):
        labels, prior_params, pack = self._inputs(point)
        kernel = SAMSKernel(pack, self.terms.prior_code, prior_params)
        labels, stats = _split_merge_moves(kernel, labels, self.moves, self.rng, "sams")
        return self._with_labels(point, labels), [stats]


class SplitMerge(_PartitionStep):
    """Jain & Neal's (2004) restricted-Gibbs split-merge moves on a ``pmp.Partition``.

    Two random items; the items of their cluster(s) are split at random between them and refined
    by ``intermediate_scans`` restricted Gibbs scans (the *launch state*); if the two share a
    cluster, one more restricted scan proposes its split, else the proposal merges their clusters
    and the probability of the way back is that of the final scan forced to the current split.
    Accepted by the Metropolis-Hastings ratio: exact for any number of scans. The split-merge
    most papers compare against (seed 004's baseline, with ``intermediate_scans=5``).
    Interleave it with Gibbs sweeps: ``step=[pmp.CollapsedGibbs([z]), pmp.SplitMerge([z])]``.

    Parameters
    ----------
    vars : list
        The Partition variable.
    intermediate_scans : int, default 5
        Restricted Gibbs scans forming the launch state (0 gives a random launch).
    moves : int, default 1
        Moves per draw.

    Sampler statistics (summed over the draw's moves): ``sm_splits`` and ``sm_merges``
    (accepted), ``sm_proposed_splits``; of the last move: ``sm_log_ratio``.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(20), np.ones(20) * 8.0] + np.random.default_rng(0).normal(size=40)
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=40)
    ...     obs = pmp.NormalNormal("y", partition=z, mu0=4.0, sigma0=5.0, sigma=1.0, observed=y)
    ...     idata = pm.sample(draws=50, tune=10, chains=1, random_seed=1, progressbar=False,
    ...                       step=[pmp.CollapsedGibbs([z]), pmp.SplitMerge([z], intermediate_scans=3)],
    ...                       compute_convergence_checks=False)
    """

    name = "split_merge"
    stats_dtypes_shapes = {"sm_splits": (np.int64, []), "sm_merges": (np.int64, []),
                           "sm_proposed_splits": (np.int64, []), "sm_log_ratio": (np.float64, [])}

    def __init__(self, vars=None, model=None, intermediate_scans=5, moves=1, rng=None, blocked=None, **kwargs):
        step_keywords(type(self).__name__, kwargs)
        super().__init__(vars, model, rng)
        self.intermediate_scans = _checks.integer("intermediate_scans", intermediate_scans, low=0,
                                                  owner="SplitMerge")
        self.moves = _check_moves("SplitMerge", moves)
        self._need_two_items()

    def step(self, point):
        labels, prior_params, pack = self._inputs(point)
        kernel = JainNealKernel(pack, self.terms.prior_code, prior_params, self.intermediate_scans)
        labels, stats = _split_merge_moves(kernel, labels, self.moves, self.rng, "sm")
        return self._with_labels(point, labels), [stats]


#: Cap on the item visits of one draw of :class:`GibbsSplitMerge` (sweeps x n) when it chooses its
#: sweeps per draw: at n = 10^4 two sweeps, at n = 200 a hundred.
MAX_VISITS_PER_DRAW = 20_000
#: Cap on its sweeps per draw, whatever n.
MAX_SWEEPS_PER_DRAW = 100


def default_moves(n: int) -> int:
    """Split-merge moves before each sweep of :class:`GibbsSplitMerge` by default: one, and one per
    2000 items from n = 4000 on, at most 8 (many clusters take many splits, and a move costs a
    fraction of a sweep there)."""
    return int(min(8, max(1, n // 2000)))


class GibbsSplitMerge(_PartitionStep):
    """Collapsed Gibbs sweeps composed with split-merge moves: what ``pm.sample`` assigns to a
    ``pmp.Partition`` by default.

    A draw is ``sweeps`` repetitions of (``moves`` split-merge moves, then one collapsed Gibbs
    sweep). The moves are SAMS (Dahl 2003, the law of :class:`SAMS`), run on the sweep's own
    block statistics in one compiled loop (``samplers/gibbs_sams.py``); on a network likelihood
    (``pmp.BetaBernoulliNetwork``), whose block-pair terms SAMS does not have, they are Jain-Neal
    moves (:class:`SplitMerge`, ``intermediate_scans`` restricted scans). Gibbs sweeps move items
    one at a time; the moves split and merge whole clusters, which sweeps may take forever to do
    (``benchmarks/README.md``, mixing suite). Every part is an exact kernel, so is the draw.

    ``sweeps="auto"`` (the default) does one repetition per draw during tuning, and at the end
    of tuning sets the number of repetitions per draw to the integrated autocorrelation time of
    the label-invariant quantities (number of clusters, largest share, log joint) over the second
    half of tuning, in repetitions, so that kept draws are about one autocorrelation time apart:
    where a sweep barely moves them (small data, strongly correlated draws) a draw does more work,
    and PyMC's fixed cost per draw is spread over more of it; where a sweep already decorrelates
    them, one. At most ``MAX_SWEEPS_PER_DRAW`` (100) and ``MAX_VISITS_PER_DRAW / n`` (2 at
    n = 10^4) repetitions. The number is frozen from the first kept draw on (the kept draws come
    from one fixed kernel), chosen from the chain's own draws (reproducible from
    ``random_seed``), and per chain. With ``tune=0`` it stays 1.

    Parameters
    ----------
    vars : list
        The Partition variable.
    moves : int, optional
        Split-merge moves before each sweep (0: Gibbs sweeps alone). Default: 1 below n = 4000,
        then n / 2000, at most 8.
    sweeps : int or "auto", default "auto"
        Repetitions (moves, then a sweep) per draw; an integer fixes it.
    intermediate_scans : int, default 2
        Network likelihoods only: restricted scans of each Jain-Neal move.

    Sampler statistics: ``n_clusters`` and ``log_joint`` (as :class:`CollapsedGibbs`, after the
    draw's last sweep), ``sweeps`` (repetitions this draw), and summed over the draw's moves
    ``sams_splits``, ``sams_merges`` (accepted), ``sams_proposed_splits`` -- ``sm_splits``,
    ``sm_merges``, ``sm_proposed_splits`` on a network.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(20), np.ones(20) * 8.0] + np.random.default_rng(0).normal(size=40)
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=40)
    ...     obs = pmp.NormalNormal("y", partition=z, mu0=4.0, sigma0=5.0, sigma=1.0, observed=y)
    ...     idata = pm.sample(draws=100, tune=100, chains=2, random_seed=1, progressbar=False,
    ...                       compute_convergence_checks=False)  # GibbsSplitMerge, automatically
    >>> stats = pmp.posterior_dataset(idata, "sample_stats")
    >>> int(stats["sweeps"].min()) >= 1
    True
    """

    name = "gibbs_split_merge"

    def __init__(self, vars=None, model=None, moves=None, sweeps="auto", intermediate_scans=2, rng=None, blocked=None,
                 **kwargs):
        step_keywords(type(self).__name__, kwargs)
        super().__init__(vars, model, rng)
        n = self.terms.n
        self.moves = default_moves(n) if moves is None else _checks.integer("moves", moves, low=0,
                                                                              owner="GibbsSplitMerge")
        if isinstance(sweeps, str):
            if sweeps != "auto":
                raise ValueError(f"GibbsSplitMerge: sweeps must be a positive integer or 'auto', got {sweeps!r}")
            self.fixed_sweeps = None
        else:
            self.fixed_sweeps = _checks.integer("sweeps", sweeps, low=1, owner="GibbsSplitMerge")
        self.intermediate_scans = _checks.integer("intermediate_scans", intermediate_scans, low=0,
                                                  owner="GibbsSplitMerge")
        if self.moves and n < 2:
            raise ValueError(f"GibbsSplitMerge: the partition {self.terms.name!r} has one item; a split-merge "
                             "move needs two (pass moves=0)")
        self.max_sweeps = int(min(MAX_SWEEPS_PER_DRAW, max(1, MAX_VISITS_PER_DRAW // n)))
        model = pm.modelcontext(model)
        point = kwargs.get("initial_point")
        point = point if point is not None else model.initial_point(0)
        _, pack = self.terms.kernel_inputs(point)
        self.network = has_network(pack)
        prefix = "sm" if self.network else "sams"
        self._prefix = prefix
        self.stats_dtypes_shapes = {
            "n_clusters": (np.int64, []), "log_joint": (np.float64, []), "sweeps": (np.int64, []),
            f"{prefix}_splits": (np.int64, []), f"{prefix}_merges": (np.int64, []),
            f"{prefix}_proposed_splits": (np.int64, []),
        }  # per instance (the prefix depends on the likelihood); PyMC 5 reads stats_dtypes
        self.stats_dtypes = [{name: dtype for name, (dtype, _) in self.stats_dtypes_shapes.items()}]
        self.reset_chain(None, None)
        self._compile_now(point)

    def reset_chain(self, tune, draws):
        """A new chain: one repetition per draw, and a fresh record of the tuning draws."""
        self.sweeps = self.fixed_sweeps or 1
        self.tuning = self.fixed_sweeps is None
        self._trace = []

    def stop_tuning(self):
        """End of tuning: choose the repetitions per draw (``sweeps="auto"``) and freeze them."""
        if self.tuning and len(self._trace) >= 8:
            traces = np.asarray(self._trace, dtype=np.float64).T
            self.sweeps = sweeps_for(traces, self.sweeps, self.max_sweeps)
        self.tuning = False
        self._trace = []

    def _compile_now(self, point):
        """Compile (or load) the kernels in the process that builds the step (see CollapsedGibbs)."""
        try:
            labels, prior_params, pack = self._inputs(point)
            self._draw(labels, prior_params, pack, np.random.default_rng(0), 1)
        except Exception:  # noqa: BLE001 - only a warm-up
            pass

    def _draw(self, labels, prior_params, pack, rng, reps):
        """``reps`` repetitions; (labels, log joint, [proposed splits, splits, merges])."""
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        n = labels.shape[0]
        if not self.network:
            if getattr(self, "_checked_pack", None) is not pack:  # (a pack is checked once, not every draw)
                GibbsSAMSKernel(pack, self.terms.prior_code, prior_params, reps=reps, moves=self.moves)
                self._checked_pack = pack
            code, params = check_prior(n, self.terms.prior_code, prior_params, type(self).__name__)
            orders, uniforms, pairs, seeds = keyed_sweep_numbers(n, reps, self.moves, draw_seed(rng))
            return gibbs_sams_run(labels, pack, code, params, orders, uniforms, pairs, seeds)
        counts = np.zeros(3, np.int64)
        mover = JainNealKernel(pack, self.terms.prior_code, prior_params, self.intermediate_scans) if self.moves else None
        for _ in range(reps):
            for _ in range(self.moves):
                labels, info = mover.step(labels, rng)
                split = info["move"] == "split"
                counts += (split, split and info["accepted"], (not split) and info["accepted"])
            labels, lj = gibbs_sweeps(labels, pack, self.terms.prior_code, prior_params, rng.permutation(n)[None],
                                      rng.random((1, n)))
        return labels, lj, counts

    def step(self, point):
        labels, prior_params, pack = self._inputs(point)
        new, lj, counts = self._draw(labels, prior_params, pack, self.rng, self.sweeps)
        sizes = np.bincount(new)
        if self.tuning:
            self._trace.append((sizes.shape[0], sizes.max(), lj))
        prefix = self._prefix
        stats = {"n_clusters": int(sizes.shape[0]), "log_joint": float(lj), "sweeps": self.sweeps,
                 f"{prefix}_proposed_splits": int(counts[0]), f"{prefix}_splits": int(counts[1]),
                 f"{prefix}_merges": int(counts[2])}
        return self._with_labels(point, new), [stats]

    @staticmethod
    def competence(var, has_grad):
        return Competence.IDEAL if is_partition(var) else Competence.INCOMPATIBLE


class SubClusterSplitMerge(GibbsSplitMerge):
    """:class:`GibbsSplitMerge` with sub-cluster split-merge moves instead of SAMS: each split
    cuts a cluster along two sub-clusters built by a sequential allocation and ``scans`` restricted
    Gibbs scans, and is accepted on the probability of one more (final) scan -- the collapsed,
    exact form of Chang & Fisher's (2013) sub-cluster splits (``samplers/subclusters.py``, whose
    docstring gives the argument). Not the default: on the mixing suite it gives fewer effective
    samples per CPU second than SAMS (``benchmarks/README.md``). Network likelihoods: Jain-Neal
    moves, as :class:`GibbsSplitMerge`.

    Parameters
    ----------
    vars, moves, sweeps, intermediate_scans :
        As :class:`GibbsSplitMerge`.
    scans : int, default 1
        Restricted Gibbs scans that refine each move's sub-clusters (0: the sequential
        allocation alone is the launch state).

    Sampler statistics: as :class:`GibbsSplitMerge`, the moves' counts named ``sub_splits``,
    ``sub_merges``, ``sub_proposed_splits`` (``sm_*`` on a network).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(20), np.ones(20) * 8.0] + np.random.default_rng(0).normal(size=40)
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=40)
    ...     obs = pmp.NormalNormal("y", partition=z, mu0=4.0, sigma0=5.0, sigma=1.0, observed=y)
    ...     idata = pm.sample(draws=100, tune=100, chains=2, random_seed=1, progressbar=False,
    ...                       step=[pmp.SubClusterSplitMerge([z], scans=1)], compute_convergence_checks=False)
    >>> stats = pmp.posterior_dataset(idata, "sample_stats")
    >>> bool((stats["n_clusters"] >= 2).all()), int(stats["sub_proposed_splits"].sum()) > 0
    (True, True)
    """

    name = "subcluster_split_merge"

    def __init__(self, vars=None, model=None, moves=None, sweeps="auto", intermediate_scans=2, scans=1, rng=None,
                 blocked=None, **kwargs):
        step_keywords(type(self).__name__, kwargs)
        self.scans = _checks.integer("scans", scans, low=0, high=1000, owner="SubClusterSplitMerge")
        super().__init__(vars, model, moves=moves, sweeps=sweeps, intermediate_scans=intermediate_scans, rng=rng,
                         blocked=blocked, **kwargs)
        if not self.network:
            self._prefix = "sub"
            self.stats_dtypes_shapes = {
                "n_clusters": (np.int64, []), "log_joint": (np.float64, []), "sweeps": (np.int64, []),
                "sub_splits": (np.int64, []), "sub_merges": (np.int64, []), "sub_proposed_splits": (np.int64, []),
            }
            self.stats_dtypes = [{name: dtype for name, (dtype, _) in self.stats_dtypes_shapes.items()}]

    def _draw(self, labels, prior_params, pack, rng, reps):
        if self.network:
            return super()._draw(labels, prior_params, pack, rng, reps)
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        kernel = GibbsSubClusterKernel(pack, self.terms.prior_code, prior_params, reps=reps, moves=self.moves,
                                       scans=self.scans)
        orders, uniforms, pairs, seeds = kernel.random_numbers(rng, labels.shape[0])
        return gibbs_subcluster_run(labels, pack, kernel.prior_code, kernel.prior_params, orders, uniforms, pairs,
                                    seeds, self.scans)

    @staticmethod
    def competence(var, has_grad):
        """COMPATIBLE for partitions: :class:`GibbsSplitMerge` (IDEAL) is what ``pm.sample`` assigns."""
        return Competence.COMPATIBLE if is_partition(var) else Competence.INCOMPATIBLE


# ----------------------------------------------------------------------------- prior parameters


def _escobar_west_setup(model, var):
    """(rv, partition, transform, Gamma shape, Gamma scale) when :class:`EscobarWest` applies to
    ``var``, else ``ValueError`` saying why not."""
    rv, z = _prior_parameter_setup(model, var, "EscobarWest")
    if z.owner.inputs[-4] is not rv or constant_value(z.owner.inputs[-3]) is None or float(
        constant_value(z.owner.inputs[-3])
    ) != 0.0 or int(constant_value(z.owner.inputs[-2])) != 0:
        raise ValueError(f"EscobarWest: {rv.name!r} must be the alpha of a pmp.CRP prior")
    if rv.ndim != 0:
        raise ValueError(f"EscobarWest: {rv.name!r} must be a scalar")
    transform = model.rvs_to_transforms.get(rv)
    if transform is not None and type(transform).__name__ != "LogTransform":
        raise ValueError(f"EscobarWest: {rv.name!r} must use the default log transform or none")
    op_name = type(rv.owner.op).__name__.lower()
    if "gamma" not in op_name or "inv" in op_name:
        raise ValueError(f"EscobarWest: {rv.name!r} must have a pm.Gamma prior, got {type(rv.owner.op).__name__}")
    shape_param, scale_param = rv.owner.inputs[-2:]
    shape, scale = constant_value(shape_param), constant_value(scale_param)
    if shape is None or scale is None:
        raise ValueError(f"EscobarWest: the Gamma prior of {rv.name!r} must have fixed parameters")
    if shape.ndim != 0 or scale.ndim != 0:
        raise ValueError(f"EscobarWest: the Gamma prior of {rv.name!r} must have scalar parameters")
    return rv, z, transform, shape, scale


def _prior_slice_setup(model, var):
    """(rv, partition) when :class:`PriorSlice` applies to ``var``, else ``ValueError``."""
    rv, z = _prior_parameter_setup(model, var, "PriorSlice")
    if rv.ndim != 0:
        raise ValueError(f"PriorSlice: {rv.name!r} must be a scalar")
    return rv, z


def _automatic(setup, var) -> bool:
    """Whether ``setup`` (:func:`_escobar_west_setup` or :func:`_prior_slice_setup`) accepts the
    random variable ``var`` in its model; for the competence PyMC asks without a model."""
    if getattr(var, "owner", None) is None:
        return False
    model = prior_parameter_model(var)
    if model is None or not any(v is var for v in model.free_RVs):
        return False
    try:
        setup(model, var)
    except (ValueError, TypeError, KeyError):
        return False
    return True


def _prior_parameter_setup(model, var, step_name):
    """(rv, partition) for a variable that enters the model only as alpha/discount of one prior.

    Then its full conditional involves only its own prior and the partition's EPPF, which costs
    O(number of clusters) to evaluate, not O(n).
    """
    rv = _resolve_rv(model, var)
    partitions = [z for z in model.free_RVs if is_partition(z) and any(p is rv for p in z.owner.inputs[-4:-2])]
    if len(partitions) != 1:
        raise ValueError(f"{step_name}: {rv.name!r} must be the alpha or discount of exactly one pmp.Partition prior")
    z = partitions[0]
    others = [
        v for v in model.basic_RVs + model.potentials
        if v is not rv and v is not z and rv in ancestors([v], blockers=[z])
    ]
    if others:
        raise ValueError(
            f"{step_name}: {rv.name!r} must enter the model only through the prior of {z.name!r}, but "
            f"{', '.join(repr(v.name) for v in others)} also depend on it. Use NUTS or pm.Slice instead."
        )
    return rv, z


class EscobarWest(ChainSetupMixin, BlockedStep):
    """Exact Gibbs update of a CRP concentration ``alpha`` with a Gamma prior (Escobar & West 1995).

    Given the partition's number of clusters K, draw eta ~ Beta(alpha + 1, n), then alpha from a
    two-component mixture of Gammas. O(1) per draw whatever n: the recommended update for alpha
    (NUTS or Slice re-evaluate the O(n) collapsed likelihood many times per draw).

    Requires a scalar ``alpha ~ pm.Gamma(a, b)`` with fixed a, b, used only as the alpha of a
    ``pmp.CRP``. ``pm.sample`` assigns this step automatically to every such variable (unless
    ``step=`` names a step for it).

    Every valid Gamma prior works, vague ones such as Gamma(1e-3, 1e-3) included: alpha is drawn in
    log space and kept as log alpha (the default log transform), so draws far below 1e-308 are
    exact; alpha itself (the posterior variable, the ``alpha`` statistic) is then 0, read by the
    partition's steps as its limit (one block). The statistic ``log_alpha`` holds the draw.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> with pm.Model():
    ...     alpha = pm.Gamma("alpha", 2.0, 1.0)
    ...     z = pmp.Partition("z", pmp.CRP(alpha), n=10)
    ...     obs = pmp.NormalNormal("y", partition=z, sigma0=3.0, sigma=1.0, observed=np.arange(10.0))
    ...     idata = pm.sample(draws=50, tune=10, chains=1, step=[pmp.CollapsedGibbs([z]), pmp.EscobarWest([alpha])],
    ...                       progressbar=False, compute_convergence_checks=False, random_seed=1)
    """

    name = "escobar_west"
    default_blocked = False  # several variables: one step each
    stats_dtypes_shapes = {"alpha": (np.float64, []), "log_alpha": (np.float64, [])}

    def __init__(self, vars=None, model=None, rng=None, blocked=None, **kwargs):
        step_keywords(type(self).__name__, kwargs)
        model = pm.modelcontext(model)
        vars = list(vars) if isinstance(vars, (list, tuple)) else [vars]
        if len(vars) != 1:
            raise ValueError("EscobarWest updates one concentration variable")
        rv, z, transform, shape, scale = _escobar_west_setup(model, vars[0])
        self.a = float(shape)
        self.b = 1.0 / float(scale)
        value_var = model.rvs_to_values[rv]
        self.vars = [value_var]
        self.value_name = value_var.name
        self.log_scale = transform is not None
        self.z_value = model.rvs_to_values[z].name
        self.n = int(constant_value(z.owner.inputs[-1]))
        self.rng = np.random.default_rng(rng)

    def step(self, point):
        k = int(np.count_nonzero(np.bincount(point[self.z_value])))
        value = float(point[self.value_name])
        if self.log_scale:  # the point holds log alpha: the draw is exact however far below 1e-308 alpha is
            log_alpha = escobar_west_log(value, k, self.n, self.a, self.b, self.rng)
            new = log_alpha
        else:  # alpha itself (no transform): 0 when the draw falls below the smallest float, read as that limit
            if not value >= 0.0:
                raise ValueError(f"EscobarWest: {self.value_name!r} = {value!r} is outside the Gamma prior's support")
            log_alpha = escobar_west_log(math.log(value) if value > 0.0 else -math.inf, k, self.n, self.a, self.b,
                                         self.rng)
            new = math.exp(log_alpha)
        point = dict(point)
        point[self.value_name] = np.asarray(new, dtype=np.asarray(point[self.value_name]).dtype)
        return point, [{"alpha": math.exp(log_alpha), "log_alpha": log_alpha}]

    @staticmethod
    def competence(var, has_grad):
        """IDEAL for a scalar Gamma-prior CRP concentration used nowhere else (see the class)."""
        return Competence.IDEAL if _automatic(_escobar_west_setup, var) else Competence.INCOMPATIBLE


class PriorSlice(ChainSetupMixin, BlockedStep):
    """Slice sampling of a partition prior's alpha or discount, from the prior terms only.

    The full conditional of a parameter that enters the model only through a Partition prior is
    its own prior density times the EPPF of the current partition, which depends on the data
    size only through the block sizes: each evaluation costs O(number of clusters), not O(n).
    Univariate slice sampling (Neal 2003, stepping out and shrinkage) on the variable's
    unconstrained value. Works for any prior on alpha (or discount), for CRP, Pitman-Yor and
    finite Dirichlet priors. ``pm.sample`` assigns this step automatically to every scalar alpha or
    discount that enters the model only through one Partition prior, except where
    :class:`EscobarWest` applies (a Gamma-prior CRP concentration), unless ``step=`` names a step
    for it.

    alpha = 0, what a positive alpha below about 1e-308 underflows to, is read as its limit (one
    block). Where PyMC cannot evaluate the variable's own log density at an unconstrained value
    (a vague prior with mass below 1e-308: pm.Gamma(1e-3, 1e-3) on PyMC 5, whose log density is
    -inf once alpha underflows; a discount that rounds to 1), the step stops with an error rather
    than cut that mass off silently.

    Parameters
    ----------
    vars : list
        One variable: the alpha or discount of a Partition prior.
    width : float, default 1.0
        Initial slice width on the unconstrained scale, finite and > 0.
    max_steps : int, default 50
        Cap on the stepping-out steps per draw (a positive integer).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> with pm.Model():
    ...     d = pm.Beta("d", 1.0, 3.0)
    ...     z = pmp.Partition("z", pmp.PitmanYor(1.0, d), n=10)
    ...     obs = pmp.NormalNormal("y", partition=z, sigma0=3.0, sigma=1.0, observed=np.arange(10.0))
    ...     idata = pm.sample(draws=50, tune=10, chains=1, step=[pmp.CollapsedGibbs([z]), pmp.PriorSlice([d])],
    ...                       progressbar=False, compute_convergence_checks=False, random_seed=1)
    """

    name = "prior_slice"
    default_blocked = False  # several variables: one step each
    stats_dtypes_shapes = {"value": (np.float64, []), "n_evals": (np.int64, [])}

    def __init__(self, vars=None, model=None, width=1.0, max_steps=50, rng=None, blocked=None, **kwargs):
        step_keywords(type(self).__name__, kwargs)
        model = pm.modelcontext(model)
        vars = list(vars) if isinstance(vars, (list, tuple)) else [vars]
        if len(vars) != 1:
            raise ValueError("PriorSlice updates one variable")
        rv, z = _prior_slice_setup(model, vars[0])
        value_var = model.rvs_to_values[rv]
        self.vars = [value_var]
        self.value_name = value_var.name
        self.z_value = model.rvs_to_values[z].name
        alpha, discount, k, _ = z.owner.inputs[-4:]
        self.prior_code = PITMAN_YOR if int(constant_value(k)) == 0 else 1
        self.k = float(constant_value(k))
        self.transformed = model.rvs_to_transforms.get(rv) is not None
        own_logp = model.logp(vars=[rv], jacobian=True, sum=True)
        params = model.replace_rvs_by_values([alpha, discount])
        # only the value variables these read, called without re-checking them: each evaluation is a few us,
        # not the ~60 us of a function of every value variable (several evaluations per draw)
        read = set(ancestors([own_logp, *params]))
        inputs = [v for v in model.value_vars if v in read]
        self._inputs = [v.name for v in inputs]
        self._fn = TypedCall(model.compile_fn([own_logp, *params], inputs=inputs, on_unused_input="ignore",
                                              point_fn=False))
        self.width = _checks.real("width", width, low=0.0, low_open=True, owner="PriorSlice")
        self.max_steps = _checks.integer("max_steps", max_steps, low=1, owner="PriorSlice")
        self.rng = np.random.default_rng(rng)

    def _logp(self, point, value, sizes):
        point[self.value_name] = np.asarray(value, dtype=point[self.value_name].dtype)
        own, alpha, discount = self._fn(*(point[name] for name in self._inputs))
        if not np.isfinite(own):
            if self.transformed and math.isfinite(value):
                # an unconstrained value maps into the prior's support: a non-finite log density is PyMC
                # failing to evaluate it (e.g. alpha = exp(value) underflowed to 0), and treating it as
                # outside the slice would silently cut that part of the law away
                raise ValueError(
                    f"PriorSlice: PyMC {pm.__version__} evaluates the log density of {self.value_name!r} as {own} at "
                    f"the unconstrained value {value!r} (alpha = {float(alpha)!r}, discount = {float(discount)!r}): "
                    "the prior puts mass where float64 cannot evaluate it (a value that under- or overflows), so "
                    "slice sampling would silently cut it off. Use a prior with less mass there, pmp.EscobarWest "
                    "for a Gamma prior on a CRP's alpha (exact in log space), or a PyMC whose log densities stay "
                    "finite there (PyMC 6 evaluates pm.Gamma on the log scale exactly)")
            return -np.inf
        alpha, discount = float(alpha), float(discount)
        if not valid_parameters(self.prior_code, alpha, discount):
            return -np.inf
        return float(own) + log_eppf_sizes(self.prior_code, np.array([alpha, discount, self.k]), sizes)

    def step(self, point):
        point = dict(point)
        point[self.value_name] = np.asarray(point[self.value_name])
        sizes = np.bincount(point[self.z_value])
        sizes = sizes[sizes > 0].astype(np.int64)
        x0 = float(point[self.value_name])
        evals = 1
        current = self._logp(point, x0, sizes)
        if not np.isfinite(current):
            raise ValueError(f"PriorSlice: {self.value_name!r} = {x0!r} has log density {current} at the current "
                             "partition: the starting value is outside the support")
        level = current + math.log1p(-self.rng.random())  # log of a uniform on (0, 1]
        left = x0 - self.width * self.rng.random()
        right = left + self.width
        j = int(self.max_steps * self.rng.random())
        k = self.max_steps - 1 - j
        while j > 0 and self._logp(point, left, sizes) > level:
            left -= self.width
            j -= 1
            evals += 1
        while k > 0 and self._logp(point, right, sizes) > level:
            right += self.width
            k -= 1
            evals += 1
        while True:  # shrinkage ends: the interval closes on x0, whose log density is above the level
            x1 = left + (right - left) * self.rng.random()
            evals += 1
            if self._logp(point, x1, sizes) > level:
                break
            if right - left <= 4.0 * np.spacing(abs(x0)):  # rounding: only x0 itself is left
                x1 = x0
                break
            if x1 < x0:
                left = x1
            else:
                right = x1
        point[self.value_name] = np.asarray(x1, dtype=point[self.value_name].dtype)
        return point, [{"value": x1, "n_evals": evals}]

    @staticmethod
    def competence(var, has_grad):
        """IDEAL for a scalar alpha or discount used only by one Partition prior, unless
        :class:`EscobarWest` applies to it."""
        if _automatic(_escobar_west_setup, var) or not _automatic(_prior_slice_setup, var):
            return Competence.INCOMPATIBLE
        return Competence.IDEAL


# ----------------------------------------------------------------------------- PyMC entry points

#: What to use instead of a PyMC sampler that cannot sample a partition.
_USE_INSTEAD = ("Use pm.sample: it gives each pmp.Partition a pmp.GibbsSplitMerge step automatically (Gibbs sweeps "
                "with split-merge moves; pmp.CollapsedGibbs, pmp.PGSM, pmp.SAMS, pmp.SplitMerge or pmp.ARM in step= "
                "instead) and PyMC's samplers to the other variables")


def _partitions(model):
    return [rv for rv in model.free_RVs if is_partition(rv)]


def refuse_partition(model, entry: str) -> None:
    """``NotImplementedError`` if ``model`` has a partition: ``entry`` (a PyMC sampler such as
    ``pm.sample_smc``) moves every variable with continuous proposals, which leave the labels where
    they start. Nothing for models without one. Called by :func:`~.guards.guard_smc`."""
    names = [rv.name for rv in _partitions(model)]
    if names:
        raise NotImplementedError(
            f"{entry} cannot sample a model with a partition ({', '.join(map(repr, names))}, pmp.Partition): its "
            "proposals are continuous and cannot move cluster labels, so every draw would keep the starting "
            f"partition (one block). {_USE_INSTEAD}. To compare models, which {entry}'s marginal likelihood "
            "serves, use pmp.loo / az.compare on pm.sample results (docs/model_comparison.md)")


def check_find_map(model, start, vars, start_name="start") -> None:
    """Refuse ``pm.find_MAP`` on a model with a partition unless ``start`` gives every partition's
    labels (its result is then the mode of the other variables given them), and always when
    ``vars`` names a partition. Nothing for models without one. ``start_name`` is the installed
    PyMC's name of that argument (``start``, ``initvals``). Called by
    :func:`~.guards.guard_find_map`."""
    parts = _partitions(model)
    if not parts:
        return
    for var in ([] if vars is None else list(vars) if isinstance(vars, (list, tuple)) else [vars]):
        try:
            rv = _resolve_rv(model, var)
        except (ValueError, KeyError, TypeError):
            continue  # PyMC reports it
        if is_partition(rv):
            raise NotImplementedError(
                f"pm.find_MAP cannot optimise the partition {rv.name!r}: its labels are discrete (the optimiser would "
                "move them as real numbers). For a point estimate of a partition sample its posterior with pm.sample "
                "and summarise it with pmp.point_estimate")
    given = {} if start is None else start
    missing = [rv.name for rv in parts if rv.name not in given and model.rvs_to_values[rv].name not in given]
    if missing:
        raise NotImplementedError(
            f"pm.find_MAP keeps the partition(s) {missing} at their starting labels (one block) and optimises the "
            "other variables given them: the result (e.g. a CRP alpha near 0) is the mode given one block, not a MAP "
            "of the model. For a point estimate of a partition use pm.sample and pmp.point_estimate; for the mode of "
            f"the other variables given chosen labels pass them: pm.find_MAP({start_name}={{{missing[0]!r}: labels}})")


def _flat_steps(step):
    if step is None:
        return []
    if isinstance(step, (list, tuple)):
        return [m for s in step for m in _flat_steps(s)]
    methods = getattr(step, "methods", None)
    if isinstance(methods, (list, tuple)):  # a CompoundStep
        return [m for s in methods for m in _flat_steps(s)]
    return [step]


def warn_unread_partitions(model) -> None:
    """Warn, before ``pm.sample`` runs, of a partition that no likelihood reads in a model that has
    likelihoods: it is then drawn from its prior, whatever the data say -- usually a likelihood
    written with ``mu`` where ``mu[z]`` was meant. A model of partitions alone (a prior sample,
    asked for) gets no warning. Called by :func:`~.guards.guard_step_assignment`."""
    parts = _partitions(model)
    readers = list(model.observed_RVs) + list(model.potentials)
    if not parts or not readers:
        return
    read = set(ancestors(readers))
    for rv in parts:
        if rv not in read:
            names = [r.name for r in readers]
            warnings.warn(f"the partition {rv.name!r} is read by none of the model's likelihoods {names}: pm.sample "
                          f"draws it from its prior, whatever the data. To cluster the items, index the parameters "
                          f"of a likelihood by it (e.g. pm.Normal('y', mu=mu[{rv.name}], ...)) or give it a "
                          f"collapsed likelihood (partition={rv.name})", UserWarning, stacklevel=3)


def check_partition_steps(model, step) -> None:
    """Refuse, before ``pm.sample`` runs, steps given in ``step=`` that would sample a partition
    wrongly: a step method not of this package (``pm.Metropolis``, ``pm.Slice``, ... treat the labels
    as numbers, and each label vector has the log density of its partition, so the partitions would
    be sampled in proportion to their numbers of labellings), and one partition in two steps of the
    same class (their statistics would be stacked along an extra dimension like two partitions'; one
    step with more ``sweeps`` / ``moves`` does the same). Nothing for models without a partition.
    Called by :func:`~.guards.guard_step_assignment`."""
    parts = {model.rvs_to_values[rv]: rv.name for rv in _partitions(model)}
    if not parts:
        return
    seen = {}
    for method in _flat_steps(step):
        for var in getattr(method, "vars", None) or []:
            name = parts.get(var)
            if name is None:
                continue
            kind = type(method).__name__
            if not isinstance(method, (_PartitionStep, NonConjugateGibbs)):
                raise ValueError(
                    f"step {kind} cannot sample the partition {name!r} (pmp.Partition): it moves the labels as "
                    "numbers, and would sample each partition in proportion to its number of labellings. "
                    f"{_USE_INSTEAD}; give {kind} the other variables only")
            if (kind, name) in seen:
                more = "sweeps" if isinstance(method, (CollapsedGibbs, GibbsSplitMerge)) else "moves"
                raise ValueError(
                    f"the partition {name!r} is given to two {kind} steps: give one {kind} step {more}=2 instead "
                    "(two steps' statistics would be stacked along an extra dimension, as if there were two "
                    "partitions)")
            seen[kind, name] = method


def register():
    """Let ``pm.sample`` assign :class:`GibbsSplitMerge` / :class:`CollapsedGibbs` to Partition
    variables, :class:`EscobarWest` and :class:`PriorSlice` to their prior parameters automatically.
    The wrappers of PyMC internals that check starting values, draw collapsed likelihoods given the
    observed data, judge convergence on label-invariant quantities and refuse PyMC samplers that
    cannot sample a partition are installed next, by :func:`pymc_partitions.pymc.guards.install`."""
    for cls in (GibbsSplitMerge, CollapsedGibbs, EscobarWest, PriorSlice):
        if cls not in STEP_METHODS:
            STEP_METHODS.append(cls)
