"""Exchangeable partition priors: Chinese restaurant process, Pitman-Yor, finite Dirichlet.

Each prior is a small object holding its parameters (numbers, or PyMC random variables) and
giving the log EPPF (the probability of a partition as a function of its block sizes), the
sequential weights a Gibbs sampler needs, and exact prior draws.

All three are one two-parameter family for the compiled kernels, described by ``code`` and
``params = [alpha, discount, k]``:

* Pitman-Yor (``code = 0``, ``k = 0``; the CRP is ``discount = 0``):
  p(pi) = prod_{i=1}^{K-1} (alpha + i d) / (alpha + 1)_{n-1} * prod_b (1 - d)_{|b|-1};
  an item joins block b with weight |b| - d, opens a new block with weight alpha + K d.
* Finite symmetric Dirichlet (``code = 1``): weights w ~ Dirichlet(alpha, ..., alpha) on k
  labelled components, z_i ~ w. The induced law on *partitions* is
  p(pi) = k!/(k-K)! * Gamma(k alpha)/Gamma(k alpha + n) * prod_b Gamma(|b| + alpha)/Gamma(alpha);
  the k!/(k-K)! factor counts the labellings of the K occupied components (seed 003's tau_1
  omits it). An item joins block b with weight |b| + alpha, a new block with (k - K) alpha.
* Uniform labels (``code = 2``): each item takes one of k labels uniformly, independently; the
  finite Dirichlet's limit alpha -> infinity. p(pi) = k!/(k-K)! / k^n; an item joins any block
  with weight 1 and opens a new one with weight k - K. Times the indicator that no edge of a
  graph lies inside a block, it is the uniform law on proper k-colourings (seed 000, App. B.1).
"""

from __future__ import annotations

import math
import numbers

import numba
import numpy as np

from . import _checks
from ._numeric import draw_log_weights, log_rising, symbolic_log_rising
from .partition import canonicalize

__all__ = ["PartitionPrior", "CRP", "PitmanYor", "FiniteDirichlet", "UniformLabels", "PITMAN_YOR",
           "FINITE_DIRICHLET", "UNIFORM_LABELS", "valid_parameters"]

PITMAN_YOR = 0
FINITE_DIRICHLET = 1
UNIFORM_LABELS = 2

#: Largest number of components ``k`` of a finite prior: an int64 (PyMC's constant). The log EPPF
#: stays accurate to about 1e-16 relative up to it (:func:`log_eppf_sizes`).
MAX_K = 2**63 - 1


# ----------------------------------------------------------------------------- compiled forms


@numba.njit(cache=True, error_model="numpy")
def log_join_weight(code, params, size):
    """Unnormalised log weight for joining a block of ``size`` other items."""
    if code == PITMAN_YOR:
        return math.log(size - params[1])
    if code == UNIFORM_LABELS:
        return 0.0
    return math.log(size + params[0])


@numba.njit(cache=True, error_model="numpy")
def log_new_weight(code, params, n_other_blocks):
    """Unnormalised log weight for opening a new block when ``n_other_blocks`` exist."""
    if n_other_blocks == 0:
        return 0.0
    if code == PITMAN_YOR:
        return math.log(params[0] + params[1] * n_other_blocks)
    free = params[2] - n_other_blocks
    if free <= 0:
        return -np.inf
    if code == UNIFORM_LABELS:
        return math.log(free)
    return math.log(free * params[0])


@numba.njit(cache=True, error_model="numpy")
def log_split_prior_ratio(code, params, n_blocks_merged, size_a, size_b):
    """log p(split) - log p(merged): the prior ratio of splitting one block of ``size_a + size_b``
    items, in a partition of ``n_blocks_merged`` blocks, into blocks of ``size_a`` and ``size_b``
    (from the sequential weights: the new block's weight, then each block built item by item)."""
    d = log_new_weight(code, params, n_blocks_merged)
    for m in range(1, size_a):
        d += log_join_weight(code, params, m)
    for m in range(1, size_b):
        d += log_join_weight(code, params, m)
    for m in range(1, size_a + size_b):
        d -= log_join_weight(code, params, m)
    return d


