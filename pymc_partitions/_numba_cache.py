"""Keep numba's on-disk cache of this package's kernels in step with the package's source.

numba stamps each cached function with its *own* file's modification time and size, not with the
files of the njit functions it calls or the constants it reads from other modules. After an edit
to ``families/kernels.py``, say, the cached Gibbs sweep in ``samplers/gibbs.py`` would keep
running the old family code. This module registers cache locators (numba's extension point that
says where a function's cache lives and how fresh its source is) which, for files inside this
package only, stamp every cached function with one digest of the package's numba-reachable source:
any edit there makes every cached kernel of the package stale, so numba recompiles it and
overwrites the entry. Nothing is deleted: a stale index is simply ignored and rewritten by numba's
own atomic writes, so concurrent processes (pytest-xdist workers, the process pool of
``sample_unbiased``) are as safe as with plain numba. Cache directories are numba's own: the
``__pycache__`` beside the source when it is writable, ``NUMBA_CACHE_DIR`` when set, else the
user-wide cache directory (read-only installs). The digest is computed once per process, at the
first cached function (about a millisecond).

It must be imported before any module that defines a cached njit function, which the package's
``__init__`` does. ``NUMBA_CACHE_LOCATOR_CLASSES`` (numba >= 0.63), if set, replaces every
locator and with it this guard; a numba without the locator classes used here (checked on 0.65
and 0.68) keeps its own stamps, as if this module were absent.
"""

import hashlib
import os
import re

from numba.core import caching

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
#: The PyMC layer (model side, results side): its modules that do not import numba are left out of the digest.
_ADAPTER_DIRS = tuple(os.path.join(_PACKAGE_DIR, d) + os.sep for d in ("pymc", "results"))
#: An import of numba (a module that can define a cached kernel); a mention in a docstring is not one.
_IMPORTS_NUMBA = re.compile(rb"^[ \t]*(?:import|from)[ \t]+numba\b", re.MULTILINE)
_digest = None


def source_digest():
    """Digest of every package module an njit function can reach.

    That is every ``.py`` file except the PyMC layer's modules (``pymc/``, ``results/``) that do not
    import numba (a docstring that names it does not count): the layers below never import them (see
    docs/architecture.md), so editing a PyMC step or plot does not throw away the compiled kernels.
    """
    global _digest
    if _digest is None:
        h = hashlib.blake2b(digest_size=16)
        for root, dirs, files in os.walk(_PACKAGE_DIR):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(root, name)
                try:
                    with open(path, "rb") as f:
                        text = f.read()
                except OSError:  # unreadable: numba cannot compile from it either; stamp its absence
                    text = b"numba: unreadable"
                if path.startswith(_ADAPTER_DIRS) and not _IMPORTS_NUMBA.search(text):
                    continue
                h.update(os.path.relpath(path, _PACKAGE_DIR).encode() + b"\0")
                h.update(hashlib.blake2b(text, digest_size=16).digest())
        _digest = h.hexdigest()
    return _digest


def _in_package(py_file):
    return os.path.abspath(py_file).startswith(_PACKAGE_DIR + os.sep)


def _package_locator(base):
    """A subclass of numba's locator ``base`` that applies to this package's files only."""

    class Locator(base):
        def get_source_stamp(self):
            return ("pymc_partitions", source_digest())

        @classmethod
        def from_function(cls, py_func, py_file):
            if not _in_package(py_file):
                return None
            return super().from_function(py_func, py_file)

    Locator.__name__ = Locator.__qualname__ = "PackageDigest" + base.__name__.lstrip("_")
    return Locator


def _numba_class(name):
    cls = getattr(caching, name, None)
    return cls if cls is not None else getattr(caching, "_" + name)


def install() -> bool:
    """Put the package's locators first in numba's list (idempotent); ``False`` if this numba's
    caching module lacks the classes it builds on (then numba's own stamps apply, as without it)."""
    try:
        current = _numba_class("CacheImpl")._locator_classes
        bases = [_numba_class(name)  # numba's own order: NUMBA_CACHE_DIR, __pycache__ beside the source, user-wide
                 for name in ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")]
    except AttributeError:
        return False
    if not isinstance(current, list):
        return False
    if any(getattr(c, "_pymc_partitions", False) for c in current):
        return True
    ours = []
    for base in bases:
        cls = _package_locator(base)
        cls._pymc_partitions = True
        ours.append(cls)
    current[:0] = ours
    return True


install()
