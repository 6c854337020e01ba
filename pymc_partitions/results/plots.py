"""Plots of partition summaries (matplotlib). Each function draws on ``ax`` / ``axes`` when given
(else on a new figure) and returns what it drew on, as ArviZ's plots do."""

from __future__ import annotations

import numpy as np

from .._checks import boolean
from ..summaries import CredibleBall, PointEstimate, labels_vector
from .reader import group_names, is_result, not_a_result_hint, posterior_dataset, read_label_draws
from .summaries import CLUSTERING_GROUP, coclustering, point_estimate

__all__ = ["plot_coclustering", "plot_n_clusters", "plot_clustering", "plot_credible_ball"]


def _colors(k: int):
    import matplotlib.pyplot as plt  # noqa: PLC0415

    if k <= 10:
        return [plt.get_cmap("tab10")(i) for i in range(k)]
    if k <= 20:
        return [plt.get_cmap("tab20")(i) for i in range(k)]
    return [plt.get_cmap("turbo")(v) for v in np.linspace(0.05, 0.95, k)]


def _axes(ax, figsize):
    import matplotlib.pyplot as plt  # noqa: PLC0415

    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _group(result):
    if is_result(result) and CLUSTERING_GROUP in group_names(result):
        return posterior_dataset(result, CLUSTERING_GROUP)
    return None


def _matrix(matrix, owner) -> np.ndarray:
    m = np.asarray(getattr(matrix, "values", matrix))
    if m.dtype == object or not np.issubdtype(m.dtype, np.number) or np.iscomplexobj(m):
        raise TypeError(f"{owner}: matrix must hold probabilities, got dtype {m.dtype}")
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.size == 0:
        raise ValueError(f"{owner}: matrix must be a square (n, n) co-clustering matrix, got shape {m.shape}")
    if not np.all(np.isfinite(m)) or m.min() < 0 or m.max() > 1:
        raise ValueError(f"{owner}: matrix must hold probabilities in [0, 1]")
    return m