@numba.njit(cache=True, error_model="numpy")
def new_item_log_probabilities(code, params, sizes):
    """Log probabilities that one more item joins each block of the given (positive) ``sizes``,
    and, last, that it opens a new block: the weights above, normalised. Pitman-Yor:
    (|b| - d) / (n + alpha) and (alpha + K d) / (n + alpha); finite Dirichlet: (|b| + alpha) /
    (n + k alpha) and (k - K) alpha / (n + k alpha) (-inf once K = k)."""
    n_blocks = sizes.shape[0]
    out = np.empty(n_blocks + 1)
    for b in range(n_blocks):
        out[b] = log_join_weight(code, params, sizes[b])
    out[n_blocks] = log_new_weight(code, params, n_blocks)
    top = out.max()
    total = 0.0
    for b in range(n_blocks + 1):
        total += math.exp(out[b] - top)
    log_total = top + math.log(total)
    for b in range(n_blocks + 1):
        out[b] -= log_total
    return out


@numba.njit(cache=True, error_model="numpy")
def log_eppf_sizes(code, params, sizes):
    """Log EPPF from the vector of (positive) block sizes.

    Written with rising factorials (:func:`~pymc_partitions._numeric.log_rising`) rather than
    differences of lgammas, which cancel catastrophically when alpha, k or k alpha is large
    (FiniteDirichlet at k = 1e18 lost every digit), and with alpha's powers collected, so that
    alpha = 0 -- what a positive alpha below about 1e-308 underflows to -- gives the limit (one
    block with probability 1) instead of NaN, and a Pitman-Yor discount = 1 (a discount rounded
    up to 1) its limit (all singletons); see :func:`valid_parameters`:

    * Pitman-Yor: ``sum_{i<K} log(alpha + i d) - log_rising(alpha + 1, n - 1) + sum_b log_rising(1 - d, |b| - 1)``
    * finite Dirichlet: ``(K - 1) log alpha + log_rising(k - K + 1, K - 1) - log_rising(k alpha + 1, n - 1)
      + sum_b log_rising(alpha + 1, |b| - 1)`` (the labelling factor k!/(k-K)! divided by the k of
      Gamma(k alpha) = Gamma(k alpha + 1) / (k alpha))
    * uniform labels: ``log_rising(k - K + 1, K) - n log k``."""
    alpha = params[0]
    d = params[1]
    n = 0
    n_blocks = sizes.shape[0]
    out = 0.0
    if code == PITMAN_YOR:
        for b in range(n_blocks):
            n += sizes[b]
            out += log_rising(1.0 - d, sizes[b] - 1.0)
        for i in range(1, n_blocks):
            out += math.log(alpha + i * d)
        return out - log_rising(alpha + 1.0, n - 1.0)
    k = params[2]
    if n_blocks > k:
        return -np.inf
    if code == UNIFORM_LABELS:
        for b in range(n_blocks):
            n += sizes[b]
        return log_rising(k - n_blocks + 1.0, n_blocks) - n * math.log(k)
    for b in range(n_blocks):
        n += sizes[b]
        out += log_rising(alpha + 1.0, sizes[b] - 1.0)
    if n_blocks > 1:
        out += (n_blocks - 1) * math.log(alpha)
    out += log_rising(k - n_blocks + 1.0, n_blocks - 1.0)
    return out - log_rising(k * alpha + 1.0, n - 1.0)


@numba.njit(cache=True, error_model="numpy")
def sample_sequential(code, params, uniforms):
    """Exact prior draw by sequential allocation (Chinese restaurant / Polya urn)."""
    n = uniforms.shape[0]
    labels = np.empty(n, np.int64)
    sizes = np.zeros(n + 1, np.int64)
    logw = np.empty(n + 1)
    n_blocks = 0
    for i in range(n):
        for b in range(n_blocks):
            logw[b] = log_join_weight(code, params, sizes[b])
        logw[n_blocks] = log_new_weight(code, params, n_blocks)
        chosen = draw_log_weights(logw, n_blocks + 1, uniforms[i])
        labels[i] = chosen
        sizes[chosen] += 1
        if chosen == n_blocks:
            n_blocks += 1
    return labels


