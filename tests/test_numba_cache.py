"""numba's cache must not serve a kernel compiled against an older version of a module it calls.

numba stamps a cached function with its own file only; pymc_partitions._numba_cache stamps the
package's cached functions with a digest of the package's numba-reachable source instead.
"""

import os
import re
import shutil
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba.core import caching

import pymc_partitions
from limits import CHILD_PYTHON_TIMEOUT
from pymc_partitions import _numba_cache
from pymc_partitions.priors import sample_sequential

# sample_sequential (priors.py) calls draw_log_weights (_numeric.py): an edit of the callee alone.
SCRIPT = """
import numpy as np
from pymc_partitions.priors import sample_sequential
print("LABELS", sample_sequential(0, np.array([1e9, 0.0]), np.full(6, 0.5)).tolist())
"""
EDIT_FROM = "    target = u * relative_weights(logw, count, logw)\n"
EDIT_TO = "    return 0  # edited by test_numba_cache\n" + EDIT_FROM


def _run(root, extra_env=None):
    env = dict(os.environ, PYTHONPATH=str(root), NUMBA_DEBUG_CACHE="1")
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("NUMBA_CACHE_LOCATOR_CLASSES", None)
    env.update(extra_env or {})
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                         timeout=CHILD_PYTHON_TIMEOUT, cwd=str(root))
    assert out.returncode == 0, out.stderr[-3000:]
    labels = [int(x) for x in re.search(r"LABELS \[(.*)\]", out.stdout).group(1).split(",")]
    loaded = re.search(r"data loaded from .*sample_sequential", out.stdout) is not None
    return labels, loaded


def _copy_package(tmp_path):
    src = os.path.dirname(pymc_partitions.__file__)
    shutil.copytree(src, tmp_path / "pymc_partitions", ignore=shutil.ignore_patterns("__pycache__", "*.nb?"))
    return tmp_path


@pytest.mark.parametrize("where", ["in_tree", "cache_dir"])
def test_edit_of_a_called_module_reaches_the_cached_caller(tmp_path, where):
    root = _copy_package(tmp_path / "pkg")
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba_cache")} if where == "cache_dir" else {}
    singletons = [0, 1, 2, 3, 4, 5]  # concentration 1e9: every item opens a block
    assert _run(root, env) == (singletons, False)  # compiled and saved
    assert _run(root, env) == (singletons, True)  # served from the cache: the hazard is live
    numeric = root / "pymc_partitions" / "_numeric.py"
    text = numeric.read_text()
    assert text.count(EDIT_FROM) == 1
    numeric.write_text(text.replace(EDIT_FROM, EDIT_TO))
    # The caller's own file is untouched; numba alone would load the stale sample_sequential here.
    labels, loaded = _run(root, env)
    assert labels == [0] * 6, "stale cached kernel served after editing a module it calls"
    assert not loaded
    assert _run(root, env) == ([0] * 6, True)  # and the recompiled kernel is cached again
    where_saved = tmp_path / "numba_cache" if where == "cache_dir" else root / "pymc_partitions" / "__pycache__"
    assert any(p.name.startswith("priors.sample_sequential") for p in where_saved.rglob("*.nbi"))


def test_package_locators_come_first_and_only_claim_package_files(tmp_path):
    classes = caching.CacheImpl._locator_classes
    ours = [c for c in classes if getattr(c, "_pymc_partitions", False)]
    assert len(ours) == 3
    # Ahead of numba's own locators (other libraries, e.g. PyTensor's numba backend, may put
    # theirs in front later; they claim only their own functions).
    first_numba = min(i for i, c in enumerate(classes) if c.__module__.startswith("numba."))
    assert classes.index(ours[-1]) < first_numba
    assert [c for c in classes if c in ours] == ours
    for cls in classes[:classes.index(ours[0])]:
        assert cls.from_function(sample_sequential.py_func, sample_sequential.py_func.__code__.co_filename) is None
    assert _numba_cache.install() is True  # idempotent
    assert [c for c in caching.CacheImpl._locator_classes if getattr(c, "_pymc_partitions", False)] == ours
    locator = sample_sequential._cache._impl.locator
    assert type(locator) in ours
    assert locator.get_source_stamp() == ("pymc_partitions", _numba_cache.source_digest())
    outside = tmp_path / "user_module.py"
    outside.write_text("def f():\n    return 1\n")
    for cls in ours:
        assert cls.from_function(sample_sequential.py_func, str(outside)) is None

    @numba.njit(cache=True)
    def user_function(x):
        return x + 1

    # A user's cached function keeps numba's own locator and stamp.
    assert not getattr(type(user_function._cache._impl.locator), "_pymc_partitions", False)
    assert user_function(np.int64(1)) == 2


def test_install_without_numba_internals_leaves_numba_alone(monkeypatch):
    monkeypatch.delattr(caching, "CacheImpl")
    if hasattr(caching, "_CacheImpl"):
        monkeypatch.delattr(caching, "_CacheImpl")
    assert _numba_cache.install() is False


def test_digest_tracks_kernel_sources_not_pymc_adapter_edits(tmp_path, monkeypatch):
    root = _copy_package(tmp_path) / "pymc_partitions"

    def digest():
        monkeypatch.setattr(_numba_cache, "_PACKAGE_DIR", str(root))
        monkeypatch.setattr(_numba_cache, "_ADAPTER_DIRS", tuple(str(root / d) + os.sep for d in ("pymc", "results")))
        monkeypatch.setattr(_numba_cache, "_digest", None)
        return _numba_cache.source_digest()

    base = digest()
    assert base == digest()
    assert b"numba" in (root / "pymc/steps.py").read_bytes()  # (named in a docstring, not imported)
    for rel in ("results/plots.py", "pymc/terms.py", "pymc/steps.py"):
        (root / rel).write_text((root / rel).read_text() + "\n# edit: numba named, not imported\n")
    assert digest() == base  # a PyMC-layer edit keeps the compiled kernels
    for rel in ("families/kernels.py", "_checks.py", "results/loo.py"):
        path = root / rel
        path.write_text(path.read_text() + "\n# edit\n")
        assert digest() != base, rel
        base = digest()
