"""Compiled (numba) forms of the conjugate cluster likelihoods, for the samplers.

Each family keeps per-block sufficient statistics in a float64 row, together with cached
quantities that make the log predictive of one point cheap (no logarithm per candidate block
for the Normal families). Adding or removing a point is O(D) (O(D^2) for NIW through a rank-one
Cholesky update). Several families may describe one partition: their statistics sit side by
side in one row and their log predictives add. :class:`FamilyPack` holds that layout.

Family codes and layouts (``D`` = data dimension):

``DIAG_NORMAL``  hyper ``[mu0, sigma0^2, sigma^2 (D each), log_jacobian, 1/sigma0^2, 1/sigma^2,
                 mu0/sigma0^2 (D each)]``; stats ``[m, sum (D), sum of squares (D),
                 predictive mean (D), half predictive precision (D), const]``.
                 The full-covariance Normal-Normal model is this one after an exact linear
                 whitening of the data (``families.transforms.whiten_full_normal``).
``NIW``          hyper ``[mu0 (D), kappa0, nu0, chol(scale0) (D*D), log|scale0|]``;
                 stats ``[m, sum (D), chol(S_m) (D*D), log|S_m|, const, posterior mean (D),
                 1/diag(chol) (D), kappa_m/(kappa_m+1), (nu_m+1)/2]``.
``BETA_BERNOULLI`` hyper ``[a (D), b (D)]``; stats ``[m, ones (D), log p1 (D), log p0 (D)]``.
``GRAPH``        a hard constraint, not a likelihood: no two neighbours of a graph share a block
                 (proper colourings, seed 000 App. B.1). Data: row i of the n x n adjacency
                 matrix (D = n); no hyper; stats ``[m, edges inside, neighbours of j inside
                 (D)]``. Log predictive 0 if item i has no neighbour in the block, else -inf.
``NETWORK``      the collapsed Bernoulli blockmodel (:mod:`pymc_partitions.families.network`): not
                 separable over blocks, so its per-block row is only ``[m]`` and the functions
                 here treat it as inert (log predictive and log marginal 0); its graph is in the
                 hyper vector (``network.network_hyper``) and the kernels that support it add
                 the block-pair terms (``samplers.network``). Data: one unused column (D = 1).
``GAMMA_POISSON``, ``DIRICHLET_CATEGORICAL``, ``LINEAR_REGRESSION`` (clusters of regressions: data
                 rows [x (p), y], D = p + 1; add/remove O(p^2) by rank-one Cholesky updates): layouts
                 in the blocks at the end of this module.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numba
import numpy as np
from numba.core import types as numba_types
from numba.extending import overload
from numba.np.numpy_support import from_dtype
from scipy.special import gammaln

from .. import _checks
from . import network as _network

DIAG_NORMAL = 0
NIW = 1
BETA_BERNOULLI = 2
GRAPH = 3
NETWORK = 4
GAMMA_POISSON = 5  # count families: layouts and code in the block at the end of this module
DIRICHLET_CATEGORICAL = 6
LINEAR_REGRESSION = 7  # layouts and code in the block at the end of this module

LOG_2PI = math.log(2.0 * math.pi)
LOG_PI = math.log(math.pi)
LOG_2 = math.log(2.0)


def stats_width(code: int, dim: int) -> int:
    """Length of one block's statistics row for a family."""
    if code not in FAMILY_NAMES:
        raise ValueError(f"unknown family code {code}")
    return int(stats_width_compiled(code, dim))


# ----------------------------------------------------------------------------- hyper vectors


def diag_normal_hyper(mu0, sigma0, sigma, dim, log_jacobian=0.0) -> np.ndarray:
    """Hyper vector for the diagonal Normal-Normal family (sds are broadcast to ``dim``).

    Layout ``[mu0, sigma0^2, sigma^2, log_jacobian, 1/sigma0^2, 1/sigma^2, mu0/sigma0^2]``; the
    reciprocals spare the kernels a division per dimension. Values that overflow or divide by zero
    here are refused with a clear message by :func:`check_representable` (no numpy warning first).
    """
    mu0 = np.broadcast_to(np.asarray(mu0, float), (dim,))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        s0sq = np.broadcast_to(np.asarray(sigma0, float), (dim,)) ** 2
        ssq = np.broadcast_to(np.asarray(sigma, float), (dim,)) ** 2
        return np.concatenate([mu0, s0sq, ssq, [float(log_jacobian)], 1.0 / s0sq, 1.0 / ssq, mu0 / s0sq])


def niw_hyper(mu0, kappa0, nu0, scale0, dim, n) -> np.ndarray:
    """Hyper vector for the Normal-inverse-Wishart family, for blocks of up to ``n`` points.

    Layout ``[mu0 (D), kappa0, nu0, chol(scale0) (D*D), log|scale0|, table (n + 1)]``; the table
    holds the part of the log predictive that depends only on the block size m,
    -D/2 log pi + D/2 log(kappa_m/(kappa_m+1)) + lgamma((nu_m+1)/2) - lgamma((nu_m+1-D)/2),
    so that adding or removing a point evaluates no Gamma function.
    """
    mu0 = np.broadcast_to(np.asarray(mu0, float), (dim,))
    chol = np.linalg.cholesky(np.asarray(scale0, float).reshape(dim, dim))
    logdet = 2.0 * np.log(np.diag(chol)).sum()
    m = np.arange(n + 1, dtype=float)
    r, nu = float(kappa0) + m, float(nu0) + m
    table = -0.5 * dim * LOG_PI + 0.5 * dim * np.log(r / (r + 1.0)) + gammaln(0.5 * (nu + 1.0)) - gammaln(
        0.5 * (nu + 1.0 - dim)
    )
    return np.concatenate([mu0, [float(kappa0), float(nu0)], chol.ravel(), [logdet], table])


def beta_bernoulli_hyper(a, b, dim) -> np.ndarray:
    """Hyper vector for the Beta-Bernoulli family."""
    a = np.broadcast_to(np.asarray(a, float), (dim,))
    b = np.broadcast_to(np.asarray(b, float), (dim,))
    return np.concatenate([a, b])


# ----------------------------------------------------------------------------- per-family code
#
# Every function reads block ``b`` of the statistics table ``st`` at column offset ``so``, point
# ``i`` of the data ``x`` at column offset ``xo`` and the hyper vector ``hp`` at offset ``ho``.
# Whole arrays and integer offsets, never slices: a slice passed to a non-inlined function costs
# more than the arithmetic of a candidate block.

_FAST = {"reassoc", "contract", "arcp", "nsz"}  # no nnan/ninf: -inf is a legitimate weight here
#
# Column indices in the per-dimension loops are unsigned (np.uint64 offsets, range over np.uint64):
# with a signed index numba adds a negative-index wrap-around select, which LLVM turns into
# gathers instead of contiguous vector loads (3x slower at D = 50).
#
# The per-item kernels (family_init/update/log_preds, their helpers, pack_init/update/log_preds)
# allocate nothing and are compiled without numba's runtime (``_nrt=False``): then they carry no
# atomic incref/decref of their array arguments. numba >= 0.66 (LLVM 22, the Python 3.12 line)
# no longer prunes those pairs in functions whose return paths drop different arrays (LLVM merges
# the decrefs into one decref of a phi): the Gibbs sweep ran 5x slower (benchmarks/README.md,
# tests/test_kernel_refcounts.py).


# ----------------------------------------------------------------------------- compile only the family used
#
# A pack of DIAG_NORMAL alone (NormalNormal: the most used family) carries it in the dtype of
# ``codes`` (uint8, :data:`CODE_DTYPES`, set by :meth:`FamilyPack.build`). The family dispatch
# functions below (family_init, family_update, ...) are written once with a flag per family; inside
# compiled code they are numba overloads that read the family from the type of ``code`` and return
# the function with the other families' flags False, whose branches numba prunes before typing. Every
# kernel that takes ``codes`` is then compiled (and cached) for that pack with DIAG_NORMAL's code only:
# with all seven families in every kernel the first run of the Gibbs workflow compiled 2.2x longer
# (benchmarks/README.md). Other packs use int64 codes: every family, dispatched at run time. Giving
# every family a dtype of its own was measured too: it multiplied the kernels the test suite compiles
# (each sampler is tested with most families), and a fresh clone's test run by more than 1.5x.
ALL_FAMILIES = -1
CODE_DTYPES = {DIAG_NORMAL: np.uint8}
_CODE_DTYPES_ANY = {np.dtype(dt) for dt in CODE_DTYPES.values()} | {np.dtype(np.int64)}
_FAMILY_OF_CODE_TYPE = {from_dtype(np.dtype(dt)): code for code, dt in CODE_DTYPES.items()}


def codes_dtype(codes) -> type:
    """The dtype of a pack's ``codes``: its family's (:data:`CODE_DTYPES`) if it has exactly one that has a
    dtype of its own, int64 otherwise; for no family (the prior alone: nothing to compile) the cheapest,
    DIAG_NORMAL's."""
    codes = [int(c) for c in codes]
    if not codes:
        return CODE_DTYPES[DIAG_NORMAL]
    return CODE_DTYPES.get(codes[0], np.int64) if len(codes) == 1 else np.int64


def _flags(only):
    """(DIAG_NORMAL, NIW, BETA_BERNOULLI, GRAPH, NETWORK, count families, LINEAR_REGRESSION) compiled in."""
    every = only == ALL_FAMILIES
    return (every or only == DIAG_NORMAL, every or only == NIW, every or only == BETA_BERNOULLI,
            every or only == GRAPH, every or only == NETWORK,
            every or only in (GAMMA_POISSON, DIRICHLET_CATEGORICAL), every or only == LINEAR_REGRESSION)


