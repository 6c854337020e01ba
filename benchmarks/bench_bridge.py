r"""Kernel-level screen of a *bridge* birth / scatter-death move on Old Faithful (issue 20), without PyMC.

What ``bench_faithful_k.py --only diagnose`` found: K's autocorrelation on Old Faithful is set by
the lifetimes of a third block that lives between the two eruption clusters (centroid about 3.15
min / 66 min), holds items of both (its items go 30-40 % to the short-eruption block and 60-70 %
to the long one when it dies), is built and dissolved item by item over 5-8 sweeps and changes
two thirds of its members from one sweep to the next. A SAMS merge or a birth-death move's death
can only merge it whole into one block, and a birth restricted to one block cannot build it.

The move prototyped here (CRP(alpha), NormalInverseWishart in D = 2; compiled with numba):

* neighbour lists ``nbrs`` (n, L), the L nearest items in the standardised columns, a fixed
  function of the data; the window of an anchor a is (nbrs[a], nearest first), across blocks;
* birth (probability 1/2): an anchor a uniform on the n items. The new block starts as {a}; each
  window item w in list order, in its current block b (less the items already moved), joins the new
  block with probability proportional to |new| p(w | new) against |b \ w| p(w | b \ w) (alpha
  p(w) if b \ w is empty) for staying. S = the new block. If moving S empties a block, nothing
  happens (the proposal is the current state); else z' = z with S as a new block::

      Q_b(z -> z') = 1/2 * (1/n) * sum over a' in S of P(the allocation from a' gives exactly S | z);

  the *window* variant (``--configs ...:lambda``) lets each window item join independently, with
  probability proportional to lambda N(w | a Gaussian fitted once to a's window) against staying
  (|b \ w| p(w | b \ w) on the state before the move): the new block does not start from {a} alone;

* scatter-death (probability 1/2): a block S uniform among the M(z) blocks of at most L + 1 items
  (none if K = 1); its items, in increasing index order, join one of the other blocks of z with
  probability proportional to |b| p(w | b) (b as grown so far). A birth z -> z' is reversed by the
  scatter-death of S in z' that sends every item back to its block, and the other way round; the
  ratio is pi(z') Q(z' -> z) / (pi(z) Q(z -> z')) with both Q computed exactly (the anchor sum by
  forcing the allocation).

One repetition = (``moves`` SAMS moves, one Gibbs sweep: ``GibbsSAMSKernel``), then ``bridge``
bridge moves. 4 chains from random 5-block labels, 200 repetitions of burn-in, ``--reps`` timed
repetitions; alpha fixed at 0.33 (Old Faithful's posterior median under Gamma(1, 1)). Printed:
CPU seconds, ESS of K (ArviZ bulk, 4 chains) per CPU second and per 1000 repetitions, P(K = 2, 3,
4), accepted births / scatter-deaths by size, the number and lengths of the K >= 3 spells.
Measured in ``benchmarks/README.md`` (issue 20): exact, does not pay; a prototype, not in the package.

Run: ``python benchmarks/bench_bridge.py`` (a few minutes); ``--check`` also compares the prototype's
log joint with ``samplers.gibbs.log_joint``; ``--exact`` (alone) checks the moves against
enumeration at n = 6, with a power check (a wrong ratio must be seen).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

import arviz as az
import numba
import numpy as np

import pymc_partitions as pmp
from pymc_partitions.families.kernels import NIW, FamilyPack, niw_hyper
from pymc_partitions.samplers.gibbs import log_joint
from pymc_partitions.samplers.concentration import escobar_west_log
from pymc_partitions.samplers.gibbs_sams import GibbsSAMSKernel

from bench_faithful_k import spells  # noqa: E402  (benchmarks/ is on sys.path when run as a script)

ALPHA, KAPPA0, NU0 = 0.33, 0.1, 4.0

D = 2


@numba.njit(cache=True)
def _lgamma_d(x):
    return 0.5 * math.log(math.pi) * 0.5 * D * (D - 1) + math.lgamma(x) + math.lgamma(x - 0.5)


@numba.njit(cache=True)
def log_marginal(c, s0, s1, q00, q01, q11):
    """NIW(mu0 = 0, kappa0, nu0, scale0 = I) log marginal likelihood of a block from its count, sums
    and sums of products (D = 2)."""
    if c == 0:
        return 0.0
    kn = KAPPA0 + c
    nn = NU0 + c
    p00 = 1.0 + q00 - s0 * s0 / kn
    p01 = q01 - s0 * s1 / kn
    p11 = 1.0 + q11 - s1 * s1 / kn
    det = p00 * p11 - p01 * p01
    return (-0.5 * c * D * math.log(math.pi) + _lgamma_d(0.5 * nn) - _lgamma_d(0.5 * NU0) - 0.5 * nn * math.log(det)
            + 0.5 * D * (math.log(KAPPA0) - math.log(kn)))


@numba.njit(cache=True)
def _lm(st, b):
    return log_marginal(st[b, 0], st[b, 1], st[b, 2], st[b, 3], st[b, 4], st[b, 5])


@numba.njit(cache=True)
def _add(st, b, y, i, sign):
    st[b, 0] += sign
    st[b, 1] += sign * y[i, 0]
    st[b, 2] += sign * y[i, 1]
    st[b, 3] += sign * y[i, 0] * y[i, 0]
    st[b, 4] += sign * y[i, 0] * y[i, 1]
    st[b, 5] += sign * y[i, 1] * y[i, 1]


@numba.njit(cache=True)
def _pred(st, b, y, i):
    """log p(y_i | block b)."""
    before = _lm(st, b)
    _add(st, b, y, i, 1.0)
    after = _lm(st, b)
    _add(st, b, y, i, -1.0)
    return after - before


@numba.njit(cache=True)
def _stats(labels, y, k):
    st = np.zeros((k + 1, 6))  # one spare row for a new block
    for i in range(labels.shape[0]):
        _add(st, labels[i], y, i, 1.0)
    return st


@numba.njit(cache=True)
def _log_joint(st, k, n, alpha):
    out = k * math.log(alpha) + math.lgamma(alpha) - math.lgamma(alpha + n)
    for b in range(k):
        out += math.lgamma(st[b, 0]) + _lm(st, b)
    return out


@numba.njit(cache=True)
def _log_add(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


@numba.njit(cache=True)
def _birth(a, labels, st0, k, y, nbrs, alpha, force, in_s, u, win):
    """Allocation of a birth from anchor ``a`` on the state (labels, st0 with k blocks): returns
    (log probability, new-block mask). ``force``: the new block must be ``in_s`` (log probability
    -inf if the allocation cannot give it); else the choices use the uniforms ``u``. ``win``: None
    for the sequential allocation; else (lambda, means (n, 2), precisions (n, 2, 2), log
    determinants (n)) of a Gaussian fitted once to each anchor's window: each window item joins
    independently with probability proportional to lambda N(w | window of a) against staying
    (|b \ w| p(w | b \ w), on the state before the move)."""
    if win is not None:
        return _birth_window(a, labels, st0, y, nbrs, alpha, force, in_s, u, win)
    st = st0.copy()
    new = k
    mask = np.zeros(labels.shape[0], np.bool_)
    _add(st, labels[a], y, a, -1.0)
    _add(st, new, y, a, 1.0)
    mask[a] = True
    lq = 0.0
    seen = 1
    for t in range(nbrs.shape[1]):
        w = nbrs[a, t]
        b = labels[w]
        _add(st, b, y, w, -1.0)
        lj = math.log(st[new, 0]) + _pred(st, new, y, w)
        ls = (math.log(st[b, 0]) if st[b, 0] > 0 else math.log(alpha)) + _pred(st, b, y, w)
        m = max(lj, ls)
        lp_join = lj - m - math.log(math.exp(lj - m) + math.exp(ls - m))
        lp_stay = ls - m - math.log(math.exp(lj - m) + math.exp(ls - m))
        if force:
            join = in_s[w]
        else:
            join = math.log(u[t]) < lp_join
        if join:
            lq += lp_join
            _add(st, new, y, w, 1.0)
            mask[w] = True
            seen += 1
        else:
            lq += lp_stay
            _add(st, b, y, w, 1.0)
    if force:
        total = 0
        for i in range(labels.shape[0]):
            total += in_s[i]
        if total != seen:
            return -np.inf, mask
    return lq, mask


@numba.njit(cache=True)
def _birth_window(a, labels, st0, y, nbrs, alpha, force, in_s, u, win):
    lam, mu, prec, logdet = win
    st = st0.copy()
    mask = np.zeros(labels.shape[0], np.bool_)
    mask[a] = True
    lq = 0.0
    seen = 1
    for t in range(nbrs.shape[1]):
        w = nbrs[a, t]
        b = labels[w]
        d0 = y[w, 0] - mu[a, 0]
        d1 = y[w, 1] - mu[a, 1]
        quad = prec[a, 0, 0] * d0 * d0 + 2.0 * prec[a, 0, 1] * d0 * d1 + prec[a, 1, 1] * d1 * d1
        lj = math.log(lam) - math.log(2.0 * math.pi) - 0.5 * logdet[a] - 0.5 * quad
        _add(st, b, y, w, -1.0)
        ls = (math.log(st[b, 0]) if st[b, 0] > 0 else math.log(alpha)) + _pred(st, b, y, w)
        _add(st, b, y, w, 1.0)
        m = max(lj, ls)
        lz = m + math.log(math.exp(lj - m) + math.exp(ls - m))
        join = in_s[w] if force else math.log(u[t]) < lj - lz
        if join:
            lq += lj - lz
            mask[w] = True
            seen += 1
        else:
            lq += ls - lz
    if force:
        total = 0
        for i in range(labels.shape[0]):
            total += in_s[i]
        if total != seen:
            return -np.inf, mask
    return lq, mask


@numba.njit(cache=True)
def _scatter(sb, labels, st0, k, y, force, target, u):
    """Scatter-death of block ``sb``: its items in increasing index order join one of the other
    blocks (forced to ``target`` if ``force``). Returns (log probability, new labels with sb empty)."""
    st = st0.copy()
    st[sb, :] = 0.0
    out = labels.copy()
    lq = 0.0
    lw = np.empty(k)
    t = 0
    for w in range(labels.shape[0]):
        if labels[w] != sb:
            continue
        mx = -np.inf
        for b in range(k):
            if b == sb:
                lw[b] = -np.inf
            else:
                lw[b] = math.log(st[b, 0]) + _pred(st, b, y, w)
            mx = max(mx, lw[b])
        tot = 0.0
        for b in range(k):
            tot += math.exp(lw[b] - mx)
        if force:
            c = target[w]
        else:
            r = u[t] * tot
            c = -1
            acc = 0.0
            for b in range(k):
                if b == sb:
                    continue
                acc += math.exp(lw[b] - mx)
                c = b
                if r < acc:
                    break
        t += 1
        lq += lw[c] - mx - math.log(tot)
        out[w] = c
        _add(st, c, y, w, 1.0)
    return lq, out


@numba.njit(cache=True)
def _small_blocks(st, k, cap):
    m = 0
    for b in range(k):
        if st[b, 0] <= cap:
            m += 1
    return m if k >= 2 else 0


@numba.njit(cache=True)
def _canon(labels):
    n = labels.shape[0]
    mp = -np.ones(n + 1, np.int64)
    out = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        if mp[labels[i]] < 0:
            mp[labels[i]] = k
            k += 1
        out[i] = mp[labels[i]]
    return out, k


@numba.njit(cache=True)
def _anchor_sum(labels_z, st_z, k_z, y, nbrs, alpha, in_s, win):
    """log sum over anchors a' in S of P(the birth from a' gives S | z)."""
    total = -np.inf
    dummy = np.empty(nbrs.shape[1])
    for a in range(labels_z.shape[0]):
        if in_s[a]:
            lq, _ = _birth(a, labels_z, st_z, k_z, y, nbrs, alpha, True, in_s, dummy, win)
            total = _log_add(total, lq)
    return total


@numba.njit(cache=True)
def bridge_moves(labels, y, nbrs, alpha, moves, seed, counts, broken=False, win=None):
    """``moves`` bridge moves (birth / scatter-death) from ``labels``; returns canonical labels.
    ``counts``: [births proposed, births accepted, deaths proposed, deaths accepted, size histogram
    of accepted births (4..) ...]."""
    np.random.seed(seed)
    n = labels.shape[0]
    L = nbrs.shape[1]
    lab, k = _canon(labels)
    for _ in range(moves):
        st = _stats(lab, y, k)
        lp = _log_joint(st, k, n, alpha)
        if np.random.random() < 0.5:  # birth
            counts[0] += 1
            a = np.random.randint(n)
            u = np.random.random(L)
            lq_f, mask = _birth(a, lab, st, k, y, nbrs, alpha, False, mask_dummy(n), u, win)
            new_lab = lab.copy()
            for i in range(n):
                if mask[i]:
                    new_lab[i] = k
            st2 = _stats(new_lab, y, k + 1)
            valid = True
            for b in range(k):
                if st2[b, 0] == 0:
                    valid = False
            if not valid:
                continue
            if not broken:
                lq_f = _anchor_sum(lab, st, k, y, nbrs, alpha, mask, win)
            lq_f -= math.log(n)
            m2 = _small_blocks(st2, k + 1, L + 1)
            lq_r, _ = _scatter(k, new_lab, st2, k + 1, y, True, lab, u)
            lq_r -= math.log(m2)
            lp2 = _log_joint(st2, k + 1, n, alpha)
            if math.log(np.random.random()) < lp2 - lp + lq_r - lq_f:
                counts[1] += 1
                size = int(st2[k, 0])
                counts[4 + min(size, 20)] += 1
                lab = new_lab
                k += 1
        else:  # scatter-death
            m = _small_blocks(st, k, L + 1)
            if m == 0:
                continue
            counts[2] += 1
            pick = np.random.randint(m)
            sb = -1
            for b in range(k):
                if st[b, 0] <= L + 1:
                    if pick == 0:
                        sb = b
                        break
                    pick -= 1
            u = np.random.random(int(st[sb, 0]))
            lq_f, new_lab = _scatter(sb, lab, st, k, y, False, lab, u)
            lq_f -= math.log(m)
            in_s = np.zeros(n, np.bool_)
            for i in range(n):
                in_s[i] = lab[i] == sb
            st2 = _stats(new_lab, y, k)  # block sb empty (kept as an empty row)
            # the reverse birth acts on the state without sb: relabel to k - 1 blocks
            rl, k2 = _canon(new_lab)
            st_r = _stats(rl, y, k2)
            lq_r = _anchor_sum(rl, st_r, k2, y, nbrs, alpha, in_s, win) - math.log(n)
            lp2 = _log_joint(st_r, k2, n, alpha)
            if math.log(np.random.random()) < lp2 - lp + lq_r - lq_f:
                counts[3] += 1
                counts[25 + min(int(st[sb, 0]), 20)] += 1
                lab, k = rl, k2
    return _canon(lab)[0]


@numba.njit(cache=True)
def mask_dummy(n):
    return np.zeros(n, np.bool_)


def faithful():
    y = pmp.datasets.load_faithful()
    ys = (y - y.mean(0)) / y.std(0)
    pack = FamilyPack.build([(NIW, ys, niw_hyper([0.0, 0.0], KAPPA0, NU0, np.eye(2), 2, len(ys)))])
    return np.ascontiguousarray(ys), pack


def neighbours(y, L):
    from scipy.spatial import cKDTree  # noqa: PLC0415

    _, idx = cKDTree(y).query(y, k=L + 1)
    out = np.empty((len(y), L), np.int64)
    for i in range(len(y)):
        row = idx[i][idx[i] != i]
        out[i] = row[:L]
    return out


def window_gaussians(y, nbrs, lam, ridge=0.05):
    """(lambda, means, precisions, log determinants) of a Gaussian fitted to each anchor's window
    (the anchor and its L neighbours; covariance + ridge I): a fixed function of the data."""
    n = len(y)
    mu, prec, logdet = np.empty((n, 2)), np.empty((n, 2, 2)), np.empty(n)
    for a in range(n):
        pts = y[np.r_[a, nbrs[a]]]
        mu[a] = pts.mean(0)
        cov = np.cov(pts.T) + ridge * np.eye(2)
        prec[a] = np.linalg.inv(cov)
        logdet[a] = np.linalg.slogdet(cov)[1]
    return (float(lam), mu, prec, logdet)


def run(y, pack, moves, bridge, L, reps, seed=10, lam=0.0, random_alpha=False):
    """4 chains; ``random_alpha``: alpha ~ Gamma(1, 1), one Escobar-West draw after each repetition
    (as ``bench_birth_death.py``), else alpha = ALPHA."""
    n = len(y)
    nbrs = neighbours(y, L)
    win = window_gaussians(y, nbrs, lam) if lam > 0 else None
    kernel = GibbsSAMSKernel(pack, 0, np.array([ALPHA, 0.0, 0.0]), reps=1, moves=moves)
    counts = np.zeros(50, np.int64)
    lab0 = kernel.step(np.zeros(n, np.int64), np.random.default_rng(0))[0]
    bridge_moves(lab0, y, nbrs, ALPHA, 1, 0, counts.copy(), False, win)  # compile outside the clock
    trace = np.empty((4, reps))
    cpu = 0.0
    for c in range(4):
        rng = np.random.default_rng(seed + c)
        labels = rng.integers(0, 5, n)
        alpha = ALPHA if not random_alpha else 1.0
        for r in range(200 + reps):
            if r == 200:
                start = time.process_time()
            kernel.prior_params = np.array([alpha, 0.0, 0.0])
            labels = kernel.step(labels, rng)[0]
            if bridge:
                labels = bridge_moves(labels, y, nbrs, alpha, bridge, int(rng.integers(2**31)),
                                      counts if r >= 200 else counts.copy(), False, win)
            if random_alpha:
                alpha = math.exp(escobar_west_log(math.log(alpha), int(labels.max()) + 1, n, 1.0, 1.0, rng))
            if r >= 200:
                trace[c, r - 200] = labels.max() + 1
        cpu += time.process_time() - start
    return cpu, trace, counts


def check(y, pack):
    """The prototype's log joint against the package's, on random labels."""
    rng = np.random.default_rng(1)
    for _ in range(5):
        lab, k = _canon(rng.integers(0, 4, len(y)))
        mine = _log_joint(_stats(lab, y, k), k, len(y), ALPHA)
        ref = log_joint(lab, pack, 0, np.array([ALPHA, 0.0, 0.0]))
        print(f"log joint: prototype {mine:.6f}, package {ref:.6f}")


def partitions(n):
    """All set partitions of n items as canonical label tuples (restricted growth strings)."""
    out = [[0]]
    for i in range(1, n):
        out = [p + [b] for p in out for b in range(max(p) + 2)]
    return [tuple(p) for p in out]


def exact(moves=200_000):
    """The bridge moves alone (and composed with Gibbs sweeps) against enumeration at n = 6 (items of
    both clusters and the bridge region, L = 3 so that windows and the small-block cap bind);
    total variation of the visited partitions' frequencies from the exact posterior, against the
    same for the deliberately wrong ratio (power)."""
    y, _ = faithful()
    items = np.array([243, 23, 5, 0, 1, 2])
    ys = np.ascontiguousarray(y[items])
    n = len(items)
    parts = partitions(n)
    index = {p: t for t, p in enumerate(parts)}
    for alpha in (ALPHA, 1.0):
        logp = np.array([_log_joint(_stats(np.array(p), ys, max(p) + 1), max(p) + 1, n, alpha) for p in parts])
        post = np.exp(logp - logp.max())
        post /= post.sum()
        nbrs = neighbours(ys, 3)
        for broken, win in ((False, None), (True, None), (False, window_gaussians(ys, nbrs, 3.0)),
                            (True, window_gaussians(ys, nbrs, 3.0))):
            counts = np.zeros(50, np.int64)
            freq = np.zeros(len(parts))
            lab = np.zeros(n, np.int64)
            rng = np.random.default_rng(5)
            seeds = rng.integers(2**31, size=moves)
            for t in range(moves):
                lab = bridge_moves(lab, ys, nbrs, alpha, 1, int(seeds[t]), counts, broken, win)
                freq[index[tuple(lab)]] += 1
            freq /= moves
            tv = 0.5 * np.abs(freq - post).sum()
            print(f"n = {n}, alpha = {alpha}, {moves} bridge moves alone, {'window' if win else 'sequential'} birth, {'WRONG ratio (no anchor sum)' if broken else 'exact ratio'}: "
                  f"total variation {tv:.4f}; births / deaths accepted {counts[1]} / {counts[3]}; "
                  f"P(K = 1..4) exact {np.round([post[[max(p) + 1 == k for p in parts]].sum() for k in (1, 2, 3, 4)], 4)} "
                  f"visited {np.round([freq[[max(p) + 1 == k for p in parts]].sum() for k in (1, 2, 3, 4)], 4)}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3000)
    parser.add_argument("--configs", default="0:0:16,1:0:16,0:1:16,0:3:16,1:1:16,1:3:16,1:3:32,1:10:32",
                        help="SAMS moves:bridge moves:L[:lambda] per repetition, comma-separated (lambda: the window-Gaussian "
                        "birth with that weight; none: the sequential allocation)")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--alpha", choices=["fixed", "gamma"], default="fixed",
                        help="alpha fixed at 0.33, or ~ Gamma(1, 1) by Escobar-West after each repetition")
    parser.add_argument("--exact", action="store_true", help="enumeration check at n = 6 (and nothing else)")
    args = parser.parse_args(argv)
    avg = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "n/a"
    print(f"bench_bridge: Python {platform.python_version()}, load average {avg}; 4 chains x {args.reps} repetitions, "
          f"alpha {'= ' + str(ALPHA) + ' fixed' if args.alpha == 'fixed' else '~ Gamma(1, 1), Escobar-West'}")
    if args.exact:
        exact()
        return
    y, pack = faithful()
    if args.check:
        check(y, pack)
    print("\n| SAMS moves | bridge moves (L) | CPU s | K: ESS / per s / per 1000 reps | P(K = 2, 3, 4) | births: proposed / "
          "accepted (sizes 1, 2-4, 5-9, 10+) | deaths: proposed / accepted (sizes 1, 2-4, 5-9, 10+) | K >= 3 spells: number: length mean / sd | "
          "K ESS/s vs first |")
    print("|---|---|---|---|---|---|---|---|---|")
    base = None
    for cfg in args.configs.split(","):
        parts = cfg.split(":")
        moves, bridge, L = (int(v) for v in parts[:3])
        lam = float(parts[3]) if len(parts) > 3 else 0.0
        cpu, trace, cnt = run(y, pack, moves, bridge, L, args.reps, lam=lam, random_alpha=args.alpha == "gamma")
        ess = float(az.ess(trace, method="bulk"))
        law = np.bincount(trace.astype(int).ravel(), minlength=5)[2:5] / trace.size
        base = base or ess / cpu
        b, d = cnt[4:25], cnt[25:46]
        on = spells(trace >= 3)
        lengths = np.array([e - a for _, a, e in on], float)
        grp = lambda h: f"{h[1]}, {h[2:5].sum()}, {h[5:10].sum()}, {h[10:].sum()}"  # noqa: E731
        print(f"| {moves} | {bridge} ({L}{', window lambda = ' + str(lam) if lam else ''}) | {cpu:.2f} | {ess:.0f} / {ess / cpu:.0f} / {1000 * ess / trace.size:.0f} | "
              f"{np.round(law, 3)} | {cnt[0]} / {cnt[1]} ({grp(b)}) | {cnt[2]} / {cnt[3]} ({grp(d)}) | "
              f"{len(lengths)}: {lengths.mean():.1f} / {lengths.std():.1f} | {ess / cpu / base:.1f}x |", flush=True)
    avg = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "n/a"
    print(f"\nload average at end {avg}")


if __name__ == "__main__":
    main()
