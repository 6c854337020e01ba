"""The per-item compiled kernels carry no NRT reference-count operations.

They run once per item and candidate block in every sweep. numba adds an atomic incref/decref of
each array argument at entry and exit of a function and relies on an LLVM pass to prune them.
From numba 0.66 (LLVM 22; our Python 3.12 line) LLVM's SimplifyCFG merges the decrefs of two
different arrays on different return paths into one decref of a phi, which the pruning pass
cannot match: the pairs stayed, and the Gibbs sweep ran 5x slower there than on numba 0.65
(benchmarks/bench_kernel_lines.py). These kernels allocate nothing, so they are compiled without
NRT (``_nrt=False``); this test reads the LLVM IR of a fresh (uncached) compilation of each and
fails if a refcount operation reappears, on any numba.
"""

import re

import numba
import numpy as np
import pytest

from pymc_partitions.families import kernels as K
from pymc_partitions.families.kernels import (DIAG_NORMAL, LINEAR_REGRESSION, NIW, FamilyPack, diag_normal_hyper,
                                              linear_regression_hyper, niw_hyper)
from pymc_partitions.priors import CRP
from pymc_partitions.samplers import gibbs
from pymc_partitions.samplers.slots import _build


def _own_refcount_ops(dispatcher, *args, family=None):
    """Number of NRT_incref / NRT_decref calls in the body of ``dispatcher``'s own function, compiled
    afresh (cached code cannot be inspected) for the types of ``args``. For a family dispatch function
    (``K.family_update``, ...): its form compiled for ``family`` (the form kernels use for a pack of
    that family alone), or for every family if ``family`` is None."""
    if hasattr(dispatcher, "for_family"):
        py_func = dispatcher.for_family(K.ALL_FAMILIES if family is None else family)
        dispatcher = dispatcher.compiled
    else:
        py_func = dispatcher.py_func
    options = {k: v for k, v in dispatcher.targetoptions.items() if k not in ("cache", "nopython")}
    fresh = numba.njit(**options)(py_func)
    fresh(*args)
    sig = fresh.signatures[0]
    name = fresh.overloads[sig].fndesc.mangled_name
    ir = fresh.inspect_llvm(sig)
    body = re.search(r"^define [^\n]*@" + re.escape(name) + r"\(.*?^}", ir, re.S | re.M)
    assert body is not None, f"no definition of {name} in the IR"
    return len(re.findall(r"call void @NRT_(?:incref|decref)\(", body.group(0)))


def _case(code):
    rng = np.random.default_rng(0)
    n, dim = 12, 2
    y = rng.normal(size=(n, dim))
    if code == DIAG_NORMAL:
        hyper = diag_normal_hyper(0.0, 3.0, 1.0, dim)
    elif code == NIW:
        hyper = niw_hyper(np.zeros(dim), 0.5, dim + 2.0, np.eye(dim), dim, n)
    else:  # rows [x (p = 2), y]
        y = rng.normal(size=(n, 3))
        hyper = linear_regression_hyper(0.0, 1.0, 1.0, 1.0, 2)
    pack = FamilyPack.build([(code, y, hyper)])
    labels = rng.integers(0, 3, n)
    scratch = np.empty(pack.data.shape[1])
    slot_of, sizes, stats, active, k = _build(labels, pack.codes, pack.dims, pack.data_off, pack.stat_off,
                                              pack.hyper_off, pack.hyper, pack.data, pack.width, scratch)
    return pack, slot_of, sizes, stats, active, k, scratch


@pytest.mark.parametrize("code", [DIAG_NORMAL, NIW, LINEAR_REGRESSION])
def test_family_kernels_have_no_refcount_ops(code):
    p, slot_of, sizes, stats, active, k, scratch = _case(code)
    out = np.zeros(k + 1)
    f = 0
    for family in (None, code):
        assert _own_refcount_ops(K.family_log_preds, p.codes[f], stats, active, k, p.stat_off[f], p.data, 3,
                                 p.data_off[f], p.hyper, p.hyper_off[f], p.dims[f], scratch, out, family=family) == 0
        assert _own_refcount_ops(K.family_update, p.codes[f], stats, slot_of[3], p.stat_off[f], p.data, 3,
                                 p.data_off[f], p.hyper, p.hyper_off[f], p.dims[f], 1.0, scratch, family=family) == 0
    assert _own_refcount_ops(K.pack_log_preds, p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper,
                             stats, active, k, p.data, 3, scratch, out) == 0
    assert _own_refcount_ops(K.pack_update, p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper,
                             stats, slot_of[3], p.data, 3, 1.0, scratch) == 0


def test_gibbs_visit_has_no_refcount_ops():
    """The Gibbs sweep's inner loop (with :func:`~pymc_partitions.samplers.slots._remove` inlined)."""
    p, slot_of, sizes, stats, active, k, scratch = _case(DIAG_NORMAL)
    prior = CRP(1.0)
    n = slot_of.shape[0]
    order = np.random.default_rng(1).permutation(n)
    uniforms = np.random.default_rng(2).random(n)
    empty = np.empty((1, p.width))
    K.pack_init(p.codes, p.dims, p.stat_off, p.hyper_off, p.hyper, empty, 0)
    join_w = np.zeros(sizes.shape[0])
    logw = np.empty(sizes.shape[0] + 1)
    assert _own_refcount_ops(gibbs._visit, 0, slot_of, sizes, stats, active, join_w, logw, k, order, uniforms,
                             prior.code, prior.kernel_params(), p.codes, p.dims, p.data_off, p.stat_off,
                             p.hyper_off, p.hyper, p.data, empty, scratch, np.zeros(1, np.int64), np.empty(1)) == 0
