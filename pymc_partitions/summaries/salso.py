"""The SALSO search for a partition minimising a posterior expected loss (Dahl, Johnson & Müller
2022, "Search algorithms and loss functions for Bayesian clustering", JCGS 31, 1189-1201; R
package ``salso``).

One *run*, from its own random stream:

1. **Initial allocation.** With probability ``prob_sequential_allocation`` (0.5), *sequential
   allocation*: the items are visited in a random order and each joins the existing block, or a
   new block while there are fewer than ``max_clusters``, that minimises the expected loss
   computed on the items allocated so far (each draw restricted to the same items). Otherwise
   every item gets a label drawn uniformly from ``max_clusters`` labels (salso's
   ``sample(1:K, n, TRUE)``).
2. **Sweetening.** Scans in a fresh random order: each item is taken out and put back in the
   block (or a new block) that minimises the expected loss; it moves only if that lowers the
   loss (so a scan never cycles between equal-loss states), until a scan changes nothing or
   ``max_scans`` scans have run.
3. **Zealous updates.** The blocks, in a random order: a block of two or more items is
   destroyed, its items are allocated sequentially (random order) as in 1, the result is
   sweetened, and the change is kept only if the expected loss went down; at most
   ``max_zealous_attempts`` attempts.

The best of ``runs`` runs (lowest expected loss; the lower run index on ties) is returned.
salso's defaults: 16 runs, 10 zealous attempts, probability 0.5, ``max_clusters`` = the largest
number of blocks among the draws. Scans are not capped by default (they stop when nothing moves;
every move lowers the loss, so they end).

**Expected losses without n x n matrices.** The state keeps, for every draw s and block l of that
draw, the counts c_s[l, k] = |draw block l ∩ candidate block k| for all candidate labels k: one
row per (draw, draw block), Σ_s K_s rows of ``max_clusters`` entries (rounded up to a multiple
of 8), each entry an int32 count and a float64 term w_s f(c) (12 bytes: 1.7 MB for 500 draws of
~20 blocks and 16 labels); the candidate's block sizes; and, per draw, the sums of squares of
the table and of the draw's allocated block sizes. Moving an item changes one entry per draw:
O(draws). The change in expected loss of putting item i in block k is

* VI: Δ_k = f(a_k) − 2 Σ_s w_s f(c_s[l_s(i), k]), f(x) = (x+1) log2 (x+1) − x log2 x;
* Binder: the same with f(x) = 2x + 1 (Σ x² in place of Σ x log2 x);

(the draw's own terms, and the 1/n or 1/n² factor, are the same for every k). Occupied blocks
always carry the labels 0 .. K − 1 (an emptied block takes the last block's label), so scoring
all blocks for one item sums a contiguous prefix of one row per draw: O(draws · K), 8 labels per
pass; a new block's score needs no sum (its counts are 0), and the score of staying comes from
the same rows with the item's own count lowered by one, so an item that stays costs no update.
For omARI, which is not linear in the table, the ARI of each draw is re-evaluated for each k
from the kept sums of squares: also O(draws · K), never an n x n matrix.

**Random numbers and threads.** A 64-bit seed is drawn from
``numpy.random.SeedSequence(random_seed)``; run r draws counter-based SplitMix64 uniforms from
stream r of it (:func:`pymc_partitions._numeric.stream_key`, ``keyed_uniform``), so a run's
result depends only on the seed and r. Runs execute on ``threads`` Python threads calling
compiled kernels that release the GIL; the winner is chosen by (loss, r): the same seed gives
the same result whatever the number of threads -- unless the time budget ``seconds`` cuts the
search short: then runs not yet started are skipped, running ones stop at their next scan, and
the result depends on timing.
"""

from __future__ import annotations

import concurrent.futures
import time
from dataclasses import dataclass

import numba
import numpy as np

from .._numeric import keyed_uniform, stream_key
from ._threads import cpu_threads
from .draws import LabelDraws, canonical_rows
from .losses import BINDER, OMARI, ari_from_sums

__all__ = ["SalsoSettings", "RunResult", "salso_search", "table_bytes", "candidate_labels", "thread_count", "run_keys"]

_MOVE_TOL = 1e-10  # a move / zealous update must lower the loss by more than this (relative)


