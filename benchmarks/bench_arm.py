#!/usr/bin/env python
"""ARM against Gibbs, Jain-Neal split-merge, SAMS and PGSM (seed 004 Table 2, reduced), and the
cost of one ARM move in Gibbs sweeps.

    PYTHONPATH=. python benchmarks/bench_arm.py            # full run (about 12 CPU minutes, 4 of them networks)
    PYTHONPATH=. python benchmarks/bench_arm.py --quick    # one data set per d, 1000 iterations (~70 s CPU)
    PYTHONPATH=. python benchmarks/bench_arm.py --only networks   # section 3 alone (~4 CPU minutes)
    PYTHONPATH=. python benchmarks/bench_arm.py --only netcost    # its node-move cost table alone
    PYTHONPATH=. python benchmarks/bench_arm.py --only restarts   # section 3b alone (~4 CPU minutes)
    # issue 20's ARM target (benchmarks/README.md, "ARM that discovers"; ~80 s CPU): pm.sample's
    # dispersed start, budgets 1 s karate / 3 s planted; --seed 1 another set of restarts;
    # --synthetic / --focus set the options of the non-plain ARM rows (ablations)
    PYTHONPATH=. python benchmarks/bench_arm.py --quick --only restarts --starts dispersed \
        --restart-budget 1,3 --no-chains-table [--net-methods Gibbs+SM,Gibbs+ARM --focus 0]

Prints markdown tables; never fails (benchmarks measure, tests assert). Everything runs in one
process after numba warm-up calls, kernels called directly (``pymc_partitions.samplers``), CPU
time from ``time.process_time`` around the sampler calls only (recording the traces is not
charged). Prior CRP(1) and Beta(1, 1) throughout (seed 004: alpha = beta0+ = beta0- = 1).

1. **Mixing per unit of CPU** (seed 004 Sec. 3.1, Table 2). Jain & Neal's Bernoulli data:
   n = 100 items in 5 planted blocks of 20, d = 6, 8 or 10 binary features with the
   probabilities of seed 004 Table 1 (for d > 6 its last column repeated). For each data set:
   S = 8 chains start from one block and run 50 Gibbs sweeps (the shared initialisation, as in
   the paper); from those states every method runs T iterations, one iteration = one move
   (none for Gibbs) + one Gibbs sweep:

   * Gibbs: a collapsed Gibbs sweep only;
   * SM: Jain-Neal restricted-Gibbs split-merge, L = 5 intermediate scans (seed 004's setting);
   * SAMS (Dahl 2003) and PGSM (20 particles, two uniform anchors, annealed): the package's
     other split-merge kernels;
   * ARM, exact alternating scheme (``samplers.arm.alternating_roles``, what ``pmp.ARM``'s default
     mode does): at iteration t the even or the odd chains are active; each active chain draws two
     different passive chains (its own generator, as the step does) and uses their current states
     as references; passive chains make no ARM move. "ARM" makes 1 move per active iteration
     (``pmp.ARM(moves=1)``: a move every other iteration), "ARM x2" 2 (``moves=2``: one move per
     iteration on average, the paper's budget). Seed 004's own scheme (references from a window
     of past states, the chain's current state included) is biased at finite t and not run.

   Recorded after every iteration: the largest block's share of the items (the first element of
   seed 004's trace plot) and the co-clustering indicators of 15 items (3 drawn from each planted
   block: 105 pairs). Integrated autocorrelation time (IACT) per chain by Sokal's adaptive window
   (tau = 1 + 2 sum_{t <= M} rho(t), M the smallest lag with M >= 5 tau(M); rho from the FFT of
   the whole trace): of the share, and the largest over the pairs whose indicator is not constant
   in that chain (seed 004: "the average of the maximum"). Reported: mean ± sd over chains x data
   sets. Cost: CPU seconds per iteration, and the paper's "normalised iterations", T x (CPU of the
   whole run) / (CPU of its Gibbs sweeps). "IACT x cost" = IACT x CPU per iteration: CPU seconds
   per effective sample, given as a ratio to Gibbs's (< 1: better than Gibbs).
2. **Cost of one ARM move** in Gibbs sweeps of the same model, n = 100 and n = 1000 (the same
   generator, blocks of n/5; n = 10 for the fixed cost of a call), d = 6 (and 10 in the full
   run): median (and mean) CPU per call over the moves of an
   alternating ARM population of 8 chains (a) right after the 50-sweep initialisation and (b)
   after a burn-in of ARM + Gibbs iterations, and the other kernels' moves at (b).
3. **Networks** (seed 004 Sec. 3.2-3.6, Tables 3-5, Fig. 6a), the collapsed Bernoulli
   blockmodel of ``pmp.BetaBernoulliNetwork`` (a = b = 1, CRP(1), undirected): Zachary's karate
   club (n = 34, ``pmp.datasets.load_karate``) and planted partitions (n = 200 with 4 blocks,
   n = 1000 with 5; within-block edge probability 6x the between-block one, mean degree ~10).
   The same drivers: S = 8 chains from one block after 50 Gibbs sweeps, then Gibbs, Gibbs + SM
   (Jain-Neal, 5 intermediate scans) and Gibbs + ARM (alternating; plain ARM with ``moves=1``
   and ``moves=2``, and ``pmp.ARM``'s defaults with ``moves=1``), **each given the same CPU budget** (iterations run until the
   population's CPU passes it). Reported: iterations and normalised iterations, acceptance of the
   moves (ARM vs SM: Table 5), the Gelman-Rubin R-hat of the log joint across the 8 chains on the
   second half of the run (Tables 3-4; the paper computes it across 4 restarts, here across the
   chains of one population, weakly dependent for ARM), and the log joint reached. Then ARM's
   acceptance against the number of chains S = 3..8 (Fig. 6a; the exact alternating scheme needs
   two passive chains, so S >= 3), and the CPU of one network Gibbs node move (a sweep / n) at
   n = 1000 and 10^4 with K = 5, 20 and 50 planted blocks, started at the planted partition: the
   cached kernel against the O(degree + K^2) reference, same random numbers, one process.
3b. **R-hat across restarts** (seed 004 Tables 3-4 and Fig. 6a as the paper computes them): karate
   and the planted partition of n = 200; the same methods, each run as 4 independent restarts
   (populations of S = 8 chains, each from one block after 50 Gibbs sweeps of its own, or from
   ``pm.sample``'s dispersed start) to the same CPU budget; R-hat of the log joint for each chain index across
   the 4 restarts, second half of the iterations made within 1/4, 1/2 and all of the budget:
   mean ± sd over the chain indices; the chains at split-merge's log-joint level (within 5 nats)
   and the log joint's bulk ESS per CPU second (issue 20's ARM target). Then ARM with S = 4, 8, 16 chains (a fixed number of
   iterations, 4 restarts each) and SM with S = 8 beside it (Fig. 6a).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numba
import numpy as np

import pymc_partitions as pmp
from pymc_partitions._numeric import draw_seed
from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.priors import CRP
from pymc_partitions.samplers.arm import ARMKernel, alternating_roles
from pymc_partitions.samplers.gibbs import GibbsKernel
from pymc_partitions.samplers.jain_neal import JainNealKernel
from pymc_partitions.samplers.pgsm import PGSMKernel
from pymc_partitions.samplers.network import _network_gibbs_sweeps, network_offsets
from pymc_partitions.samplers.sams import SAMSKernel

PRIOR = CRP(1.0)
S = 8  # chains per data set (seed 004)
INIT_SWEEPS = 50  # seed 004 Sec. 3: 50 Gibbs iterations before any method starts
PER_BLOCK = 3  # items drawn per planted block for the co-clustering indicators
# seed 004 Table 1: p(A_ij = 1 | z_j = k), k = 1..5, features 1..6
TABLE1 = np.array([[.95, .95, .95, .95, .95, .95],
                   [.05, .05, .05, .05, .95, .95],
                   [.95, .05, .05, .95, .95, .95],
                   [.05, .05, .05, .05, .05, .05],
                   [.95, .95, .95, .95, .05, .05]])
# seed 004 Table 2 (20 data sets, S = 8, T = 2000): IACT of the trace and of the indicators, and
# normalised iterations, as "mean(spread)" with the spread in units of the last digit
PAPER = {6: {"Gibbs": ("116.5(939)", "91.6(889)", "2000"), "SM": ("27.8(122)", "23.2(103)", "6741(468)"),
             "ARM": ("14.9(77)", "13.6(71)", "6712(47)")},
         8: {"Gibbs": ("165.4(1656)", "131.3(1359)", "2000"), "SM": ("27.9(149)", "26.4(149)", "6855(482)"),
             "ARM": ("8.5(50)", "9.2(49)", "6731(59)")},
         10: {"Gibbs": ("88.9(1374)", "99.3(1327)", "2000"), "SM": ("19.3(171)", "30.4(254)", "7503(185)"),
              "ARM": ("10.8(125)", "14.7(140)", "6705(44)")}}
# ARM variants: (moves per active iteration, ARMKernel options). "plain" is the paper's move (the
# references as given); without the suffix, pmp.ARM's defaults (synthetic and pair-focused references)
PLAIN = dict(synthetic=0.0, focus=0.0)
ARM_VARIANTS = {"ARM plain": (1, PLAIN), "ARM x2 plain": (2, PLAIN), "ARM": (1, {}), "ARM x2": (2, {})}
METHODS = ["Gibbs", "SM", "SAMS", "PGSM", "ARM plain", "ARM x2 plain", "ARM", "ARM x2"]
PAPER_NAME = {"Gibbs": "Gibbs", "SM": "SM", "ARM x2 plain": "ARM"}  # the paper's rows (one move per iteration)

SETTINGS = {
    "full": dict(d=(6, 8, 10), datasets=8, T=2000, speed_n=(10, 100, 1000), speed_d=(6, 10), speed_burn=200,
                 speed_rounds=60, net_budget=(4.0, 15.0, 40.0), net_s_iters=300, net_cost=((1000, 20), (10_000, 5)),
                 net_restarts=4, net_restart_budget=(3.0, 8.0), net_restart_iters=400),
    "quick": dict(d=(6, 8, 10), datasets=1, T=1000, speed_n=(10, 100, 1000), speed_d=(6,), speed_burn=60,
                  speed_rounds=20, net_budget=(1.0, 3.0, 8.0), net_s_iters=100, net_cost=((1000, 5), (10_000, 2)),
                  net_restarts=4, net_restart_budget=(0.5, 1.5), net_restart_iters=100),
}


# ----------------------------------------------------------------------------- data


class Problem:
    """A data set for the drivers: its FamilyPack, n, planted labels and a title."""

    def __init__(self, pack, truth, title):
        self.pack, self.truth, self.title = pack, truth, title
        self.n = len(truth)


def bernoulli_problem(n, d, seed):
    """Jain & Neal's data: 5 planted blocks of n/5 items, features drawn with Table 1's probabilities."""
    p = np.concatenate([TABLE1, np.repeat(TABLE1[:, -1:], d - 6, axis=1)], axis=1)
    z = np.repeat(np.arange(5), n // 5)
    x = (np.random.default_rng(seed).random((n, d)) < p[z]).astype(np.float64)
    pack = FamilyPack.build([(kernels.BETA_BERNOULLI, x, kernels.beta_bernoulli_hyper(1.0, 1.0, d))])
    return Problem(pack, z, f"Bernoulli mixture, n = {n}, d = {d}")


def network_pack(edges, n):
    from pymc_partitions.families.network import as_edges, network_hyper  # noqa: PLC0415

    edges = as_edges(edges, n)
    return FamilyPack.build([(kernels.NETWORK, np.zeros((n, 1)), network_hyper(1.0, 1.0, edges, n, False))]), edges


def planted_edges(n, k, degree, ratio, seed):
    """Undirected planted partition: k blocks of n/k nodes, edge probability ``ratio`` times higher
    inside blocks, mean degree ``degree``; edges drawn per block pair (binomial count, uniform
    pairs, repeats dropped: O(edges) memory at any n)."""
    rng = np.random.default_rng(seed)
    b = n // k
    z = np.repeat(np.arange(k), b)
    p_out = degree / ((b - 1) * ratio + (n - b))
    p_in = ratio * p_out
    rows = []
    for u in range(k):
        for v in range(u, k):
            pairs = b * (b - 1) // 2 if u == v else b * b
            m = rng.binomial(pairs, p_in if u == v else p_out)
            i = u * b + rng.integers(0, b, 2 * m)
            j = v * b + rng.integers(0, b, 2 * m)
            e = np.stack([np.minimum(i, j), np.maximum(i, j)], axis=1)
            e = np.unique(e[e[:, 0] != e[:, 1]], axis=0)
            rows.append(e[rng.permutation(len(e))[:m]])
    return np.concatenate(rows), z


def network_problems(quick=False):
    """Karate club and planted partitions (n = 200, 4 blocks; n = 1000, 5 blocks; mean degree ~10)."""
    out = []
    n = 34
    pack, edges = network_pack(pmp.datasets.load_karate(), n)
    out.append(Problem(pack, pmp.datasets.load_karate_factions(), f"karate club, n = {n}, {len(edges)} edges"))
    for n, k in ((200, 4), (1000, 5)):
        e, z = planted_edges(n, k, 10.0, 6.0, n)
        pack, edges = network_pack(e, n)
        out.append(Problem(pack, z, f"planted partition, n = {n}, {k} blocks, {len(edges)} edges "
                                    f"(mean degree {2 * len(edges) / n:.1f})"))
    return out


# ----------------------------------------------------------------------------- drivers


def kernel_args(problem):
    return problem.pack, PRIOR.code, PRIOR.kernel_params()


def initial_states(problem, seed, chains=S):
    """S chains from one block after INIT_SWEEPS Gibbs sweeps each (shared by every method)."""
    gibbs = GibbsKernel(*kernel_args(problem))
    states = []
    for c in range(chains):
        rng = np.random.default_rng([seed, c])
        labels = np.zeros(problem.n, np.int64)
        for _ in range(INIT_SWEEPS):
            labels = gibbs.step(labels, rng)[0]
        states.append(labels)
    return states


def make_mover(method, problem):
    args = kernel_args(problem)
    if method in ARM_VARIANTS:
        return ARMKernel(*args, **ARM_VARIANTS[method][1])
    return {"Gibbs": lambda: None, "SM": lambda: JainNealKernel(*args, intermediate_scans=5),
            "SAMS": lambda: SAMSKernel(*args), "PGSM": lambda: PGSMKernel(*args)}[method]()


def changed(info):
    """Did the move change the state (accepted, or for PGSM: not a keep)?"""
    if "accepted" in info:
        return bool(info["accepted"])
    return info["move"] != "keep"


class Population:
    """S chains of one method; ``iterate`` makes one iteration (moves, then a Gibbs sweep per chain)
    and keeps per-chain CPU seconds of moves and sweeps, moves tried / changing the state / skipped."""

    def __init__(self, method, problem, states, seed):
        self.method, self.problem = method, problem
        self.states = [s.copy() for s in states]
        self.rngs = [np.random.default_rng([seed, 1000 + c]) for c in range(len(states))]
        self.gibbs = GibbsKernel(*kernel_args(problem))
        self.mover = make_mover(method, problem)
        self.arm_moves = ARM_VARIANTS[method][0] if method in ARM_VARIANTS else 0
        self.move_cpu = np.zeros(len(states))
        self.sweep_cpu = np.zeros(len(states))
        self.lj = np.full(len(states), np.nan)  # log joint after the last sweep
        self.tried = self.changed = self.skipped = 0
        self.t = 0

    def _arm(self, move_times=None):
        active, passive = alternating_roles(len(self.states), self.t)
        for c in active:
            c0 = time.process_time()
            for _ in range(self.arm_moves):
                a, b = self.rngs[c].choice(passive, size=2, replace=False)
                m0 = time.process_time()
                self.states[c], info = self.mover.move(self.states[c], (self.states[a], self.states[b]),
                                                       draw_seed(self.rngs[c]))
                if move_times is not None:
                    move_times.append(time.process_time() - m0)
                self.tried += 1
                self.skipped += info["skipped"]
                self.changed += changed(info)
            self.move_cpu[c] += time.process_time() - c0

    def iterate(self, move_times=None, sweep_times=None):
        if self.arm_moves:
            self._arm(move_times)
        elif self.mover is not None:
            for c, rng in enumerate(self.rngs):
                c0 = time.process_time()
                self.states[c], info = self.mover.step(self.states[c], rng)
                dt = time.process_time() - c0
                self.move_cpu[c] += dt
                if move_times is not None:
                    move_times.append(dt)
                self.tried += 1
                self.changed += changed(info)
        for c, rng in enumerate(self.rngs):
            c0 = time.process_time()
            self.states[c], self.lj[c] = self.gibbs.step(self.states[c], rng)
            dt = time.process_time() - c0
            self.sweep_cpu[c] += dt
            if sweep_times is not None:
                sweep_times.append(dt)
        self.t += 1


# ----------------------------------------------------------------------------- IACT


def iact(x, c=5.0):
    """Sokal's adaptive-window integrated autocorrelation time of a scalar trace; NaN if constant."""
    x = np.asarray(x, float)
    x = x - x.mean()
    m = len(x)
    f = np.fft.rfft(x, 2 * m)
    acov = np.fft.irfft(f * np.conj(f))[:m]
    if acov[0] <= 1e-12 * m:
        return np.nan
    rho = acov / acov[0]
    taus = 2.0 * np.cumsum(rho) - 1.0  # tau(M) = 1 + 2 sum_{t=1..M} rho(t)
    ok = np.flatnonzero(np.arange(m) >= c * taus)
    return float(taus[ok[0]] if len(ok) else taus[-1])


