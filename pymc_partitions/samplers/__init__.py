"""Model-agnostic kernels on partitions (no PyMC here)."""

from .gibbs import GibbsKernel, gibbs_sweeps, log_joint
from .pgsm import PGSMKernel, pgsm_move
from .sams import SAMSKernel, sams_move
from .arm import ARMKernel, arm_log_proposal, arm_move, arm_select_pair
from .jain_neal import JainNealKernel, jain_neal_log_proposal, jain_neal_move

__all__ = ["GibbsKernel", "gibbs_sweeps", "log_joint", "PGSMKernel", "pgsm_move", "SAMSKernel", "sams_move",
           "ARMKernel", "arm_move", "arm_log_proposal", "arm_select_pair", "JainNealKernel", "jain_neal_move",
           "jain_neal_log_proposal"]