@numba.njit(cache=True, fastmath=_FAST, error_model="numpy", _nrt=False)
def _diag_refresh(st, b, so, hp, ho, dim):
    m = st[b, so]
    # unsigned column indices (see the note above): contiguous vector loads
    d_end = np.uint64(dim)
    c_sum = np.uint64(so + 1)
    c_mean = np.uint64(so + 1 + 2 * dim)
    c_hprec = np.uint64(so + 1 + 3 * dim)
    h_s2 = np.uint64(ho + 2 * dim)
    h_p0 = np.uint64(ho + 3 * dim + 1)
    h_p = np.uint64(ho + 4 * dim + 1)
    h_mp0 = np.uint64(ho + 5 * dim + 1)
    for d in range(d_end):  # no branch or log here, so that the loop vectorises
        inv_prec = 1.0 / (hp[h_p0 + d] + m * hp[h_p + d])
        st[b, c_mean + d] = (hp[h_mp0 + d] + st[b, c_sum + d] * hp[h_p + d]) * inv_prec
        st[b, c_hprec + d] = 0.5 / (inv_prec + hp[h_s2 + d])
    # -1/2 sum log(2 pi var) with var = 1 / (2 * half precision)
    log_half_prec = _sum_log(st, b, so + 1 + 3 * dim, 1, dim)
    st[b, so + 1 + 4 * dim] = -0.5 * dim * (LOG_2PI - LOG_2) + 0.5 * log_half_prec + hp[ho + 3 * dim]


@numba.njit(cache=True, error_model="numpy", inline="always")
def _sum_log(st, b, start, stride, count):
    """sum of log st[b, start + d * stride], d < count, as logs of products of up to 16 factors
    (one logarithm per 16 dimensions). Should a product leave [1e-280, 1e280], where it could
    overflow or lose digits as a subnormal, the sum is taken one logarithm per factor instead:
    finite for every positive normal factor (check_representable bounds the factors)."""
    out = 0.0
    prod = 1.0
    wide = False
    for d in range(count):
        prod *= st[b, start + d * stride]
        if d % 16 == 15:
            wide = wide or not (1e-280 < prod < 1e280)
            out += math.log(prod)
            prod = 1.0
    wide = wide or not (1e-280 < prod < 1e280)
    out += math.log(prod)
    if wide:
        out = 0.0
        for d in range(count):
            out += math.log(st[b, start + d * stride])
    return out


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _niw_refresh(st, b, so, hp, ho, dim):
    m = st[b, so]
    kappa0 = hp[ho + dim]
    r = kappa0 + m
    nu = hp[ho + dim + 1] + m
    base = so + 1 + dim
    cache = base + dim * dim + 2
    prod = 1.0
    logdet = 0.0
    wide = False
    for d in range(dim):
        diag = st[b, base + d * dim + d]
        st[b, cache + d] = (kappa0 * hp[ho + d] + st[b, so + 1 + d]) / r
        st[b, cache + dim + d] = 1.0 / diag
        prod *= diag
        if d % 16 == 15:
            wide = wide or not (1e-280 < prod < 1e280)
            logdet += 2.0 * math.log(prod)
            prod = 1.0
    wide = wide or not (1e-280 < prod < 1e280)
    logdet += 2.0 * math.log(prod)
    if wide:  # a product of diagonals left the safe range: see _sum_log
        logdet = 2.0 * _sum_log(st, b, base, dim + 1, dim)
    st[b, cache + 2 * dim] = r / (r + 1.0)
    st[b, cache + 2 * dim + 1] = 0.5 * (nu + 1.0)
    st[b, base + dim * dim] = logdet
    st[b, base + dim * dim + 1] = hp[ho + dim + 3 + dim * dim + int(m)] - 0.5 * logdet


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _bb_refresh(st, b, so, hp, ho, dim):
    m = st[b, so]
    for d in range(dim):
        a_ = hp[ho + d]
        b_ = hp[ho + dim + d]
        tot = math.log(a_ + b_ + m)
        st[b, so + 1 + dim + d] = math.log(a_ + st[b, so + 1 + d]) - tot
        st[b, so + 1 + 2 * dim + d] = math.log(b_ + m - st[b, so + 1 + d]) - tot


def _family_init_body(only):
    _DIAG, _NIW, _BB, _GRAPH, _NETWORK, _COUNTS, _LR = _flags(only)

    def family_init(code, st, b, so, hp, ho, dim):
        """Statistics of an empty block."""
        if _LR and code == LINEAR_REGRESSION:
            return _lr_init(st, b, so, hp, ho, dim)
        if _COUNTS and code >= GAMMA_POISSON:
            return _counts_init(code, st, b, so, hp, ho, dim)
        for j in range(stats_width_compiled(code, dim)):
            st[b, so + j] = 0.0
        if _NIW and code == NIW:
            for j in range(dim * dim):
                st[b, so + 1 + dim + j] = hp[ho + dim + 2 + j]
            _niw_refresh(st, b, so, hp, ho, dim)
        elif _DIAG and code == DIAG_NORMAL:
            _diag_refresh(st, b, so, hp, ho, dim)
        elif _BB and code == BETA_BERNOULLI:
            _bb_refresh(st, b, so, hp, ho, dim)
    return family_init


def _stats_width_compiled_body(only):
    _DIAG, _NIW, _BB, _GRAPH, _NETWORK, _COUNTS, _LR = _flags(only)

    def stats_width_compiled(code, dim):
        """Row width of a family's block statistics (the one definition; see the module docstring)."""
        if _LR and code == LINEAR_REGRESSION:
            return (dim - 1) * (dim - 1) + 3 * (dim - 1) + 7
        if _COUNTS and code >= GAMMA_POISSON:
            return _counts_width(code, dim)
        if _DIAG and code == DIAG_NORMAL:
            return 4 * dim + 2
        if _NIW and code == NIW:
            return dim * dim + 3 * dim + 5
        if _GRAPH and code == GRAPH:
            return dim + 2
        if _NETWORK and code == NETWORK:
            return 1
        return 3 * dim + 1
    return stats_width_compiled


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _chol_rank_one(st, b, base, dim, v, sign):
    # L (row-major in st[b, base:]) <- chol(L L^T + sign v v^T); v is overwritten.
    for k in range(dim):
        lkk = st[b, base + k * dim + k]
        r2 = lkk * lkk + sign * v[k] * v[k]
        if r2 <= 0.0:
            r2 = 1e-300
        r = math.sqrt(r2)
        c = r / lkk
        s = v[k] / lkk
        st[b, base + k * dim + k] = r
        for i in range(k + 1, dim):
            lik = (st[b, base + i * dim + k] + sign * s * v[i]) / c
            st[b, base + i * dim + k] = lik
            v[i] = c * v[i] - s * lik


@numba.njit(cache=True, error_model="numpy")
def _chol_into(st, b, base, dim, work):
    """Lower Cholesky factor (row-major, at ``st[b, base:]``) of the symmetric matrix whose lower
    triangle is ``work[r * dim + c]``, c <= r; pivots that rounding makes non-positive become 1e-300
    (the matrices factorised here are a positive definite one plus a positive semi-definite one)."""
    for c in range(dim):
        v = work[c * dim + c]
        for q in range(c):
            v -= st[b, base + c * dim + q] * st[b, base + c * dim + q]
        if v <= 0.0:
            v = 1e-300
        lcc = math.sqrt(v)
        st[b, base + c * dim + c] = lcc
        for r in range(c + 1, dim):
            v = work[r * dim + c]
            for q in range(c):
                v -= st[b, base + r * dim + q] * st[b, base + c * dim + q]
            st[b, base + r * dim + c] = v / lcc


def _family_update_body(only):
    _DIAG, _NIW, _BB, _GRAPH, _NETWORK, _COUNTS, _LR = _flags(only)

    def family_update(code, st, b, so, x, i, xo, hp, ho, dim, sign, scratch):
        """Add (``sign = 1``) or remove (``sign = -1``) point ``i`` from block ``b``'s statistics."""
        if _LR and code == LINEAR_REGRESSION:
            return _lr_update(st, b, so, x, i, xo, hp, ho, dim, sign, scratch)
        if _COUNTS and code >= GAMMA_POISSON:
            return _counts_update(code, st, b, so, x, i, xo, hp, ho, dim, sign)
        if _DIAG and code == DIAG_NORMAL:
            st[b, so] += sign
            c_sum = np.uint64(so + 1)
            c_sq = np.uint64(so + 1 + dim)
            x0 = np.uint64(xo)
            for d in range(np.uint64(dim)):
                v = x[i, x0 + d]
                st[b, c_sum + d] += sign * v
                st[b, c_sq + d] += sign * v * v
            _diag_refresh(st, b, so, hp, ho, dim)
        elif _NIW and code == NIW:
            kappa0 = hp[ho + dim]
            if sign > 0:
                cache = so + 1 + dim + dim * dim + 2
                f = math.sqrt(st[b, cache + 2 * dim])
                for d in range(dim):
                    scratch[d] = (x[i, xo + d] - st[b, cache + d]) * f
                st[b, so] += 1.0
                for d in range(dim):
                    st[b, so + 1 + d] += x[i, xo + d]
                _chol_rank_one(st, b, so + 1 + dim, dim, scratch, 1.0)
            else:
                st[b, so] -= 1.0
                for d in range(dim):
                    st[b, so + 1 + d] -= x[i, xo + d]
                if st[b, so] < 0.5:
                    family_init(code, st, b, so, hp, ho, dim)  # exact reset: no drift in an emptied block
                    return
                r = kappa0 + st[b, so]
                f = math.sqrt(r / (r + 1.0))
                for d in range(dim):
                    scratch[d] = (x[i, xo + d] - (kappa0 * hp[ho + d] + st[b, so + 1 + d]) / r) * f
                _chol_rank_one(st, b, so + 1 + dim, dim, scratch, -1.0)
            _niw_refresh(st, b, so, hp, ho, dim)
        elif _BB and code == BETA_BERNOULLI:
            st[b, so] += sign
            for d in range(dim):
                st[b, so + 1 + d] += sign * x[i, xo + d]
            _bb_refresh(st, b, so, hp, ho, dim)
        elif _NETWORK and code == NETWORK:
            st[b, so] += sign
        else:  # GRAPH: edges inside change by the number of i's neighbours in the block
            if sign > 0:
                st[b, so + 1] += st[b, so + 2 + i]
            st[b, so] += sign
            for d in range(dim):
                st[b, so + 2 + d] += sign * x[i, xo + d]
            if sign < 0:
                st[b, so + 1] -= st[b, so + 2 + i]
    return family_update