@dataclass(frozen=True)
class SalsoSettings:
    max_clusters: int = 0
    runs: int = 16
    max_zealous_attempts: int = 10
    prob_sequential_allocation: float = 0.5
    max_scans: int | None = None
    seconds: float | None = None
    threads: int | None = None


@dataclass
class RunResult:
    run: int
    labels: np.ndarray
    loss: float
    init: str
    swept_loss: float
    scans: int
    zealous_attempts: int
    zealous_accepts: int
    truncated: bool
    seconds: float


# --- random numbers: SplitMix64 streams, one counter per run -----------------------------------


@numba.njit(cache=True, nogil=True)
def _uniform(key, ctr):
    u = keyed_uniform(key, ctr[0])
    ctr[0] += 1
    return u


@numba.njit(cache=True, nogil=True)
def _below(key, ctr, m):
    """A uniform integer in [0, m)."""
    return min(int(_uniform(key, ctr) * m), m - 1)


@numba.njit(cache=True, nogil=True)
def _shuffle(a, key, ctr):
    for j in range(a.shape[0] - 1, 0, -1):
        t = _below(key, ctr, j + 1)
        a[j], a[t] = a[t], a[j]


# --- the state ------------------------------------------------------------------------------------
# Problem (read only), a tuple: rows (n, S) int32, rows[i, s] = doff[s] + (label of i in draw s),
# the row of the draw block holding item i (items first: an item's rows are contiguous); doff
# (S + 1) offsets of each draw's blocks; weights (S); dtab (n + 1) the increments f(x); kc
# (max_clusters); code (loss); kp (the row stride: kc rounded up to a multiple of 8); ftab
# (n + 2) the values x² or x log2 x.
# State, a tuple: lab[i] candidate block of item i (-1: not allocated); size[k]; tab[(doff[s] + l)
# * kp + k] = |draw s block l ∩ candidate block k| (int32); g: per row, 2 kp float64 terms
# weights[s] dtab[c] and weights[s] dtab[c - 1] for VI and Binder, the sums scoring needs (see
# _gidx); m[doff[s] + l] = allocated items of draw s block l;
# b2[s] = Σ_l m², c2[s] = Σ tab² (omARI); misc = [Σ size², allocated items, occupied blocks];
# acc: scores. Occupied blocks are always labelled 0 .. misc[2] - 1 (a block that empties takes
# the last block's label), so scoring reads a contiguous prefix of each row, 8 entries at a time.


@numba.njit(cache=True, nogil=True)
def _draw_in(i, sign, prob, st):
    """Item i enters (sign 1) or leaves (sign -1) the draws' allocated items."""
    rows = prob[0]
    m, b2, misc = st[4], st[5], st[7]
    for s in range(rows.shape[1]):
        r = rows[i, s]
        x = m[r]
        if sign > 0:
            b2[s] += 2 * x + 1
            m[r] = x + 1
        else:
            b2[s] -= 2 * x - 1
            m[r] = x - 1
    misc[1] += sign


@numba.njit(cache=True, nogil=True)
def _count(i, k, step, prob, st):
    """Add ``step`` (+1 / -1) to item i's table entries in block k, for every draw."""
    rows, doff, weights, dtab, kc, code, kp, _ = prob
    tab, g, c2 = st[2], st[3], st[6]
    if code == OMARI:
        for s in range(rows.shape[1]):
            idx = rows[i, s] * kp + k
            x = tab[idx]
            c2[s] += 2 * x + 1 if step > 0 else 1 - 2 * x
            tab[idx] = x + step
        return
    for s in range(rows.shape[1]):
        row = rows[i, s]
        idx = row * kp + k
        x = tab[idx] + step
        tab[idx] = x
        gi = _gidx(row, k, kp)
        g[gi] = weights[s] * dtab[x]
        g[gi + 8] = weights[s] * dtab[x - 1] if x > 0 else 0.0


@numba.njit(cache=True, nogil=True)
def _join(i, k, prob, st):
    lab, size, misc = st[0], st[1], st[7]
    if k == misc[2]:
        misc[2] += 1  # a new block
    lab[i] = k
    misc[0] += 2 * size[k] + 1
    size[k] += 1
    _count(i, k, 1, prob, st)