def chain_iacts(shares, picked):
    """Per chain: (IACT of the largest-block share, max IACT over the non-constant pair indicators,
    number of constant pairs)."""
    out = []
    k = picked.shape[2]
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    for c in range(shares.shape[1]):
        lab = picked[:, c, :]
        taus = [iact(lab[:, a] == lab[:, b]) for a, b in pairs]
        finite = [t for t in taus if np.isfinite(t)]
        out.append((iact(shares[:, c]), max(finite) if finite else np.nan, len(pairs) - len(finite)))
    return out


# ----------------------------------------------------------------------------- 1. Table 2


def run_method(method, problem, states, T, items, seed):
    pop = Population(method, problem, states, seed)
    shares = np.empty((T, S))
    picked = np.empty((T, S, len(items)), np.int64)
    for t in range(T):
        pop.iterate()
        for c, labels in enumerate(pop.states):
            shares[t, c] = np.bincount(labels).max() / problem.n
            picked[t, c] = labels[items]
    total, sweeps = pop.move_cpu + pop.sweep_cpu, pop.sweep_cpu
    return dict(iacts=chain_iacts(shares, picked), cpu_iter=total / T, norm_iter=T * total.sum() / sweeps.sum(),
                tried=pop.tried, changed=pop.changed, skipped=pop.skipped,
                k_end=np.mean([s.max() + 1 for s in pop.states]))