def _family_log_preds_body(only):
    _DIAG, _NIW, _BB, _GRAPH, _NETWORK, _COUNTS, _LR = _flags(only)

    def family_log_preds(code, st, blocks, n_blocks, so, x, i, xo, hp, ho, dim, scratch, out):
        """Add to ``out[j]`` the log predictive of point ``i`` given block ``blocks[j]``, j < n_blocks.

        One call per point and family, with the family's branch outside the loop over blocks: the
        cost per candidate block is then only the arithmetic.
        """
        if _LR and code == LINEAR_REGRESSION:
            return _lr_log_preds(st, blocks, n_blocks, so, x, i, xo, dim, scratch, out)
        if _COUNTS and code >= GAMMA_POISSON:
            return _counts_log_preds(code, st, blocks, n_blocks, so, x, i, xo, hp, ho, dim, out)
        if _DIAG and code == DIAG_NORMAL:
            d_end = np.uint64(dim)
            x0 = np.uint64(xo)
            c_mean = np.uint64(so + 1 + 2 * dim)
            c_hprec = np.uint64(so + 1 + 3 * dim)
            for j in range(n_blocks):
                b = blocks[j]
                lp = st[b, so + 1 + 4 * dim]
                for d in range(d_end):
                    e = x[i, x0 + d] - st[b, c_mean + d]
                    lp -= e * e * st[b, c_hprec + d]
                out[j] += lp
        elif _NIW and code == NIW:
            base = so + 1 + dim
            cache = base + dim * dim + 2
            for j in range(n_blocks):
                b = blocks[j]
                q = 0.0  # forward solve L w = x - u, q = |w|^2
                for a in range(dim):
                    v = x[i, xo + a] - st[b, cache + a]
                    for c in range(a):
                        v -= st[b, base + a * dim + c] * scratch[c]
                    w = v * st[b, cache + dim + a]
                    scratch[a] = w
                    q += w * w
                # log rather than log1p: equal to rounding in absolute terms, and cheaper
                out[j] += st[b, base + dim * dim + 1] - st[b, cache + 2 * dim + 1] * math.log(1.0 + q * st[b, cache + 2 * dim])
        elif _GRAPH and code == GRAPH:
            for j in range(n_blocks):
                if st[blocks[j], so + 2 + i] > 0.5:
                    out[j] = -np.inf
        elif _NETWORK and code == NETWORK:
            return
        else:
            for j in range(n_blocks):
                b = blocks[j]
                lp = 0.0
                for d in range(dim):
                    if x[i, xo + d] > 0.5:
                        lp += st[b, so + 1 + dim + d]
                    else:
                        lp += st[b, so + 1 + 2 * dim + d]
                out[j] += lp
    return family_log_preds


def _family_log_marginal_body(only):
    _DIAG, _NIW, _BB, _GRAPH, _NETWORK, _COUNTS, _LR = _flags(only)

    def family_log_marginal(code, st, b, so, hp, ho, dim):
        """Log marginal likelihood of all the points in block ``b`` (0 for an empty block)."""
        m = st[b, so]
        if m < 0.5:
            return 0.0
        if _LR and code == LINEAR_REGRESSION:
            return _lr_log_marginal(st, b, so, hp, ho, dim)
        if _COUNTS and code >= GAMMA_POISSON:
            return _counts_log_marginal(code, st, b, so, hp, ho, dim)
        out = 0.0
        if _DIAG and code == DIAG_NORMAL:
            for d in range(dim):
                mu0 = hp[ho + d]
                t2 = hp[ho + dim + d]
                s2 = hp[ho + 2 * dim + d]
                sr = st[b, so + 1 + d] - m * mu0
                srr = st[b, so + 1 + dim + d] - 2.0 * mu0 * st[b, so + 1 + d] + m * mu0 * mu0
                out += -0.5 * m * (LOG_2PI + math.log(s2)) - 0.5 * math.log1p(m * t2 / s2)
                out -= 0.5 / s2 * (srr - t2 * sr * sr / (s2 + m * t2))
            return out + m * hp[ho + 3 * dim]
        if _NIW and code == NIW:
            kappa0 = hp[ho + dim]
            nu0 = hp[ho + dim + 1]
            logdet0 = hp[ho + dim + 2 + dim * dim]
            logdet = st[b, so + 1 + dim + dim * dim]
            out = -0.5 * m * dim * LOG_PI + 0.5 * dim * (math.log(kappa0) - math.log(kappa0 + m))
            out += 0.5 * nu0 * logdet0 - 0.5 * (nu0 + m) * logdet
            for d in range(dim):
                out += math.lgamma(0.5 * (nu0 + m - d)) - math.lgamma(0.5 * (nu0 - d))
            return out
        if _GRAPH and code == GRAPH:
            return -np.inf if st[b, so + 1] > 0.5 else 0.0
        if _NETWORK and code == NETWORK:
            return 0.0
        for d in range(dim):
            a_ = hp[ho + d]
            b_ = hp[ho + dim + d]
            c = st[b, so + 1 + d]
            out += math.lgamma(a_ + c) + math.lgamma(b_ + m - c) - math.lgamma(a_ + b_ + m)
            out -= math.lgamma(a_) + math.lgamma(b_) - math.lgamma(a_ + b_)
        return out
    return family_log_marginal


# ----------------------------------------------------------------------------- several families


# ----------------------------------------------------------------------------- what the kernels can represent

CEILING = 1e300  # bound on every magnitude the kernels may form (float64 overflows at 1.8e308)
FAMILY_NAMES = {DIAG_NORMAL: "DIAG_NORMAL", NIW: "NIW", BETA_BERNOULLI: "BETA_BERNOULLI", GRAPH: "GRAPH",
                NETWORK: "NETWORK", GAMMA_POISSON: "GAMMA_POISSON", DIRICHLET_CATEGORICAL: "DIRICHLET_CATEGORICAL",
                LINEAR_REGRESSION: "LINEAR_REGRESSION"}


def hyper_length(code: int, dim: int, n: int) -> int:
    """The least length of a family's hyper vector for ``n`` rows of dimension ``dim`` (NIW: its
    table of block-size terms must reach blocks of all ``n`` rows)."""
    if code == DIAG_NORMAL:
        return 6 * dim + 1
    if code == NIW:
        return dim + 3 + dim * dim + n + 1
    if code == BETA_BERNOULLI:
        return 2 * dim
    if code == NETWORK:
        return _network.HEAD + n + 1
    if code in _COUNTS_HYPER:
        return _COUNTS_HYPER[code] * dim
    if code == LINEAR_REGRESSION:
        return lr_hyper_length(dim - 1)
    return 0


def _too_big(value, what, fix):
    if not value <= CEILING:  # NaN and inf too
        raise ValueError(f"{what} = {value:.3g} exceeds {CEILING:.0e} (the kernels would overflow): {fix}")


def _positive_range(values, name, fix_small, fix_big):
    """Each of ``values`` positive, finite and within [1/CEILING, CEILING]."""
    low = float(np.min(values))
    high = float(np.max(values))
    if not low >= 1.0 / CEILING:
        raise ValueError(f"{name} = {low:.3g} is not a positive number above {1.0 / CEILING:.0e} "
                         f"(its reciprocal overflows): {fix_small}")
    if not high <= CEILING:
        raise ValueError(f"{name} = {high:.3g} exceeds {CEILING:.0e} (it overflows): {fix_big}")


@numba.njit(cache=True)
def _data_summary(x):
    """(all finite, all 0/1, sum of |x| by column, max |x| by column) in one branch-free pass over
    the data (numpy's column sums of a narrow (n, D) array cost 10x more)."""
    n, dim = x.shape
    abs_sum = np.zeros(dim)
    abs_max = np.zeros(dim)
    nan_if_bad = np.zeros(dim)  # + 0 * |v|: NaN once some v is inf or NaN
    off_01 = np.zeros(dim)  # + |v (1 - v)|: 0 exactly while every v is 0 or 1
    for i in range(n):
        for d in range(dim):
            v = x[i, d]
            a = abs(v)
            abs_sum[d] += a
            abs_max[d] = max(abs_max[d], a)
            nan_if_bad[d] += 0.0 * a
            off_01[d] += abs(v * (1.0 - v))
    finite = True
    binary = True
    for d in range(dim):
        finite = finite and nan_if_bad[d] == 0.0
        binary = binary and off_01[d] == 0.0
    return finite, binary, abs_sum, abs_max


def _check_diag_normal(summary, hp, n, dim):
    mu0, s0sq, ssq = hp[:dim], hp[dim:2 * dim], hp[2 * dim:3 * dim]
    p0, p, mp0 = hp[3 * dim + 1:4 * dim + 1], hp[4 * dim + 1:5 * dim + 1], hp[5 * dim + 1:6 * dim + 1]
    _positive_range(ssq, "sigma^2", "increase sigma or rescale the data", "decrease sigma or rescale the data")
    _positive_range(s0sq, "sigma0^2", "increase sigma0 or rescale the data", "decrease sigma0 or rescale the data")
    _positive_range(np.concatenate([p0, p]), "a precision (1/sigma^2 or 1/sigma0^2)", "check the hyper vector",
                    "check the hyper vector")
    if not (np.isfinite(mu0).all() and np.isfinite(mp0).all() and n * abs(hp[3 * dim]) <= CEILING):
        raise ValueError("mu0, mu0/sigma0^2 and n times the log Jacobian must be finite")
    # R bounds |sum over any block of (x - mu0)| and, squared, the sums of squares, the squared
    # residuals of the predictive ((2 max(|x|, |mu0|))^2 <= 4 R^2) and the marginal's quadratic terms
    abs_sum = summary[2]
    with np.errstate(over="ignore"):
        r = abs_sum + n * np.abs(mu0)
        rsq = r * r
        _too_big(4.0 * float(rsq.max()), f"(2 (sum of |y| + n |mu0|))^2 in one dimension (max |y| = "
                 f"{float(summary[3].max()):.3g}, n = {n})", "rescale the data")
        _too_big(float((2.0 * rsq / ssq).sum()), "2 (sum of |y| + n |mu0|)^2 / sigma^2 over the dimensions",
                 "rescale the data or increase sigma")
        _too_big(float((s0sq * np.maximum(rsq, r)).max() + n * (s0sq / ssq).max()),
                 "sigma0^2 (sum of |y| + n |mu0|)^2 + n sigma0^2 / sigma^2", "decrease sigma0 or rescale the data")
        _too_big(float((np.abs(mp0) + abs_sum * p).max()), "|mu0| / sigma0^2 + sum of |y| / sigma^2",
                 "rescale the data or increase sigma")