@numba.njit(cache=True, nogil=True)
def _leave(i, prob, st):
    """Take item i out of its block (which may be left empty: see :func:`_close`)."""
    lab, size, misc = st[0], st[1], st[7]
    k = lab[i]
    lab[i] = -1
    size[k] -= 1
    misc[0] -= 2 * size[k] + 1
    _count(i, k, -1, prob, st)
    return k


@numba.njit(cache=True, nogil=True)
def _close(k, prob, st):
    """Block k is empty: give its label to the last occupied block."""
    rows, doff, kp = prob[0], prob[1], prob[6]
    lab, size, tab, g, misc = st[0], st[1], st[2], st[3], st[7]
    last = misc[2] - 1
    misc[2] = last
    if k == last:
        return
    for i in range(lab.shape[0]):
        if lab[i] == last:
            lab[i] = k
    size[k] = size[last]
    size[last] = 0
    for r in range(doff[rows.shape[1]]):
        tab[r * kp + k] = tab[r * kp + last]
        tab[r * kp + last] = 0
        to = _gidx(r, k, kp)
        fro = _gidx(r, last, kp)
        g[to] = g[fro]
        g[to + 8] = g[fro + 8]
        g[fro] = 0.0
        g[fro + 8] = 0.0


@numba.njit(cache=True, nogil=True)
def _gidx(row, k, kp):
    """Where the term of (row, k) is in g: each row is blocks of 16, the terms w f(c) of 8
    labels and then their terms w f(c - 1), so a score's reads stay in two adjacent lines."""
    return row * 2 * kp + (k >> 3) * 16 + (k & 7)


@numba.njit(cache=True, nogil=True)
def _row_sums(i, prob, st, count, own):
    """acc[k] = Σ_s w_s f(c_s[row of item i, k]) for k < count (8 local sums at a time: an
    array accumulator in the inner loop was 3 times slower); with ``own`` >= 0, also returns
    Σ_s w_s f(c_s[row, own] - 1) (block own with item i taken out)."""
    rows, kp = prob[0], prob[6]
    g, acc = st[3], st[8]
    own_total = 0.0
    for k0 in range(0, max(count, 1), 8):
        mine = own - k0 if k0 <= own < k0 + 8 else -1
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
        for s in range(rows.shape[1]):
            b = rows[i, s] * 2 * kp + 2 * k0
            a0 += g[b]
            a1 += g[b + 1]
            a2 += g[b + 2]
            a3 += g[b + 3]
            a4 += g[b + 4]
            a5 += g[b + 5]
            a6 += g[b + 6]
            a7 += g[b + 7]
            if mine >= 0:
                own_total += g[b + 8 + mine]
        acc[k0] = a0
        acc[k0 + 1] = a1
        acc[k0 + 2] = a2
        acc[k0 + 3] = a3
        acc[k0 + 4] = a4
        acc[k0 + 5] = a5
        acc[k0 + 6] = a6
        acc[k0 + 7] = a7
    return own_total


@numba.njit(cache=True, nogil=True)
def _scores(i, prob, st, count, own):
    """acc[k], k < count: the expected loss, up to a constant common to all k, of putting item i
    in block k. ``own`` = -1: i is in no block (and in the draws' allocated items). ``own`` = k0
    >= 0 (linear losses only): i is in block k0, and acc[k0] is the score of leaving it there."""
    rows, doff, weights, dtab, kc, code, kp, _ = prob
    size, tab, b2, c2, misc, acc = st[1], st[2], st[5], st[6], st[7], st[8]
    if code == OMARI:  # every draw's ARI at each k
        for k in range(count):
            acc[k] = 0.0
        nn = float(misc[1])
        a2 = misc[0]
        for s in range(rows.shape[1]):
            base = rows[i, s] * kp
            ws = weights[s]
            bb = float(b2[s])
            cc = c2[s]
            for k in range(count):
                acc[k] += ws * (1.0 - ari_from_sums(nn, float(a2 + 2 * size[k] + 1), bb,
                                                    float(cc + 2 * tab[base + k] + 1)))
        return
    occupied = min(count, misc[2])
    own_total = _row_sums(i, prob, st, occupied, own)  # a new block's entries are 0: no sum needed
    for k in range(occupied):
        acc[k] = dtab[size[k]] - 2.0 * acc[k]
    for k in range(occupied, count):
        acc[k] = -dtab[0]  # dtab[0] - 2 Σ_s weights[s] dtab[0], the weights summing to 1
    if own >= 0:  # i's own block, with i taken out
        acc[own] = dtab[size[own] - 1] - 2.0 * own_total


