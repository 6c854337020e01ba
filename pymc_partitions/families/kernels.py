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
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from scipy.special import gammaln

DIAG_NORMAL = 0
NIW = 1
BETA_BERNOULLI = 2
GRAPH = 3

LOG_2PI = math.log(2.0 * math.pi)
LOG_PI = math.log(math.pi)
LOG_2 = math.log(2.0)


def stats_width(code: int, dim: int) -> int:
    """Length of one block's statistics row for a family."""
    if code not in (DIAG_NORMAL, NIW, BETA_BERNOULLI, GRAPH):
        raise ValueError(f"unknown family code {code}")
    return int(stats_width_compiled(code, dim))


# ----------------------------------------------------------------------------- hyper vectors


def diag_normal_hyper(mu0, sigma0, sigma, dim, log_jacobian=0.0) -> np.ndarray:
    """Hyper vector for the diagonal Normal-Normal family (sds are broadcast to ``dim``).

    Layout ``[mu0, sigma0^2, sigma^2, log_jacobian, 1/sigma0^2, 1/sigma^2, mu0/sigma0^2]``; the
    reciprocals spare the kernels a division per dimension.
    """
    mu0 = np.broadcast_to(np.asarray(mu0, float), (dim,))
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


@numba.njit(cache=True, fastmath=_FAST, error_model="numpy")
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
    # sum of log variances as logs of products of at most 16 factors (no overflow)
    log_half_prec = 0.0
    prod = 1.0
    for d in range(dim):
        prod *= st[b, so + 1 + 3 * dim + d]
        if d % 16 == 15:
            log_half_prec += math.log(prod)
            prod = 1.0
    log_half_prec += math.log(prod)
    # -1/2 sum log(2 pi var) with var = 1 / (2 * half precision)
    st[b, so + 1 + 4 * dim] = -0.5 * dim * (LOG_2PI - LOG_2) + 0.5 * log_half_prec + hp[ho + 3 * dim]


@numba.njit(cache=True, error_model="numpy")
def _niw_refresh(st, b, so, hp, ho, dim):
    m = st[b, so]
    kappa0 = hp[ho + dim]
    r = kappa0 + m
    nu = hp[ho + dim + 1] + m
    base = so + 1 + dim
    cache = base + dim * dim + 2
    prod = 1.0
    logdet = 0.0
    for d in range(dim):
        diag = st[b, base + d * dim + d]
        st[b, cache + d] = (kappa0 * hp[ho + d] + st[b, so + 1 + d]) / r
        st[b, cache + dim + d] = 1.0 / diag
        prod *= diag
        if d % 16 == 15:
            logdet += 2.0 * math.log(prod)
            prod = 1.0
    logdet += 2.0 * math.log(prod)
    st[b, cache + 2 * dim] = r / (r + 1.0)
    st[b, cache + 2 * dim + 1] = 0.5 * (nu + 1.0)
    st[b, base + dim * dim] = logdet
    st[b, base + dim * dim + 1] = hp[ho + dim + 3 + dim * dim + int(m)] - 0.5 * logdet


@numba.njit(cache=True, error_model="numpy")
def _bb_refresh(st, b, so, hp, ho, dim):
    m = st[b, so]
    for d in range(dim):
        a_ = hp[ho + d]
        b_ = hp[ho + dim + d]
        tot = math.log(a_ + b_ + m)
        st[b, so + 1 + dim + d] = math.log(a_ + st[b, so + 1 + d]) - tot
        st[b, so + 1 + 2 * dim + d] = math.log(b_ + m - st[b, so + 1 + d]) - tot


@numba.njit(cache=True, error_model="numpy")
def family_init(code, st, b, so, hp, ho, dim):
    """Statistics of an empty block."""
    for j in range(stats_width_compiled(code, dim)):
        st[b, so + j] = 0.0
    if code == NIW:
        for j in range(dim * dim):
            st[b, so + 1 + dim + j] = hp[ho + dim + 2 + j]
        _niw_refresh(st, b, so, hp, ho, dim)
    elif code == DIAG_NORMAL:
        _diag_refresh(st, b, so, hp, ho, dim)
    elif code == BETA_BERNOULLI:
        _bb_refresh(st, b, so, hp, ho, dim)


@numba.njit(cache=True, error_model="numpy")
def stats_width_compiled(code, dim):
    """Row width of a family's block statistics (the one definition; see the module docstring)."""
    if code == DIAG_NORMAL:
        return 4 * dim + 2
    if code == NIW:
        return dim * dim + 3 * dim + 5
    if code == GRAPH:
        return dim + 2
    return 3 * dim + 1


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, fastmath=_FAST, error_model="numpy")
def family_update(code, st, b, so, x, i, xo, hp, ho, dim, sign, scratch):
    """Add (``sign = 1``) or remove (``sign = -1``) point ``i`` from block ``b``'s statistics."""
    if code == DIAG_NORMAL:
        st[b, so] += sign
        c_sum = np.uint64(so + 1)
        c_sq = np.uint64(so + 1 + dim)
        x0 = np.uint64(xo)
        for d in range(np.uint64(dim)):
            v = x[i, x0 + d]
            st[b, c_sum + d] += sign * v
            st[b, c_sq + d] += sign * v * v
        _diag_refresh(st, b, so, hp, ho, dim)
    elif code == NIW:
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
    elif code == BETA_BERNOULLI:
        st[b, so] += sign
        for d in range(dim):
            st[b, so + 1 + d] += sign * x[i, xo + d]
        _bb_refresh(st, b, so, hp, ho, dim)
    else:  # GRAPH: edges inside change by the number of i's neighbours in the block
        if sign > 0:
            st[b, so + 1] += st[b, so + 2 + i]
        st[b, so] += sign
        for d in range(dim):
            st[b, so + 2 + d] += sign * x[i, xo + d]
        if sign < 0:
            st[b, so + 1] -= st[b, so + 2 + i]