def _check_niw(summary, hp, n, dim):
    mu0, kappa0, nu0 = hp[:dim], hp[dim], hp[dim + 1]
    chol = np.tril(hp[dim + 2:dim + 2 + dim * dim].reshape(dim, dim))
    table = hp[dim + 3 + dim * dim:dim + 3 + dim * dim + n + 1]
    if not (np.isfinite(mu0).all() and np.isfinite(chol).all() and np.isfinite(hp[dim + 2 + dim * dim])):
        raise ValueError("mu0, the Cholesky factor of scale0 and log|scale0| must be finite")
    if not 0.0 < kappa0 <= CEILING:
        raise ValueError(f"kappa0 = {kappa0:.3g} must be positive and at most {CEILING:.0e}")
    if not dim - 1.0 < nu0 <= CEILING:
        raise ValueError(f"nu0 = {nu0:.3g} must exceed D - 1 = {dim - 1} and be at most {CEILING:.0e}")
    if not np.isfinite(table).all():
        raise ValueError("the table of block-size terms is not finite: nu0 or kappa0 out of range")
    if not (np.diag(chol) > 0.0).all():
        raise ValueError("the Cholesky factor of scale0 must have a positive diagonal")
    big = max(summary[3].max(), np.abs(mu0).max())  # B (np.float64): bounds |y|, |mu0|, posterior means
    with np.errstate(over="ignore", under="ignore"):
        s_max = (chol * chol).sum(axis=1).max() + 2.0 * n * (2.0 * big) ** 2
        lam_min = np.linalg.svd(chol, compute_uv=False).min() ** 2
        _too_big(s_max, "max|scale0| + 2 n (2 max|y|)^2 (the scatter matrix)", "rescale the data or scale0")
        if not lam_min >= 1.0 / CEILING:
            raise ValueError(f"scale0's smallest eigenvalue {lam_min:.3g} is below {1.0 / CEILING:.0e} (its inverse "
                             "overflows): rescale scale0 or the data")
        _too_big(dim * (2.0 * big) ** 2 / lam_min, "D (2 max|y|)^2 / (smallest eigenvalue of scale0)",
                 "rescale the data or increase scale0")
        _too_big(kappa0 * np.abs(mu0).max() + summary[2].max(),
                 "kappa0 |mu0| + sum of |y|", "rescale the data")
        log_det = dim * max(abs(np.log(s_max)), abs(np.log(lam_min)), 1.0)
        _too_big(n * (nu0 + n + 1.0) * log_det, "n (nu0 + n) |log det S|", "decrease nu0 or rescale scale0")
        lg = max(abs(float(gammaln(0.5 * (nu0 + n + 1.0)))), abs(float(gammaln(0.5 * (nu0 - dim + 1.0)))), 1.0)
        _too_big(n * dim * lg, "n D |lgamma((nu0 + n) / 2)|", "decrease nu0")


def _check_beta_bernoulli(summary, hp, n, dim):
    if not summary[1]:
        raise ValueError("BETA_BERNOULLI data must be 0/1")
    a, b = hp[:dim], hp[dim:2 * dim]
    if not (a > 0.0).all() or not (b > 0.0).all():
        raise ValueError(f"a and b must be positive, got min(a) = {a.min():.3g}, min(b) = {b.min():.3g}")
    with np.errstate(over="ignore"):
        top = a + b + n
        lg = np.maximum(np.maximum(np.abs(gammaln(np.minimum(a, b))), np.abs(gammaln(top))), 1.0)
        _too_big(float(6.0 * n * lg.sum()), "6 n sum of |lgamma(a + b + n)| (the log marginals)",
                 f"decrease a and b (max a + b + n = {float(top.max()):.3g})")


def _check_network_values(hp, n):
    a, b = float(hp[0]), float(hp[1])
    if not (a > 0.0 and b > 0.0):
        raise ValueError(f"a and b must be positive, got a = {a:.3g}, b = {b:.3g}")
    pairs = n * (n - 1.0)
    with np.errstate(over="ignore"):
        lg = max(abs(float(gammaln(min(a, b)))), abs(float(gammaln(a + b + pairs))), 1.0)
        _too_big(6.0 * (n + 1.0) ** 2 * lg, "6 (n + 1)^2 |lgamma(a + b + n^2)| (the block-pair terms)",
                 "decrease a and b")


