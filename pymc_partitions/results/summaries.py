"""Partition summaries on ``pm.sample`` results (or arrays of label draws): co-clustering
probabilities, Bayes point estimates (SALSO), credible balls, label-invariant traces, and the
``clustering`` group that holds them all. The algorithms are in :mod:`pymc_partitions.summaries`.

Every function takes either a result (``arviz.InferenceData`` or ``xarray.DataTree``) or an array
of label draws, shape ``(draws, n)`` or ``(chains, draws, n)``, in any labelling. For a result,
the partition is ``var_name`` if given; else the ``pmp.Partition`` variable of ``model=`` (or of
the model in context); else the one integer variable whose draws are canonical label vectors
(the rule of :mod:`pymc_partitions.results.reader`). Several candidates, or none, raise an error
naming them.
"""

from __future__ import annotations

import datetime

import numpy as np
import xarray as xr

from .._checks import boolean, choice, integer, real
from ..summaries import (
    BALL_LOSSES,
    DEFAULT_MAX_BYTES,
    LOSSES,
    CredibleBall,
    PointEstimate,
    check_settings,
    coclustering_matrix,
    coclustering_pairs,
    credible_ball_from_draws,
    draw_summaries,
    estimate_from_draws,
    label_draws,
    labels_vector,
)
from ..summaries.coclustering import check_items, check_matrix_size, check_pairs
from ..summaries.estimate import DEFAULT_SEARCH_BYTES
from .reader import add_groups, group_names, is_result, not_a_result_hint, partition_draws, read_label_draws

__all__ = ["coclustering", "point_estimate", "credible_ball", "partition_traces", "summarize_clustering",
           "CLUSTERING_GROUP", "COCLUSTERING_MAX_ITEMS"]

#: Name of the group :func:`summarize_clustering` adds.
CLUSTERING_GROUP = "clustering"
#: The ``clustering`` group stores the co-clustering matrix (float32) up to this many items
#: (4 MB at 1000 items); above it, ask :func:`coclustering` for it.
COCLUSTERING_MAX_ITEMS = 1000

_LOSS_DEFINITIONS = {
    "vi": "variation of information in bits: (sum a log2 a + sum b log2 b - 2 sum c log2 c) / n",
    "binder": "Binder, equal costs: (sum a^2 + sum b^2 - 2 sum c^2) / n^2 (Mirkin distance / n^2)",
    "omari": "one minus the adjusted Rand index (ARI = 1 for equal trivial partitions)",
}


def _dtype(dtype, owner) -> str:
    """"float64" or "float32" (numpy dtypes accepted too)."""
    name = dtype
    if not isinstance(dtype, str):
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = repr(dtype)
    return choice("dtype", name, ("float64", "float32"), owner=owner)


def coclustering(result_or_draws, *, var_name=None, model=None, weights=None, items=None, pairs=None,
                 dtype="float64", max_bytes=DEFAULT_MAX_BYTES) -> xr.DataArray:
    """Posterior co-clustering (similarity) probabilities: P(items i and j in one cluster | data),
    the weighted fraction of draws in which they share a label (labels need not be canonical).

    Parameters
    ----------
    result_or_draws : InferenceData, DataTree or array
        A ``pm.sample`` result, or label draws of shape (draws, n) or (chains, draws, n).
    var_name, model : optional
        Which posterior variable is the partition (see the module docstring).
    weights : array, optional
        Non-negative weight per draw (default equal).
    items : sequence of int, optional
        Only the matrix of these items (in this order).
    pairs : (m, 2) array of int, optional
        Only these pairs: a vector of m probabilities.
    dtype : {"float64", "float32"}
        Of the matrix (float32 halves the memory).
    max_bytes : int
        The n x n matrix is refused (``MemoryError``, naming ``items=`` / ``pairs=``) above this
        size; default 1 GiB (n = 11,585 in float64). Not applied to ``pairs``.

    Returns
    -------
    xarray.DataArray
        dims ``("item", "item_other")`` (a repeated dimension name is not supported by xarray),
        coordinates the item labels of the posterior; with ``pairs``, dim ``"pair"`` with
        coordinates ``item`` and ``item_other``.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_partitions as pmp
    >>> draws = np.array([[0, 0, 1], [0, 1, 1], [3, 3, 3], [0, 0, 1]])
    >>> pmp.coclustering(draws).values
    array([[1.  , 0.75, 0.25],
           [0.75, 1.  , 0.5 ],
           [0.25, 0.5 , 1.  ]])
    >>> float(pmp.coclustering(draws, pairs=[(0, 2)])[0])
    0.25
    """
    owner = "coclustering"
    dtype = _dtype(dtype, owner)
    if items is not None and pairs is not None:
        raise ValueError(f"{owner}: pass items= or pairs=, not both")
    draws, source = read_label_draws(result_or_draws, var_name, model, weights, owner)
    n = draws.n_items
    attrs = {"description": "posterior probability that two items are in the same cluster",
             "draws": draws.n_draws}
    if pairs is not None:
        p = check_pairs(pairs, n, owner)
        values = coclustering_pairs(draws, p).astype(dtype)
        return xr.DataArray(values, dims=("pair",), name="coclustering", attrs=attrs,
                            coords={"item": ("pair", source.items[p[:, 0]]),
                                    "item_other": ("pair", source.items[p[:, 1]])})
    chosen = None if items is None else check_items(items, n, owner)
    m = n if chosen is None else chosen.size
    check_matrix_size(m, dtype, max_bytes, owner)
    matrix = coclustering_matrix(draws, chosen, dtype=np.dtype(dtype))
    coords = source.items if chosen is None else source.items[chosen]
    return xr.DataArray(matrix, dims=("item", "item_other"), coords={"item": coords, "item_other": coords},
                        name="coclustering", attrs=attrs)


