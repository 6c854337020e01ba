"""Bayes point estimates of a partition: the clustering minimising the posterior expected loss,
found by the SALSO search (:mod:`.salso`) or, as the classic baseline, among the draws."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._checks import choice, integer, probability, real
from .draws import LabelDraws
from .losses import LOSSES, draw_expected_losses, pair_losses
from .salso import SalsoSettings, candidate_labels, run_keys, salso_search, table_bytes, thread_count

__all__ = ["PointEstimate", "METHODS", "check_settings", "estimate_from_draws", "DEFAULT_SEARCH_BYTES"]

METHODS = ("salso", "draws")
#: Largest total size of the search's contingency rows (all threads) before a run is refused.
DEFAULT_SEARCH_BYTES = 2**30


_REPR_SIZES = 12  # cluster sizes shown by PointEstimate's repr, then how many more


@dataclass(frozen=True)
class PointEstimate:
    """A point estimate of the partition.

    ``labels``: canonical int64 labels (blocks numbered in order of first appearance);
    ``expected_loss``: its posterior expected ``loss`` under the draws (recomputed from the draws
    after the search); ``method``: ``"salso"`` or ``"draws"``; ``stats``: how it was found
    (for SALSO: runs completed / truncated / skipped, the best run's initialisation, scans,
    zealous updates and expected loss before them, the expected loss of every run, seconds,
    threads, the seed's entropy).
    """

    labels: np.ndarray
    expected_loss: float
    loss: str
    method: str
    stats: dict = field(default_factory=dict)

    @property
    def n_clusters(self) -> int:
        return int(self.labels.max()) + 1

    def __repr__(self) -> str:
        sizes = np.bincount(self.labels)
        shown = ", ".join(str(v) for v in sizes[:_REPR_SIZES])
        if sizes.size > _REPR_SIZES:
            shown += f", ... ({sizes.size - _REPR_SIZES} more)"
        return (f"PointEstimate(loss={self.loss!r}, method={self.method!r}, expected_loss={self.expected_loss:.6g}, "
                f"n_clusters={self.n_clusters}, sizes=[{shown}])")


def check_settings(owner: str, *, max_clusters=0, runs=16, max_zealous_attempts=10, prob_sequential_allocation=0.5,
                   max_scans=None, seconds=None, threads=None) -> SalsoSettings:
    """The search settings, each checked (``None``: no limit / all cores).

    >>> from pymc_partitions.summaries import check_settings
    >>> check_settings("demo", runs=4, seconds=2).runs
    4
    """
    return SalsoSettings(
        max_clusters=integer("max_clusters", max_clusters, low=0, owner=owner),
        runs=integer("runs", runs, low=1, owner=owner),
        max_zealous_attempts=integer("max_zealous_attempts", max_zealous_attempts, low=0, owner=owner),
        prob_sequential_allocation=probability("prob_sequential_allocation", prob_sequential_allocation, owner=owner),
        max_scans=None if max_scans is None else integer("max_scans", max_scans, low=0, owner=owner),
        seconds=None if seconds is None else real("seconds", seconds, low=0.0, low_open=True, owner=owner),
        threads=None if threads is None else integer("threads", threads, low=1, owner=owner),
    )


def _seed_sequence(random_seed, owner: str) -> np.random.SeedSequence:
    if random_seed is None:
        return np.random.SeedSequence()
    if isinstance(random_seed, np.random.SeedSequence):
        return random_seed
    return np.random.SeedSequence(integer("random_seed", random_seed, low=0, owner=owner))


def estimate_from_draws(draws: LabelDraws, loss: str = "vi", method: str = "salso",
                        settings: SalsoSettings | None = None, random_seed=None, max_bytes=DEFAULT_SEARCH_BYTES,
                        owner: str = "point_estimate") -> PointEstimate:
    """The point estimate under ``loss`` for validated draws (identical draws best merged).

    >>> from pymc_partitions.summaries import check_settings, estimate_from_draws, label_draws
    >>> draws = label_draws([[0, 0, 1, 1], [0, 0, 1, 2], [0, 0, 1, 1]], merge=True)
    >>> est = estimate_from_draws(draws, "binder", settings=check_settings("demo", runs=4), random_seed=0)
    >>> est.labels.tolist(), round(est.expected_loss, 4)
    ([0, 0, 1, 1], 0.0417)
    """
    loss = choice("loss", loss, LOSSES, owner=owner)
    method = choice("method", method, METHODS, owner=owner)
    code = LOSSES.index(loss)
    if method == "draws":
        return _best_draw(draws, loss, code)
    settings = settings or SalsoSettings()
    seeds = _seed_sequence(random_seed, owner)
    max_bytes = integer("max_bytes", max_bytes, low=1, owner=owner)
    kc = candidate_labels(draws, settings)
    need = table_bytes(draws, kc) * thread_count(settings)
    if need > max_bytes:
        raise MemoryError(
            f"{owner}: the search would keep {need / 2**20:.0f} MiB of contingency counts (draws x their blocks x "
            f"max_clusters = {int(draws.n_clusters.sum())} x {kc}, per thread), above max_bytes = "
            f"{max_bytes / 2**20:.0f} MiB: pass a smaller max_clusters, fewer (thinned) draws, fewer threads, or "
            "raise max_bytes")
    done, stats = salso_search(draws, code, settings, run_keys(seeds, settings.runs))
    best = done[0]
    expected = float(pair_losses(best.labels, draws)[:, code] @ draws.weights)
    stats.update(best_run=best.run, initialization=best.init, scans=best.scans, zealous_attempts=best.zealous_attempts,
                 zealous_accepts=best.zealous_accepts, loss_before_zealous=best.swept_loss,
                 seed_entropy=str(seeds.entropy),
                 draws_used=draws.n_draws)
    return PointEstimate(labels=best.labels, expected_loss=expected, loss=loss, method="salso", stats=stats)


def _best_draw(draws: LabelDraws, loss: str, code: int) -> PointEstimate:
    """The draw with the lowest expected loss (every pair of distinct draws compared once:
    O(distinct² · n / 2))."""
    values = draw_expected_losses(draws, code)
    best = int(np.argmin(values))
    stats = {"candidates": draws.n_draws, "draw_index": int(draws.index[best])}
    return PointEstimate(labels=draws.labels[best].astype(np.int64), expected_loss=float(values[best]), loss=loss,
                         method="draws", stats=stats)