@numba.njit(cache=True, nogil=True)
def _allocate(items, prob, st):
    """Sequential allocation of ``items`` (allocated nowhere), in the given order: each joins the
    block (or a new one, while fewer than kc) with the lowest expected loss so far."""
    kc = prob[4]
    misc, acc = st[7], st[8]
    for i in items:
        _draw_in(i, 1, prob, st)
        count = min(misc[2] + 1, kc)
        _scores(i, prob, st, count, -1)
        best = 0
        for k in range(1, count):
            if acc[k] < acc[best]:
                best = k
        _join(i, best, prob, st)


@numba.njit(cache=True, nogil=True)
def _scan(perm, key, ctr, prob, st):
    """One sweetening scan in a fresh random order; True if any item moved. An item moves only
    when that lowers the expected loss by more than a relative 1e-10 (no cycling on ties)."""
    kc, code = prob[4], prob[5]
    lab, size, misc, acc = st[0], st[1], st[7], st[8]
    _shuffle(perm, key, ctr)
    changed = False
    for i in perm:
        k0 = lab[i]
        alone = size[k0] == 1  # then staying is the new-block option
        count = misc[2] if alone else min(misc[2] + 1, kc)
        if code == OMARI:
            _leave(i, prob, st)
            _scores(i, prob, st, count, -1)
        else:
            _scores(i, prob, st, count, k0)
        best = k0
        value = acc[k0]
        for k in range(count):
            if acc[k] < value - _MOVE_TOL * (1.0 + abs(value)):
                best = k
                value = acc[k]
        if code == OMARI:
            _join(i, best, prob, st)
        elif best != k0:
            _leave(i, prob, st)
            _join(i, best, prob, st)
        if best != k0:
            changed = True
            if alone:
                _close(k0, prob, st)
    return changed


@numba.njit(cache=True, nogil=True)
def _rebuild(labels, prob, st):
    """Reset the state to the canonical ``labels`` (all items allocated)."""
    st[4][:] = 0
    st[5][:] = 0
    st[6][:] = 0
    st[7][:] = 0
    st[1][:] = 0
    st[2][:] = 0
    st[3][:] = 0.0
    for i in range(labels.shape[0]):
        _draw_in(i, 1, prob, st)
        _join(i, labels[i], prob, st)


@numba.njit(cache=True, nogil=True)
def _random_labels(n, kc, key, ctr):
    """Labels drawn uniformly from kc values, made canonical."""
    raw = np.empty(n, np.int64)
    for i in range(n):
        raw[i] = _below(key, ctr, kc)
    new = np.full(kc, -1, np.int64)
    count = 0
    for i in range(n):
        if new[raw[i]] < 0:
            new[raw[i]] = count
            count += 1
        raw[i] = new[raw[i]]
    return raw


@numba.njit(cache=True, nogil=True)
def _take_out_block(label, key, ctr, prob, st):
    """Take every item of block ``label`` out of the candidate and of the draws' allocated items;
    return them in a random order."""
    lab, size = st[0], st[1]
    items = np.empty(size[label], np.int64)
    t = 0
    for i in range(lab.shape[0]):
        if lab[i] == label:
            items[t] = i
            t += 1
    for i in items:
        _leave(i, prob, st)
        _draw_in(i, -1, prob, st)
    _close(label, prob, st)
    _shuffle(items, key, ctr)
    return items