def valid_parameters(code, alpha, discount) -> bool:
    """Whether the values (alpha, discount) of a random prior parameter lie in the support of the
    prior ``code`` (Pitman-Yor 0 <= discount < 1 and alpha > -discount, finite Dirichlet alpha > 0)
    or on the boundary a value inside rounds to in float64, whose limit law :func:`log_eppf_sizes`
    gives: alpha = 0 where discount = 0 (a positive alpha below about 1e-308, e.g. drawn under a
    vague Gamma prior; one block) and discount = 1 (a discount within 1e-16 of 1, e.g. under a
    vague Beta prior; all singletons). Fixed parameters are checked strictly when the prior is made."""
    alpha, discount = float(alpha), float(discount)
    if not (math.isfinite(alpha) and math.isfinite(discount)):
        return False
    if code == PITMAN_YOR:
        return 0.0 <= discount <= 1.0 and (alpha > -discount or (discount == 0.0 and alpha == 0.0))
    return alpha >= 0.0


def symbolic_log_eppf(code, sizes, n, alpha, discount, k):
    """PyTensor log EPPF; ``sizes`` has one entry per possible label (zeros are unused labels).

    Differentiable in ``alpha`` and ``discount``; ``code`` and ``k`` are Python numbers. The same
    formulas as :func:`log_eppf_sizes` (no cancellation at large alpha, k or k alpha; alpha = 0
    gives the one-block limit).
    """
    import pytensor.tensor as pt

    # float64 throughout: PyTensor would compute float literals such as gammaln(k + 1.0) in float32
    alpha = pt.as_tensor_variable(alpha).astype("float64")
    discount = pt.as_tensor_variable(discount).astype("float64")
    n = np.float64(n)
    used = pt.gt(sizes, 0)
    n_used = pt.sum(used)
    if code == PITMAN_YOR:
        body = pt.sum(pt.switch(used, symbolic_log_rising(1.0 - discount, pt.maximum(sizes, 1) - 1.0), 0.0))
        i = pt.arange(1, int(n), dtype="float64")
        body += pt.sum(pt.switch(pt.lt(i, n_used), pt.log(alpha + i * discount), 0.0))
        return body - symbolic_log_rising(alpha + 1.0, n - 1.0)
    k = np.float64(k)
    if code == UNIFORM_LABELS:
        body = symbolic_log_rising(pt.maximum(k - n_used, 0) + 1.0, n_used) - n * np.log(k)
        return pt.switch(pt.gt(n_used, k), -np.inf, body)
    body = pt.sum(pt.switch(used, symbolic_log_rising(alpha + 1.0, pt.maximum(sizes, 1) - 1.0), 0.0))
    body += pt.switch(pt.gt(n_used, 1), (n_used - 1) * pt.log(alpha), 0.0)
    body += symbolic_log_rising(pt.maximum(k - n_used, 0) + 1.0, pt.maximum(n_used, 1) - 1.0)
    body -= symbolic_log_rising(k * alpha + 1.0, n - 1.0)
    return pt.switch(pt.gt(n_used, k), -np.inf, body)


# ----------------------------------------------------------------------------- prior objects


def _is_symbolic(x) -> bool:
    from pytensor.graph.basic import Variable

    return isinstance(x, Variable)


def _number(name, value, cls):
    if _is_symbolic(value):
        shape = tuple(value.type.shape)
        if len(shape) != 0:  # (the Partition takes one alpha and one discount; a batch would fail in PyTensor)
            raise ValueError(f"{cls}: {name} must be a scalar, got a PyMC variable of shape {shape}")
        return value
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{cls}: {name} must be a number or a PyMC variable, got {value!r}") from None
    if arr.ndim != 0:
        raise ValueError(f"{cls}: {name} must be a scalar, got shape {arr.shape}")
    if not np.isfinite(arr):
        raise ValueError(f"{cls}: {name} must be finite, got {value!r}")
    return float(arr)


