"""The log densities of a non-conjugate partition mixture as C functions, for the compiled draw of
:mod:`pymc_partitions.samplers.compiled_slots`.

From the user's graph (:meth:`~.nonconjugate.NonConjugateModel.graphs_of_rows`), two functions of a table of
r slot parameters, one row of d floats per slot (the slot variables' values, value scale, flattened per slot):

* ``item_rows``: every item's log-likelihood under the row its index names (the labels replaced by an index
  into the table, so the graph gathers each item's parameters from r rows: its transforms run on r rows);
* ``base_rows``: the base measure's log density of every row, with its Jacobian (the slot variables' sizes
  replaced by r: PyMC's log density broadcasts to the size).

Each is compiled with PyTensor's numba backend (through PyMC's compile, so parameter checks give -inf as in
the model's own functions) and wrapped in a ``numba.cfunc`` of the kernels' signature that unpacks the table
into the slot variables' shapes and dtypes, and one float64 ``context`` into every other value the graph
reads (the model's other free variables and its shared data, passed each draw: ``pm.set_data`` reaches
them). Building costs about 3.5 s in a process's first build (numba's first compilation there), 0.5 s per
function after; the kernels that call them are cached on disk, and the result is kept per graph and data: a
second ``pm.sample`` of the same model, or the chains of a forked ``pm.sample``, reuse it.

Built only where it can be checked: both functions are compared with the model's C-backend functions at
fresh base-measure draws, and any failure (an op the numba backend lacks, a dtype the context cannot carry,
labels whose dtype cannot index the table, a mismatch) leaves the caller on its Python draw (``build``
returns None).
"""

from __future__ import annotations

import collections
import copy
import hashlib
import warnings

import numba
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.replace import clone_replace

from ..samplers.compiled_slots import BASE_SIGNATURE, ITEM_SIGNATURE, evaluate_base, evaluate_items
from .compat import ancestors

__all__ = ["SlotDensities", "build", "flatten_slots", "unflatten_slots"]

#: graph key -> SlotDensities (or None: could not be built), the most recent ``_KEEP`` models' (a step keeps its
#: own alive; an entry keeps its shared variables alive, so their ids stay theirs while it is here)
_BUILT: collections.OrderedDict = collections.OrderedDict()
_KEEP = 32


class SlotDensities:
    """The addresses of ``item_rows`` and ``base_rows`` of one model, and how to pack its values for them.

    ``context(values)`` gives the float64 context of a point's value variables (``NonConjugateModel.values``
    order); the tables are :func:`flatten_slots`'."""

    def __init__(self, item_rows, base_rows, keep, context_parts, shapes):
        self.item_rows, self.base_rows = item_rows.address, base_rows.address  # (what the kernels call)
        self._keep = [item_rows, base_rows, *keep]  # the cfuncs and the PyTensor functions they call (kept alive)
        self._context_parts = context_parts  # (value variable's name or None, shared variable or None, size)
        self._indices = None  # each part's position in the values (bound_to)
        self.shapes = shapes  # each slot variable's shape beyond the slot axis
        self.d = int(sum(np.prod(shape, dtype=np.int64) for shape in shapes))  # a table row's width
        self._size = max(1, sum(size for *_, size in context_parts))

    def bound_to(self, value_names):
        """A copy reading a point's values in ``value_names`` order (the same graph may come from a model whose
        value variables are in another order)."""
        bound = copy.copy(self)
        bound._indices = [None if name is None else value_names.index(name) for name, _, _ in self._context_parts]
        return bound

    def context(self, values):
        out = np.empty(self._size)
        at = 0
        for index, (_, shared, size) in zip(self._indices, self._context_parts):
            value = shared.get_value(borrow=True) if shared is not None else values[index]
            value = np.asarray(value)
            if value.size != size:
                raise ValueError("a value read by the compiled slot densities changed size: pm.set_data may change "
                                 "the data's values, not their shape, under NonConjugateGibbs(compiled=True)")
            out[at:at + size] = value.ravel()
            at += size
        return out


def flatten_slots(arrays):
    """The (r, d) float64 table (C order) of slot arrays of r rows each (the slot variables' values, in order):
    row j holds slot j's values of every slot variable, flattened."""
    r = arrays[0].shape[0]
    return np.ascontiguousarray(np.concatenate([np.asarray(a, np.float64).reshape(r, -1) for a in arrays], axis=1))


