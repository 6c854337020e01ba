"""Partition summaries on arrays of label draws, with no PyMC or ArviZ here: co-clustering
probabilities, losses between partitions, SALSO point estimates, credible balls and per-draw
label-invariant quantities. The result-facing functions (``pmp.coclustering``,
``pmp.point_estimate``, ``pmp.credible_ball``, ``pmp.partition_traces``,
``pmp.summarize_clustering``) are in :mod:`pymc_partitions.results.summaries`.
"""

from .coclustering import DEFAULT_MAX_BYTES, coclustering_matrix, coclustering_pairs
from .credible import BALL_LOSSES, CredibleBall, credible_ball_from_draws
from .draws import LabelDraws, label_draws, labels_vector
from .estimate import METHODS, PointEstimate, check_settings, estimate_from_draws
from .losses import LOSSES, draw_summaries, expected_loss, pair_losses, partition_loss

__all__ = [
    "DEFAULT_MAX_BYTES",
    "coclustering_matrix",
    "coclustering_pairs",
    "BALL_LOSSES",
    "CredibleBall",
    "credible_ball_from_draws",
    "LabelDraws",
    "label_draws",
    "labels_vector",
    "METHODS",
    "PointEstimate",
    "check_settings",
    "estimate_from_draws",
    "LOSSES",
    "draw_summaries",
    "expected_loss",
    "pair_losses",
    "partition_loss",
]
