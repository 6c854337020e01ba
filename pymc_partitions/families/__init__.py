"""Conjugate cluster likelihoods: compiled kernels (``kernels``), PyTensor forms (``symbolic``),
forward draws (``draws``), conditional posteriors and predictive densities (``predictive``) and
the full-covariance whitening (``transforms``)."""