def check_representable(code: int, data: np.ndarray, hyper: np.ndarray) -> None:
    """Raise ``ValueError`` unless every statistic and log density the kernels compute for family
    ``code``, over any partition of the rows of ``data`` (n, D), is finite.

    The bounds are analytic and conservative: each magnitude the kernels form (sums and sums of
    squares of a block, precisions, predictive means and residuals, Cholesky factors, quadratic
    forms, log determinants, log-gamma terms, and their sums over blocks) is bounded through sums
    over all n rows, and each bound must stay below ``CEILING`` (1e300, leaving room for the sums
    over families and the prior). Also checks the layout: data 2-d with finite entries, a hyper
    vector of the family's length with finite entries (NIW: a table for blocks of up to n rows),
    0/1 data for BETA_BERNOULLI and GRAPH, an n x n adjacency for GRAPH. The messages say which
    magnitude fails and what to change ("rescale the data", or the hyperparameter). Cost: one
    compiled pass over the data (the n x n adjacency for GRAPH), then O(D) numpy (O(D^3) for
    NIW's smallest eigenvalue): about 70 us at n = 10^4, D = 2, under 2% of one Gibbs sweep.
    """
    if isinstance(code, (bool, np.bool_)) or not isinstance(code, (int, np.integer)) or code not in FAMILY_NAMES:
        raise ValueError(f"unknown family code {code!r}: use one of {sorted(FAMILY_NAMES)}")
    code = int(code)
    try:
        x = np.asarray(data, dtype=np.float64)
        hp = np.asarray(hyper, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{FAMILY_NAMES[code]}: data and hyper must be numeric arrays") from None
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{FAMILY_NAMES[code]}: data must be (n, D) with n, D >= 1, got shape {x.shape}")
    summary = _data_summary(np.ascontiguousarray(x))
    if not summary[0]:
        raise ValueError(f"{FAMILY_NAMES[code]}: data contain NaN or infinite values")
    n, dim = x.shape
    want = hyper_length(code, dim, n)
    if code == NETWORK:
        if dim != 1:
            raise ValueError(f"NETWORK: data must be one (unused) column, got shape {x.shape}")
        problem = _network.check_network_hyper(hp, n)
        if problem is not None:
            raise ValueError(f"NETWORK: {problem} (make it with families.network.network_hyper)")
        try:
            _check_network_values(hp, n)
        except ValueError as err:
            raise ValueError(f"NETWORK: {err}") from None
        return
    if hp.ndim != 1 or hp.shape[0] < want or (code != NIW and hp.shape[0] != want):
        table = f" (its table must cover blocks of up to n = {n} rows: niw_hyper(..., n={n}))" if code == NIW else ""
        raise ValueError(f"{FAMILY_NAMES[code]}: the hyper vector must have length {want} for D = {dim}{table}, "
                         f"got shape {hp.shape}")
    if code == GRAPH:
        if dim != n:
            raise ValueError(f"GRAPH: data must be the n x n adjacency matrix, got shape {x.shape}")
        if not summary[1]:
            raise ValueError("GRAPH: the adjacency matrix must hold 0/1 entries")
        return
    if code == LINEAR_REGRESSION:
        try:
            _check_linear_regression(summary, hp, n, dim)
        except ValueError as err:
            raise ValueError(f"LINEAR_REGRESSION: {err}") from None
        return
    if code >= GAMMA_POISSON:
        try:
            _check_counts(code, np.ascontiguousarray(x), summary, hp, n, dim)
        except ValueError as err:
            raise ValueError(f"{FAMILY_NAMES[code]}: {err}") from None
        return
    check = {DIAG_NORMAL: _check_diag_normal, NIW: _check_niw, BETA_BERNOULLI: _check_beta_bernoulli}[code]
    try:
        check(summary, hp, n, dim)
    except ValueError as err:
        raise ValueError(f"{FAMILY_NAMES[code]}: {err}") from None


class FamilyPack(NamedTuple):
    """Several conjugate families side by side, as flat arrays the kernels can read.

    ``data`` is (n, sum of dims); family f reads columns ``data_off[f] : data_off[f] + dims[f]``,
    keeps its statistics at ``stat_off[f]`` of each block row (width ``width``), and its hyper
    vector at ``hyper[hyper_off[f]:]``. Build it with :meth:`build`, which validates every part.
    """

    codes: np.ndarray
    dims: np.ndarray
    data_off: np.ndarray
    stat_off: np.ndarray
    hyper_off: np.ndarray
    hyper: np.ndarray
    data: np.ndarray
    width: int

    @staticmethod
    def build(parts, n=None, names=None):
        """``parts``: a list of ``(code, data (n, D), hyper vector)``; may be empty if ``n`` is given
        (the partition prior alone). Every part is checked with :func:`check_representable`
        (``ValueError`` naming the part: by ``names[f]`` if given, e.g. the likelihood's variable
        name, else by its index), so the kernels never see values they cannot represent."""
        parts = list(parts)
        if names is not None and len(names) != len(parts):
            raise ValueError(f"FamilyPack.build: {len(names)} names for {len(parts)} parts")
        if n is not None:
            n = _checks.integer("n", n, low=1, owner="FamilyPack.build")
        elif not parts:
            raise ValueError("give n when there are no likelihoods")
        codes, dims, doff, soff, hoff, hypers, datas = [], [], [], [], [], [], []
        d_at = s_at = h_at = 0
        for f, part in enumerate(parts):
            if not isinstance(part, (tuple, list)) or len(part) != 3:
                raise TypeError(f"FamilyPack.build: part {f} must be a (code, data, hyper) triple, got {part!r}")
            code, data, hyper = part
            try:
                check_representable(code, data, hyper)
            except ValueError as err:
                where = f"FamilyPack.build: part {f}" if names is None else repr(names[f])
                raise ValueError(f"{where}: {err}") from None
            data = np.asarray(data, np.float64)
            if data.ndim == 1:
                data = data[:, None]
            n = data.shape[0] if n is None else n
            if data.shape[0] != n:
                raise ValueError("all likelihoods of one partition must have the same number of rows "
                                 f"(part {f} has {data.shape[0]}, expected {n})")
            dim = data.shape[1]
            codes.append(int(code))
            dims.append(dim)
            doff.append(d_at)
            soff.append(s_at)
            hoff.append(h_at)
            hypers.append(np.asarray(hyper, np.float64))
            datas.append(data)
            d_at += dim
            s_at += stats_width(int(code), dim)
            h_at += hypers[-1].shape[0]
        i64 = lambda v: np.asarray(v, np.int64)  # noqa: E731
        return FamilyPack(
            np.asarray(codes, codes_dtype(codes)), i64(dims), i64(doff), i64(soff), i64(hoff),
            np.concatenate(hypers + [np.zeros(0)]), np.ascontiguousarray(np.hstack(datas + [np.zeros((n, 0))])), s_at,
        )

    @property
    def n(self) -> int:
        """Number of rows (items)."""
        return int(self.data.shape[0])

    def parts(self):
        """The ``(code, data, hyper)`` triples the pack was built from."""
        ends = list(self.hyper_off[1:]) + [self.hyper.shape[0]]
        return [(int(c), self.data[:, o:o + d], self.hyper[h:e])
                for c, d, o, h, e in zip(self.codes, self.dims, self.data_off, self.hyper_off, ends)]

    def with_hyper(self, hypers):
        """Same layout and data, new hyper vectors (one per family, in order), checked as in :meth:`build`."""
        hypers = list(hypers)
        if len(hypers) != len(self.codes):
            raise ValueError(f"with_hyper: need {len(self.codes)} hyper vectors, got {len(hypers)}")
        return FamilyPack.build([(c, x, h) for (c, x, _), h in zip(self.parts(), hypers)], n=self.n)


_WIDTH = {DIAG_NORMAL: (4, 2), NIW: (3, 5), BETA_BERNOULLI: (3, 1), GRAPH: (1, 2), NETWORK: (0, 1),
          GAMMA_POISSON: (3, 2), DIRICHLET_CATEGORICAL: (2, 1),
          LINEAR_REGRESSION: (1, 3)}  # a D + b (+ D^2 for NIW, + (D - 1)^2 for LINEAR_REGRESSION)


def check_pack(pack, owner: str | None = None) -> FamilyPack:
    """Raise unless ``pack`` is a :class:`FamilyPack` whose layout keeps every kernel read and
    write inside its arrays (O(number of families), a few microseconds; the values are checked
    once, by :meth:`FamilyPack.build`, which is how a pack should be made)."""
    if not isinstance(pack, FamilyPack):
        prefix = f"{owner}: " if owner else ""
        raise TypeError(f"{prefix}pack must be a FamilyPack (FamilyPack.build), got {type(pack).__name__}")
    codes, dims, data_off, stat_off, hyper_off, hp, x, width = pack
    try:
        ok = (x.dtype == np.float64 and x.ndim == 2 and x.flags.c_contiguous and x.shape[0] >= 1
              and hp.dtype == np.float64 and hp.ndim == 1 and int(width) == width)
        f = len(codes)
        # the kernels compile a pack of codes' dtype for that dtype's family only (int64: every family)
        ok = ok and codes.ndim == 1 and (codes.dtype in (np.int64, codes_dtype(codes)) if f
                                         else codes.dtype in _CODE_DTYPES_ANY)
        for a in (dims, data_off, stat_off, hyper_off):
            ok = ok and a.dtype == np.int64 and a.ndim == 1 and len(a) >= f
        n, cols = x.shape
        for code, dim, do, so, ho in zip(codes.tolist(), dims.tolist(), data_off.tolist(), stat_off.tolist(),
                                         hyper_off.tolist()):
            a, b = _WIDTH.get(code, (0, -1))
            ok = (ok and b >= 0 and dim >= 1 and 0 <= do and do + dim <= cols and 0 <= so and 0 <= ho
                  and so + a * dim + b + (dim * dim if code == NIW else 0) <= width
                  and (code != LINEAR_REGRESSION or (dim >= 2 and so + stats_width(code, dim) <= width))
                  and ho + hyper_length(code, dim, n) <= hp.shape[0] and (code != GRAPH or dim == n)
                  and (code != NETWORK or (dim == 1 and _network_layout_ok(hp, ho, n))))
    except (AttributeError, TypeError, ValueError):
        ok = False
    if not ok:
        prefix = f"{owner}: " if owner else ""
        raise ValueError(f"{prefix}the FamilyPack's layout is inconsistent: make it with FamilyPack.build")
    return pack


def _network_layout_ok(hp, ho, n):
    """The NETWORK hyper vector at ``ho`` fits in ``hp`` and its adjacency indexes inside it
    (O(n + edges), compiled: what the kernels read without further checks)."""
    nnz = hp[ho + 3]
    if not (hp[ho + 2] in (0.0, 1.0) and nnz == math.floor(nnz) and 0 <= nnz <= n * (n - 1)):
        return False
    end = ho + _network.network_hyper_length(n, int(nnz), bool(hp[ho + 2]))
    return end <= hp.shape[0] and _network.check_network_hyper(hp[ho:end], n) is None


def has_network(pack) -> bool:
    """True if the pack holds a NETWORK family (whose block-pair terms only some kernels add)."""
    return bool(np.any(np.asarray(pack.codes) == NETWORK))


def refuse_network(pack, owner: str) -> None:
    """Raise unless the pack is free of NETWORK families: for kernels that read only per-block
    statistics, which would silently drop the block-pair terms."""
    if has_network(pack):
        raise NotImplementedError(
            f"{owner}: the network likelihood (BetaBernoulliNetwork, family NETWORK) is not separable over "
            "blocks and this sampler does not support it; use CollapsedGibbs, ARM or SplitMerge")


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def pack_init(codes, dims, stat_off, hyper_off, hyper, st, b):
    """Statistics of an empty block ``b`` for all families."""
    for f in range(codes.shape[0]):
        family_init(codes[f], st, b, stat_off[f], hyper, hyper_off[f], dims[f])


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, st, b, x, i, sign, scratch):
    """Add or remove point ``i`` in block ``b`` for all families."""
    for f in range(codes.shape[0]):
        family_update(codes[f], st, b, stat_off[f], x, i, data_off[f], hyper, hyper_off[f], dims[f], sign, scratch)


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, st, blocks, n_blocks, x, i, scratch, out):
    """Add to ``out[j]`` the summed log predictives of point ``i`` given block ``blocks[j]``."""
    for f in range(codes.shape[0]):
        family_log_preds(codes[f], st, blocks, n_blocks, stat_off[f], x, i, data_off[f], hyper, hyper_off[f], dims[f],
                         scratch, out)


@numba.njit(cache=True, error_model="numpy")
def pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, st, b):
    """Sum over families of block ``b``'s log marginal likelihood."""
    out = 0.0
    for f in range(codes.shape[0]):
        out += family_log_marginal(codes[f], st, b, stat_off[f], hyper, hyper_off[f], dims[f])
    return out


# ----------------------------------------------------------------------------- statistics of sets
#
# Moves that carry a *set* of items at once (ARM's refinement blocks, seed 004 eq. 5-7) need the
# statistics of a set and of the union of two blocks, without one update per item where the
# statistics simply add. NIW keeps a Cholesky factor, which does not add: its union is formed
# from the centred scatter identities below and factorised once (O(D^3), not |set| rank-one
# updates). GRAPH counts the edges between the two blocks from the members of the added one.


def merge_work_size(codes, dims) -> int:
    """Length of the ``work`` array :func:`pack_merge` needs for families ``codes`` of dims ``dims``."""
    size = 1
    for code, dim in zip(np.asarray(codes).tolist(), np.asarray(dims).tolist()):
        if code == NIW:
            size = max(size, dim * dim + 2 * dim)
        elif code == LINEAR_REGRESSION:
            size = max(size, dim * dim)
    return size


@numba.njit(cache=True, error_model="numpy")
def _niw_merge(st, dst, src, so, hp, ho, dim, work):
    """NIW statistics of dst ∪ src (both non-empty). With the posterior scale S = S0 + W +
    c0 (xbar - mu0)(xbar - mu0)^T of a block (W its centred scatter, c0 = kappa0 m / (kappa0 + m)),
    adding the set B to the block A (posterior mean mu_A, kappa_A = kappa0 + m_A) gives
    S_AB = S_A + (S_B - S0) - c0 d0 d0^T + cA dA dA^T with d0 = xbar_B - mu0, dA = xbar_B - mu_A,
    cA = kappa_A m_B / (kappa_A + m_B): centred terms only, then one Cholesky factorisation."""
    m_a = st[dst, so]
    m_b = st[src, so]
    kappa0 = hp[ho + dim]
    k_a = kappa0 + m_a
    base = so + 1 + dim
    h_chol = ho + dim + 2
    s_at = 0
    da_at = dim * dim
    d0_at = dim * dim + dim
    for d in range(dim):
        xbar = st[src, so + 1 + d] / m_b
        work[da_at + d] = xbar - (kappa0 * hp[ho + d] + st[dst, so + 1 + d]) / k_a
        work[d0_at + d] = xbar - hp[ho + d]
    c_a = k_a * m_b / (k_a + m_b)
    c_0 = kappa0 * m_b / (kappa0 + m_b)
    for r in range(dim):
        for c in range(r + 1):
            s = 0.0
            for q in range(c + 1):  # lower-triangular factors: (L L^T)[r, c] = sum over q <= c
                s += (st[dst, base + r * dim + q] * st[dst, base + c * dim + q]
                      + st[src, base + r * dim + q] * st[src, base + c * dim + q]
                      - hp[h_chol + r * dim + q] * hp[h_chol + c * dim + q])
            s += c_a * work[da_at + r] * work[da_at + c] - c_0 * work[d0_at + r] * work[d0_at + c]
            work[s_at + r * dim + c] = s
    _chol_into(st, dst, base, dim, work)  # S_AB is S_A plus a positive semi-definite matrix (s_at = 0)
    st[dst, so] = m_a + m_b
    for d in range(dim):
        st[dst, so + 1 + d] += st[src, so + 1 + d]
    _niw_refresh(st, dst, so, hp, ho, dim)