def point_estimate(result_or_draws, loss: str = "vi", *, method: str = "salso", var_name=None, model=None,
                   weights=None, max_clusters: int = 0, runs: int = 16, max_zealous_attempts: int = 10,
                   prob_sequential_allocation: float = 0.5, max_scans=None, seconds=None, threads=None,
                   random_seed=None, max_bytes=DEFAULT_SEARCH_BYTES) -> PointEstimate:
    """The clustering that minimises the posterior expected ``loss`` (a Bayes point estimate).

    Losses (see :mod:`pymc_partitions.summaries.losses`): ``"vi"`` (variation of information,
    bits; the default, as in salso), ``"binder"`` (equal costs, over n²), ``"omari"`` (one minus
    the adjusted Rand index). The expected loss is the weighted mean over the draws, computed from
    contingency tables: no n x n matrix.

    ``method="salso"`` runs the SALSO search (Dahl, Johnson & Müller 2022; defaults as the R
    package salso): ``runs`` runs from sequential allocation (probability
    ``prob_sequential_allocation``) or random labels, sweetening scans (at most ``max_scans``,
    default until nothing moves) and ``max_zealous_attempts`` zealous updates each, on
    ``threads`` threads (default: all cores), within ``seconds`` (default: no limit) and with at
    most ``max_clusters`` clusters (0: the largest number among the draws). Same
    ``random_seed``, same result whatever ``threads`` (unless ``seconds`` cuts the search
    short). ``method="draws"``: the draw with the lowest expected loss (the classic baseline;
    costs O(distinct draws² · n)). ``max_bytes`` caps the search's contingency counts (see
    :mod:`pymc_partitions.summaries.salso`).

    Returns a :class:`~pymc_partitions.summaries.PointEstimate`: ``.labels`` (canonical),
    ``.expected_loss``, ``.loss``, ``.method``, ``.stats``.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_partitions as pmp
    >>> draws = np.array([[0, 0, 1, 1], [0, 0, 1, 2], [5, 5, 7, 7]])
    >>> est = pmp.point_estimate(draws, loss="vi", random_seed=1)
    >>> est.labels
    array([0, 0, 1, 1])
    >>> round(est.expected_loss, 4)  # VI 0.5 bit to the second draw, 0 to the others
    0.1667
    """
    owner = "point_estimate"
    choice("loss", loss, LOSSES, owner=owner)
    settings = check_settings(owner, max_clusters=max_clusters, runs=runs, max_zealous_attempts=max_zealous_attempts,
                              prob_sequential_allocation=prob_sequential_allocation, max_scans=max_scans,
                              seconds=seconds, threads=threads)
    draws, _ = read_label_draws(result_or_draws, var_name, model, weights, owner, merge=True)
    return estimate_from_draws(draws, loss, method, settings, random_seed=random_seed, max_bytes=max_bytes,
                               owner=owner)


def _estimate_labels(estimate, n, owner) -> np.ndarray:
    if isinstance(estimate, PointEstimate):
        return estimate.labels
    return labels_vector(estimate, n, what="estimate", owner=owner)


