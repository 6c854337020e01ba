"""Coupled Gibbs sweeps interleaved with CRN-coupled Particle Gibbs Split-Merge moves.

One iteration is one (OT-, maximal-, ...) coupled Gibbs sweep of :class:`~.sweep.GibbsSweeps`,
then ``moves`` PGSM moves (:mod:`pymc_partitions.samplers.pgsm`) applied to both chains with the
*same* random numbers (common random numbers). A PGSM move is a deterministic function of the
partition and its randomness (anchors, 64-bit seed), so equal partitions stay equal: the pair
stays met. Different partitions share anchors, the closure's item order and the uniform of each
(step, particle), which pulls them together when their closures agree.

Each chain on its own is a Gibbs sweep followed by PGSM moves, both invariant for the posterior.
A single-chain :meth:`GibbsPGSM.sweep` uses the same randomness as a coupled one does for each
chain, so a chain advanced alone after meeting follows the same kernel.

Only uniform anchors: informed anchor proposals adapt on the chain's history, and two chains
with different histories would then not share a kernel (nor would a chain keep one kernel).
"""

from __future__ import annotations

import numpy as np

from .. import _checks
from ..families.kernels import has_network
from ..samplers.pgsm import PGSMKernel, pgsm_random_numbers
from .sweep import ChainState, GibbsSweeps

__all__ = ["GibbsPGSM", "PGSM_DEFAULTS", "pgsm_settings", "refuse_pgsm_network"]

PGSM_DEFAULTS = {"moves": 1, "num_particles": 20, "resample_threshold": 0.5, "num_anchors": 2, "annealed": True,
                 "anchor_proposal": "uniform"}


def refuse_pgsm_network(pack, owner: str) -> None:
    """Raise unless the pack is free of network likelihoods: the PGSM moves read per-block
    statistics only (the coupled Gibbs sweeps alone do support networks)."""
    if has_network(pack):
        raise NotImplementedError(
            f"{owner}: PGSM moves (pgsm=) do not support the network likelihood (BetaBernoulliNetwork, family "
            "NETWORK), which is not separable over blocks; leave pgsm=None: the coupled Gibbs sweeps alone support "
            "it")


def pgsm_settings(pgsm, n: int | None = None) -> dict | None:
    """Validated PGSM settings from None (no PGSM), a number of moves per iteration, or a dict of
    keys of :data:`PGSM_DEFAULTS` (missing keys take the defaults). ``n``: number of items, to
    check ``num_anchors``."""
    if pgsm is None:
        return None
    if isinstance(pgsm, (bool, np.bool_)) or not isinstance(pgsm, (int, np.integer, dict)):
        raise TypeError(f"pgsm must be None, a number of moves per iteration or a dict of settings, got {pgsm!r}")
    given = {"moves": pgsm} if not isinstance(pgsm, dict) else dict(pgsm)
    unknown = sorted(set(given) - set(PGSM_DEFAULTS), key=str)
    if unknown:
        raise ValueError(f"unknown PGSM setting(s) {unknown}; known: {sorted(PGSM_DEFAULTS)}")
    s = {**PGSM_DEFAULTS, **given}
    owner = "pgsm"
    s["moves"] = _checks.integer("moves", s["moves"], low=1, owner=owner)
    s["num_particles"] = _checks.integer("num_particles", s["num_particles"], low=2, owner=owner)
    s["num_anchors"] = _checks.integer("num_anchors", s["num_anchors"], low=2, owner=owner)
    if n is not None and s["num_anchors"] > n:
        raise ValueError(f"pgsm num_anchors ({s['num_anchors']}) exceeds the number of items ({n})")
    s["resample_threshold"] = _checks.probability("resample_threshold", s["resample_threshold"], owner=owner)
    s["annealed"] = _checks.boolean("annealed", s["annealed"], owner=owner)
    if s["anchor_proposal"] != "uniform":
        raise ValueError(f"coupled PGSM moves need anchor_proposal='uniform', got {s['anchor_proposal']!r}: "
                         "informed proposals adapt on each chain's history, so two chains would not share "
                         "one kernel")
    return s


class GibbsPGSM:
    """Per iteration: one coupled Gibbs sweep, then ``moves`` PGSM moves with common random numbers.

    Same interface as :class:`~.sweep.GibbsSweeps` (``start``, ``random_numbers``, ``sweep``,
    ``coupled_sweep``, ``intersections``, ``distance``), so :func:`~.unbiased.run_pair` takes
    either. The chain states are rebuilt from the labels after the moves (O(n) per iteration).

    Parameters
    ----------
    gibbs : GibbsSweeps
        The Gibbs sweeps and their coupling; its model is the PGSM moves' model.
    moves, num_particles, resample_threshold, num_anchors, annealed, anchor_proposal :
        See :func:`pgsm_settings`; ``anchor_proposal`` must be "uniform".
    """

    def __init__(self, gibbs: GibbsSweeps, moves=1, num_particles=20, resample_threshold=0.5, num_anchors=2,
                 annealed=True, anchor_proposal="uniform"):
        if not isinstance(gibbs, GibbsSweeps):
            raise TypeError(f"GibbsPGSM: gibbs must be a GibbsSweeps, got {type(gibbs).__name__}")
        refuse_pgsm_network(gibbs.pack, "GibbsPGSM")
        s = pgsm_settings(dict(moves=moves, num_particles=num_particles, resample_threshold=resample_threshold,
                               num_anchors=num_anchors, annealed=annealed, anchor_proposal=anchor_proposal), gibbs.n)
        self.gibbs = gibbs
        self.n = gibbs.n
        self.moves = s["moves"]
        self.pgsm = PGSMKernel(gibbs.pack, gibbs.prior_code, gibbs.prior_params, s["num_particles"],
                               s["resample_threshold"], s["num_anchors"], s["annealed"])

    def start(self, labels) -> ChainState:
        return self.gibbs.start(labels)

    def random_numbers(self, rng: np.random.Generator):
        """(Gibbs sweep's randomness, [(anchors, seed) per PGSM move])."""
        sweep = self.gibbs.random_numbers(rng)
        return sweep, [pgsm_random_numbers(rng, self.n, self.pgsm.num_anchors) for _ in range(self.moves)]

    def _moves(self, state: ChainState, moves) -> None:
        """The PGSM moves, then the state rebuilt in place from the new labels."""
        self.gibbs._state(state, "GibbsPGSM")
        if len(moves) != self.moves:
            raise ValueError(f"GibbsPGSM: need the randomness of {self.moves} PGSM move(s), got {len(moves)}")
        labels = state.labels()
        for r in moves:
            labels = self.pgsm.move(labels, r)[0]
        fresh = self.gibbs.start(labels)
        for name in ChainState.__slots__:
            setattr(state, name, getattr(fresh, name))

    def sweep(self, state: ChainState, randomness) -> None:
        """One single-chain iteration, in place."""
        self.gibbs.sweep(state, randomness[0])
        self._moves(state, randomness[1])

    def coupled_sweep(self, x: ChainState, y: ChainState, inter: np.ndarray, randomness) -> np.ndarray:
        """One coupled iteration of both chains, in place; returns their new intersection table."""
        self.gibbs.coupled_sweep(x, y, inter, randomness[0])
        self._moves(x, randomness[1])
        self._moves(y, randomness[1])
        return self.intersections(x, y)

    def intersections(self, x: ChainState, y: ChainState) -> np.ndarray:
        return self.gibbs.intersections(x, y)

    distance = staticmethod(GibbsSweeps.distance)