def unflatten_slots(theta, like):
    """The slot arrays of a :func:`flatten_slots` table (any number of rows), with the shapes beyond the slot axis
    and the dtypes of the arrays ``like``."""
    out, at = [], 0
    for s in like:
        width = int(np.prod(s.shape[1:], dtype=np.int64))
        out.append(theta[:, at:at + width].reshape(theta.shape[:1] + s.shape[1:]).astype(s.dtype, copy=False))
        at += width
    return out


def _key(outputs):
    """A key of the graphs: their printed form plus a digest of every constant's data."""
    text = pytensor.printing.debugprint(outputs, file="str", print_type=True)
    digest = hashlib.sha1(text.encode())
    for v in ancestors(outputs):
        if isinstance(v, Constant):
            data = np.asarray(v.data)
            digest.update(str((data.dtype, data.shape)).encode())
            digest.update(np.ascontiguousarray(data).tobytes())
    return digest.hexdigest()


def _wrapper(name, fn, inputs, context_size, d, n_items):
    """A cfunc calling the numba-compiled ``fn`` with its inputs unpacked: ``name(context, table, r, index, out)``
    for the items (``n_items`` of them) or ``name(context, table, r, out)`` for the base measure."""
    items = n_items is not None
    lines = [f"def {name}(context_p, table_p, r, {'index_p, ' if items else ''}out_p):",
             f"    context = carray(context_p, ({max(1, context_size)},), float64)",
             f"    table = carray(table_p, (r, {d}), float64)",
             f"    out = carray(out_p, ({n_items if items else 'r'},), float64)"]
    args = []
    for j, (kind, shape, dtype, at, size) in enumerate(inputs):
        dt = f"np.{np.dtype(dtype).type.__name__}"
        if kind == "context":
            if shape == ():
                lines.append(f"    a{j} = np.asarray(context[{at}]).astype({dt})")
            else:
                lines.append(f"    a{j} = np.ascontiguousarray(context[{at}:{at + size}]).reshape({shape}).astype({dt})")
        elif kind == "index":
            lines.append(f"    a{j} = carray(index_p, ({n_items},), np.int64)")
            if np.dtype(dtype) != np.int64:
                lines.append(f"    a{j} = a{j}.astype({dt})")
        else:
            lines.append(f"    a{j} = np.ascontiguousarray(table[:, {at}:{at + size}]).reshape((r,) + {shape})"
                         + ("" if np.dtype(dtype) == np.float64 else f".astype({dt})"))
        args.append(f"a{j}")
    lines += ["    try:",  # (a failure, e.g. a parameter check, leaves NaN, quietly: a cfunc cannot raise)
              f"        out[:] = fn({', '.join(args)})[0]",
              "    except Exception:",
              "        out[:] = np.nan"]
    namespace = {"np": np, "carray": numba.carray, "float64": np.float64, "fn": fn}
    exec(compile("\n".join(lines) + "\n", f"<pymc_partitions slot density {name}>", "exec"), namespace)  # noqa: S102
    return numba.cfunc(ITEM_SIGNATURE if items else BASE_SIGNATURE)(namespace[name])


def build(nc, m):
    """The :class:`SlotDensities` of a :class:`~.nonconjugate.NonConjugateModel` for a step with ``m``
    auxiliaries, or None where they cannot be built or do not match the model's own functions."""
    labels = nc.value_vars[nc.value_names.index(nc.terms.value_name)]
    bound = max(nc.n + m + 4, 2 * nc.n)  # (the rows of a label sweep's table: K + m + 4, doubled when full)
    if any(np.iinfo(dtype).max < bound for dtype in nc.label_dtypes()):
        return None  # (an index of that many rows does not fit the labels' dtypes: the Python path)
    point = nc.model.initial_point(0)
    slot_values = nc.slot_values
    slot_shapes = [tuple(np.shape(point[name])[1:]) for name in nc.slot_names]
    rows = [pt.tensor(dtype=v.dtype, shape=(None,) + s, name=f"{v.name}_rows") for v, s in zip(slot_values, slot_shapes)]
    index = pt.tensor(dtype=labels.dtype, shape=(nc.n,), name="index")
    item, base = nc.graphs_of_rows(index, rows)
    # the graphs' structure and constants, and which shared variables (pm.Data) they read: another model's data
    # of the same shape is another entry
    shared = tuple(id(v) for v in ancestors([item, base]) if isinstance(v, SharedVariable))
    try:
        key = (_key([item, base]), nc.n, shared)
    except Exception:  # noqa: BLE001  (a graph that cannot be printed: no reuse, built each time)
        key = None
    if key is not None and key in _BUILT:
        built = _BUILT[key]
        _BUILT.move_to_end(key)
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (a numba fallback to object mode warns; it fails below instead)
                built = _build(nc, item, base, index, rows, slot_shapes)
        except Exception:  # noqa: BLE001  (any failure: the caller keeps its Python path)
            built = None
        if key is not None:
            _BUILT[key] = built
            while len(_BUILT) > _KEEP:
                _BUILT.popitem(last=False)
    return None if built is None else built.bound_to(nc.value_names)


