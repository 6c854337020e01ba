"""Write result_pymc<major>.nc with the installed PyMC line (run once under each line, from the
repository root):

    python3 tests/data/make_result_files.py
    /path/to/pymc6/python tests/data/make_result_files.py

A small DPMM sampled by pm.sample (partition z by collapsed Gibbs, mu by NUTS): its posterior,
observed data and w2_convergence group, and a group ``extra`` plus root attributes holding every kind of attribute
value in ``test_hostile_results.ATTRS``. tests/test_hostile_results.py loads both files under
both lines.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))

import pymc_partitions as pmp  # noqa: E402
from pymc_partitions.pymc import compat  # noqa: E402
from test_hostile_results import ATTRS  # noqa: E402
from test_w2_convergence import sampled_dpmm  # noqa: E402


def main():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, result = sampled_dpmm(chains=4, draws=6, n=12, gibbs_step=True)
        result = pmp.w2_convergence(result, window=(0, 3))
    keep = ("posterior", "observed_data", "w2_convergence")  # sample_stats: many variables, a large file
    result = compat.new_result({g: compat.posterior_dataset(result, g) for g in compat.group_names(result)
                                if g in keep})
    extra = xr.Dataset({"v": ("k", np.array([1.0, 2.0]), dict(ATTRS))}, attrs=dict(ATTRS))
    result = compat.add_groups(result, {"extra": extra})
    result.attrs.update(ATTRS)
    path = pmp.save(result, HERE / f"result_pymc{compat.PYMC_MAJOR}.nc", compress=False)  # smaller here
    print(path)


if __name__ == "__main__":
    main()
