#!/usr/bin/env python
"""Diagnostic for bench_gibbs.py: where the time of a collapsed Gibbs sweep goes.

    python benchmarks/diag_candidate_cost.py

A sweep evaluates one log predictive per (point, candidate block), so its cost is about
n * K * (cost per candidate). Part A times that per-candidate cost: the package's
``pack_log_pred`` against the same diagonal-Normal arithmetic written with other calling
conventions. Part B times a stand-alone prototype sweep (NOT package code: one DIAG_NORMAL
family, offset indexing into the statistics table, log(size) folded into the cached constant)
to show what the hardware allows, next to the package kernel. CPU time (``process_time``), so
the figures hold on a shared machine.
"""

from __future__ import annotations

import math
import os
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gibbs import kernel_sweep, make_data, make_pack  # noqa: E402

import pymc_partitions as pmp  # noqa: E402
from pymc_partitions.families.kernels import family_log_pred, pack_log_pred  # noqa: E402

# ----------------------------------------------------------------------------- A. per candidate


@numba.njit
def views_no_call(codes, dims, doff, soff, hoff, hyper, row, xrow, scratch):
    """Array views as in pack_log_pred, but the DIAG_NORMAL arithmetic written inline."""
    out = 0.0
    for f in range(codes.shape[0]):
        dim = dims[f]
        st = row[soff[f]:]
        x = xrow[doff[f]: doff[f] + dim]
        o = st[1 + 4 * dim]
        for d in range(dim):
            e = x[d] - st[1 + 2 * dim + d]
            o -= 0.5 * e * e * st[1 + 3 * dim + d]
        out += o
    return out


@numba.njit
def call_no_views(codes, dims, doff, soff, hoff, hyper, row, xrow, scratch):
    """family_log_pred called with the whole arrays (valid here: one family at offset 0)."""
    out = 0.0
    for f in range(codes.shape[0]):
        out += family_log_pred(codes[f], row, xrow, hyper, dims[f], scratch)
    return out


@numba.njit
def offsets_inline(codes, dims, doff, soff, hoff, hyper, row, xrow, scratch):
    """No views, no call: offsets into the arrays, arithmetic inline."""
    out = 0.0
    for f in range(codes.shape[0]):
        dim, so, do = dims[f], soff[f], doff[f]
        o = row[so + 1 + 4 * dim]
        for d in range(dim):
            e = xrow[do + d] - row[so + 1 + 2 * dim + d]
            o -= 0.5 * e * e * row[so + 1 + 3 * dim + d]
        out += o
    return out


def _driver(fn):
    @numba.njit
    def run(codes, dims, doff, soff, hoff, hyper, stats, data, reps):
        scratch = np.empty(data.shape[1])
        acc = 0.0
        for _ in range(reps):
            for i in range(data.shape[0]):
                for b in range(stats.shape[0]):
                    acc += fn(codes, dims, doff, soff, hoff, hyper, stats[b], data[i], scratch)
        return acc

    return run


def part_a():
    print("A. CPU ns per (point, candidate block), DIAG_NORMAL D=2, K=20")
    rng = np.random.default_rng(0)
    n, k = 1000, 20
    Y, _ = make_data("NormalNormal", n, 2)
    pack = make_pack("NormalNormal", Y)
    stats = rng.random((k, pack.width))
    args = (pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, stats, pack.data)
    for name, fn in [("package pack_log_pred (views + call)", pack_log_pred), ("views, arithmetic inline", views_no_call),
                     ("call family_log_pred, no views", call_no_views), ("offsets, inline (no views, no call)", offsets_inline)]:
        run = _driver(fn)
        run(*args, 1)
        best = min(_cpu(lambda: run(*args, 10)) for _ in range(5)) / (10 * n * k)
        print(f"  {name:40s} {best * 1e9:7.1f} ns")


def _cpu(f):
    c = time.process_time()
    f()
    return time.process_time() - c


# ----------------------------------------------------------------------------- B. prototype sweep