@numba.njit(cache=True, nogil=True)
def _table_loss(prob, st):
    """Expected loss of the (complete) candidate from the kept tables."""
    rows, doff, weights, dtab, kc, code, kp, ftab = prob
    size, tab, m, b2, c2, misc = st[1], st[2], st[4], st[5], st[6], st[7]
    n = float(rows.shape[0])
    if code == OMARI:
        total = 0.0
        for s in range(rows.shape[1]):
            total += weights[s] * (1.0 - ari_from_sums(n, float(misc[0]), float(b2[s]), float(c2[s])))
        return total
    occupied = misc[2]
    own = 0.0
    for k in range(occupied):
        own += ftab[size[k]]
    total = 0.0
    for s in range(rows.shape[1]):
        part = 0.0
        for r in range(doff[s], doff[s + 1]):
            part += ftab[m[r]]
            inner = 0.0
            for k in range(occupied):
                inner += ftab[tab[r * kp + k]]
            part -= 2.0 * inner
        total += weights[s] * part
    value = (own + total) / (n * n if code == BINDER else n)
    return max(value, 0.0)


# --- runs ---------------------------------------------------------------------------------------


def candidate_labels(draws: LabelDraws, settings: SalsoSettings) -> int:
    """max_clusters, or the largest number of blocks among the draws (at most n)."""
    return min(settings.max_clusters or int(draws.n_clusters.max()), draws.n_items)


def thread_count(settings: SalsoSettings) -> int:
    """Threads the runs use: ``settings.threads`` or the cores, at most one per run."""
    return max(1, min(settings.threads or cpu_threads(), settings.runs))