def _family_merge_body(only):
    _DIAG, _NIW, _BB, _GRAPH, _NETWORK, _COUNTS, _LR = _flags(only)

    def family_merge(code, st, dst, src, so, hp, ho, dim, members, start, count, work):
        """Statistics of block ``dst`` <- those of dst ∪ src (disjoint sets); ``src`` is unchanged.
        ``members[start:start + count]`` are src's items (read by GRAPH only); ``work`` has at least
        :func:`merge_work_size` entries."""
        if st[src, so] < 0.5:
            return
        if st[dst, so] < 0.5:
            for c in range(stats_width_compiled(code, dim)):
                st[dst, so + c] = st[src, so + c]
            return
        if _LR and code == LINEAR_REGRESSION:
            return _lr_merge(st, dst, src, so, hp, ho, dim, work)
        if _COUNTS and code >= GAMMA_POISSON:
            return _counts_merge(code, st, dst, src, so, hp, ho, dim)
        if _DIAG and code == DIAG_NORMAL:
            st[dst, so] += st[src, so]
            for d in range(2 * dim):
                st[dst, so + 1 + d] += st[src, so + 1 + d]
            _diag_refresh(st, dst, so, hp, ho, dim)
        elif _NIW and code == NIW:
            _niw_merge(st, dst, src, so, hp, ho, dim, work)
        elif _BB and code == BETA_BERNOULLI:
            st[dst, so] += st[src, so]
            for d in range(dim):
                st[dst, so + 1 + d] += st[src, so + 1 + d]
            _bb_refresh(st, dst, so, hp, ho, dim)
        elif _NETWORK and code == NETWORK:
            st[dst, so] += st[src, so]
        else:  # GRAPH: edges inside the union = inside each + between them (src's members' neighbours in dst)
            between = 0.0
            for t in range(start, start + count):
                between += st[dst, so + 2 + members[t]]
            st[dst, so + 1] += st[src, so + 1] + between
            st[dst, so] += st[src, so]
            for d in range(dim):
                st[dst, so + 2 + d] += st[src, so + 2 + d]
    return family_merge


def _family_set_stats_body(only):
    _DIAG, _NIW, _BB, _GRAPH, _NETWORK, _COUNTS, _LR = _flags(only)

    def family_set_stats(code, st, b, so, x, items, start, count, xo, hp, ho, dim, scratch):
        """Statistics of the set ``items[start:start + count]`` into block ``b`` (from empty): the
        sums accumulate and the cached quantities are refreshed once (DIAG_NORMAL, BETA_BERNOULLI);
        NIW and GRAPH add the items one by one."""
        family_init(code, st, b, so, hp, ho, dim)
        if count == 0:
            return
        if _LR and code == LINEAR_REGRESSION:  # rank-one updates: O(count p^2)
            for t in range(start, start + count):
                _lr_update(st, b, so, x, items[t], xo, hp, ho, dim, 1.0, scratch)
            return
        if _COUNTS and code >= GAMMA_POISSON:
            return _counts_set_stats(code, st, b, so, x, items, start, count, xo, hp, ho, dim)
        if (_DIAG and code == DIAG_NORMAL) or (_BB and code == BETA_BERNOULLI):
            x0 = np.uint64(xo)
            c_sum = np.uint64(so + 1)
            c_sq = np.uint64(so + 1 + dim)
            for t in range(start, start + count):
                i = items[t]
                for d in range(np.uint64(dim)):
                    v = x[i, x0 + d]
                    st[b, c_sum + d] += v
                    if _DIAG and code == DIAG_NORMAL:
                        st[b, c_sq + d] += v * v
            st[b, so] = count
            if _DIAG and code == DIAG_NORMAL:
                _diag_refresh(st, b, so, hp, ho, dim)
            else:
                _bb_refresh(st, b, so, hp, ho, dim)
            return
        for t in range(start, start + count):
            family_update(code, st, b, so, x, items[t], xo, hp, ho, dim, 1.0, scratch)
    return family_set_stats


@numba.njit(cache=True, error_model="numpy")
def pack_merge(codes, dims, stat_off, hyper_off, hyper, st, dst, src, members, start, count, work):
    """Block ``dst`` <- dst ∪ src for all families (see :func:`family_merge`)."""
    for f in range(codes.shape[0]):
        family_merge(codes[f], st, dst, src, stat_off[f], hyper, hyper_off[f], dims[f], members, start, count, work)


@numba.njit(cache=True, error_model="numpy")
def pack_set_stats(codes, dims, data_off, stat_off, hyper_off, hyper, st, b, x, items, start, count, scratch):
    """Block ``b`` <- the statistics of the set ``items[start:start + count]`` for all families."""
    for f in range(codes.shape[0]):
        family_set_stats(codes[f], st, b, stat_off[f], x, items, start, count, data_off[f], hyper, hyper_off[f],
                         dims[f], scratch)


# ----------------------------------------------------------------------------- count and categorical families
#
# GAMMA_POISSON   counts x_id >= 0 (integers), lambda_bd ~ Gamma(alpha_d, beta_d) (beta a rate),
#                 x_id ~ Poisson(lambda_bd). hyper ``[alpha (D), beta (D)]``; stats ``[m, S (D),
#                 L, c0 (D), c1 (D)]`` with S the block's column sums, L = sum of lgamma(x + 1) over
#                 its entries, c0 = (alpha + S) log((beta + m) / (beta + m + 1)) - lgamma(alpha + S),
#                 c1 = log(beta + m + 1). The predictive of a new count is negative binomial:
#                 log p(x | block) = lgamma(alpha + S + x) + c0 - x c1 - lgamma(x + 1) per column.
# DIRICHLET_CATEGORICAL
#                 categories as one-hot columns: data (n, K) with K = C_1 + ... + C_D, one 1 per
#                 categorical variable (``dirichlet_categorical_data``). theta_bd ~ Dirichlet(a_d),
#                 hyper ``[a (K), A (K), first (K)]``: the concentration of each category, the sum A_d
#                 of its variable's concentrations, and 1.0 on the first category of each variable;
#                 stats ``[m, counts (K), log((a + counts) / (A + m)) (K)]``: the log predictive of
#                 an item is the dot product of its one-hot row with the cached logs.
#
# Every statistic is a sum of integers (exact in float64 below 2^53, which check_representable
# asserts) except L, which is reset exactly when a block empties.

_COUNTS_HYPER = {GAMMA_POISSON: 2, DIRICHLET_CATEGORICAL: 3}  # hyper length = this times D
_EXACT_INT = 2.0 ** 52


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _counts_width(code, dim):
    if code == GAMMA_POISSON:
        return 3 * dim + 2
    return 2 * dim + 1


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _gp_refresh(st, b, so, hp, ho, dim):
    m = st[b, so]
    for d in range(dim):
        a_s = hp[ho + d] + st[b, so + 1 + d]
        bm = hp[ho + dim + d] + m
        c1 = math.log(bm + 1.0)
        st[b, so + 2 + dim + d] = a_s * (math.log(bm) - c1) - math.lgamma(a_s)
        st[b, so + 2 + 2 * dim + d] = c1


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _dc_refresh(st, b, so, hp, ho, dim):
    m = st[b, so]
    for k in range(dim):
        st[b, so + 1 + dim + k] = math.log(hp[ho + k] + st[b, so + 1 + k]) - math.log(hp[ho + dim + k] + m)


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _counts_refresh(code, st, b, so, hp, ho, dim):
    if code == GAMMA_POISSON:
        _gp_refresh(st, b, so, hp, ho, dim)
    else:
        _dc_refresh(st, b, so, hp, ho, dim)


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _counts_init(code, st, b, so, hp, ho, dim):
    for j in range(_counts_width(code, dim)):
        st[b, so + j] = 0.0
    _counts_refresh(code, st, b, so, hp, ho, dim)


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _counts_update(code, st, b, so, x, i, xo, hp, ho, dim, sign):
    st[b, so] += sign
    if st[b, so] < 0.5:  # emptied: exact reset (L is a sum of non-integers)
        _counts_init(code, st, b, so, hp, ho, dim)
        return
    if code == GAMMA_POISSON:
        lg = 0.0
        for d in range(dim):
            v = x[i, xo + d]
            st[b, so + 1 + d] += sign * v
            lg += math.lgamma(v + 1.0)
        st[b, so + 1 + dim] += sign * lg
    else:
        for k in range(dim):
            st[b, so + 1 + k] += sign * x[i, xo + k]
    _counts_refresh(code, st, b, so, hp, ho, dim)


@numba.njit(cache=True, fastmath=_FAST, error_model="numpy", _nrt=False)
def _counts_log_preds(code, st, blocks, n_blocks, so, x, i, xo, hp, ho, dim, out):
    if code == GAMMA_POISSON:
        lfact = 0.0
        for d in range(dim):
            lfact += math.lgamma(x[i, xo + d] + 1.0)
        for j in range(n_blocks):
            b = blocks[j]
            lp = -lfact
            for d in range(dim):
                v = x[i, xo + d]
                lp += (math.lgamma(hp[ho + d] + st[b, so + 1 + d] + v) + st[b, so + 2 + dim + d]
                       - v * st[b, so + 2 + 2 * dim + d])
            out[j] += lp
    else:
        x0 = np.uint64(xo)
        c_log = np.uint64(so + 1 + dim)
        for j in range(n_blocks):
            b = blocks[j]
            lp = 0.0
            for k in range(np.uint64(dim)):  # one-hot rows: a dot product (vectorises)
                lp += x[i, x0 + k] * st[b, c_log + k]
            out[j] += lp


