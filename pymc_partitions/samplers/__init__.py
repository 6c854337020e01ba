"""Model-agnostic kernels on partitions (no PyMC here)."""

from .gibbs import GibbsKernel, gibbs_sweeps, log_joint
from .pgsm import PGSMKernel, pgsm_move
from .sams import SAMSKernel, sams_move

__all__ = ["GibbsKernel", "gibbs_sweeps", "log_joint", "PGSMKernel", "pgsm_move", "SAMSKernel", "sams_move"]