@numba.njit(fastmath=True)
def _refresh(st, s, hp, dim):
    m = st[s, 0]
    const = 0.0
    for d in range(dim):
        prec = 1.0 / hp[dim + d] + m / hp[2 * dim + d]
        st[s, 1 + 2 * dim + d] = (hp[d] / hp[dim + d] + st[s, 1 + d] / hp[2 * dim + d]) / prec
        var = 1.0 / prec + hp[2 * dim + d]
        st[s, 1 + 3 * dim + d] = 1.0 / var
        const -= 0.5 * (math.log(2 * math.pi) + math.log(var))
    st[s, 1 + 4 * dim] = const + (math.log(m) if m > 0 else 0.0)  # CRP join weight log(size) cached


@numba.njit(fastmath=True)
def proto_sweep(z, data, hp, alpha, order, u):
    n, dim = data.shape
    width = 4 * dim + 2
    cap = n + 1
    st = np.zeros((cap, width))
    active = np.arange(cap)
    pos = np.arange(cap)
    n_active = z.max() + 1
    for i in range(n):
        st[z[i], 0] += 1
        for d in range(dim):
            st[z[i], 1 + d] += data[i, d]
    for s in range(n_active):
        _refresh(st, s, hp, dim)
    empty = np.zeros((1, width))
    _refresh(empty, 0, hp, dim)
    log_alpha = math.log(alpha)
    logw = np.empty(cap)
    for t in range(n):
        i = order[t]
        s = z[i]
        st[s, 0] -= 1
        for d in range(dim):
            st[s, 1 + d] -= data[i, d]
        _refresh(st, s, hp, dim)
        if st[s, 0] == 0:
            j = pos[s]
            last = active[n_active - 1]
            active[j] = last
            pos[last] = j
            active[n_active - 1] = s
            pos[s] = n_active - 1
            n_active -= 1
        top = -np.inf
        for j in range(n_active):
            b = active[j]
            w = st[b, 1 + 4 * dim]
            for d in range(dim):
                e = data[i, d] - st[b, 1 + 2 * dim + d]
                w -= 0.5 * e * e * st[b, 1 + 3 * dim + d]
            logw[j] = w
            top = max(top, w)
        w = log_alpha + empty[0, 1 + 4 * dim]
        for d in range(dim):
            e = data[i, d] - empty[0, 1 + 2 * dim + d]
            w -= 0.5 * e * e * empty[0, 1 + 3 * dim + d]
        logw[n_active] = w
        top = max(top, w)
        total = 0.0
        for j in range(n_active + 1):
            logw[j] = math.exp(logw[j] - top)
            total += logw[j]
        target = u[t] * total
        acc = 0.0
        chosen = n_active
        for j in range(n_active + 1):
            acc += logw[j]
            if target < acc:
                chosen = j
                break
        if chosen == n_active:
            s = active[n_active]
            n_active += 1
        else:
            s = active[chosen]
        st[s, 0] += 1
        for d in range(dim):
            st[s, 1 + d] += data[i, d]
        _refresh(st, s, hp, dim)
        z[i] = s
    return z


def part_b():
    from pymc_partitions.families.kernels import diag_normal_hyper

    print("\nB. CPU ms per sweep: prototype (offset indexing) vs package kernel, NormalNormal, from the true labels")
    prior = pmp.CRP(1.0)
    for n, dim, target in [(10**4, 2, 5.0), (10**4, 50, 12.0), (10**5, 2, 50.0)]:
        Y, z = make_data("NormalNormal", n, dim, seed=n + dim)
        hp = diag_normal_hyper(0.0, 10.0 if dim == 2 else 3.0, 1.0, dim)
        rng = np.random.default_rng(0)
        zz = proto_sweep(z.copy(), Y, hp, 1.0, rng.permutation(n), rng.random(n))
        tp = [_cpu(lambda: proto_sweep(zz, Y, hp, 1.0, rng.permutation(n), rng.random(n))) for _ in range(7)]
        pack, lab = make_pack("NormalNormal", Y), kernel_sweep(z, make_pack("NormalNormal", Y), prior, rng)
        tk = []
        for _ in range(3):
            c = time.process_time()
            lab = kernel_sweep(lab, pack, prior, rng)
            tk.append(time.process_time() - c)
        print(f"  n={n:>6} D={dim:>2}: prototype {np.median(tp) * 1e3:6.1f} ms (K={len(np.unique(zz))}), "
              f"package {np.median(tk) * 1e3:6.1f} ms (K={lab.max() + 1}), target {target:g} ms")


if __name__ == "__main__":
    part_a()
    part_b()