def table_bytes(draws: LabelDraws, kc: int) -> int:
    """Bytes of one run's contingency rows: an int32 count and two float64 terms per entry,
    rows of kc rounded up to a multiple of 8."""
    return int(draws.n_clusters.sum()) * (-(-kc // 8) * 8) * 20


class _Context:
    """What every run shares (read only): the problem tuple and the settings."""

    def __init__(self, draws: LabelDraws, code: int, kc: int, settings: SalsoSettings, deadline: float | None):
        n = draws.n_items
        doff = np.concatenate([[0], np.cumsum(draws.n_clusters)]).astype(np.int64)
        counts = np.arange(n + 2, dtype=np.float64)
        if code == BINDER:
            ftab = counts**2
        else:
            ftab = np.where(counts > 1, counts * np.log2(np.maximum(counts, 1.0)), 0.0)
        dtab = np.diff(ftab)  # f(x) = (x+1)^2 - x^2 or (x+1) log2 (x+1) - x log2 x, x = 0..n
        rows = np.ascontiguousarray((draws.labels + doff[:-1, None]).T, dtype=np.int32)
        kp = -(-kc // 8) * 8
        self.prob = (rows, doff, draws.weights, dtab, np.int64(kc), np.int64(code), np.int64(kp), ftab)
        self.n = n
        self.kc = kc
        self.kp = kp
        self.rows = int(doff[-1])
        self.settings = settings
        self.deadline = deadline
        self.max_scans = settings.max_scans if settings.max_scans is not None else np.iinfo(np.int64).max

    def late(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline


class _Run:
    """The mutable state of one run."""

    def __init__(self, ctx: _Context, key: np.uint64):
        self.ctx = ctx
        self.key = key
        self.ctr = np.zeros(1, np.int64)
        s_count = ctx.prob[0].shape[1]
        self.st = (np.full(ctx.n, -1, np.int64), np.zeros(ctx.kp, np.int64), np.zeros(ctx.rows * ctx.kp, np.int32),
                   np.zeros(ctx.rows * ctx.kp * 2), np.zeros(ctx.rows, np.int32), np.zeros(s_count, np.int64),
                   np.zeros(s_count, np.int64), np.zeros(3, np.int64), np.empty(ctx.kp))
        self.perm = np.arange(ctx.n, dtype=np.int64)
        self.scans = 0
        self.truncated = False

    @property
    def lab(self) -> np.ndarray:
        return self.st[0]

    @property
    def size(self) -> np.ndarray:
        return self.st[1]

    def allocate(self, items):
        _allocate(items, self.ctx.prob, self.st)

    def rebuild(self, labels):
        _rebuild(labels, self.ctx.prob, self.st)

    def loss(self) -> float:
        return float(_table_loss(self.ctx.prob, self.st))

    def sweeten(self) -> None:
        c = self.ctx
        while self.scans < c.max_scans:
            if c.late():
                self.truncated = True
                return
            self.scans += 1
            if not _scan(self.perm, self.key, self.ctr, c.prob, self.st):
                return

    def take_out(self, label):
        return _take_out_block(label, self.key, self.ctr, self.ctx.prob, self.st)


def _one_run(ctx: _Context, r: int, key: np.uint64) -> RunResult | None:
    if r > 0 and ctx.late():
        return None  # skipped: the time budget is spent (run 0 always gives a partition)
    start = time.perf_counter()
    st = _Run(ctx, key)
    s = ctx.settings
    if _uniform(key, st.ctr) < s.prob_sequential_allocation:
        init = "sequential"
        order = np.arange(ctx.n, dtype=np.int64)
        _shuffle(order, key, st.ctr)
        st.allocate(order)
    else:
        init = "random"
        st.rebuild(_random_labels(ctx.n, ctx.kc, key, st.ctr))
    st.sweeten()
    loss = swept = st.loss()
    attempts = accepts = 0
    if s.max_zealous_attempts > 0 and not st.truncated:
        blocks = np.arange(int(st.st[7][2]), dtype=np.int64)
        _shuffle(blocks, key, st.ctr)
        members = [np.flatnonzero(st.lab == b) for b in blocks]  # blocks are relabelled as they change
        for items in members:
            if items.size <= 1:
                continue  # sweetening already tried moving a lone item
            if attempts >= s.max_zealous_attempts or st.truncated or ctx.late():
                break
            label = st.lab[items[0]]
            if not np.all(st.lab[items] == label) or st.size[label] != items.size:
                continue  # that block changed in an accepted update
            attempts += 1
            before = st.lab.copy()
            items = st.take_out(label)
            st.allocate(items)
            first = st.lab[items[0]]
            if np.all(st.lab[items] == first) and st.size[first] == items.size:
                continue  # the block came back whole: nothing changed (up to its label)
            st.sweeten()
            value = st.loss()
            if value < loss - _MOVE_TOL * max(1.0, abs(loss)):
                loss = value
                accepts += 1
            else:
                st.rebuild(canonical_rows(before[None, :])[0][0].astype(np.int64))
    labels, _ = canonical_rows(st.lab[None, :])
    return RunResult(run=r, labels=labels[0].astype(np.int64), loss=loss, init=init, swept_loss=swept, scans=st.scans,
                     zealous_attempts=attempts, zealous_accepts=accepts, truncated=st.truncated,
                     seconds=time.perf_counter() - start)


def salso_search(draws: LabelDraws, code: int, settings: SalsoSettings, keys: np.ndarray) -> tuple[list, dict]:
    """Run ``len(keys)`` SALSO runs (settings checked by the caller); return (completed runs
    sorted by (loss, run), statistics)."""
    kc = candidate_labels(draws, settings)
    threads = thread_count(settings)
    start = time.perf_counter()
    deadline = None if settings.seconds is None else start + settings.seconds
    ctx = _Context(draws, code, kc, settings, deadline)
    if threads == 1:
        results = [_one_run(ctx, r, key) for r, key in enumerate(keys)]
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
            results = list(pool.map(lambda rk: _one_run(ctx, *rk), enumerate(keys)))
    done = sorted((res for res in results if res is not None), key=lambda res: (res.loss, res.run))
    stats = {
        "runs": len(keys),
        "runs_completed": sum(1 for res in done if not res.truncated),
        "runs_truncated": sum(1 for res in done if res.truncated),
        "runs_skipped": sum(1 for res in results if res is None),
        "max_clusters": kc,
        "threads": threads,
        "seconds": time.perf_counter() - start,
        "run_losses": [float(res.loss) for res in sorted(done, key=lambda res: res.run)],
    }
    return done, stats


def run_keys(seed_sequence: np.random.SeedSequence, runs: int) -> np.ndarray:
    """One 64-bit key per run: SplitMix64 stream r of a 64-bit seed drawn from the sequence."""
    return _stream_keys(seed_sequence.generate_state(1, np.uint64)[0], runs)


@numba.njit(cache=True)
def _stream_keys(seed, runs):
    out = np.empty(runs, np.uint64)
    for r in range(runs):
        out[r] = stream_key(seed, r)
    return out