def credible_ball(result_or_draws, estimate, loss: str = "vi", level: float = 0.95, *, var_name=None, model=None,
                  weights=None) -> CredibleBall:
    """The credible ball around ``estimate`` (Wade & Ghahramani 2018): the smallest ball
    {c : d(estimate, c) <= radius} holding posterior probability >= ``level``, under the
    ``loss`` distance (``"vi"`` or ``"binder"``), with its upper vertical, lower vertical and
    horizontal bounds (see :mod:`pymc_partitions.summaries.credible`).

    ``estimate``: labels (any labelling) or a :class:`~pymc_partitions.summaries.PointEstimate`.
    Returns a :class:`~pymc_partitions.summaries.CredibleBall` (``.radius``, ``.probability``,
    ``.upper_vertical``, ``.lower_vertical``, ``.horizontal``, their distances and ties).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_partitions as pmp
    >>> draws = np.array([[0, 0, 1, 1]] * 8 + [[0, 0, 0, 1], [0, 1, 2, 3]])
    >>> ball = pmp.credible_ball(draws, [0, 0, 1, 1], loss="vi", level=0.9)
    >>> ball.radius, ball.lower_vertical.tolist()  # 9 of 10 draws within 1 bit, the finest: singletons
    (1.0, [0, 1, 2, 3])
    """
    owner = "credible_ball"
    loss = choice("loss", loss, BALL_LOSSES, owner=owner)
    level = real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, owner=owner)
    draws, _ = read_label_draws(result_or_draws, var_name, model, weights, owner, merge=True)
    est = _estimate_labels(estimate, draws.n_items, owner)
    if est.size != draws.n_items:
        raise ValueError(f"{owner}: estimate has {est.size} labels but the draws have {draws.n_items} items")
    return credible_ball_from_draws(draws, est, loss, level)


def partition_traces(result_or_draws, reference=None, *, var_name=None, model=None) -> xr.Dataset:
    """Label-invariant quantities per draw, to judge convergence with ``az.ess`` / ``az.rhat``:
    ``n_clusters``, ``largest_cluster`` (size of the largest cluster) and, given a
    ``reference`` clustering (labels or a point estimate), ``rand``, ``ari`` and ``vi`` (bits)
    to it.

    Returns an ``xarray.Dataset`` with dims ``(chain, draw)`` (one chain for (draws, n) arrays).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_partitions as pmp
    >>> draws = np.array([[[0, 0, 1], [0, 1, 2]], [[0, 0, 0], [0, 0, 1]]])  # 2 chains x 2 draws
    >>> traces = pmp.partition_traces(draws, reference=[0, 0, 1])
    >>> traces["n_clusters"].values.tolist(), traces["ari"].values[0].tolist()
    ([[2, 3], [1, 2]], [1.0, 0.0])
    """
    owner = "partition_traces"
    draws, source = read_label_draws(result_or_draws, var_name, model, None, owner)
    ref = None if reference is None else _estimate_labels(reference, draws.n_items, owner)
    shape = (source.chains.size, source.draws.size)
    data = {k: (("chain", "draw"), v.reshape(shape)) for k, v in draw_summaries(draws, ref).items()}
    return xr.Dataset(data, coords={"chain": source.chains, "draw": source.draws})


