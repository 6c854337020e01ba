"""Functions h of a partition for :func:`pymc_partitions.sample_unbiased` (``pmp.h``).

Re-exported from :mod:`pymc_partitions.coupling.functions`, where they are defined, so that
``pmp.h.n_clusters`` and ``from pymc_partitions.h import n_clusters`` both work.
"""

from .coupling.functions import CoClustering, LargestProportions, PredictiveDensity, largest_proportion, n_clusters

__all__ = ["n_clusters", "largest_proportion", "LargestProportions", "CoClustering", "PredictiveDensity"]
