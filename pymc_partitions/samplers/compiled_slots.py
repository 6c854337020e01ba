"""One draw of the non-conjugate step's labels and occupied slots in compiled loops that call the model's
own log densities through function pointers.

The default step of a non-conjugate partition mixture (Algorithm 8, :mod:`.algorithm8`, then random-walk
Metropolis on the occupied slots, :mod:`.slot_metropolis`) spends most of a draw on about twenty calls of
compiled PyTensor functions from Python. Here the whole draw runs in two compiled kernels, and the model's
densities are C function pointers (``numba.cfunc`` of :data:`ROWS_SIGNATURE`) that the PyMC layer builds
from the user's graph; the kernels are cached on disk like every other, since a function pointer's type
does not depend on the model.

The densities, over C-contiguous buffers of a table of slot parameters (r rows of d float64, the slot
variables' values on the value scale, flattened per slot):

* ``item_rows(context, table, r, index, out)``: ``out[i]`` = the log-likelihood of item i under row
  ``index[i]`` (int64, n entries) of the table: every item under one block (index constant), every item
  under its own auxiliary (the table of auxiliaries, index = arange(n)), every item under its block (the
  blocks' table, index = the labels);
* ``base_rows(context, table, r, out)``: ``out[j]`` = the base measure's log density (value scale, with its
  Jacobian) of row j.

``context`` holds every other value the densities read (the model's other free variables, its data), so
the same pointers serve every draw. A density that fails leaves NaN in ``out``: the label sweep refuses it
(an error), a Metropolis proposal with it is rejected.

The law of each kernel is the Python step's: :func:`label_sweep` is :func:`.algorithm8.trusted_sweep` with
the auxiliaries' likelihoods evaluated here and the canonical relabelling after it; :func:`slot_metropolis`
is the step's Metropolis update with the same random numbers (moves, log-uniforms) drawn by the caller.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .algorithm8 import _DONE, _FULL, _visit

__all__ = ["ITEM_SIGNATURE", "BASE_SIGNATURE", "label_sweep", "slot_metropolis", "evaluate_items", "evaluate_base"]

#: The C signatures of the densities (``numba.cfunc`` signatures): ``item_rows(double *context, double *table,
#: intptr r, int64 *index, double *out)`` and ``base_rows(double *context, double *table, intptr r, double *out)``.
#: The kernels take their addresses (``cfunc.address``) as integers: an integer argument is typed at no cost,
#: where numba types a first-class function argument anew at every call (~30 us).
ITEM_SIGNATURE = types.void(types.voidptr, types.voidptr, types.intp, types.voidptr, types.voidptr)
BASE_SIGNATURE = types.void(types.voidptr, types.voidptr, types.intp, types.voidptr)

#: :func:`label_sweep`'s return code beside ``_DONE``: a log-likelihood was NaN or +inf
_BAD_DENSITY = 3


@intrinsic
def _call_items(typingctx, address, context, table, r, index, out):
    """Call the ``item_rows`` function at ``address`` (an integer) on pointers to the arrays' data."""
    def codegen(cgctx, builder, signature, args):
        fnty = ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t, cgutils.voidptr_t, ir.IntType(64), cgutils.voidptr_t,
                                               cgutils.voidptr_t])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        pointers = [_data(cgctx, builder, signature.args[k], args[k]) for k in (1, 2)]
        builder.call(fn, pointers + [args[3]] + [_data(cgctx, builder, signature.args[k], args[k]) for k in (4, 5)])
        return cgctx.get_dummy_value()

    if not all(isinstance(a, types.Array) and a.layout == "C" for a in (context, table, index, out)):
        return None  # (contiguous buffers only: the function reads them through their data pointers)
    return types.none(types.int64, context, table, types.int64, index, out), codegen


@intrinsic
def _call_base(typingctx, address, context, table, r, out):
    """Call the ``base_rows`` function at ``address`` (an integer) on pointers to the arrays' data."""
    def codegen(cgctx, builder, signature, args):
        fnty = ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t, cgutils.voidptr_t, ir.IntType(64), cgutils.voidptr_t])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        builder.call(fn, [_data(cgctx, builder, signature.args[1], args[1]),
                          _data(cgctx, builder, signature.args[2], args[2]), args[3],
                          _data(cgctx, builder, signature.args[4], args[4])])
        return cgctx.get_dummy_value()

    if not all(isinstance(a, types.Array) and a.layout == "C" for a in (context, table, out)):
        return None
    return types.none(types.int64, context, table, types.int64, out), codegen


