"""``pmp.ARM``: Adaptive Reconfiguration Moves as a PyMC population step.

``pm.sample`` switches to population sampling when a step is a
``pymc.step_methods.arraystep.PopulationArrayStepShared`` (PyMC 5 and 6 alike): every chain gets a
shallow copy of the step (per-chain state lives in :meth:`ARM.reset_chain`), PyMC links the
copies to the list of the chains' current points (``self.population``, ``self.this_chain``), and
each draw steps every chain from the same snapshot, writing the new points back afterwards. With
``cores > 1`` each chain runs in a worker process and the population is sent to it every draw.

The step is a ``PopulationArrayStepShared`` only for that switch: it overrides ``step`` (labels are
int64 vectors, never flattened into floats) and reads the labels of the other chains from the
population's points.
"""

from __future__ import annotations

import math

import numpy as np
from pymc.step_methods.arraystep import PopulationArrayStepShared

from .. import _checks
from .._numeric import draw_seed
from ..samplers.arm import MODES, ARMKernel, ReferencePool, alternating_roles
from .compat import step_keywords
from .steps import _check_moves, _PartitionStep

__all__ = ["ARM"]


class ARM(_PartitionStep, PopulationArrayStepShared):
    """Adaptive Reconfiguration Moves (Herlau, Mørup, Schmidt & Teh) on a ``pmp.Partition``: a
    population step that uses where several chains disagree.

    A move takes two *reference* partitions and a pair of items they disagree on (together in
    one, apart in the other), splits or merges the pair's clusters, and lets whole groups of items
    on which the current state and both references agree (the blocks of their coarsest common
    refinement), and single items of other clusters, travel with the split or merge. So one move
    can split a cluster while its pieces join others, which split-merge moves cannot: on relational
    and well-separated data the paper reports acceptance rates 10-100 times those of split-merge.
    Each move is an exact Metropolis-Hastings move given its references.

    ARM alone is not ergodic: when the references agree it cannot move (the move is skipped).
    Give it a sweep step on the same partition, ``step=[pmp.GibbsSplitMerge([z]), pmp.ARM([z])]``
    or ``step=[pmp.CollapsedGibbs([z]), pmp.ARM([z])]``: naming ARM in ``step=`` covers the
    partition, so ``pm.sample`` adds no default step for it.

    Plain ARM only recombines what its references hold: a split that no chain has made cannot be
    proposed, so chains that share a trap stay in it. Two options (on by default) let it
    discover structure, keeping every move exact -- the references never depend on the moving
    chain, only transformed:

    * ``synthetic``: with this probability the second reference is a Jain-Neal split-merge
      proposal computed from the first reference's state (never accepted, only used as a
      reference), so the references differ by one split or merge the data favour locally;
    * ``focus``: with this probability, once the pair is drawn, both references are coarsened
      around it (the first to one block, the second to its block of i or of j against the
      rest), so the move proposes one split or merge at a time, whose way back is likely.

    Parameters
    ----------
    vars : list
        The Partition variable.
    mode : {"alternating", "frozen", "paper"}, default "alternating"
        Where the references come from.

        * ``"alternating"`` (exact): the chains form two groups (even and odd chains; with 3
          chains, one chain at a time) that take turns; a chain of the active group takes its
          references from two chains of the passive group, and passive chains make no ARM move
          that draw. The product of the chains' posteriors is then exactly invariant (PyMC steps
          every chain from the same snapshot, so using chains that move in the same draw would
          not be). Each chain makes ARM moves every other draw (with 3 chains, every third).
        * ``"frozen"`` (exact after tuning): a pool of all chains' states over the last
          ``pool_draws`` tuning draws, frozen at the end of tuning; references are two different
          pool states. Needs ``tune >= 1``.
        * ``"paper"`` (seed 004's scheme, asymptotically valid only): references from the states of
          all chains in draws floor(t/2) .. t, one of them from the moving chain's own history
          (its current state included). Biased at any finite number of draws; for comparisons.
    moves : int, default 1
        ARM moves per draw of an active chain.
    pool_draws : int, default 50
        "frozen": tuning draws kept in the pool; "paper": cap on the window's draws (memory:
        chains x n x 4 bytes per draw, per chain).
    synthetic : float in [0, 1], default 0.25
        Probability that a move's second reference is a synthetic Jain-Neal proposal from the
        first (0: plain ARM, the paper's references).
    synthetic_scans : int >= 0, default 5
        Intermediate restricted Gibbs scans of that proposal.
    focus : float in [0, 1], default 1.0
        Probability that a move's references are coarsened around its pair (0: plain ARM).

    Needs at least 3 chains (``pm.sample(chains=...)``; 4 to 8 recommended: the paper finds that
    more chains help). ``cores``: PyMC runs population chains in one process with ``cores=1`` and
    one process per chain otherwise, sending every chain the whole population each draw; the
    results are identical (the roles come from a draw counter every chain advances alike), and on a
    few cores ``cores=1`` is usually faster.

    Sampler statistics (per draw; counts over its moves): ``arm_active`` (the chain made ARM moves
    this draw), ``arm_splits_proposed`` / ``arm_merges_proposed`` (the launch: i, j together or
    apart), ``arm_accepted``, ``arm_skipped`` (moves with equal references: no move),
    ``arm_delta_k`` (net change in the number of clusters by accepted moves); of the last move made:
    ``arm_log_ratio`` (log acceptance ratio; NaN if none), ``arm_u_size`` (|U|, the items of the
    pair's clusters), ``arm_refinement_blocks`` (blocks moved as units), ``arm_ref_a`` /
    ``arm_ref_b`` (the chains the references came from; -1 if none).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(10), np.ones(10) * 6.0] + np.random.default_rng(0).normal(size=20)
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=20)
    ...     obs = pmp.NormalNormal("y", partition=z, mu0=3.0, sigma0=5.0, sigma=1.0, observed=y)
    ...     idata = pm.sample(draws=30, tune=10, chains=4, cores=1, random_seed=1,
    ...                       step=[pmp.CollapsedGibbs([z]), pmp.ARM([z])],
    ...                       progressbar=False, compute_convergence_checks=False)
    """

    name = "arm"
    stats_dtypes_shapes = {
        "arm_active": (bool, []), "arm_splits_proposed": (np.int64, []), "arm_merges_proposed": (np.int64, []),
        "arm_accepted": (np.int64, []), "arm_skipped": (np.int64, []), "arm_delta_k": (np.int64, []),
        "arm_log_ratio": (np.float64, []), "arm_u_size": (np.int64, []), "arm_refinement_blocks": (np.int64, []),
        "arm_ref_a": (np.int64, []), "arm_ref_b": (np.int64, []), "arm_synthetic": (np.int64, []),
        "arm_focused": (np.int64, []),
    }

    def __init__(self, vars=None, model=None, mode="alternating", moves=1, pool_draws=50, synthetic=0.25,
                 synthetic_scans=5, focus=1.0, rng=None, blocked=None, **kwargs):
        step_keywords(type(self).__name__, kwargs)
        _PartitionStep.__init__(self, vars, model, rng)
        self.mode = _checks.choice("mode", mode, MODES, owner="ARM")
        self.moves = _check_moves("ARM", moves)
        self.pool_draws = _checks.integer("pool_draws", pool_draws, low=1, owner="ARM")
        self.synthetic = _checks.probability("synthetic", synthetic, owner="ARM")
        self.synthetic_scans = _checks.integer("synthetic_scans", synthetic_scans, low=0, owner="ARM")
        self.focus = _checks.probability("focus", focus, owner="ARM")
        self._need_two_items()
        # what PopulationArrayStepShared.__init__ sets (its ArrayStepShared part flattens points: not used)
        self.population = None
        self.this_chain = None
        self.other_chains = None
        self.var_names = (self.terms.value_name,)
        self.shared = {}
        self.blocked = True
        self.reset_chain(None, None)

    def link_population(self, population, chain_index):
        """PyMC links each chain's copy to the population (after its per-chain reset)."""
        if len(population) < 3:
            raise ValueError(f"ARM(mode={self.mode!r}) is a population step and needs at least 3 chains (4 to 8 "
                             f"recommended), got {len(population)}: pass pm.sample(chains=4, ...)")
        super().link_population(population, chain_index)

    def reset_chain(self, tune, draws):
        """A new chain: its own draw counter, kernel and reference pool."""
        self._draw = 0
        self._tuning = True
        self._kernel = ARMKernel(None, self.terms.prior_code, np.zeros(3), synthetic=self.synthetic,
                                 synthetic_scans=self.synthetic_scans, focus=self.focus)
        self._pool = None if self.mode == "alternating" else ReferencePool(self.mode, self.pool_draws)

    def stop_tuning(self):
        """End of tuning: the "frozen" pool stops growing."""
        self._tuning = False
        if self.mode == "frozen":
            self._pool.freeze()

    def astep(self, q0):  # pragma: no cover - step() is overridden; here for the abstract base
        raise NotImplementedError("ARM.step works on the points themselves")

    def _references(self, passive, value):
        """((chain a, labels a), (chain b, labels b)) for one move, or None (no usable pair)."""
        if self.mode == "alternating":
            a, b = self.rng.choice(passive, size=2, replace=False)
            return (int(a), self.population[a][value]), (int(b), self.population[b][value])
        return self._pool.draw(self.this_chain, self.rng)

    def step(self, point):
        if self.population is None:
            raise RuntimeError("ARM is a population step: it reads the other chains' states, so it runs only "
                               "inside pm.sample with chains >= 3")
        draw = self._draw
        self._draw += 1
        value = self.terms.value_name
        stats = {"arm_active": False, "arm_splits_proposed": 0, "arm_merges_proposed": 0, "arm_accepted": 0,
                 "arm_skipped": 0, "arm_delta_k": 0, "arm_log_ratio": math.nan, "arm_u_size": 0,
                 "arm_refinement_blocks": 0, "arm_ref_a": -1, "arm_ref_b": -1, "arm_synthetic": 0, "arm_focused": 0}
        passive = None
        if self.mode == "alternating":
            active, passive = alternating_roles(len(self.population), draw)
            if self.this_chain not in active:
                return point, [stats]
        elif self._pool.frozen:
            if len(self._pool) == 0:
                raise ValueError("ARM(mode='frozen') takes its references from the states of the tuning draws: "
                                 "use tune >= 1 (or mode='alternating')")
        else:
            self._pool.add([p[value] for p in self.population])
        labels, prior_params, pack = self._inputs(point)
        self._kernel.set_model(pack, prior_params)
        stats["arm_active"] = True
        for _ in range(self.moves):
            refs = self._references(passive, value)
            if refs is None:
                stats["arm_skipped"] += 1
                continue
            (a, za), (b, zb) = refs
            labels, info = self._kernel.move(labels, (za, zb), draw_seed(self.rng))
            if info["skipped"]:
                stats["arm_skipped"] += 1
                continue
            stats["arm_splits_proposed"] += info["move"] == "split"
            stats["arm_merges_proposed"] += info["move"] == "merge"
            stats["arm_accepted"] += info["accepted"]
            stats["arm_delta_k"] += info["delta_k"]
            stats["arm_synthetic"] += info["synthetic"]
            stats["arm_focused"] += info["focused"]
            stats.update(arm_log_ratio=info["log_ratio"], arm_u_size=info["u_size"],
                         arm_refinement_blocks=info["refinement_blocks"], arm_ref_a=a,
                         arm_ref_b=a if info["synthetic"] else b)
        return self._with_labels(point, labels), [stats]
