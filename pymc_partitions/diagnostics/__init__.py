"""Centered W2 estimators and convergence diagnostics (no PyMC here)."""
