"""pymc_partitions: Bayesian clustering with partition priors for PyMC.

Partition priors (:class:`CRP`, :class:`PitmanYor`, :class:`FiniteDirichlet`), the
:class:`Partition` random variable, collapsed conjugate likelihoods (:class:`NormalNormal`,
:class:`NormalInverseWishart`, :class:`BetaBernoulli`) and step methods for ``pm.sample``
(:class:`CollapsedGibbs`, assigned automatically; :class:`EscobarWest` and :class:`PriorSlice`
for prior parameters).
"""

from . import datasets, partition
from .priors import CRP, FiniteDirichlet, PitmanYor
from .pymc.compat import add_groups, load, save
from .pymc.distributions import BetaBernoulli, NormalInverseWishart, NormalNormal, Partition
from .pymc.steps import CollapsedGibbs, EscobarWest, PriorSlice, register as _register

__version__ = "0.1.0"

__all__ = [
    "CRP",
    "PitmanYor",
    "FiniteDirichlet",
    "Partition",
    "NormalNormal",
    "NormalInverseWishart",
    "BetaBernoulli",
    "CollapsedGibbs",
    "EscobarWest",
    "PriorSlice",
    "add_groups",
    "save",
    "load",
    "datasets",
    "partition",
]

_register()
