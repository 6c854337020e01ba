"""Compiled (numba) forms of the conjugate cluster likelihoods, for the samplers.

Each family keeps per-block sufficient statistics in a float64 row, together with cached
quantities that make the log predictive of one point cheap (no logarithm per candidate block
for the Normal families). Adding or removing a point is O(D) (O(D^2) for NIW through a rank-one
Cholesky update). Several families may describe one partition: their statistics sit side by
side in one row and their log predictives add. :class:`FamilyPack` holds that layout.

Family codes and layouts (``D`` = data dimension):

``DIAG_NORMAL``  hyper ``[mu0 (D), sigma0^2 (D), sigma^2 (D), log_jacobian]``;
                 stats ``[m, sum (D), sum of squares (D), pred mean (D), pred precision (D), const]``.
                 The full-covariance Normal-Normal model is this one after an exact linear
                 whitening of the data (``families.transforms.whiten_full_normal``).
``NIW``          hyper ``[mu0 (D), kappa0, nu0, chol(scale0) (D*D), log|scale0|]``;
                 stats ``[m, sum (D), chol(S_m) (D*D), log|S_m|, const]``.
``BETA_BERNOULLI`` hyper ``[a (D), b (D)]``; stats ``[m, ones (D), log p1 (D), log p0 (D)]``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

DIAG_NORMAL = 0
NIW = 1
BETA_BERNOULLI = 2

LOG_2PI = math.log(2.0 * math.pi)
LOG_PI = math.log(math.pi)


def stats_width(code: int, dim: int) -> int:
    """Length of one block's statistics row for a family."""
    if code == DIAG_NORMAL:
        return 4 * dim + 2
    if code == NIW:
        return dim * dim + dim + 3
    if code == BETA_BERNOULLI:
        return 3 * dim + 1
    raise ValueError(f"unknown family code {code}")


# ----------------------------------------------------------------------------- hyper vectors


def diag_normal_hyper(mu0, sigma0, sigma, dim, log_jacobian=0.0) -> np.ndarray:
    """Hyper vector for the diagonal Normal-Normal family (sds are broadcast to ``dim``)."""
    mu0 = np.broadcast_to(np.asarray(mu0, float), (dim,))
    s0 = np.broadcast_to(np.asarray(sigma0, float), (dim,))
    s = np.broadcast_to(np.asarray(sigma, float), (dim,))
    return np.concatenate([mu0, s0**2, s**2, [float(log_jacobian)]])


def niw_hyper(mu0, kappa0, nu0, scale0, dim) -> np.ndarray:
    """Hyper vector for the Normal-inverse-Wishart family."""
    mu0 = np.broadcast_to(np.asarray(mu0, float), (dim,))
    chol = np.linalg.cholesky(np.asarray(scale0, float).reshape(dim, dim))
    logdet = 2.0 * np.log(np.diag(chol)).sum()
    return np.concatenate([mu0, [float(kappa0), float(nu0)], chol.ravel(), [logdet]])


def beta_bernoulli_hyper(a, b, dim) -> np.ndarray:
    """Hyper vector for the Beta-Bernoulli family."""
    a = np.broadcast_to(np.asarray(a, float), (dim,))
    b = np.broadcast_to(np.asarray(b, float), (dim,))
    return np.concatenate([a, b])


# ----------------------------------------------------------------------------- per-family code


@numba.njit(cache=True)
def _diag_refresh(st, hp, dim):
    m = st[0]
    const = 0.0
    for d in range(dim):
        prec = 1.0 / hp[dim + d] + m / hp[2 * dim + d]
        mean = (hp[d] / hp[dim + d] + st[1 + d] / hp[2 * dim + d]) / prec
        var = 1.0 / prec + hp[2 * dim + d]
        st[1 + 2 * dim + d] = mean
        st[1 + 3 * dim + d] = 1.0 / var
        const -= 0.5 * (LOG_2PI + math.log(var))
    st[1 + 4 * dim] = const + hp[3 * dim]