def _data(cgctx, builder, array_type, value):
    """``void *`` to the data of an array value."""
    return builder.bitcast(cgctx.make_array(array_type)(cgctx, builder, value).data, cgutils.voidptr_t)


@numba.njit(cache=True, error_model="numpy")
def evaluate_items(fn, context, table, r, index, out):
    """``out[i]`` := item i's log-likelihood under row ``index[i]`` of the first r rows of ``table`` (NaN where
    the density failed); ``fn`` the address of an ``item_rows`` function."""
    n = out.shape[0]
    if table.shape[0] < r or index.shape[0] != n:
        raise ValueError("evaluate_items: table needs r rows and index an entry per item")
    for i in range(n):
        if index[i] < 0 or index[i] >= r:
            raise ValueError("evaluate_items: an index outside the table's rows")
        out[i] = np.nan
    _call_items(fn, context, table, r, index, out)


@numba.njit(cache=True, error_model="numpy")
def evaluate_base(fn, context, table, r, out):
    """``out[:r]`` := the base measure's log density of the first r rows of ``table`` (NaN where it failed);
    ``fn`` the address of a ``base_rows`` function."""
    if table.shape[0] < r or out.shape[0] < r:
        raise ValueError("evaluate_base: table and out need r rows")
    for j in range(r):
        out[j] = np.nan
    _call_base(fn, context, table, r, out)


@numba.njit(cache=True, error_model="numpy")
def _finite(out):
    for i in range(out.shape[0]):
        if not out[i] < np.inf:
            return False
    return True


@numba.njit(cache=True, error_model="numpy")
def label_sweep(item_rows, context, table, K, labels, aux, order, uniforms, prior_code, prior_params, free_rows):
    """One Algorithm 8 sweep and the canonical relabelling.

    ``table`` (capacity, d): rows < K the parameters of the K blocks of the canonical ``labels`` (n,) int64
    (overwritten with the new labels); ``aux`` (m, n, d): item i's m auxiliaries, fresh base-measure draws no
    other item is offered; ``order``, ``uniforms`` (n,): visiting order and one uniform per visit;
    ``free_rows`` (S, d): fresh base-measure draws for every slot, whose rows < K the blocks' parameters
    overwrite after the sweep.

    The arguments' shapes and ranges are checked (a ``ValueError``, never an index out of bounds); the table's
    width ``d`` must be the one ``item_rows`` reads (its caller's job: the function cannot say).

    Returns (code, K, opened): ``code`` 0 when done (``labels`` canonical, ``free_rows`` the new slots),
    ``_BAD_DENSITY`` when a log-likelihood was NaN or +inf (the state is then partial); ``opened`` the blocks
    opened with an auxiliary.
    """
    n, d = labels.shape[0], table.shape[1]
    m = aux.shape[0]
    cap = table.shape[0]
    if (m < 1 or aux.shape[1] != n or aux.shape[2] != d or free_rows.shape[1] != d
            or order.shape[0] != uniforms.shape[0] or prior_params.shape[0] < 3):
        raise ValueError("label_sweep: aux (m >= 1, n, d), free_rows (S, d), a uniform per visit and the prior's "
                         "three parameters needed")
    if K < 1 or K > cap:
        raise ValueError("label_sweep: K must lie in [1, rows of the table]")
    for i in range(n):
        if labels[i] < 0 or labels[i] >= K:
            raise ValueError("label_sweep: labels must lie in [0, K)")
    for t in range(order.shape[0]):
        if order[t] < 0 or order[t] >= n:
            raise ValueError("label_sweep: order must hold items in [0, n)")
    index = np.empty(n, np.int64)
    out = np.empty(n)
    L = np.empty((n, cap))
    for k in range(K):
        index[:] = k
        evaluate_items(item_rows, context, table, cap, index, out)
        if not _finite(out):
            return _BAD_DENSITY, K, 0
        L[:, k] = out
    Laux = np.empty((n, m))
    for i in range(n):
        index[i] = i
    for j in range(m):
        evaluate_items(item_rows, context, aux[j], n, index, out)
        if not _finite(out):
            return _BAD_DENSITY, K, 0
        Laux[:, j] = out
    sizes = np.zeros(cap, np.int64)
    slot_of = labels.copy()
    for i in range(n):
        sizes[slot_of[i]] += 1
    free = np.empty(cap + n, np.int64)
    n_free = 0
    for s in range(cap - 1, -1, -1):  # lowest slots first off the stack
        if sizes[s] == 0:
            free[n_free] = s
            n_free += 1
    n_blocks = K
    opened = 0
    t = 0
    while True:
        logw = np.empty(cap + m)
        where = np.empty(cap, np.int64)
        code, t, a, slot, n_free, n_blocks = _visit(t, order, uniforms, slot_of, sizes, free, n_free, n_blocks, L,
                                                    Laux, prior_code, prior_params, logw, where)
        if code == _DONE:
            break
        if code == _FULL:  # double the table; the new slots are free
            grown_L = np.empty((n, 2 * cap))
            grown_L[:, :cap] = L
            grown_table = np.empty((2 * cap, d))
            grown_table[:cap] = table
            grown_sizes = np.zeros(2 * cap, np.int64)
            grown_sizes[:cap] = sizes
            L, table, sizes = grown_L, grown_table, grown_sizes
            free = np.empty(2 * cap + n, np.int64)
            n_free = 0
            for s in range(2 * cap - 1, cap - 1, -1):
                free[n_free] = s
                n_free += 1
            cap = 2 * cap
            continue
        table[slot, :] = aux[a, order[t]]
        opened += 1
        index[:] = slot
        evaluate_items(item_rows, context, table, cap, index, out)
        if not _finite(out):
            return _BAD_DENSITY, K, opened
        L[:, slot] = out
        t += 1
    relabel = np.full(cap, -1, np.int64)  # canonical: block b = the b-th to appear, its parameter in row b
    K = 0
    for i in range(n):
        s = slot_of[i]
        if relabel[s] < 0:
            if K == free_rows.shape[0]:
                raise ValueError("label_sweep: more blocks than rows of free_rows (slots)")
            relabel[s] = K
            free_rows[K, :] = table[s]
            K += 1
        labels[i] = relabel[s]
    return _DONE, K, opened