@numba.njit(cache=True, fastmath=_FAST, error_model="numpy")
def family_log_preds(code, st, blocks, n_blocks, so, x, i, xo, hp, ho, dim, scratch, out):
    """Add to ``out[j]`` the log predictive of point ``i`` given block ``blocks[j]``, j < n_blocks.

    One call per point and family, with the family's branch outside the loop over blocks: the
    cost per candidate block is then only the arithmetic.
    """
    if code == DIAG_NORMAL:
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
    elif code == NIW:
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
    elif code == GRAPH:
        for j in range(n_blocks):
            if st[blocks[j], so + 2 + i] > 0.5:
                out[j] = -np.inf
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


@numba.njit(cache=True, error_model="numpy")
def family_log_marginal(code, st, b, so, hp, ho, dim):
    """Log marginal likelihood of all the points in block ``b`` (0 for an empty block)."""
    m = st[b, so]
    if m < 0.5:
        return 0.0
    out = 0.0
    if code == DIAG_NORMAL:
        for d in range(dim):
            mu0 = hp[ho + d]
            t2 = hp[ho + dim + d]
            s2 = hp[ho + 2 * dim + d]
            sr = st[b, so + 1 + d] - m * mu0
            srr = st[b, so + 1 + dim + d] - 2.0 * mu0 * st[b, so + 1 + d] + m * mu0 * mu0
            out += -0.5 * m * (LOG_2PI + math.log(s2)) - 0.5 * math.log1p(m * t2 / s2)
            out -= 0.5 / s2 * (srr - t2 * sr * sr / (s2 + m * t2))
        return out + m * hp[ho + 3 * dim]
    if code == NIW:
        kappa0 = hp[ho + dim]
        nu0 = hp[ho + dim + 1]
        logdet0 = hp[ho + dim + 2 + dim * dim]
        logdet = st[b, so + 1 + dim + dim * dim]
        out = -0.5 * m * dim * LOG_PI + 0.5 * dim * (math.log(kappa0) - math.log(kappa0 + m))
        out += 0.5 * nu0 * logdet0 - 0.5 * (nu0 + m) * logdet
        for d in range(dim):
            out += math.lgamma(0.5 * (nu0 + m - d)) - math.lgamma(0.5 * (nu0 - d))
        return out
    if code == GRAPH:
        return -np.inf if st[b, so + 1] > 0.5 else 0.0
    for d in range(dim):
        a_ = hp[ho + d]
        b_ = hp[ho + dim + d]
        c = st[b, so + 1 + d]
        out += math.lgamma(a_ + c) + math.lgamma(b_ + m - c) - math.lgamma(a_ + b_ + m)
        out -= math.lgamma(a_) + math.lgamma(b_) - math.lgamma(a_ + b_)
    return out


# ----------------------------------------------------------------------------- several families


class FamilyPack(NamedTuple):
    """Several conjugate families side by side, as flat arrays the kernels can read.

    ``data`` is (n, sum of dims); family f reads columns ``data_off[f] : data_off[f] + dims[f]``,
    keeps its statistics at ``stat_off[f]`` of each block row (width ``width``), and its hyper
    vector at ``hyper[hyper_off[f]:]``.
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
    def build(parts, n=None):
        """``parts``: a list of ``(code, data (n, D), hyper vector)``; may be empty if ``n`` is given
        (the partition prior alone)."""
        if not parts and n is None:
            raise ValueError("give n when there are no likelihoods")
        n = parts[0][1].shape[0] if n is None else n
        codes, dims, doff, soff, hoff, hypers, datas = [], [], [], [], [], [], []
        d_at = s_at = h_at = 0
        for code, data, hyper in parts:
            data = np.asarray(data, np.float64)
            if data.ndim == 1:
                data = data[:, None]
            if data.shape[0] != n:
                raise ValueError("all likelihoods of one partition must have the same number of rows")
            dim = data.shape[1]
            codes.append(code)
            dims.append(dim)
            doff.append(d_at)
            soff.append(s_at)
            hoff.append(h_at)
            hypers.append(np.asarray(hyper, np.float64))
            datas.append(data)
            d_at += dim
            s_at += stats_width(code, dim)
            h_at += hypers[-1].shape[0]
        i64 = lambda v: np.asarray(v, np.int64)  # noqa: E731
        return FamilyPack(
            i64(codes), i64(dims), i64(doff), i64(soff), i64(hoff),
            np.concatenate(hypers + [np.zeros(0)]), np.ascontiguousarray(np.hstack(datas + [np.zeros((n, 0))])), s_at,
        )

    def with_hyper(self, hypers):
        """Same layout and data, new hyper vectors (one per family, in order)."""
        return self._replace(hyper=np.concatenate([np.asarray(h, np.float64) for h in hypers]))


@numba.njit(cache=True, error_model="numpy")
def pack_init(codes, dims, stat_off, hyper_off, hyper, st, b):
    """Statistics of an empty block ``b`` for all families."""
    for f in range(codes.shape[0]):
        family_init(codes[f], st, b, stat_off[f], hyper, hyper_off[f], dims[f])


@numba.njit(cache=True, error_model="numpy")
def pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, st, b, x, i, sign, scratch):
    """Add or remove point ``i`` in block ``b`` for all families."""
    for f in range(codes.shape[0]):
        family_update(codes[f], st, b, stat_off[f], x, i, data_off[f], hyper, hyper_off[f], dims[f], sign, scratch)


@numba.njit(cache=True, error_model="numpy")
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