@numba.njit(cache=True)
def _niw_refresh(st, hp, dim):
    m = st[0]
    r = hp[dim] + m
    nu = hp[dim + 1] + m
    logdet = 0.0
    base = 1 + dim
    for d in range(dim):
        logdet += 2.0 * math.log(st[base + d * dim + d])
    st[base + dim * dim] = logdet
    st[base + dim * dim + 1] = (
        -0.5 * dim * LOG_PI
        + 0.5 * dim * math.log(r / (r + 1.0))
        - 0.5 * logdet
        + math.lgamma(0.5 * (nu + 1.0))
        - math.lgamma(0.5 * (nu + 1.0 - dim))
    )


@numba.njit(cache=True)
def _bb_refresh(st, hp, dim):
    m = st[0]
    for d in range(dim):
        a = hp[d]
        b = hp[dim + d]
        tot = math.log(a + b + m)
        st[1 + dim + d] = math.log(a + st[1 + d]) - tot
        st[1 + 2 * dim + d] = math.log(b + m - st[1 + d]) - tot


@numba.njit(cache=True)
def family_init(code, st, hp, dim):
    """Statistics of an empty block."""
    st[:] = 0.0
    if code == NIW:
        st[1 + dim : 1 + dim + dim * dim] = hp[dim + 2 : dim + 2 + dim * dim]
        _niw_refresh(st, hp, dim)
    elif code == DIAG_NORMAL:
        _diag_refresh(st, hp, dim)
    else:
        _bb_refresh(st, hp, dim)


@numba.njit(cache=True)
def _chol_rank_one(L, base, dim, x, sign):
    # L (row-major in st[base:]) <- chol(L L^T + sign x x^T); x is overwritten.
    for k in range(dim):
        lkk = L[base + k * dim + k]
        r2 = lkk * lkk + sign * x[k] * x[k]
        if r2 <= 0.0:
            r2 = 1e-300
        r = math.sqrt(r2)
        c = r / lkk
        s = x[k] / lkk
        L[base + k * dim + k] = r
        for i in range(k + 1, dim):
            lik = (L[base + i * dim + k] + sign * s * x[i]) / c
            L[base + i * dim + k] = lik
            x[i] = c * x[i] - s * lik


@numba.njit(cache=True)
def family_update(code, st, x, hp, dim, sign, scratch):
    """Add (``sign = 1``) or remove (``sign = -1``) the point ``x`` from a block's statistics."""
    if code == DIAG_NORMAL:
        st[0] += sign
        for d in range(dim):
            st[1 + d] += sign * x[d]
            st[1 + dim + d] += sign * x[d] * x[d]
        _diag_refresh(st, hp, dim)
    elif code == NIW:
        kappa0 = hp[dim]
        if sign > 0:
            r = kappa0 + st[0]
            for d in range(dim):
                scratch[d] = x[d] - (kappa0 * hp[d] + st[1 + d]) / r
            f = math.sqrt(r / (r + 1.0))
            st[0] += 1.0
            for d in range(dim):
                st[1 + d] += x[d]
                scratch[d] *= f
            _chol_rank_one(st, 1 + dim, dim, scratch, 1.0)
        else:
            st[0] -= 1.0
            for d in range(dim):
                st[1 + d] -= x[d]
            if st[0] < 0.5:
                family_init(code, st, hp, dim)  # exact reset: no drift in an emptied block
                return
            r = kappa0 + st[0]
            f = math.sqrt(r / (r + 1.0))
            for d in range(dim):
                scratch[d] = (x[d] - (kappa0 * hp[d] + st[1 + d]) / r) * f
            _chol_rank_one(st, 1 + dim, dim, scratch, -1.0)
        _niw_refresh(st, hp, dim)
    else:
        st[0] += sign
        for d in range(dim):
            st[1 + d] += sign * x[d]
        _bb_refresh(st, hp, dim)