@numba.njit(cache=True, error_model="numpy")
def slot_metropolis(item_rows, base_rows, context, slots, K, labels, step, moves, log_u):
    """``moves.shape[0]`` random-walk Metropolis steps of the K occupied rows of ``slots`` (S, d) at once, in
    place: block b proposes ``slots[b] + step[b] * moves[t, b]`` and accepts it iff ``log_u[t, b]`` is below
    the change of its log density (base measure plus the log-likelihood of its items, ``labels`` < K; a NaN
    proposal is refused). Returns the number of accepted proposals."""
    n, d = labels.shape[0], slots.shape[1]
    T = moves.shape[0]
    if (slots.shape[0] < K or moves.shape[1] < K or moves.shape[2] != d or log_u.shape[0] < T
            or log_u.shape[1] < K or step.shape[0] < K):
        raise ValueError("slot_metropolis: slots (>= K, d), moves (T, K, d), log_u (T, K) and step (K,) needed")
    out = np.empty(n)
    prop = np.empty((K, d))
    prop[:, :] = slots[:K]
    base = np.empty(K)
    current = np.empty(K)
    new = np.empty(K)
    _block_logp(item_rows, base_rows, context, prop, labels, out, base, current)
    accepted = 0
    for t in range(T):
        for b in range(K):
            for c in range(d):
                prop[b, c] = slots[b, c] + step[b] * moves[t, b, c]
        _block_logp(item_rows, base_rows, context, prop, labels, out, base, new)
        for b in range(K):
            if log_u[t, b] < new[b] - current[b]:
                current[b] = new[b]
                slots[b, :] = prop[b]
                accepted += 1
    return accepted


@numba.njit(cache=True, error_model="numpy")
def _block_logp(item_rows, base_rows, context, params, labels, out, base, total):
    """``total[b]`` := the base log density of ``params[b]`` plus the log-likelihoods of block b's items, for
    the K rows of ``params`` (``labels`` < K, checked by evaluate_items)."""
    K = params.shape[0]
    evaluate_base(base_rows, context, params, K, base)
    evaluate_items(item_rows, context, params, K, labels, out)
    for b in range(K):
        total[b] = base[b]
    for i in range(labels.shape[0]):
        total[labels[i]] += out[i]
