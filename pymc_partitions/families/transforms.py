"""NumPy helpers shared by the symbolic forms, the numba kernels and the predictive forms."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import linalg as sla

__all__ = ["whiten_full_normal", "FullNormalWhitening", "full_normal_whitening"]


class FullNormalWhitening(NamedTuple):
    """The linear map that makes the full-covariance Normal-Normal model diagonal.

    ``W = Q^T L1^{-1}`` maps a point y to ``y' = W y``; ``W_inv = L1 Q`` maps back. In the
    whitened space the model is the diagonal one with prior mean ``mu0_2 = W mu0``, prior standard
    deviations ``sigma0_2`` and observation standard deviation 1; densities of y are those of y'
    times ``exp(log_jacobian)`` (``log |det W| = -sum log diag L1``).
    """

    W: np.ndarray
    W_inv: np.ndarray
    chol_cov: np.ndarray
    mu0_2: np.ndarray
    sigma0_2: np.ndarray
    log_jacobian: float


def full_normal_whitening(mu0, cov0, cov, dim=None) -> FullNormalWhitening:
    """:class:`FullNormalWhitening` of ``y | mu ~ N(mu, cov)``, ``mu ~ N(mu0, cov0)`` (D x D SPD
    ``cov0`` and ``cov``; ``mu0`` scalar or length D). See :func:`whiten_full_normal`."""
    cov = np.atleast_2d(np.asarray(cov, dtype=np.float64))
    cov0 = np.atleast_2d(np.asarray(cov0, dtype=np.float64))
    D = cov.shape[0] if dim is None else dim
    mu0 = np.broadcast_to(np.asarray(mu0, dtype=np.float64), (D,))
    L1 = np.linalg.cholesky(cov)
    A = sla.solve_triangular(L1, cov0, lower=True)  # L1^{-1} cov0
    M = sla.solve_triangular(L1, A.T, lower=True)  # L1^{-1} cov0 L1^{-T}
    M = 0.5 * (M + M.T)
    lam, Q = np.linalg.eigh(M)
    lam = np.clip(lam, 0.0, None)
    W = Q.T @ sla.solve_triangular(L1, np.eye(D), lower=True)  # Q^T L1^{-1}
    return FullNormalWhitening(W, L1 @ Q, L1, W @ mu0, np.sqrt(lam), -float(np.sum(np.log(np.diag(L1)))))


def whiten_full_normal(Y, mu0, cov0, cov):
    """Reduce the full-covariance NormalNormal model to a diagonal one.

    Model: ``y_i | mu_b ~ N(mu_b, cov)``, ``mu_b ~ N(mu0, cov0)``.
    With ``L1 = chol(cov)`` and ``L1^{-1} cov0 L1^{-T} = Q diag(lam) Q^T`` the
    transformed points ``y' = Q^T L1^{-1} y`` follow the *diagonal* NormalNormal
    model with ``sigma = 1``, prior mean ``mu0' = Q^T L1^{-1} mu0`` and prior
    standard deviations ``sigma0' = sqrt(lam)``.  The transformation is linear
    and shared by all points, so for any partition

        logp_full(labels, Y) = logp_diag(labels, Y2, mu0_2, sigma0_2, 1.0)
                               + n * log_jacobian_per_point

    Parameters
    ----------
    Y : (n, D) array
    mu0 : (D,) array or scalar
    cov0, cov : (D, D) SPD arrays

    Returns
    -------
    Y2 : (n, D) array, transformed data.
    mu0_2 : (D,) array, transformed prior mean.
    sigma0_2 : (D,) array, transformed prior **standard deviations**
        (``sqrt`` of the eigenvalues, i.e. ``sigma0_2**2 = lam``), to be used with
        ``sigma = 1``.
    log_jacobian_per_point : float, ``-sum(log(diag(L1)))``.
    """
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y[:, None]
    w = full_normal_whitening(mu0, cov0, cov, Y.shape[1])
    return np.ascontiguousarray(Y @ w.W.T), w.mu0_2, w.sigma0_2, w.log_jacobian