@numba.njit(cache=True, error_model="numpy")
def _counts_log_marginal(code, st, b, so, hp, ho, dim):
    m = st[b, so]
    out = 0.0
    if code == GAMMA_POISSON:
        for d in range(dim):
            a_ = hp[ho + d]
            b_ = hp[ho + dim + d]
            a_s = a_ + st[b, so + 1 + d]
            out += a_ * math.log(b_) - math.lgamma(a_) + math.lgamma(a_s) - a_s * math.log(b_ + m)
        return out - st[b, so + 1 + dim]
    for k in range(dim):
        a_ = hp[ho + k]
        out += math.lgamma(a_ + st[b, so + 1 + k]) - math.lgamma(a_)
        if hp[ho + 2 * dim + k] > 0.5:  # first category of its variable
            tot = hp[ho + dim + k]
            out += math.lgamma(tot) - math.lgamma(tot + m)
    return out


@numba.njit(cache=True, error_model="numpy")
def _counts_merge(code, st, dst, src, so, hp, ho, dim):
    # both blocks non-empty (family_merge handles the empty cases): every statistic adds
    st[dst, so] += st[src, so]
    extra = 1 if code == GAMMA_POISSON else 0
    for d in range(dim + extra):
        st[dst, so + 1 + d] += st[src, so + 1 + d]
    _counts_refresh(code, st, dst, so, hp, ho, dim)


@numba.njit(cache=True, error_model="numpy")
def _counts_set_stats(code, st, b, so, x, items, start, count, xo, hp, ho, dim):
    # block b was just initialised (empty); count >= 1
    lg = 0.0
    for t in range(start, start + count):
        i = items[t]
        for d in range(dim):
            v = x[i, xo + d]
            st[b, so + 1 + d] += v
            if code == GAMMA_POISSON:
                lg += math.lgamma(v + 1.0)
    if code == GAMMA_POISSON:
        st[b, so + 1 + dim] = lg
    st[b, so] = count
    _counts_refresh(code, st, b, so, hp, ho, dim)


def gamma_poisson_hyper(alpha, beta, dim) -> np.ndarray:
    """Hyper vector ``[alpha (D), beta (D)]`` of the Gamma-Poisson family (Gamma shape and rate)."""
    alpha = np.broadcast_to(np.asarray(alpha, float), (dim,))
    beta = np.broadcast_to(np.asarray(beta, float), (dim,))
    return np.concatenate([alpha, beta])


def dirichlet_categorical_hyper(a, n_categories) -> np.ndarray:
    """Hyper vector ``[a (K), A (K), first (K)]`` of the Dirichlet-categorical family for variables
    with ``n_categories`` (C_1..C_D) categories; ``a`` is (D, max C) (entries past C_d unused)."""
    n_cat = np.asarray(n_categories, np.int64).reshape(-1)
    a = np.asarray(a, float)
    a = np.broadcast_to(a, (n_cat.size, int(n_cat.max())))
    conc = np.concatenate([a[d, :c] for d, c in enumerate(n_cat)])
    tot = np.repeat([a[d, :c].sum() for d, c in enumerate(n_cat)], n_cat)
    first = np.zeros(conc.size)
    first[np.r_[0, np.cumsum(n_cat)[:-1]]] = 1.0
    return np.concatenate([conc, tot, first])


def dirichlet_categorical_data(categories, n_categories) -> np.ndarray:
    """One-hot (n, C_1 + ... + C_D) float array of integer ``categories`` (n, D), column d in
    0..C_d - 1 (checked: ``ValueError`` otherwise)."""
    x = np.asarray(categories)
    if x.ndim == 1:
        x = x[:, None]
    n_cat = np.asarray(n_categories, np.int64).reshape(-1)
    if x.ndim != 2 or x.shape[1] != n_cat.size:
        raise ValueError(f"categories must be (n, D) with D = {n_cat.size}, got shape {x.shape}")
    xf = np.asarray(x, float)
    if not np.all(np.isfinite(xf)) or not np.all(xf == np.round(xf)):
        raise ValueError("categories must be integers (no NaN)")
    if np.any(xf < 0) or np.any(xf >= n_cat[None, :]):
        raise ValueError(f"categories out of range: column d must lie in 0..C_d - 1 with C = {n_cat.tolist()}")
    offsets = np.r_[0, np.cumsum(n_cat)[:-1]]
    out = np.zeros((x.shape[0], int(n_cat.sum())))
    out[np.arange(x.shape[0])[:, None], offsets[None, :] + xf.astype(np.int64)] = 1.0
    return out


@numba.njit(cache=True)
def _integer_summary(x):
    """(all entries non-negative integers, column sums) of count data."""
    n, dim = x.shape
    ok = True
    sums = np.zeros(dim)
    for i in range(n):
        for d in range(dim):
            v = x[i, d]
            ok = ok and v >= 0.0 and v == math.floor(v)
            sums[d] += v
    return ok, sums


def _check_counts(code, x, summary, hp, n, dim):
    if code == GAMMA_POISSON:
        top = float(np.max(x)) if x.size else 0.0
        if top > _EXACT_INT:  # (before the integer test: numba's floor of such a float overflows)
            raise ValueError(f"counts must be at most 2^52 (float64 holds integers exactly only up to 2^53, and the "
                             f"sufficient statistics are sums), got {top:.4g}; rescale the data")
        ok, sums = _integer_summary(x)
        if not ok:
            raise ValueError("counts must be non-negative integers")
        alpha, beta = hp[:dim], hp[dim:2 * dim]
        _positive_range(alpha, "alpha", "increase alpha", "decrease alpha")
        _positive_range(beta, "beta", "increase beta", "decrease beta")
        if not float(sums.max()) + float(alpha.max()) <= _EXACT_INT:
            raise ValueError(f"the column sums of the counts ({float(sums.max()):.3g}) exceed 2^52: the sufficient "
                             "statistics would lose integers; rescale or split the data")
        top = alpha + sums + float(summary[3].max()) + 1.0
        with np.errstate(over="ignore", divide="ignore"):
            per = (np.abs(gammaln(top)) + np.abs(gammaln(alpha)) + top * (np.abs(np.log(beta + n + 1.0))
                   + np.abs(np.log(beta))) + np.abs(gammaln(np.maximum(summary[3], 0.0) + 1.0)) * n + 1.0)
            _too_big(float(4.0 * (n + 1) * per.sum()), "4 (n + 1) times the log-gamma and log terms of the "
                     "log marginals", "decrease alpha or beta, or rescale the data")
        return
    if not summary[1]:
        raise ValueError("data must be one-hot 0/1 rows (dirichlet_categorical_data)")
    a, tot, first = hp[:dim], hp[dim:2 * dim], hp[2 * dim:3 * dim]
    _positive_range(a, "a", "increase a", "decrease a")
    if first[0] != 1.0 or not np.all((first == 0.0) | (first == 1.0)):
        raise ValueError("the hyper vector's variable-start flags are malformed: use dirichlet_categorical_hyper")
    group = np.cumsum(first) - 1.0
    g = group.astype(np.int64)
    if not np.allclose(tot, np.bincount(g, weights=a)[g], rtol=1e-12, atol=0.0):
        raise ValueError("the hyper vector's per-variable totals do not match a: use dirichlet_categorical_hyper")
    per_var = np.zeros((x.shape[0], int(g[-1]) + 1))
    np.add.at(per_var.T, g, x.T)
    if not np.all(per_var == 1.0):
        raise ValueError("each row must hold exactly one 1 per categorical variable (dirichlet_categorical_data)")
    with np.errstate(over="ignore", divide="ignore"):
        per = np.abs(gammaln(a + n)) + np.abs(gammaln(a)) + np.abs(gammaln(tot + n)) + np.abs(np.log(a)) + 1.0
        _too_big(float(4.0 * (n + 1) * per.sum()), "4 (n + 1) times the log-gamma terms of the log marginals",
                 "decrease a")


# ----------------------------------------------------------------------------- linear regression
#
# LINEAR_REGRESSION  clusters of regressions: y_i = x_i . beta_b + e_i, e_i ~ N(0, sigma_b^2), with the
#                 Normal-inverse-Gamma prior beta_b | sigma_b^2 ~ N(mu0, sigma_b^2 cov0),
#                 sigma_b^2 ~ InvGamma(a0, b0) (shape, scale). Data row i = [x_i (p), y_i], so D = p + 1.
#                 With Lam0 = cov0^{-1} = L0 L0^T: hyper ``[mu0 (p), L0 (p*p), r0 = Lam0 mu0 (p), a0, b0,
#                 mu0' Lam0 mu0, log-marginal constant a0 log b0 - lgamma(a0) + log|L0|]``;
#                 stats ``[m, r = r0 + X'y (p), y'y, L (p*p) with L L^T = Lam_m = Lam0 + X'X, w = L^{-1} r (p),
#                 b_m, a_m + 1/2, c, 1/(2 b_m), log|L|, 1/diag(L) (p)]`` where a_m = a0 + m/2,
#                 b_m = b0 + (y'y + mu0' Lam0 mu0 - |w|^2) / 2 and c = lgamma(a_m + 1/2) - lgamma(a_m)
#                 - log(2 pi b_m) / 2. The posterior mean of beta is L^{-T} w. The log predictive of a
#                 point (x, y) is a Student t with 2 a_m degrees of freedom: with u = L^{-1} x, q = |u|^2,
#                 e = y - u . w: c - log(1 + q) / 2 - (a_m + 1/2) log(1 + e^2 / (2 b_m (1 + q))).
#                 Adding or removing a point: one rank-one (up/down)date of L and one triangular solve,
#                 O(p^2); a candidate block's log predictive: one triangular solve, O(p^2). The union of
#                 two blocks (family_merge): Lam_A + Lam_B - Lam0 factorised once, O(p^3).


def lr_hyper_length(p: int) -> int:
    """Length of the LINEAR_REGRESSION hyper vector for ``p`` covariates."""
    return p * p + 2 * p + 4