class PartitionPrior:
    """Base class: an exchangeable prior on partitions of ``n`` items."""

    code: int = PITMAN_YOR

    def __init__(self, alpha, discount=0.0, k=0):
        self.alpha = alpha
        self.discount = discount
        self.k = k

    # parameters ---------------------------------------------------------------------------
    @property
    def is_symbolic(self) -> bool:
        """True if a parameter is a PyTensor/PyMC variable (values come from the model point)."""
        return _is_symbolic(self.alpha) or _is_symbolic(self.discount)

    def kernel_params(self, alpha=None, discount=None) -> np.ndarray:
        """``[alpha, discount, k]`` as float64 for the compiled kernels (values override)."""
        alpha = self.alpha if alpha is None else alpha
        discount = self.discount if discount is None else discount
        if _is_symbolic(alpha) or _is_symbolic(discount):
            raise ValueError(f"{self!r} has random parameters: pass their current values")
        self.validate(float(alpha), float(discount))
        return np.array([alpha, discount, self.k], dtype=np.float64)

    def validate(self, alpha, discount):
        """Raise ``ValueError`` naming the argument if the parameters are outside the support."""
        raise NotImplementedError

    # numpy --------------------------------------------------------------------------------
    def log_eppf(self, labels, alpha=None, discount=None) -> float:
        """Log prior probability of the partition described by ``labels`` (a non-empty integer vector)."""
        labels = canonicalize(labels)
        if labels.size == 0:
            raise ValueError(f"{type(self).__name__}.log_eppf: labels must not be empty")
        sizes = np.bincount(labels)
        return float(log_eppf_sizes(self.code, self.kernel_params(alpha, discount), sizes.astype(np.int64)))

    def sample(self, n: int, rng=None, alpha=None, discount=None) -> np.ndarray:
        """Exact prior draw of a partition of ``n`` items, as canonical labels."""
        n = _checks.integer("n", n, low=1, owner=f"{type(self).__name__}.sample")
        rng = np.random.default_rng(rng)
        return sample_sequential(self.code, self.kernel_params(alpha, discount), rng.random(n))

    # PyTensor -----------------------------------------------------------------------------
    def symbolic_log_eppf(self, sizes, n, alpha=None, discount=None):
        """PyTensor log EPPF from a length-``n`` vector of block sizes (zeros = unused labels)."""
        alpha = self.alpha if alpha is None else alpha
        discount = self.discount if discount is None else discount
        return symbolic_log_eppf(self.code, sizes, n, alpha, discount, self.k)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._repr_items())})"

    def _repr_items(self):
        return [("alpha", self.alpha), ("discount", self.discount)]


class CRP(PartitionPrior):
    """Chinese restaurant process: the partition of a Dirichlet process with concentration ``alpha``.

    Parameters
    ----------
    alpha : float or PyMC variable
        Concentration, > 0. Larger values give more clusters (about alpha log n).

    Examples
    --------
    >>> import pymc_partitions as pmp
    >>> pmp.CRP(1.0).sample(5, rng=0).shape
    (5,)
    """

    def __init__(self, alpha):
        super().__init__(_number("alpha", alpha, "CRP"), 0.0, 0)
        if not self.is_symbolic:
            self.validate(self.alpha, 0.0)

    def validate(self, alpha, discount):
        if not alpha > 0:
            raise ValueError(f"CRP: alpha must be > 0, got alpha={alpha!r}")

    def _repr_items(self):
        return [("alpha", self.alpha)]


class PitmanYor(PartitionPrior):
    """Pitman-Yor process partition (two-parameter Chinese restaurant), with power-law cluster sizes.

    Parameters
    ----------
    alpha : float or PyMC variable
        Strength, > -discount.
    discount : float or PyMC variable
        Discount in [0, 1); 0 gives the CRP.

    Examples
    --------
    >>> import pymc_partitions as pmp
    >>> prior = pmp.PitmanYor(1.0, 0.5)
    >>> round(prior.log_eppf([0, 0, 1]), 4)
    -2.0794
    """

    def __init__(self, alpha, discount):
        super().__init__(_number("alpha", alpha, "PitmanYor"), _number("discount", discount, "PitmanYor"), 0)
        if not _is_symbolic(self.discount) and not 0.0 <= self.discount < 1.0:
            raise ValueError(f"PitmanYor: discount must be in [0, 1), got discount={discount!r}")
        if not self.is_symbolic:
            self.validate(self.alpha, self.discount)

    def validate(self, alpha, discount):
        if not 0.0 <= discount < 1.0:
            raise ValueError(f"PitmanYor: discount must be in [0, 1), got discount={discount!r}")
        if not alpha > -discount:
            raise ValueError(f"PitmanYor: alpha must be > -discount, got alpha={alpha!r}, discount={discount!r}")