def summarize_clustering(result, *, var_name=None, model=None, loss: str = "vi", level: float = 0.95,
                         ball_loss=None, method: str = "salso", coclustering_max_items: int = COCLUSTERING_MAX_ITEMS,
                         max_clusters: int = 0, runs: int = 16, max_zealous_attempts: int = 10,
                         prob_sequential_allocation: float = 0.5, max_scans=None, seconds=None, threads=None,
                         random_seed=None, overwrite: bool = False):
    """Add a ``clustering`` group to a ``pm.sample`` result: the point estimate, its expected
    loss, the credible ball and its bounds, label-invariant traces, and the co-clustering matrix
    when there are at most ``coclustering_max_items`` items.

    Search settings and ``loss`` as in :func:`point_estimate`; ``level`` and ``ball_loss`` (the
    credible ball's distance; default ``loss``, or ``"vi"`` when ``loss="omari"``) as in
    :func:`credible_ball`. Returns a copy of ``result`` (same type) with the group; it survives
    ``pmp.save`` / ``pmp.load``.

    Group contents: ``estimate`` (item), ``expected_loss``, ``credible_ball_radius``,
    ``credible_ball_probability``, ``upper_vertical`` / ``lower_vertical`` / ``horizontal``
    (item) with ``*_distance``, the traces ``n_clusters``, ``largest_cluster``,
    ``vi_to_estimate`` and ``ari_to_estimate`` (chain, draw), and ``coclustering`` (item,
    item_other; float32). Attributes: ``method``, ``loss``, ``loss_definition``, ``ball_loss``,
    ``level``, ``partition_var``, ``partition_source``, ``settings``, ``search`` (statistics),
    ``pymc_partitions_version``, ``created_at``.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.array([-5.1, -4.9, -5.0, 5.0, 5.2, 4.8])
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=len(y))
    ...     _ = pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=0.5, observed=y)
    ...     idata = pm.sample(draws=50, tune=10, chains=1, random_seed=1, progressbar=False,
    ...                       compute_convergence_checks=False)
    >>> idata = pmp.summarize_clustering(idata, random_seed=1)
    >>> from pymc_partitions.pymc.compat import posterior_dataset
    >>> posterior_dataset(idata, "clustering")["estimate"].values
    array([0, 0, 0, 1, 1, 1])
    """
    owner = "summarize_clustering"
    if not is_result(result):
        raise TypeError(f"{owner}: expected a pm.sample result (InferenceData or DataTree), got "
                        f"{type(result).__name__}" + (not_a_result_hint(result) or
                                                      "; for arrays of draws use point_estimate and credible_ball"))
    overwrite = boolean("overwrite", overwrite, owner=owner)
    if CLUSTERING_GROUP in group_names(result) and not overwrite:
        raise ValueError(f"{owner}: the result already has a {CLUSTERING_GROUP!r} group; pass overwrite=True")
    loss = choice("loss", loss, LOSSES, owner=owner)
    ball_loss = (loss if loss in BALL_LOSSES else "vi") if ball_loss is None else choice(
        "ball_loss", ball_loss, BALL_LOSSES, owner=owner)
    level = real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, owner=owner)
    coclustering_max_items = integer("coclustering_max_items", coclustering_max_items, low=0, owner=owner)
    random_seed = None if random_seed is None else integer("random_seed", random_seed, low=0, owner=owner)
    settings = check_settings(owner, max_clusters=max_clusters, runs=runs, max_zealous_attempts=max_zealous_attempts,
                              prob_sequential_allocation=prob_sequential_allocation, max_scans=max_scans,
                              seconds=seconds, threads=threads)
    values, source = partition_draws(result, var_name, model, owner)
    draws = label_draws(values, merge=True, owner=owner)
    est = estimate_from_draws(draws, loss, method, settings, random_seed=random_seed, owner=owner)
    ball = credible_ball_from_draws(draws, est.labels, ball_loss, level)
    every = label_draws(values, owner=owner)
    traces = draw_summaries(every, est.labels)
    shape = values.shape[:2]
    item = ("item",)
    data = {
        "estimate": (item, est.labels),
        "expected_loss": ((), est.expected_loss),
        "credible_ball_radius": ((), ball.radius),
        "credible_ball_probability": ((), ball.probability),
        "upper_vertical": (item, ball.upper_vertical),
        "lower_vertical": (item, ball.lower_vertical),
        "horizontal": (item, ball.horizontal),
        "upper_vertical_distance": ((), ball.upper_vertical_distance),
        "lower_vertical_distance": ((), ball.lower_vertical_distance),
        "horizontal_distance": ((), ball.horizontal_distance),
        "n_clusters": (("chain", "draw"), traces["n_clusters"].reshape(shape)),
        "largest_cluster": (("chain", "draw"), traces["largest_cluster"].reshape(shape)),
        "vi_to_estimate": (("chain", "draw"), traces["vi"].reshape(shape)),
        "ari_to_estimate": (("chain", "draw"), traces["ari"].reshape(shape)),
    }
    if draws.n_items <= coclustering_max_items:
        data["coclustering"] = (("item", "item_other"), coclustering_matrix(draws, dtype=np.float32))
    from .._version import __version__  # noqa: PLC0415

    settings_attr = {"runs": settings.runs, "max_clusters": settings.max_clusters,
                     "max_zealous_attempts": settings.max_zealous_attempts,
                     "prob_sequential_allocation": settings.prob_sequential_allocation,
                     "max_scans": settings.max_scans, "seconds": settings.seconds, "threads": settings.threads,
                     "random_seed": random_seed}
    attrs = {"method": est.method, "loss": loss, "loss_definition": _LOSS_DEFINITIONS[loss], "ball_loss": ball_loss,
             "level": level, "partition_var": source.var_name, "partition_source": source.how,
             "settings": settings_attr, "search": est.stats, "pymc_partitions_version": __version__,
             "created_at": datetime.datetime.now().isoformat()}
    coords = {"item": source.items, "chain": source.chains, "draw": source.draws}
    if "coclustering" in data:
        coords["item_other"] = source.items
    group = xr.Dataset(data, coords=coords, attrs=attrs)
    return add_groups(result, {CLUSTERING_GROUP: group}, overwrite=overwrite)