def _block_order(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Items ordered by cluster (largest cluster first, ties by label), ascending within; and
    the cumulative cluster sizes in that order."""
    sizes = np.bincount(labels)
    rank = np.argsort(-sizes, kind="stable")
    position = np.empty_like(rank)
    position[rank] = np.arange(rank.size)
    order = np.lexsort((np.arange(labels.size), position[labels]))
    return order, np.cumsum(sizes[rank])


def plot_coclustering(result_or_draws=None, estimate=None, *, matrix=None, var_name=None, model=None, ax=None,
                      cmap: str = "Blues", boundaries: bool = True, colorbar: bool = True, random_seed=0,
                      figsize=(5.2, 4.4)):
    """Heatmap of the co-clustering probabilities, items ordered by the point estimate's clusters
    (largest first), with the clusters' boundaries drawn.

    The matrix and the estimate come from, in order: the arguments ``matrix`` / ``estimate``
    (labels or a point estimate); the result's ``clustering`` group (``pmp.summarize_clustering``);
    else they are computed from ``result_or_draws`` (``pmp.coclustering``, and
    ``pmp.point_estimate`` with ``random_seed``). Returns the axes.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_partitions as pmp
    >>> draws = np.array([[0, 0, 1, 1, 2]] * 3 + [[0, 1, 1, 1, 2]])
    >>> ax = pmp.plot_coclustering(draws)
    >>> ax.get_title()
    'Co-clustering probabilities'
    """
    owner = "plot_coclustering"
    boundaries = boolean("boundaries", boundaries, owner=owner)
    colorbar = boolean("colorbar", colorbar, owner=owner)
    group = _group(result_or_draws)
    if matrix is not None:
        m = _matrix(matrix, owner)
    elif group is not None and "coclustering" in group:
        m = np.asarray(group["coclustering"].values)
    elif result_or_draws is not None:
        m = np.asarray(coclustering(result_or_draws, var_name=var_name, model=model).values)
    else:
        raise ValueError(f"{owner}: pass a result, draws, or matrix=")
    if estimate is None:
        if group is not None:
            estimate = group["estimate"].values
        elif result_or_draws is not None:
            estimate = point_estimate(result_or_draws, var_name=var_name, model=model, random_seed=random_seed)
        else:
            raise ValueError(f"{owner}: with matrix= alone, pass estimate= (labels) to order the items")
    labels = estimate.labels if isinstance(estimate, PointEstimate) else labels_vector(
        estimate, m.shape[0], what="estimate", owner=owner)
    if labels.size != m.shape[0]:
        raise ValueError(f"{owner}: estimate has {labels.size} labels but the matrix is {m.shape[0]} x {m.shape[0]}")
    order, ends = _block_order(labels)
    ax = _axes(ax, figsize)
    image = ax.imshow(m[np.ix_(order, order)], vmin=0.0, vmax=1.0, cmap=cmap, interpolation="nearest")
    if boundaries:
        for end in ends[:-1]:
            ax.axhline(end - 0.5, color="black", lw=0.8)
            ax.axvline(end - 0.5, color="black", lw=0.8)
    ax.set(title="Co-clustering probabilities", xlabel="items, ordered by the point estimate's clusters",
           ylabel="items")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="P(same cluster | data)")
    return ax


def plot_n_clusters(result_or_draws, *, var_name=None, model=None, ax=None, figsize=(5.0, 3.4)):
    """Posterior of the number of clusters: bars for all draws together, dots per chain (they
    should agree when the chains have converged). Returns the axes.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_partitions as pmp
    >>> ax = pmp.plot_n_clusters(np.array([[0, 0, 1], [0, 1, 2], [0, 0, 1], [0, 0, 0]]))
    >>> [round(float(b.get_height()), 2) for b in ax.patches]  # P(K = 1), P(K = 2), P(K = 3)
    [0.25, 0.5, 0.25]
    """
    owner = "plot_n_clusters"
    draws, source = read_label_draws(result_or_draws, var_name, model, None, owner)
    k = draws.n_clusters.reshape(source.chains.size, source.draws.size)
    values = np.arange(k.min(), k.max() + 1)
    ax = _axes(ax, figsize)
    overall = np.array([np.mean(k == v) for v in values])
    ax.bar(values, overall, color="C0", alpha=0.6, label="all chains")
    if k.shape[0] > 1:
        for c in range(k.shape[0]):
            ax.plot(values, [np.mean(k[c] == v) for v in values], "o", ms=4, color="C1", alpha=0.7,
                    label="per chain" if c == 0 else None)
    ax.set(title="Number of clusters", xlabel="K", ylabel="posterior probability")
    ax.set_xticks(values if values.size <= 20 else values[:: int(np.ceil(values.size / 20))])
    ax.legend(frameon=False)
    return ax


def _plot_data(data, n, owner, project=True) -> tuple[np.ndarray, list[str]]:
    """(the data as (n, 1) or (n, 2) floats, their axis names): one or two columns as they are,
    more projected on their first two principal components (of the centred data, signs fixed so
    that each component's largest loading is positive), named with the share of variance each
    keeps; or, without ``project``, refused."""
    x = np.asarray(data)
    if x.dtype == object or not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise TypeError(f"{owner}: data must be real numbers, got dtype {x.dtype}")
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"{owner}: data must have shape (n,) or (n, D) with D >= 1, got {np.asarray(data).shape}")
    if x.shape[0] != n:
        raise ValueError(f"{owner}: data has {x.shape[0]} rows but the clustering has {n} items")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{owner}: data hold NaN or infinite values")
    x = x.astype(float)
    if x.shape[1] > 2 and not project:
        raise ValueError(f"{owner}: data must have shape (n,), (n, 1) or (n, 2), got {x.shape}")
    if x.shape[1] == 1:
        return x, ["x"]
    if x.shape[1] == 2:
        return x, ["x[:, 0]", "x[:, 1]"]
    centred = x - x.mean(axis=0)
    _, singular, components = np.linalg.svd(centred, full_matrices=False)
    components = components[:2]
    components *= np.where(components[np.arange(2), np.abs(components).argmax(axis=1)] < 0, -1.0, 1.0)[:, None]
    total = float(np.sum(singular**2))
    share = singular[:2] ** 2 / total if total > 0 else np.zeros(2)
    names = [f"PC {i + 1} ({share[i]:.0%} of the variance of {x.shape[1]} columns)" for i in range(2)]
    return centred @ components.T, names


def _draw_clustering(ax, x, labels, title, size, names):
    k = int(labels.max()) + 1
    colors = _colors(k)
    if x.shape[1] == 2:
        for b in range(k):
            pts = x[labels == b]
            ax.scatter(pts[:, 0], pts[:, 1], s=size, color=colors[b], edgecolor="none")
        ax.set(xlabel=names[0], ylabel=names[1])
    else:  # one row per cluster, clusters ordered by their mean
        means = np.array([x[labels == b, 0].mean() for b in range(k)])
        row = np.empty(k, int)
        row[np.argsort(means)] = np.arange(k)
        for b in range(k):
            pts = x[labels == b, 0]
            ax.scatter(pts, np.full(pts.size, row[b]), s=size, color=colors[b], edgecolor="none")
        ax.set(xlabel=names[0], ylabel="cluster (by mean)", yticks=range(k))
    ax.set_title(title)


def _refuse_results(owner, **arguments):
    """A pm.sample result (or MultiTrace) where data or a clustering is expected: say which argument
    it is and what to pass instead (these plots show one clustering on the data)."""
    for name, value in arguments.items():
        if is_result(value) or not_a_result_hint(value):
            expected = {"data": "the data (an array of points)", "ball": "the result of pmp.credible_ball",
                        "estimate": "labels or a point estimate"}[name]
            raise TypeError(f"{owner}: {name} is a pm.sample result ({type(value).__name__}), not {expected}. The call "
                            f"is {owner}(data, {'ball' if 'ball' in arguments else 'estimate'}): e.g. {owner}(y, "
                            + ("pmp.credible_ball(result, pmp.point_estimate(result)))" if "ball" in arguments else
                               "pmp.point_estimate(result))") + f" with the fitted data y{not_a_result_hint(value)}")


def plot_clustering(data, estimate, *, ax=None, title=None, size: float = 14.0, figsize=(5.0, 4.0)):
    """A clustering coloured on the data: a scatter plot for 2-d data (data with more columns are
    projected on their first two principal components, the axes say how much variance each
    keeps), one row per cluster for 1-d data. ``estimate``: labels or a point estimate. Returns
    the axes.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_partitions as pmp
    >>> x = np.array([[0.0, 0.1], [0.2, 0.0], [3.0, 3.1], [3.2, 2.9]])
    >>> ax = pmp.plot_clustering(x, [0, 0, 1, 1])
    >>> ax.get_title()
    'Point estimate: 2 clusters'
    """
    owner = "plot_clustering"
    _refuse_results(owner, data=data, estimate=estimate)
    labels = estimate.labels if isinstance(estimate, PointEstimate) else labels_vector(
        estimate, what="estimate", owner=owner)
    x, names = _plot_data(data, labels.size, owner)
    ax = _axes(ax, figsize)
    k = int(labels.max()) + 1
    _draw_clustering(ax, x, labels, title or f"Point estimate: {k} cluster{'s' if k != 1 else ''}", size, names)
    return ax


def plot_credible_ball(data, ball: CredibleBall, *, axes=None, size: float = 12.0, figsize=(15.0, 3.6)):
    """The point estimate and the credible ball's bounds side by side on the data (2-d scatter,
    data with more columns projected as in :func:`plot_clustering`, or 1-d rows): estimate, upper vertical bound (fewest clusters), lower vertical bound (most
    clusters), horizontal bound (farthest). Returns the four axes.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_partitions as pmp
    >>> draws = np.array([[0, 0, 1, 1]] * 8 + [[0, 0, 0, 1], [0, 1, 2, 3]])
    >>> ball = pmp.credible_ball(draws, [0, 0, 1, 1], level=0.9)
    >>> axes = pmp.plot_credible_ball(np.array([0.0, 0.2, 3.0, 3.3]), ball)
    >>> [a.get_title().split(":")[0] for a in axes]
    ['Estimate', 'Upper vertical bound', 'Lower vertical bound', 'Horizontal bound']
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415

    owner = "plot_credible_ball"
    _refuse_results(owner, data=data, ball=ball)
    if not isinstance(ball, CredibleBall):
        raise TypeError(f"{owner}: ball must be the result of pmp.credible_ball, got {type(ball).__name__}")
    x, names = _plot_data(data, ball.estimate.size, owner)
    if axes is None:
        _, axes = plt.subplots(1, 4, figsize=figsize, sharex=True, sharey=x.shape[1] == 2)
    axes = np.ravel(np.asarray(axes, dtype=object))
    if axes.size != 4:
        raise ValueError(f"{owner}: axes must hold 4 axes, got {axes.size}")
    unit = " bits" if ball.loss == "vi" else ""
    panels = [("Estimate", ball.estimate, 0.0), ("Upper vertical bound", ball.upper_vertical,
                                                   ball.upper_vertical_distance),
              ("Lower vertical bound", ball.lower_vertical, ball.lower_vertical_distance),
              ("Horizontal bound", ball.horizontal, ball.horizontal_distance)]
    for a, (name, labels, dist) in zip(axes, panels):
        k = int(labels.max()) + 1
        title = f"{name}: K = {k}" + ("" if name == "Estimate" else f"\n{ball.loss} {dist:.3g}{unit} from the estimate")
        _draw_clustering(a, x, labels, title, size, names)
    axes[0].figure.suptitle(f"{ball.level:.0%} credible ball ({ball.loss}, radius {ball.radius:.3g}{unit})", y=1.1)
    return axes


def _density_grid(data: np.ndarray, grid_size: int) -> np.ndarray:
    """Points covering the data with a margin: (grid_size,) in 1-d, a grid_size x grid_size mesh in 2-d."""
    lo, hi = data.min(axis=0), data.max(axis=0)
    pad = 0.1 * np.where(hi > lo, hi - lo, 1.0)
    axes = [np.linspace(a, b, grid_size) for a, b in zip(lo - pad, hi + pad)]
    if data.shape[1] == 1:
        return axes[0]
    return np.stack([g.ravel() for g in np.meshgrid(*axes)], axis=1)


def plot_predictive_density(result_or_density, *, model=None, var_name=None, x=None, data=None, level: float = 0.9,
                            draws=None, band: bool = True, grid_size=None, ax=None, figsize=(6.0, 3.8)):
    """The posterior predictive density with its credible band, over the data.

    1-d data: the density over a grid, the ``level`` band shaded, a histogram of the data. 2-d:
    contours of the density over the data points; with ``band``, the middle contour level is also
    drawn for the band's lower and upper densities (dashed), showing how far it moves across the
    posterior. ``result_or_density`` is a ``pm.sample`` result (its partition must have one
    likelihood, of dimension 1 or 2; the density is computed by :func:`pmp.predictive_density` at
    ``x``, default a grid over the data of ``grid_size`` points, 200 in 1-d, 60 x 60 in 2-d), or the
    Dataset :func:`pmp.predictive_density` returned. ``data``: points to show (default the data
    the posterior was fitted to, for a result). Returns the axes.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp, xarray as xr
    >>> from pymc_partitions.pymc.compat import new_result
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=4)
    ...     y = pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=3.0, sigma=1.0, observed=[-2.0, -2.1, 2.0, 2.2])
    >>> result = new_result({"posterior": xr.Dataset({"z": (("chain", "draw", "item"), [[[0, 0, 1, 1], [0, 0, 1, 2]]])})})
    >>> ax = pmp.plot_predictive_density(result, model=model)
    >>> ax.get_title()
    'Posterior predictive density'
    """
    import xarray as xr  # noqa: PLC0415

    from .._checks import integer, real  # noqa: PLC0415
    from .predictive import _density, _read_result  # noqa: PLC0415

    owner = "plot_predictive_density"
    band = boolean("band", band, owner=owner)
    level = real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, owner=owner)
    if isinstance(result_or_density, xr.Dataset):
        ds = result_or_density
        if model is not None or var_name is not None or x is not None or draws is not None:
            raise ValueError(f"{owner}: model, var_name, x and draws apply to pm.sample results, not to a density "
                             "Dataset (it holds its points)")
        if not {"density", "lower", "upper"} <= set(ds.data_vars):
            raise ValueError(f"{owner}: the Dataset must be what pmp.predictive_density returns (density, lower, upper)")
        keys = [c for c in ds.coords if c == "x" or c.startswith("x_")]
        if len(keys) != 1:
            raise ValueError(f"{owner}: plot the density of one likelihood's points (found coordinates {keys})")
        pts = np.asarray(ds[keys[0]].values, dtype=float)
        pts = pts[:, None] if pts.ndim == 1 else pts
        fitted_data = None
    else:
        if not is_result(result_or_density):
            raise TypeError(f"{owner}: expected a pm.sample result or the Dataset of pmp.predictive_density, got "
                            f"{type(result_or_density).__name__}{not_a_result_hint(result_or_density)}")
        read = _read_result(result_or_density, model, var_name, owner, draws)
        fitted = read[0]
        if len(fitted.names) != 1:
            raise ValueError(f"{owner}: the partition has several likelihoods {fitted.names}: compute the density with "
                             "pmp.predictive_density(result, {name: points}) and plot that Dataset")
        if fitted.ops[0].family_code == 2 or fitted.dims[0] > 2:
            raise ValueError(f"{owner}: densities are drawn for 1-d or 2-d continuous data, not for "
                             f"{fitted.names[0]!r} (D={fitted.dims[0]}{', binary' if fitted.ops[0].family_code == 2 else ''})")
        fitted_data = fitted.data[0]
        if x is None:
            size = integer("grid_size", 200 if fitted_data.shape[1] == 1 else 60, low=2, owner=owner) \
                if grid_size is None else integer("grid_size", grid_size, low=2, owner=owner)
            x = _density_grid(fitted_data, size)
        ds = _density(read, x, level, None, 1 << 30, owner)
        pts = np.asarray(ds["x"].values, dtype=float)
        pts = pts[:, None] if pts.ndim == 1 else pts
    shown = fitted_data if data is None else _plot_data(data, np.shape(data)[0], owner, project=False)[0]
    if pts.shape[1] not in (1, 2) or (shown is not None and shown.shape[1] != pts.shape[1]):
        raise ValueError(f"{owner}: points and data must both be 1-d or both 2-d, got {pts.shape[1]}-d points"
                         + ("" if shown is None else f" and {shown.shape[1]}-d data"))
    ax = _axes(ax, figsize)
    dens, lower, upper = (np.asarray(ds[v].values) for v in ("density", "lower", "upper"))
    level_shown = ds.attrs.get("level", level)
    if pts.shape[1] == 1:
        order = np.argsort(pts[:, 0])
        grid = pts[order, 0]
        if shown is not None:
            ax.hist(shown[:, 0], bins="auto", density=True, color="0.8", edgecolor="0.6", label="data")
        if band:
            ax.fill_between(grid, lower[order], upper[order], color="C0", alpha=0.3, lw=0,
                            label=f"{level_shown:.0%} band")
        ax.plot(grid, dens[order], color="C0", lw=1.8, label="predictive density")
        ax.set(xlabel="x", ylabel="density")
        ax.legend(frameon=False)
    else:
        if shown is not None:
            ax.scatter(shown[:, 0], shown[:, 1], s=8, color="0.35", edgecolor="none", zorder=3)
        top = float(dens.max())
        levels = top * np.array([0.05, 0.15, 0.3, 0.5, 0.7, 0.9])
        ax.tricontour(pts[:, 0], pts[:, 1], dens, levels=levels, cmap="viridis", linewidths=1.2)
        if band:
            middle = [levels[3]]
            ax.tricontour(pts[:, 0], pts[:, 1], lower, levels=middle, colors="C3", linestyles="dashed", linewidths=0.9)
            ax.tricontour(pts[:, 0], pts[:, 1], upper, levels=middle, colors="C3", linestyles="dashed", linewidths=0.9)
        ax.set(xlabel="x[:, 0]", ylabel="x[:, 1]")
    ax.set_title("Posterior predictive density")
    return ax