def _build(nc, item, base, index, rows, slot_shapes):
    roots = [v for v in ancestors([item, base])
             if v.owner is None and not isinstance(v, Constant) and v not in rows and v is not index]
    replace, context_vars, context_parts = {}, [], []
    for v in roots:
        if v.type.dtype not in ("float64", "float32", "int64", "int32", "int16", "int8", "uint8", "bool"):
            return None
        if isinstance(v, SharedVariable):
            value = np.asarray(v.get_value(borrow=True))
            sym = v.type()
            replace[v] = sym
            context_vars.append(sym)
            context_parts.append((None, v, int(value.size), value.shape))
        elif v.name in nc.value_names:
            value = np.asarray(nc.model.initial_point(0)[v.name])
            context_vars.append(v)
            context_parts.append((v.name, None, int(value.size), value.shape))
        else:
            return None  # an input that is neither a value variable nor shared data
    if replace:
        item, base = clone_replace([item, base], replace=replace, rebuild_strict=False)
    widths = [int(np.prod(s, dtype=np.int64)) for s in slot_shapes]
    context, at = [], 0
    for var, (_, _, size, shape) in zip(context_vars, context_parts):
        context.append(("context", shape, var.type.dtype, at, size))
        at += size
    context_size = at
    table, at = [], 0
    for r, shape, w in zip(rows, slot_shapes, widths):
        table.append(("rows", shape, r.type.dtype, at, w))
        at += w
    d = at
    # (PyMC's compile: its parameter checks give -inf, as in the model's own functions, instead of raising)
    f_item = pm.pytensorf.compile(context_vars + [index] + rows, pt.cast(item, "float64"), mode="NUMBA",
                                  on_unused_input="ignore")
    f_base = pm.pytensorf.compile(context_vars + rows, pt.cast(base, "float64"), mode="NUMBA", on_unused_input="ignore")
    if (len(f_item.maker.fgraph.inputs) != len(context_vars) + 1 + len(rows)
            or len(f_base.maker.fgraph.inputs) != len(context_vars) + len(rows)):
        return None
    item_rows = _wrapper("item_rows", f_item.vm.jit_fn, context + [("index", None, index.dtype, 0, nc.n)] + table,
                         context_size, d, nc.n)
    base_rows = _wrapper("base_rows", f_base.vm.jit_fn, context + table, context_size, d, None)
    densities = SlotDensities(item_rows, base_rows, [f_item, f_base], [(i, s, size) for i, s, size, _ in context_parts],
                              slot_shapes)
    _check(nc, densities.bound_to(nc.value_names))
    return densities


def _check(nc, densities):
    """Compare both pointers with the model's C-backend functions at fresh base-measure draws, the items under
    their own rows and under a few slots, the base measure at every slot and at a few (raises if not equal)."""
    values = nc.values(nc.model.initial_point(0))
    context = densities.context(values)
    n, S = nc.n, nc.n_slots
    for rows in nc.draw_rows(values, 2):
        theta = flatten_slots([r[:n] for r in rows])
        ours = np.empty(n)
        evaluate_items(densities.item_rows, context, theta, n, np.arange(n, dtype=np.int64), ours)
        theirs = nc.rows_loglik(values, rows)
        few = min(S, 3)
        labels = np.arange(n, dtype=np.int64) % few
        ours_few = np.empty(n)
        evaluate_items(densities.item_rows, context, theta, few, labels, ours_few)
        slots = [r[:S].copy() for r in rows]
        theirs_few = nc.item_loglik(values, labels.astype(nc.terms.dtype), slots)
        flat = flatten_slots(slots)
        ours_base = np.empty(S)
        evaluate_base(densities.base_rows, context, flat, S, ours_base)
        theirs_base = nc.base_logp(values, slots)
        ours_base_few = np.empty(few)
        evaluate_base(densities.base_rows, context, np.ascontiguousarray(flat[:few]), few, ours_base_few)
        for a, b in ((ours, theirs), (ours_few, theirs_few), (ours_base, theirs_base), (ours_base_few, theirs_base[:few])):
            if not np.allclose(a, b, rtol=1e-9, atol=1e-9, equal_nan=True):
                raise ValueError("the compiled slot densities differ from the model's")