def linear_regression_hyper(mu0, cov0, a0, b0, p) -> np.ndarray:
    """Hyper vector of the LINEAR_REGRESSION family (layout above) for ``p`` covariates: ``mu0`` a scalar
    or length p, ``cov0`` a scalar, length-p diagonal or p x p positive definite matrix."""
    mu0 = np.broadcast_to(np.asarray(mu0, float), (p,)).astype(float)
    cov0 = np.asarray(cov0, float)
    if cov0.ndim < 2:
        cov0 = np.diag(np.broadcast_to(cov0, (p,)).astype(float))
    prec0 = np.linalg.inv(cov0)
    prec0 = 0.5 * (prec0 + prec0.T)
    chol0 = np.linalg.cholesky(prec0)
    r0 = prec0 @ mu0
    log_l0 = float(np.log(np.diag(chol0)).sum())
    a0, b0 = float(a0), float(b0)
    const = a0 * math.log(b0) - math.lgamma(a0) + log_l0
    return np.concatenate([mu0, chol0.ravel(), r0, [a0, b0, float(mu0 @ r0), const]])


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _lr_refresh(st, b, so, hp, ho, dim):
    p = dim - 1
    base = so + 2 + p  # L
    w_at = base + p * p
    tail = w_at + p
    m = st[b, so]
    q = 0.0
    logdet = 0.0
    for a in range(p):  # w = L^{-1} r
        v = st[b, so + 1 + a]
        for c in range(a):
            v -= st[b, base + a * p + c] * st[b, w_at + c]
        diag = st[b, base + a * p + a]
        inv = 1.0 / diag
        st[b, tail + 5 + a] = inv
        v *= inv
        st[b, w_at + a] = v
        q += v * v
        logdet += math.log(diag)
    a0 = hp[ho + p * p + 2 * p]
    b0 = hp[ho + p * p + 2 * p + 1]
    quad = st[b, so + 1 + p] + hp[ho + p * p + 2 * p + 2] - q
    if quad < 0.0:  # rounding only: the quadratic form is non-negative
        quad = 0.0
    b_m = b0 + 0.5 * quad
    a_m = a0 + 0.5 * m
    st[b, tail] = b_m
    st[b, tail + 1] = a_m + 0.5
    st[b, tail + 2] = math.lgamma(a_m + 0.5) - math.lgamma(a_m) - 0.5 * (LOG_2PI + math.log(b_m))
    st[b, tail + 3] = 0.5 / b_m
    st[b, tail + 4] = logdet


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _lr_init(st, b, so, hp, ho, dim):
    p = dim - 1
    st[b, so] = 0.0
    for a in range(p):
        st[b, so + 1 + a] = hp[ho + p + p * p + a]
    st[b, so + 1 + p] = 0.0
    for j in range(p * p):
        st[b, so + 2 + p + j] = hp[ho + p + j]
    _lr_refresh(st, b, so, hp, ho, dim)


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _lr_update(st, b, so, x, i, xo, hp, ho, dim, sign, scratch):
    p = dim - 1
    st[b, so] += sign
    if sign < 0.0 and st[b, so] < 0.5:
        _lr_init(st, b, so, hp, ho, dim)  # exact reset: no drift in an emptied block
        return
    y = x[i, xo + p]
    for a in range(p):
        v = x[i, xo + a]
        st[b, so + 1 + a] += sign * v * y
        scratch[a] = v
    st[b, so + 1 + p] += sign * y * y
    _chol_rank_one(st, b, so + 2 + p, p, scratch, sign)
    _lr_refresh(st, b, so, hp, ho, dim)


@numba.njit(cache=True, fastmath=_FAST, error_model="numpy", _nrt=False)
def _lr_log_preds(st, blocks, n_blocks, so, x, i, xo, dim, scratch, out):
    p = dim - 1
    base = so + 2 + p
    w_at = base + p * p
    tail = w_at + p
    y = x[i, xo + p]
    for j in range(n_blocks):
        b = blocks[j]
        q = 0.0  # forward solve L u = x: q = |u|^2, loc = u . w
        loc = 0.0
        for a in range(p):
            v = x[i, xo + a]
            for c in range(a):
                v -= st[b, base + a * p + c] * scratch[c]
            u = v * st[b, tail + 5 + a]
            scratch[a] = u
            q += u * u
            loc += u * st[b, w_at + a]
        e = y - loc
        one_q = 1.0 + q
        out[j] += (st[b, tail + 2] - 0.5 * math.log(one_q)
                   - st[b, tail + 1] * math.log(1.0 + e * e * st[b, tail + 3] / one_q))


@numba.njit(cache=True, error_model="numpy")
def _lr_log_marginal(st, b, so, hp, ho, dim):
    p = dim - 1
    tail = so + 2 + p + p * p + p
    m = st[b, so]
    a_m = st[b, tail + 1] - 0.5
    return (hp[ho + p * p + 2 * p + 3] - 0.5 * m * LOG_2PI - st[b, tail + 4] - a_m * math.log(st[b, tail])
            + math.lgamma(a_m))


@numba.njit(cache=True, error_model="numpy")
def _lr_merge(st, dst, src, so, hp, ho, dim, work):
    """dst <- dst ∪ src (both non-empty): Lam_AB = Lam_A + Lam_B - Lam0 factorised once (O(p^3)),
    r and y'y add (r0 counted once)."""
    p = dim - 1
    base = so + 2 + p
    h_chol = ho + p
    for r in range(p):
        for c in range(r + 1):
            s = 0.0
            for q in range(c + 1):
                s += (st[dst, base + r * p + q] * st[dst, base + c * p + q]
                      + st[src, base + r * p + q] * st[src, base + c * p + q]
                      - hp[h_chol + r * p + q] * hp[h_chol + c * p + q])
            work[r * p + c] = s
    _chol_into(st, dst, base, p, work)
    st[dst, so] += st[src, so]
    for a in range(p):
        st[dst, so + 1 + a] += st[src, so + 1 + a] - hp[ho + p + p * p + a]
    st[dst, so + 1 + p] += st[src, so + 1 + p]
    _lr_refresh(st, dst, so, hp, ho, dim)


def _check_linear_regression(summary, hp, n, dim):
    p = dim - 1
    if p < 1:
        raise ValueError("data must hold at least one covariate column and the response (D = p + 1 >= 2)")
    mu0 = hp[:p]
    chol = np.tril(hp[p:p + p * p].reshape(p, p))
    a0, b0 = hp[p * p + 2 * p], hp[p * p + 2 * p + 1]
    if not np.isfinite(hp).all():
        raise ValueError("the hyper vector must be finite (make it with linear_regression_hyper)")
    _positive_range(np.array([a0]), "a0", "increase a0", "decrease a0")
    _positive_range(np.array([b0]), "b0", "increase b0 or rescale the response", "decrease b0 or rescale the response")
    if not (np.diag(chol) > 0.0).all():
        raise ValueError("the Cholesky factor of cov0^{-1} must have a positive diagonal")
    prec0 = chol @ chol.T
    if not np.allclose(hp[p + p * p:2 * p + p * p], prec0 @ mu0, rtol=1e-8, atol=1e-300 + 1e-12 * np.abs(prec0).max()
                       * max(1.0, float(np.abs(mu0).max()))):
        raise ValueError("the hyper vector is inconsistent (cov0^{-1} mu0): make it with linear_regression_hyper")
    big = float(summary[3].max())  # bounds |x| and |y|
    with np.errstate(over="ignore", under="ignore"):
        lam_min = np.linalg.svd(chol, compute_uv=False).min() ** 2
        if not lam_min >= 1.0 / CEILING:
            raise ValueError(f"cov0^{{-1}}'s smallest eigenvalue {lam_min:.3g} is below {1.0 / CEILING:.0e}: "
                             "decrease cov0 or rescale the covariates")
        r_max = float(np.abs(prec0 @ mu0).max()) + n * big * big
        _too_big(p * r_max * r_max / lam_min + float(np.abs(prec0).max()) + n * big * big,
                 "the sufficient statistics' quadratic forms (p (|cov0^-1 mu0| + n max|x, y|^2)^2 / smallest "
                 "eigenvalue of cov0^-1)", "rescale the data or cov0")
        b_max = b0 + 0.5 * (n * big * big + float(hp[p * p + 2 * p + 2]))
        log_b = max(abs(math.log(b_max)), abs(math.log(b0)), 1.0)
        lg = max(abs(math.lgamma(a0 + 0.5 * n + 0.5)), abs(math.lgamma(a0)), 1.0)
        _too_big(4.0 * (n + 1) * ((a0 + n) * log_b + lg + p * max(abs(math.log(lam_min)), abs(math.log(
            float(np.abs(prec0).max()) + n * big * big)), 1.0)),
                 "4 (n + 1) times the log terms of the log marginals", "rescale the data, b0 or cov0, or decrease a0")



# ----------------------------------------------------------------------------- the dispatch functions


def _code_family(code_type) -> int:
    """The family a numba type of ``code`` stands for (:data:`CODE_DTYPES`), else ALL_FAMILIES."""
    return _FAMILY_OF_CODE_TYPE.get(numba_types.unliteral(code_type), ALL_FAMILIES)


def _dispatch(body, **options):
    """The public form of a family dispatch function: from Python, the all-families compiled function;
    inside compiled code, an overload compiled for the family of ``code``'s type only."""
    bodies = lru_cache(maxsize=None)(body)
    compiled = numba.njit(cache=True, **options)(bodies(ALL_FAMILIES))

    def public(code, *args):
        return compiled(code, *args)

    public.__name__ = public.__qualname__ = compiled.py_func.__name__
    public.__doc__ = compiled.py_func.__doc__
    public.compiled = compiled  # the all-families dispatcher (tests read its LLVM IR)
    public.for_family = bodies  # the Python function compiled for one family (or ALL_FAMILIES)

    def typing(code, *args):
        return bodies(_code_family(code))

    overload(public, jit_options=options, strict=False)(typing)
    return public


_PER_ITEM = dict(error_model="numpy", _nrt=False)
family_init = _dispatch(_family_init_body, **_PER_ITEM)
stats_width_compiled = _dispatch(_stats_width_compiled_body, **_PER_ITEM)
family_update = _dispatch(_family_update_body, fastmath=_FAST, **_PER_ITEM)
family_log_preds = _dispatch(_family_log_preds_body, fastmath=_FAST, **_PER_ITEM)
family_log_marginal = _dispatch(_family_log_marginal_body, error_model="numpy")
family_merge = _dispatch(_family_merge_body, error_model="numpy")
family_set_stats = _dispatch(_family_set_stats_body, fastmath=_FAST, error_model="numpy")
