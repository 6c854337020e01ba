"""Credible balls around a clustering estimate (Wade & Ghahramani 2018, "Bayesian cluster
analysis: point estimation and credible balls", Bayesian Analysis 13, 559-626; R package
``mcclust.ext``, ``credibleball``).

The credible ball of level 1 − α around an estimate ĉ under a distance d (VI or Binder) is the
smallest ball B = {c : d(ĉ, c) <= ε} with posterior probability at least 1 − α. With (weighted)
draws, ε is the smallest distance to a draw such that the draws within it carry weight >= level:
with S equally weighted draws, the ⌈level · S⌉-th smallest distance, as in mcclust.ext
(a relative slack of 1e-12 absorbs rounding in level · S). The ball holds every draw with d <= ε
(ties at ε included; distances within a relative 1e-12 count as equal). Its bounds, among the
partitions of the draws in the ball:

* **upper vertical bound**: the partitions with the fewest blocks, and among those the farthest
  from ĉ;
* **lower vertical bound**: the partitions with the most blocks, the farthest from ĉ;
* **horizontal bound**: the partitions farthest from ĉ (at distance ε).

Each bound may be several partitions (ties); the first (in draw order) is returned as the
bound, and ``n_*`` says how many distinct partitions tie. omARI is not a metric and is not
offered (as in mcclust.ext).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .draws import LabelDraws
from .losses import BINDER, VI, pair_losses

__all__ = ["CredibleBall", "BALL_LOSSES", "credible_ball_from_draws"]

BALL_LOSSES = ("vi", "binder")
_TIE = 1e-12  # distances this close (relative) are equal: the same VI summed in another order


@dataclass(frozen=True)
class CredibleBall:
    """A credible ball: ``radius`` (ε, in the units of ``loss``), ``probability`` (the posterior
    weight of the draws inside, >= ``level``), the ``estimate`` it is centred on, and its bounds
    ``upper_vertical``, ``lower_vertical``, ``horizontal`` (canonical labels) with their
    distances to the estimate (``*_distance``), numbers of blocks (``*_clusters``) and numbers of
    distinct tied partitions (``n_*``)."""

    estimate: np.ndarray
    loss: str
    level: float
    radius: float
    probability: float
    upper_vertical: np.ndarray
    lower_vertical: np.ndarray
    horizontal: np.ndarray
    upper_vertical_distance: float
    lower_vertical_distance: float
    horizontal_distance: float
    n_upper_vertical: int
    n_lower_vertical: int
    n_horizontal: int

    @property
    def upper_vertical_clusters(self) -> int:
        return int(self.upper_vertical.max()) + 1

    @property
    def lower_vertical_clusters(self) -> int:
        return int(self.lower_vertical.max()) + 1

    @property
    def horizontal_clusters(self) -> int:
        return int(self.horizontal.max()) + 1

    def __repr__(self) -> str:
        return (f"CredibleBall(loss={self.loss!r}, level={self.level}, radius={self.radius:.6g}, "
                f"probability={self.probability:.4g}, clusters: estimate {int(self.estimate.max()) + 1}, "
                f"upper vertical {self.upper_vertical_clusters}, lower vertical {self.lower_vertical_clusters}, "
                f"horizontal {self.horizontal_clusters})")


def _bound(draws: LabelDraws, members: np.ndarray, distance: np.ndarray) -> tuple[int, int]:
    """(row of the first member at the largest distance, number of distinct such partitions)."""
    top = distance[members].max()
    rows = members[distance[members] >= top - _TIE * max(1.0, top)]
    distinct = {draws.labels[r].tobytes() for r in rows}
    return int(rows[0]), len(distinct)


def credible_ball_from_draws(draws: LabelDraws, estimate: np.ndarray, loss: str, level: float) -> CredibleBall:
    """The credible ball of validated draws around a canonical ``estimate`` (checked arguments).

    >>> import numpy as np
    >>> from pymc_partitions.summaries import credible_ball_from_draws, label_draws
    >>> draws = label_draws([[0, 0, 1], [0, 0, 1], [0, 1, 2], [0, 0, 0]])
    >>> ball = credible_ball_from_draws(draws, np.array([0, 0, 1]), "binder", 0.75)
    >>> ball.radius, ball.lower_vertical.tolist()  # 2 disagreeing pairs x 2 / 9
    (0.2222222222222222, [0, 1, 2])
    """
    distance = pair_losses(estimate, draws)[:, VI if loss == "vi" else BINDER]
    order = np.argsort(distance, kind="stable")
    cumulative = np.cumsum(draws.weights[order])
    cut = int(np.searchsorted(cumulative, level * (1.0 - 1e-12)))
    radius = float(distance[order[min(cut, len(order) - 1)]])
    inside = np.flatnonzero(distance <= radius + _TIE * max(1.0, radius))
    k = draws.n_clusters
    fewest = inside[k[inside] == k[inside].min()]
    most = inside[k[inside] == k[inside].max()]
    up, n_up = _bound(draws, fewest, distance)
    low, n_low = _bound(draws, most, distance)
    hor, n_hor = _bound(draws, inside, distance)
    return CredibleBall(
        estimate=np.asarray(estimate, np.int64), loss=loss, level=level, radius=radius,
        probability=float(min(draws.weights[inside].sum(), 1.0)),
        upper_vertical=draws.labels[up].astype(np.int64), lower_vertical=draws.labels[low].astype(np.int64),
        horizontal=draws.labels[hor].astype(np.int64), upper_vertical_distance=float(distance[up]),
        lower_vertical_distance=float(distance[low]), horizontal_distance=float(distance[hor]),
        n_upper_vertical=n_up, n_lower_vertical=n_low, n_horizontal=n_hor)
