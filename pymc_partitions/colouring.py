"""Uniform sampling of proper graph colourings, as a target on partitions (seed 000, App. B.1).

A proper q-colouring gives adjacent vertices different colours. Forgetting the colour names, it
is a partition of the vertices with no edge inside a block and at most q blocks; each such
partition with K blocks comes from q!/(q-K)! colourings. So the uniform law on colourings is, on
partitions, p(pi) ∝ 1{no edge inside a block} q!/(q-K)!: the :class:`~pymc_partitions.priors.
UniformLabels` prior times the graph constraint family. The single and coupled Gibbs kernels run
on it unchanged.

Example
-------
>>> import numpy as np
>>> from pymc_partitions.colouring import colouring_target, greedy_colouring
>>> from pymc_partitions.coupling.sweep import GibbsSweeps
>>> cycle = np.roll(np.eye(5, dtype=int), 1, axis=1); cycle = cycle + cycle.T
>>> pack, prior = colouring_target(cycle, q=4)
>>> kernel = GibbsSweeps(pack, prior.code, prior.kernel_params())
>>> state = kernel.start(greedy_colouring(cycle))
>>> kernel.sweep(state, kernel.random_numbers(np.random.default_rng(0)))
>>> labels = state.labels()
>>> bool(all(labels[i] != labels[(i + 1) % 5] for i in range(5)))
True
"""

from __future__ import annotations

import numpy as np

from .families.kernels import GRAPH, FamilyPack
from .partition import integer_labels
from .priors import UniformLabels

__all__ = ["colouring_target", "greedy_colouring", "is_proper"]


def _adjacency(adjacency) -> np.ndarray:
    a = np.asarray(adjacency)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise ValueError(f"adjacency must be a square (n, n) matrix, got shape {a.shape}")
    if a.dtype != np.bool_ and not np.issubdtype(a.dtype, np.number):
        raise TypeError(f"adjacency must be a numeric 0/1 matrix, got dtype {a.dtype}")
    if not ((a == 0) | (a == 1)).all():
        raise ValueError("adjacency must hold 0/1 entries")
    if not np.array_equal(a, a.T):
        raise ValueError("adjacency must be symmetric (an undirected graph)")
    if np.any(np.diag(a)):
        raise ValueError("adjacency must have a zero diagonal (no self-loops: they admit no colouring)")
    return a.astype(np.float64)


def colouring_target(adjacency, q: int):
    """(FamilyPack, prior) whose posterior is the uniform law on proper ``q``-colourings.

    Use ``prior.code`` and ``prior.kernel_params()`` with the kernels; start chains from a proper
    colouring with at most ``q`` colours (e.g. :func:`greedy_colouring`), where the target is
    positive.
    """
    a = _adjacency(adjacency)
    prior = UniformLabels(q)  # checks q: a positive integer
    return FamilyPack.build([(GRAPH, a, np.zeros(0))]), prior


def is_proper(adjacency, labels) -> bool:
    """True if no edge joins two items with the same label."""
    a = _adjacency(adjacency)
    labels = integer_labels(labels, a.shape[0], owner="is_proper")
    i, j = np.nonzero(a)
    return bool(np.all(labels[i] != labels[j]))


def greedy_colouring(adjacency, order=None) -> np.ndarray:
    """A proper colouring: vertices in ``order`` (default 0, 1, ...), each taking the smallest
    colour its coloured neighbours do not use (at most max degree + 1 colours)."""
    a = _adjacency(adjacency)
    n = a.shape[0]
    order = np.arange(n) if order is None else integer_labels(order, n, name="order", owner="greedy_colouring")
    if not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError("order must be a permutation of the vertices")
    labels = np.full(n, -1, np.int64)
    for v in order:
        used = set(labels[np.nonzero(a[v])[0]].tolist())
        labels[v] = next(c for c in range(n) if c not in used)
    return labels
