"""Label draws as the summaries use them: validated, relabelled, weighted.

Every summary takes draws of a partition as an array of labels, shape ``(draws, n)`` or
``(chains, draws, n)``, in any labelling (label values only say which items share a block), and
optional non-negative weights per draw. :func:`label_draws` checks them once and returns a
:class:`LabelDraws`: int32 canonical labels (blocks numbered 0, 1, ... in order of first
appearance in each row), the number of blocks per draw, and normalised weights. Draws of weight
zero are dropped; identical draws can be merged (their weights add up), which changes no expected
loss and makes the search cheaper when the posterior is concentrated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["LabelDraws", "label_draws", "labels_vector", "canonical_rows", "scaled_weights"]

_MAX_ITEMS = 2**31 - 1  # labels and positions are stored as int32
_EXACT_FLOAT = 2.0**53  # larger floats are not exact integers


@dataclass(frozen=True)
class LabelDraws:
    """Validated draws: ``labels`` (S, n) int32 canonical rows, ``n_clusters`` (S,) int64,
    ``weights`` (S,) float64 summing to 1, all > 0; ``index`` (S,) the position of each kept
    draw among the flattened input draws (the first of merged duplicates); ``shape`` the leading
    shape of the input (``(draws,)`` or ``(chains, draws)``)."""

    labels: np.ndarray
    n_clusters: np.ndarray
    weights: np.ndarray
    index: np.ndarray
    shape: tuple

    @property
    def n_items(self) -> int:
        return int(self.labels.shape[1])

    @property
    def n_draws(self) -> int:
        return int(self.labels.shape[0])


@numba.njit(cache=True, nogil=True)
def _canonical_rows(values, table, out, k):
    """Canonical labels of every row of ``values`` (int64, entries in [0, len(table))) into
    ``out`` (int32) and the block count of each row into ``k``. ``table`` must hold -1 and is
    left holding -1."""
    s_count, n = values.shape
    for s in range(s_count):
        count = 0
        for i in range(n):
            v = values[s, i]
            if table[v] < 0:
                table[v] = count
                count += 1
            out[s, i] = table[v]
        for i in range(n):
            table[values[s, i]] = -1
        k[s] = count


def canonical_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int32 canonical labels, int64 block counts) of a 2-d array of non-negative integer labels.

    Labels are first made dense when they are large (``np.unique``), so the lookup table never
    exceeds the number of entries, whatever the label values."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    top = int(values.max()) if values.size else 0
    if top >= max(4 * values.size, 1 << 16):
        _, inverse = np.unique(values, return_inverse=True)
        values = np.ascontiguousarray(inverse.reshape(values.shape), dtype=np.int64)
        top = int(values.max())
    table = np.full(top + 1, -1, np.int64)
    out = np.empty(values.shape, np.int32)
    k = np.empty(values.shape[0], np.int64)
    _canonical_rows(values, table, out, k)
    return out, k


def _integer_array(a: np.ndarray, what: str, owner: str) -> np.ndarray:
    """``a`` as int64 if it holds non-negative integers (integral floats accepted), else an error."""
    if a.dtype == np.bool_:
        return a.astype(np.int64)
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise TypeError(f"{owner}: {what} must hold integer labels, got dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.floating):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{owner}: {what} holds NaN or infinite values; labels must be integers")
        if not np.all(np.mod(a, 1) == 0):
            raise ValueError(f"{owner}: {what} holds non-integer values; labels must be integers")
        if a.size and np.abs(a).max() >= _EXACT_FLOAT:
            raise ValueError(f"{owner}: {what} holds labels of magnitude 2**53 or more, which floats cannot "
                             "represent exactly; pass integer labels")
    if a.size and a.min() < 0:
        raise ValueError(f"{owner}: {what} holds negative labels ({a.min()}); labels must be >= 0")
    if a.dtype == np.uint64 and a.size and a.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{owner}: {what} holds labels above 2**63 - 1")
    return a.astype(np.int64)


def labels_vector(labels, n: int | None = None, *, what: str = "labels", owner: str = "summaries") -> np.ndarray:
    """One partition (a 1-d label vector, any labelling, or an object with ``.labels``) as
    canonical int64 labels; ``n`` its required length.

    >>> from pymc_partitions.summaries import labels_vector
    >>> labels_vector([9, 4, 9, 1]).tolist()
    [0, 1, 0, 2]
    """
    labels = getattr(labels, "labels", labels)
    if isinstance(labels, (str, bytes)) or labels is None:
        raise TypeError(f"{owner}: {what} must be a vector of integer labels, got {labels!r:.60}")
    try:
        a = np.asarray(labels)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"{owner}: {what} must be a vector of integer labels ({err})") from None
    except Exception as err:  # objects numpy cannot read
        raise TypeError(f"{owner}: {what} must be a vector of integer labels, got {type(labels).__name__} "
                        f"({type(err).__name__}{': ' + str(err) if str(err) else ''})") from None
    if a.ndim != 1:
        raise ValueError(f"{owner}: {what} must be a 1-d vector of labels, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{owner}: {what} is empty")
    if n is not None and a.size != n:
        raise ValueError(f"{owner}: {what} has {a.size} labels but the draws have {n} items")
    out, _ = canonical_rows(_integer_array(a, what, owner)[None, :])
    return out[0].astype(np.int64)


def _weights(weights, shape: tuple, owner: str) -> np.ndarray | None:
    if weights is None:
        return None
    if isinstance(weights, (str, bytes)):
        raise TypeError(f"{owner}: weights must be an array of numbers, got {weights!r:.60}")
    w = np.asarray(weights)
    if w.dtype == np.bool_ or not np.issubdtype(w.dtype, np.number) or np.iscomplexobj(w):
        raise TypeError(f"{owner}: weights must be real numbers, got dtype {w.dtype}")
    total = int(np.prod(shape))
    if w.shape != shape and w.shape != (total,):
        raise ValueError(f"{owner}: weights must have one value per draw, shape {shape}"
                         f"{f' or ({total},)' if len(shape) > 1 else ''}, got shape {w.shape}")
    w = w.astype(np.float64).reshape(-1)
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{owner}: weights hold NaN or infinite values (importance weights too large for floats? "
                         "pass exp(log_w - log_w.max()))")
    if w.min() < 0:
        raise ValueError(f"{owner}: weights must be >= 0, got {w.min()}")
    return scaled_weights(w, owner)


def scaled_weights(w: np.ndarray, owner: str, what: str = "weights are all zero") -> np.ndarray:
    """Finite non-negative weights divided by their largest, so that their sum cannot overflow
    (S weights sum to at most S): normalising ``[1e308, 1e308]`` or importance weights near
    ``exp(709)`` by their sum directly would give inf and then zeros."""
    top = w.max() if w.size else 0.0
    if not top > 0:
        raise ValueError(f"{owner}: {what}")
    return w / top


def label_draws(draws, weights=None, *, merge: bool = False, owner: str = "summaries") -> LabelDraws:
    """Check and relabel draws of a partition; see the module docstring.

    ``draws``: labels of shape (draws, n) or (chains, draws, n), integers >= 0 (integral floats
    accepted; NaN, non-integers, negative labels, empty arrays and other shapes are refused with
    a ``ValueError``, non-numeric data with a ``TypeError``). ``weights``: one non-negative
    finite weight per draw, not all zero (shape (draws,), or the draws' leading shape).
    ``merge``: merge identical draws, adding their weights.

    >>> from pymc_partitions.summaries import label_draws
    >>> d = label_draws([[7, 7, 3], [1, 2, 2], [0, 0, 5]], weights=[1, 1, 2], merge=True)
    >>> d.labels.tolist(), d.weights.tolist(), d.n_clusters.tolist()
    ([[0, 0, 1], [0, 1, 1]], [0.75, 0.25], [2, 2])
    """
    if isinstance(draws, (str, bytes)) or draws is None:
        raise TypeError(f"{owner}: draws must be an array of labels, got {draws!r:.60}")
    try:
        a = np.asarray(draws)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"{owner}: draws must be a rectangular array of labels ({err})") from None
    except Exception as err:  # an object numpy cannot read (e.g. one raising NotImplementedError with no message)
        raise TypeError(f"{owner}: draws must be an array of labels, got {type(draws).__name__} "
                        f"({type(err).__name__}{': ' + str(err) if str(err) else ''})") from None
    if a.dtype == object:
        raise TypeError(f"{owner}: draws must be a rectangular array of integer labels, got dtype object")
    if a.ndim not in (2, 3):
        hint = " (a single partition? pass it as draws[None, :])" if a.ndim == 1 else ""
        raise ValueError(f"{owner}: draws must have shape (draws, n) or (chains, draws, n), got {a.shape}{hint}")
    if a.size == 0:
        raise ValueError(f"{owner}: draws are empty (shape {a.shape})")
    if a.shape[-1] > _MAX_ITEMS:
        raise ValueError(f"{owner}: at most {_MAX_ITEMS} items, got {a.shape[-1]}")
    shape = tuple(int(v) for v in a.shape[:-1])
    w = _weights(weights, shape, owner)
    values = _integer_array(a, "draws", owner).reshape(-1, a.shape[-1])
    index = np.arange(values.shape[0], dtype=np.int64)
    if w is not None:
        keep = w > 0
        if not keep.all():
            values, w, index = values[keep], w[keep], index[keep]
    labels, k = canonical_rows(values)
    if merge:
        labels, k, w, index = _merge(labels, k, w, index)
    if w is None:
        w = np.full(labels.shape[0], 1.0 / labels.shape[0])
    else:
        w = w / w.sum()
    return LabelDraws(labels=labels, n_clusters=k, weights=w, index=index, shape=shape)


def _merge(labels, k, w, index):
    """Identical canonical rows merged, in order of first appearance; weights added."""
    slot_of: dict[bytes, int] = {}
    firsts: list[int] = []
    slot = np.empty(labels.shape[0], np.int64)
    for s in range(labels.shape[0]):
        key = labels[s].tobytes()
        if key not in slot_of:
            slot_of[key] = len(firsts)
            firsts.append(s)
        slot[s] = slot_of[key]
    if len(firsts) == labels.shape[0]:
        return labels, k, w, index
    unique = np.asarray(firsts, np.int64)
    weights = np.bincount(slot, weights=w, minlength=len(firsts)).astype(np.float64)
    return np.ascontiguousarray(labels[unique]), k[unique], weights, index[unique]