class FiniteDirichlet(PartitionPrior):
    """Partition induced by a finite mixture with symmetric Dirichlet(alpha) weights on ``k`` components.

    Parameters
    ----------
    alpha : float or PyMC variable
        Dirichlet concentration per component, > 0.
    k : int
        Number of labelled components (at most ``k`` blocks), a positive integer.

    Examples
    --------
    >>> import pymc_partitions as pmp
    >>> int(pmp.FiniteDirichlet(1.0, k=3).sample(10, rng=1).max()) < 3
    True
    """

    code = FINITE_DIRICHLET

    def __init__(self, alpha, k):
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"FiniteDirichlet: k must be a positive integer, got k={k!r}")
        if k > MAX_K:
            raise ValueError(f"FiniteDirichlet: k must be at most 2^63 - 1 (an int64, as PyMC holds it), got k={k!r}. "
                             "Its law with k * alpha fixed tends to pmp.CRP(k * alpha) as k grows (within about "
                             "K^2 / k in log probability); use that")
        super().__init__(_number("alpha", alpha, "FiniteDirichlet"), 0.0, int(k))
        if not self.is_symbolic:
            self.validate(self.alpha, 0.0)

    def validate(self, alpha, discount):
        if not alpha > 0:
            raise ValueError(f"FiniteDirichlet: alpha must be > 0, got alpha={alpha!r}")

    def _repr_items(self):
        return [("alpha", self.alpha), ("k", self.k)]


class UniformLabels(PartitionPrior):
    """Partition induced by giving each item one of ``k`` labels uniformly at random.

    The limit of :class:`FiniteDirichlet` as alpha grows. With the graph constraint of
    :func:`pymc_partitions.colouring.colouring_target` it is the uniform law on proper
    ``k``-colourings. Kernel-level only (not a ``pmp.Partition`` prior).

    Parameters
    ----------
    k : int
        Number of labels (colours), a positive integer.

    Examples
    --------
    >>> import pymc_partitions as pmp
    >>> round(pmp.priors.UniformLabels(3).log_eppf([0, 1, 1]), 4)  # 3 * 2 labellings of 27
    -1.5041
    """

    code = UNIFORM_LABELS

    def __init__(self, k):
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"UniformLabels: k must be a positive integer, got k={k!r}")
        if k > MAX_K:
            raise ValueError(f"UniformLabels: k must be at most 2^63 - 1, got k={k!r}")
        super().__init__(1.0, 0.0, int(k))

    def validate(self, alpha, discount):
        pass

    def _repr_items(self):
        return [("k", self.k)]


# ----------------------------------------------------------------------------- sets of items


@numba.njit(cache=True, error_model="numpy")
def log_join_set_weight(code, params, size, count):
    """Unnormalised log weight for ``count`` items joining, together, a block of ``size >= 1``
    others: the product of the sequential join weights size, size + 1, ..., size + count - 1 (the
    EPPF ratio, with the number of blocks unchanged). 0 for ``count = 0``."""
    if count == 0:
        return 0.0
    if count == 1:
        return log_join_weight(code, params, size)
    if code == PITMAN_YOR:
        return log_rising(size - params[1], count)
    if code == UNIFORM_LABELS:
        return 0.0
    return log_rising(size + params[0], count)


@numba.njit(cache=True, error_model="numpy")
def log_new_set_weight(code, params, n_other_blocks, count):
    """Unnormalised log weight for ``count >= 1`` items opening a block together when
    ``n_other_blocks`` exist: the new-block weight, then count - 1 joins of the growing block
    (-inf when the prior allows no more blocks, e.g. a finite Dirichlet with all k in use)."""
    w = log_new_weight(code, params, n_other_blocks)
    if w == -np.inf:
        return w
    return w + log_join_set_weight(code, params, 1, count - 1)
