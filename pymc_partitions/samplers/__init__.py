"""Model-agnostic kernels on partitions (no PyMC here)."""

from .gibbs import GibbsKernel, gibbs_sweeps, log_joint

__all__ = ["GibbsKernel", "gibbs_sweeps", "log_joint"]
