"""Conjugate cluster likelihoods: compiled kernels (``kernels``), PyTensor forms (``symbolic``),
forward draws (``draws``) and the full-covariance whitening (``transforms``)."""