def ms(v, digits=1):
    v = np.asarray(v, float)
    v = v[np.isfinite(v)]
    if not len(v):
        return "-"
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.{digits}f}"


def table2(cfg):
    print(f"\n## 1. Seed 004 Table 2 at reduced scale: {cfg['datasets']} data set(s) per d, S = {S} chains, "
          f"T = {cfg['T']} iterations (paper: 20 data sets, T = 2000)\n")
    summary = {}
    for d in cfg["d"]:
        res = {m: [] for m in METHODS}
        for ds in range(cfg["datasets"]):
            seed = 1000 * d + ds
            problem = bernoulli_problem(100, d, seed)
            pick_rng = np.random.default_rng(seed + 1)
            items = np.concatenate([pick_rng.choice(np.flatnonzero(problem.truth == k), PER_BLOCK, replace=False)
                                    for k in range(5)])
            states = initial_states(problem, seed)
            for m in METHODS:
                res[m].append(run_method(m, problem, states, cfg["T"], items, seed))
        summary[d] = res
        print_table2(d, res, cfg)
    return summary


def print_table2(d, res, cfg):
    print(f"\n### Example {(6, 8, 10).index(d) + 1 if d in (6, 8, 10) else '-'}: d = {d}\n")
    print(f"| method | IACT trace | IACT indicator (max over pairs) | CPU µs / iteration | Gibbs sweeps / iteration "
          f"(normalised iterations / T) | IACT x cost vs Gibbs: trace | indicator | moves changing the state "
          f"| constant pairs | K at end | paper: trace | indicator | normalised iterations (/ 2000) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    base = None
    for m in METHODS:
        runs = res[m]
        tr = np.array([x[0] for r in runs for x in r["iacts"]])
        ind = np.array([x[1] for r in runs for x in r["iacts"]])
        const = np.mean([x[2] for r in runs for x in r["iacts"]])
        cpu = np.concatenate([r["cpu_iter"] for r in runs])
        cost_tr = np.nanmean(tr) * cpu.mean()
        cost_ind = np.nanmean(ind) * cpu.mean()
        if base is None:
            base = (cost_tr, cost_ind)
        tried = sum(r["tried"] for r in runs)
        chg = f"{sum(r['changed'] for r in runs) / tried:.1%}" if tried else ""
        skipped = sum(r["skipped"] for r in runs)
        if skipped:
            chg += f" ({skipped / tried:.1%} skipped)"
        paper = PAPER.get(d, {}).get(PAPER_NAME.get(m, ""), ("", "", ""))
        if paper[2]:
            paper = paper[:2] + (f"{paper[2]} ({float(paper[2].split('(')[0]) / 2000:.2f})",)
        print(f"| {m} | {ms(tr)} | {ms(ind)} | {cpu.mean() * 1e6:.0f} | {ms([r['norm_iter'] / cfg['T'] for r in runs], 2)} "
              f"| {cost_tr / base[0]:.2f} | {cost_ind / base[1]:.2f} | {chg} | {const:.0f} / 105 "
              f"| {np.mean([r['k_end'] for r in runs]):.1f} | {paper[0]} | {paper[1]} | {paper[2]} |")


# ----------------------------------------------------------------------------- 2. cost of a move


def speed(cfg):
    print("\n## 2. Cost of one move in Gibbs sweeps of the same model (CPU, process_time per call)\n")
    print("Seed 004: ARM \"about three times more expensive than a Gibbs sweep\" (Sec. 3.4); its Table 2 gives "
          "~6700 normalised iterations for 2000 iterations of ARM + Gibbs and ~6700-7500 for SM + Gibbs, i.e. one "
          "move ~2.4 sweeps (ARM) and ~2.4-2.8 sweeps (SM), at n = 100. The paper gives no figure for a mixture "
          "at n = 1000. Targets: an ARM move <= 3 Gibbs sweeps (issue 12); with synthetic and focused "
          "references (pmp.ARM's defaults) <= ~1.5x the plain move (issue 20). n = 10 shows the fixed cost of a "
          "call (Python wrapper, checks, random numbers), which is a large share at n = 100. Each ARM variant "
          "runs its own population from the same initial states.\n")
    print("| n | d | when | kernel | calls | median µs | mean µs | median / Gibbs median | mean / Gibbs mean "
          "| moves changing the state |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in cfg["speed_n"]:
        for d in cfg["speed_d"]:
            problem = bernoulli_problem(n, d, 7 * n + d)
            states = initial_states(problem, n + d)
            rounds = cfg["speed_rounds"]
            pops = {v: Population(v, problem, states, 5) for v in ("ARM plain", "ARM")}
            for when in ("after init", f"after {cfg['speed_burn']} its"):
                rows = []
                for variant, pop in pops.items():
                    if when != "after init":
                        for _ in range(cfg["speed_burn"] - pop.t):
                            pop.iterate()
                    moves, sweeps = [], []
                    tried, chg = pop.tried, pop.changed
                    for _ in range(rounds):
                        pop.iterate(moves, sweeps)
                    rows.append((f"{variant} move", moves, sweeps, (pop.changed - chg) / max(1, pop.tried - tried)))
                    rows.append(("Gibbs sweep", sweeps, sweeps, None))
                if when != "after init":  # the other kernels' moves on the same states
                    for m in ("SM", "SAMS", "PGSM"):
                        other = Population(m, problem, pops["ARM plain"].states, 11)
                        mt, st = [], []
                        for _ in range(max(3, rounds // 4)):
                            other.iterate(mt, st)
                        rows.append((f"{m} move", mt, st, other.changed / other.tried))
                for name, t, sw, acc in rows:
                    t, g_med, g_mean = np.asarray(t), np.median(sw), np.mean(sw)
                    print(f"| {n} | {d} | {when} | {name} | {len(t)} | {np.median(t) * 1e6:.0f} | {t.mean() * 1e6:.0f} "
                          f"| {np.median(t) / g_med:.2f} | {t.mean() / g_mean:.2f} | {'' if acc is None else f'{acc:.1%}'} |")


# ----------------------------------------------------------------------------- 3. networks


def rhat(traces):
    """Gelman-Rubin potential scale reduction of (chains, draws) traces (not split)."""
    x = np.asarray(traces, float)
    m = x.shape[1]
    w = x.var(axis=1, ddof=1).mean()
    b = m * x.mean(axis=1).var(ddof=1)
    return float(np.sqrt(((m - 1) / m * w + b / m) / w)) if w > 0 else np.inf


# seed 004 Table 5 (acceptance x 100, SM vs ARM) and Table 4 (R-hat of the log joint, 1000
# iterations, S = 8, 4 restarts: Gibbs, SM, ARM) on its downsampled real networks
PAPER_NET = "NIPS 1: SM 0.48, ARM 19.41 (R-hat 24.88 / 2.43 / 1.09); Hagmann 0.25: 0.14, 13.56 (2.86 / 1.99 / 1.08); " \
            "USAir 0.8: 0.04, 4.10 (2.32 / 1.94 / 1.01); Caltech 0.7: 0.09, 6.82 (20.58 / 3.41 / 1.11)"
NET_METHODS = {"Gibbs": "Gibbs", "Gibbs+SM": "SM", "Gibbs+ARM plain": "ARM plain", "Gibbs+ARM x2 plain": "ARM x2 plain",
               "Gibbs+ARM": "ARM"}


def run_budget(method, problem, states, budget, seed, iterations=None):
    """Iterations until the population's CPU passes ``budget`` seconds (or exactly ``iterations``):
    (population, log joint traces (chains, iterations), the population's CPU after each iteration)."""
    pop = Population(method, problem, states, seed)
    lj, cpu = [], []
    while (pop.move_cpu.sum() + pop.sweep_cpu.sum() < budget) if iterations is None else pop.t < iterations:
        pop.iterate()
        lj.append(pop.lj.copy())
        cpu.append(pop.move_cpu.sum() + pop.sweep_cpu.sum())
    return pop, np.array(lj).T, np.array(cpu)


def rhat_across_restarts(runs, cpu_limit=None):
    """Seed 004's R-hat (Tables 3-4): for each chain index s, R-hat of the log joint across the
    restarts' chain s, on the second half of the iterations made within ``cpu_limit`` CPU seconds
    (all if None; the restarts cut to a common length); returns (per-chain R-hats, iterations)."""
    ends = [len(cpu) if cpu_limit is None else int(np.searchsorted(cpu, cpu_limit, side="right")) for _, cpu in runs]
    t = min(ends)
    if t < 4:
        return np.full(runs[0][0].shape[0], np.nan), t
    return np.array([rhat([lj[s, t // 2:t] for lj, _ in runs]) for s in range(runs[0][0].shape[0])]), t


def node_move_cost(n, k, sweeps):
    """CPU µs per node move of a network Gibbs sweep on a planted partition (started at the truth,
    one warm-up sweep): the cached kernel (what ``GibbsKernel`` runs) and the O(degree + K^2)
    reference (every pair term recomputed per candidate block, ``cached=False``), same random
    numbers, sweeps alternating between the two in one process. Returns (µs cached, µs reference,
    mean K, mean degree, whether both gave the same partitions)."""
    e, z = planted_edges(n, k, 10.0, 6.0, 3 * n + k)
    pack, edges = network_pack(e, n)
    gibbs = GibbsKernel(pack, PRIOR.code, PRIOR.kernel_params())
    rng = np.random.default_rng(k)
    labels = gibbs.step(z, rng)[0]
    args = (PRIOR.code, np.asarray(PRIOR.kernel_params(), np.float64), pack.codes, pack.dims, pack.data_off,
            pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width, network_offsets(pack))
    times = {True: [], False: []}
    ks, same = [], True
    for _ in range(sweeps):
        order, u = rng.permutation(n)[None], rng.random((1, n))
        out = {}
        for cached in (True, False):
            c0 = time.process_time()
            out[cached] = _network_gibbs_sweeps(labels, order, u, *args, cached)[0]
            times[cached].append(time.process_time() - c0)
        same &= bool(np.array_equal(out[True], out[False]))
        labels = out[True]
        ks.append(labels.max() + 1)
    return (np.median(times[True]) / n * 1e6, np.median(times[False]) / n * 1e6, np.mean(ks),
            2 * len(edges) / n, same)


def node_move_table(cfg):
    print("\nCost of one network Gibbs node move (CPU per sweep / n, median over sweeps; mean degree ~10): the "
          "cached kernel, O(degree + K x touched blocks) per move, against the O(degree + K^2) reference, same "
          "random numbers, in one process:\n")
    print("| n | planted K | K during the sweeps | mean degree | µs per node move | reference µs | speed-up "
          "| same draws |")
    print("|---|---|---|---|---|---|---|---|")
    for n, sweeps in cfg["net_cost"]:
        for k in (5, 20, 50):
            us, ref, kk, deg, same = node_move_cost(n, k, sweeps)
            print(f"| {n} | {k} | {kk:.1f} | {deg:.1f} | {us:.2f} | {ref:.2f} | {ref / us:.1f}x | {same} |")


def networks(cfg):
    print("\n## 3. Networks (seed 004 Sec. 3.2-3.6: karate, planted partitions, Tables 3-5, Fig. 6a)\n")
    c_start = time.process_time()
    problems = network_problems()
    # warm-up (compile) on karate, not timed
    pop_w = {m: Population(m, problems[0], [np.zeros(34, np.int64)] * S, 0) for m in NET_METHODS.values()}
    for pop in pop_w.values():
        for _ in range(3):
            pop.iterate()
    budgets = cfg["net_budget"]
    print(f"Same CPU budget per method and problem ({', '.join(f'{b:g} s' for b in budgets)}), S = {S} chains "
          "from one block after 50 Gibbs sweeps; R-hat of the log joint on the second half of each run. "
          f"Seed 004 (acceptance x 100 SM / ARM, Table 5, and R-hat Gibbs / SM / ARM, Table 4): {PAPER_NET}.\n")
    print("| problem | method | CPU s | iterations | normalised its | moves accepted | R-hat log joint "
          "| mean log joint (2nd half) | K at end |")
    print("|---|---|---|---|---|---|---|---|---|")
    for problem, budget in zip(problems, budgets):
        states = initial_states(problem, problem.n)
        for name, method in NET_METHODS.items():
            pop, lj, _ = run_budget(method, problem, states, budget, 3)
            half = lj[:, lj.shape[1] // 2:]
            total, sweeps = pop.move_cpu.sum() + pop.sweep_cpu.sum(), pop.sweep_cpu.sum()
            acc = "" if method == "Gibbs" else f"{pop.changed / max(1, pop.tried):.2%} of {pop.tried}"
            print(f"| {problem.title} | {name} | {total:.1f} | {pop.t} | {pop.t * total / sweeps:.0f} | {acc} "
                  f"| {rhat(half):.3f} | {half.mean():.1f} | {np.mean([s.max() + 1 for s in pop.states]):.1f} |")
    print("\nARM acceptance against the number of chains (Fig. 6a; alternating scheme, pmp.ARM's defaults, "
          f"{cfg['net_s_iters']} iterations after the 50-sweep initialisation):\n")
    print("| problem | S | ARM moves | accepted | R-hat log joint (2nd half) |")
    print("|---|---|---|---|---|")
    for problem in problems[:2]:
        for chains in (3, 4, 6, 8):
            states = initial_states(problem, problem.n + chains, chains)
            pop = Population("ARM", problem, states, 5)
            lj = []
            for _ in range(cfg["net_s_iters"]):
                pop.iterate()
                lj.append(pop.lj.copy())
            half = np.array(lj).T[:, len(lj) // 2:]
            print(f"| {problem.title.split(',')[0]}, n = {problem.n} | {chains} | {pop.tried} "
                  f"| {pop.changed / max(1, pop.tried):.2%} | {rhat(half):.3f} |")
    node_move_table(cfg)
    print(f"\nSection 3: {time.process_time() - c_start:.0f} s CPU.")


LEVEL_NATS = 5.0  # a chain "reaches the split-merge level" when its mean log joint is within this of SM's


def dispersed_states(problem, seed, chains=S):
    """pm.sample's default start (``initval="dispersed"``): each chain from its own uniformly random
    labels on min(n, DISPERSED_BLOCKS) values, no sweeps before the methods start."""
    from pymc_partitions.pymc.distributions import DISPERSED_BLOCKS  # noqa: PLC0415 (imports PyMC)

    blocks = min(problem.n, DISPERSED_BLOCKS)
    return [np.random.default_rng([seed, c, 20]).integers(0, blocks, problem.n).astype(np.int64)
            for c in range(chains)]


SEED_OFFSET = [0]  # --seed: another set of restarts (start states and random numbers) in section 3b
START_KINDS = {"one block + 50 sweeps": initial_states, "dispersed": dispersed_states}


def ess_bulk(traces):
    """Rank-normalised bulk ESS (ArviZ) of (chains, draws) traces."""
    import arviz as az  # noqa: PLC0415

    return float(az.ess(np.asarray(traces, float), method="bulk"))


def restart_runs(method, problem, start, n_restarts, budget, chains=S, iterations=None, seed=100):
    """``n_restarts`` independent populations (own start states, own random numbers): a list of
    (log joint traces (chains, iterations), CPU after each iteration), moves tried and accepted."""
    runs, tried, chg, ks = [], 0, 0, []
    for r in range(n_restarts):
        r_seed = r + 1000 * SEED_OFFSET[0]
        states = START_KINDS[start](problem, 7919 * r_seed + problem.n + (0 if iterations is None else chains), chains)
        pop, lj, cpu = run_budget(method, problem, states, budget, seed + r_seed, iterations)
        runs.append((lj, cpu))
        tried, chg = tried + pop.tried, chg + pop.changed
        ks += [s.max() + 1 for s in pop.states]
    return runs, tried, chg, ks


def second_half(runs, cpu_limit=None):
    """(restarts, chains, draws) log joints of the second half of the iterations made within
    ``cpu_limit`` (all if None; cut to a common length), and the mean CPU of that half."""
    ends = [len(cpu) if cpu_limit is None else int(np.searchsorted(cpu, cpu_limit, side="right")) for _, cpu in runs]
    t = min(ends)
    half = np.stack([lj[:, t // 2:t] for lj, _ in runs])
    return half, float(np.mean([cpu[t - 1] - cpu[t // 2 - 1] for _, cpu in runs]))


def restarts(cfg):
    """Seed 004 Tables 3-4 and Fig. 6a with restarts: R-hat between independent populations, from
    the paper's start and from dispersed starts; issue 20's targets on the planted partition."""
    print("\n## 3b. Networks: R-hat of the log joint across restarts (seed 004 Tables 3-4, Fig. 6a)\n")
    c_start = time.process_time()
    problems = network_problems()[:2]  # karate, planted n = 200
    for m in NET_METHODS.values():  # warm-up (compile), not timed
        pop = Population(m, problems[0], [np.zeros(34, np.int64)] * S, 0)
        for _ in range(3):
            pop.iterate()
    n_restarts, budgets, marks = cfg["net_restarts"], cfg["net_restart_budget"], (0.25, 0.5, 1.0)
    print(f"{n_restarts} restarts per method, problem and start, each a population of S = {S} chains with its "
          "own start states and random numbers, run to the same CPU budget B. Starts: *one block + 50 sweeps* "
          f"(the paper's: each chain from one block, then 50 Gibbs sweeps) and *dispersed* (each chain from "
          "uniformly random labels on min(n, 32) values, pm.sample's default start, no sweeps before). R-hat (not "
          "split) of the log joint for each chain index s across the restarts' chains s, on the second half of "
          f"the iterations made within {', '.join(f'{m:g}' for m in marks)} x B CPU seconds (the restarts cut to a "
          "common length): mean ± sd over the S chain indices, as seed 004 reports it (Table 3: 4 restarts, "
          "S = 8, half burn-in). *Chains at the SM level*: chains (of all restarts) whose mean log joint over the "
          f"second half is within {LEVEL_NATS:g} nats of Gibbs+SM's mean from the same start. *ESS / CPU s*: "
          "rank-normalised bulk ESS of the log joint (ArviZ) over one restart's S chains on the second half, "
          "divided by that half's CPU seconds, mean over restarts (ESS all: over all restarts' chains at once, "
          "which also counts disagreement between restarts). Acceptance x 100 SM / ARM and R-hat Gibbs / SM / "
          f"ARM in seed 004 (Tables 4-5): {PAPER_NET}.\n")
    print("| problem | start | method | B (CPU s) | iterations within B | moves accepted | "
          + " | ".join(f"R-hat at {m:g} B" for m in marks)
          + " | mean log joint (2nd half) | chains at the SM level | ESS / CPU s (ESS per restart; ESS all) | K at end |")
    print("|---|---|---|---|---|---|" + "---|" * len(marks) + "---|---|---|---|")
    for problem, budget in zip(problems, budgets):
        for start in cfg.get("starts", START_KINDS):
            sm_level = None
            for name, method in NET_METHODS.items():
                runs, tried, chg, ks = restart_runs(method, problem, start, n_restarts, budget)
                cells = []
                for m in marks:
                    rh, t = rhat_across_restarts(runs, m * budget)
                    cells.append(f"{ms(rh, 2)} ({t} its)")
                half, cpu_half = second_half(runs)
                means = half.mean(axis=2)
                if method == "SM":
                    sm_level = means.mean()
                at_level = "" if sm_level is None else f"{int((means >= sm_level - LEVEL_NATS).sum())} / {means.size}"
                ess_r = [ess_bulk(h) for h in half]
                ess_all = ess_bulk(half.reshape(-1, half.shape[2]))
                acc = "" if method == "Gibbs" else f"{chg / max(1, tried):.2%} of {tried}"
                print(f"| {problem.title.split(',')[0]}, n = {problem.n} | {start} | {name} | {budget:g} | "
                      f"{min(len(c) for _, c in runs)}-{max(len(c) for _, c in runs)} | {acc} | " + " | ".join(cells)
                      + f" | {means.mean():.1f} (chains {means.min():.1f} to {means.max():.1f}) | {at_level} "
                      f"| {np.mean(ess_r) / cpu_half:.0f} ({np.mean(ess_r):.0f}; {ess_all:.0f}) | {np.mean(ks):.1f} |",
                      flush=True)
    iters = cfg["net_restart_iters"]
    if not cfg.get("chains_table", True):
        print(f"\nSection 3b: {time.process_time() - c_start:.0f} s CPU.")
        return
    print(f"\nARM against the number of chains (Fig. 6a): S = 4, 8, 16 chains, {n_restarts} restarts each, "
          f"{iters} iterations of ARM + Gibbs per restart (so CPU grows with S), from the paper's start; R-hat "
          "across restarts per chain index, second half; Jain-Neal SM with S = 8 and the same iterations beside "
          "(the paper's vertical line).\n")
    print("| problem | method | S | CPU s per population | moves accepted | R-hat log joint (mean ± sd over s) "
          "| worst chain index | mean log joint (2nd half; chains min to max) |")
    print("|---|---|---|---|---|---|---|---|")
    start = "one block + 50 sweeps"
    for problem in problems:
        for method, chains in (("ARM x2 plain", 8), ("ARM", 4), ("ARM", 8), ("ARM", 16), ("SM", 8)):
            runs, tried, chg, _ = restart_runs(method, problem, start, n_restarts, np.inf, chains, iters, seed=200)
            rh, _ = rhat_across_restarts(runs)
            half, _ = second_half(runs)
            means = half.mean(axis=2)
            print(f"| {problem.title.split(',')[0]}, n = {problem.n} | {method} | {chains} "
                  f"| {np.mean([c[-1] for _, c in runs]):.1f} | {chg / max(1, tried):.2%} of {tried} | {ms(rh, 3)} "
                  f"| {np.nanmax(rh):.3f} | {means.mean():.1f} ({means.min():.1f} to {means.max():.1f}) |", flush=True)
    print(f"\nSection 3b: {time.process_time() - c_start:.0f} s CPU.")


# ----------------------------------------------------------------------------- main


def warm_up():
    problem = bernoulli_problem(40, 6, 0)
    states = [np.random.default_rng(c).integers(0, 4, problem.n) for c in range(S)]
    for m in METHODS:
        pop = Population(m, problem, states, 0)
        for _ in range(4):
            pop.iterate()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one data set per d, 1000 iterations, less timing")
    ap.add_argument("--only", choices=("table2", "speed", "networks", "netcost", "restarts"),
                    help="run one section (netcost: the network node-move cost table of section 3 alone)")
    ap.add_argument("--datasets", type=int, help="data sets per d in section 1")
    ap.add_argument("--iterations", type=int, help="iterations T in section 1")
    ap.add_argument("--methods", help="comma-separated methods of section 1 (default: " + ",".join(METHODS) + ")")
    ap.add_argument("--synthetic", type=float, help="ARMKernel synthetic probability of the non-plain ARM rows")
    ap.add_argument("--focus", type=float, help="ARMKernel focus probability of the non-plain ARM rows")
    ap.add_argument("--synthetic-scans", type=int, help="ARMKernel synthetic_scans of the non-plain ARM rows")
    ap.add_argument("--starts", help="comma-separated starts of section 3b (default: " + ",".join(START_KINDS) + ")")
    ap.add_argument("--restart-budget", help="section 3b CPU budgets B per population, karate,planted (e.g. 1,4)")
    ap.add_argument("--seed", type=int, default=0, help="section 3b: another set of restarts (0: the default)")
    ap.add_argument("--net-methods", help="comma-separated rows of section 3b (default: " + ",".join(NET_METHODS) + ")")
    ap.add_argument("--no-chains-table", action="store_true", help="skip section 3b's S = 4, 8, 16 table")
    args = ap.parse_args()
    options = {k: v for k, v in (("synthetic", args.synthetic), ("focus", args.focus),
                                 ("synthetic_scans", args.synthetic_scans)) if v is not None}
    for name in ("ARM", "ARM x2"):
        ARM_VARIANTS[name] = (ARM_VARIANTS[name][0], options)
    if args.methods:
        METHODS[:] = [m.strip() for m in args.methods.split(",")]
    cfg = dict(SETTINGS["quick" if args.quick else "full"])
    if args.datasets is not None:
        cfg["datasets"] = args.datasets
    if args.iterations is not None:
        cfg["T"] = args.iterations
    if args.starts:
        cfg["starts"] = [k.strip() for k in args.starts.split(",")]
        unknown = set(cfg["starts"]) - set(START_KINDS)
        if unknown:
            ap.error(f"--starts: unknown {sorted(unknown)}; choose from {list(START_KINDS)}")
    if args.restart_budget:
        cfg["net_restart_budget"] = tuple(float(b) for b in args.restart_budget.split(","))
    cfg["chains_table"] = not args.no_chains_table
    SEED_OFFSET[0] = args.seed
    if args.net_methods:
        keep = [m.strip() for m in args.net_methods.split(",")]
        if set(keep) - set(NET_METHODS):
            ap.error(f"--net-methods: unknown {sorted(set(keep) - set(NET_METHODS))}; choose from {list(NET_METHODS)}")
        for m in list(NET_METHODS):
            if m not in keep:
                del NET_METHODS[m]
    w0, c0 = time.perf_counter(), time.process_time()
    print(f"# bench_arm ({'quick' if args.quick else 'full'}) {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
          f"numba {numba.__version__}, load average at start {os.getloadavg()[0]:.2f}; ARM rows: "
          + "; ".join(f"{k}: moves={v[0]} {v[1] or 'pmp.ARM defaults'}" for k, v in ARM_VARIANTS.items()))
    if args.only == "netcost":
        node_move_cost(200, 5, 1)  # (compile)
        node_move_table(cfg)
    else:
        warm_up()
    if args.only in (None, "table2"):
        table2(cfg)
    if args.only in (None, "speed"):
        speed(cfg)
    if args.only in (None, "networks"):
        networks(cfg)
    if args.only in (None, "restarts"):
        restarts(cfg)
    print(f"\nTotal: {time.perf_counter() - w0:.0f} s wall, {time.process_time() - c0:.0f} s CPU; "
          f"load average at end {os.getloadavg()[0]:.2f}.")


if __name__ == "__main__":
    main()