@numba.njit(cache=True)
def family_log_pred(code, st, x, hp, dim, scratch):
    """Log posterior predictive density of ``x`` given a block's statistics."""
    if code == DIAG_NORMAL:
        out = st[1 + 4 * dim]
        for d in range(dim):
            e = x[d] - st[1 + 2 * dim + d]
            out -= 0.5 * e * e * st[1 + 3 * dim + d]
        return out
    if code == NIW:
        kappa0 = hp[dim]
        m = st[0]
        r = kappa0 + m
        nu = hp[dim + 1] + m
        base = 1 + dim
        # forward solve L w = x - u
        q = 0.0
        for i in range(dim):
            v = x[i] - (kappa0 * hp[i] + st[1 + i]) / r
            for j in range(i):
                v -= st[base + i * dim + j] * scratch[j]
            w = v / st[base + i * dim + i]
            scratch[i] = w
            q += w * w
        return st[base + dim * dim + 1] - 0.5 * (nu + 1.0) * math.log1p(q * r / (r + 1.0))
    out = 0.0
    for d in range(dim):
        if x[d] > 0.5:
            out += st[1 + dim + d]
        else:
            out += st[1 + 2 * dim + d]
    return out


@numba.njit(cache=True)
def family_log_marginal(code, st, hp, dim):
    """Log marginal likelihood of all the points in a block (0 for an empty block)."""
    m = st[0]
    if m < 0.5:
        return 0.0
    out = 0.0
    if code == DIAG_NORMAL:
        for d in range(dim):
            mu0 = hp[d]
            t2 = hp[dim + d]
            s2 = hp[2 * dim + d]
            sr = st[1 + d] - m * mu0
            srr = st[1 + dim + d] - 2.0 * mu0 * st[1 + d] + m * mu0 * mu0
            out += -0.5 * m * (LOG_2PI + math.log(s2)) - 0.5 * math.log1p(m * t2 / s2)
            out -= 0.5 / s2 * (srr - t2 * sr * sr / (s2 + m * t2))
        return out + m * hp[3 * dim]
    if code == NIW:
        kappa0 = hp[dim]
        nu0 = hp[dim + 1]
        logdet0 = hp[dim + 2 + dim * dim]
        logdet = st[1 + dim + dim * dim]
        out = -0.5 * m * dim * LOG_PI + 0.5 * dim * (math.log(kappa0) - math.log(kappa0 + m))
        out += 0.5 * nu0 * logdet0 - 0.5 * (nu0 + m) * logdet
        for d in range(dim):
            out += math.lgamma(0.5 * (nu0 + m - d)) - math.lgamma(0.5 * (nu0 - d))
        return out
    for d in range(dim):
        a = hp[d]
        b = hp[dim + d]
        c = st[1 + d]
        out += math.lgamma(a + c) + math.lgamma(b + m - c) - math.lgamma(a + b + m)
        out -= math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
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


@numba.njit(cache=True)
def pack_init(codes, dims, stat_off, hyper_off, hyper, row):
    """Statistics row of an empty block for all families."""
    for f in range(codes.shape[0]):
        dim = dims[f]
        family_init(codes[f], row[stat_off[f] :], hyper[hyper_off[f] :], dim)


@numba.njit(cache=True)
def pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, row, xrow, sign, scratch):
    """Add or remove one point (row of the packed data) in all families."""
    for f in range(codes.shape[0]):
        dim = dims[f]
        family_update(
            codes[f], row[stat_off[f] :], xrow[data_off[f] : data_off[f] + dim], hyper[hyper_off[f] :], dim, sign, scratch
        )


@numba.njit(cache=True)
def pack_log_pred(codes, dims, data_off, stat_off, hyper_off, hyper, row, xrow, scratch):
    """Sum over families of the log predictive of one point given one block."""
    out = 0.0
    for f in range(codes.shape[0]):
        dim = dims[f]
        out += family_log_pred(
            codes[f], row[stat_off[f] :], xrow[data_off[f] : data_off[f] + dim], hyper[hyper_off[f] :], dim, scratch
        )
    return out


@numba.njit(cache=True)
def pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, row):
    """Sum over families of a block's log marginal likelihood."""
    out = 0.0
    for f in range(codes.shape[0]):
        out += family_log_marginal(codes[f], row[stat_off[f] :], hyper[hyper_off[f] :], dims[f])
    return out
