#!/usr/bin/env python
"""Benchmarks of the compiled collapsed-Gibbs kernel and of its PyMC step.

    python benchmarks/bench_gibbs.py            # full run (a few minutes)
    python benchmarks/bench_gibbs.py --quick    # smaller n, fewer repeats (about a minute)

Prints tables; never fails on a missed target (benchmarks measure, tests assert).

1. Seconds per Gibbs sweep of ``gibbs_sweeps`` (median and quartiles over repeats), including
   the random numbers of the sweep (a permutation and n uniforms, drawn as
   ``pmp.CollapsedGibbs.step`` draws them), on synthetic mixtures with 20 well-separated
   clusters, started from the true labels after a few burn-in sweeps.
2. The per-draw overhead of ``pm.sample(step=pmp.CollapsedGibbs([z]))`` over the bare kernel,
   split into the step's own Python overhead (``step.step(point)`` in a hand loop) and PyMC's
   loop plus trace storage.
3. Peak memory of one n = 10^5, D = 2 sweep in a fresh subprocess (tracemalloc and VmHWM).
4. A baseline: a numpy-vectorised-per-point Gibbs sweep, as a PyMC user would write it.

Everything is measured in one process after warm-up calls (numba compilation excluded).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import re
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np

K_TRUE = 20  # clusters in the synthetic data
SEP_D2 = 8.0  # grid spacing of the D = 2 cluster means (within-cluster sd ~ 1)
SIGMA0_D2 = 10.0  # prior sd of the cluster means, D = 2
SD_MEANS_HIGHD = 3.0  # sd of the cluster-mean coordinates for D = 50 (pairwise distance ~ 30 sd)
ALPHA = 1.0  # CRP concentration

# (family, D, n) -> target seconds per sweep
TARGETS = {
    ("NormalNormal", 2, 10_000): 5e-3,
    ("NormalNormal", 50, 10_000): 12e-3,
    ("NormalNormal", 2, 100_000): 50e-3,
    ("NIW", 2, 1_000): 1e-3,
}

SETTINGS = {
    "full": dict(
        sweep_cases=[("NormalNormal", 2, [10**3, 10**4, 10**5]), ("NormalNormal", 50, [10**3, 10**4, 10**5]),
                     ("NIW", 2, [10**3, 10**4, 10**5])],
        burn=3, min_reps=7, max_reps=51, budget=8.0,
        overhead_n=[10**3, 10**4], overhead_blocks=3, overhead_budget=6.0, overhead_max_draws=200,
        mem_n=[10**4, 10**5], baseline_reps=15,
    ),
    "quick": dict(
        sweep_cases=[("NormalNormal", 2, [10**3, 10**4]), ("NormalNormal", 50, [10**3]), ("NIW", 2, [10**3])],
        burn=2, min_reps=3, max_reps=15, budget=1.0,
        overhead_n=[10**3], overhead_blocks=1, overhead_budget=1.5, overhead_max_draws=60,
        mem_n=[10**5], baseline_reps=5,
    ),
}


# ----------------------------------------------------------------------------- data and kernel inputs


def make_data(family, n, dim, seed=0):
    """(Y (n, dim), true labels) from a mixture of K_TRUE well-separated clusters."""
    rng = np.random.default_rng(seed)
    if dim == 2:
        gx, gy = np.meshgrid(np.arange(5) - 2.0, np.arange(4) - 1.5)
        means = SEP_D2 * np.column_stack([gx.ravel(), gy.ravel()])[:K_TRUE]
    else:
        means = rng.normal(0.0, SD_MEANS_HIGHD, (K_TRUE, dim))
    z = np.sort(rng.integers(0, K_TRUE, n))  # sorted: canonical labels, all K present for n >= 10^3
    z = np.unique(z, return_inverse=True)[1].astype(np.int64)
    eps = rng.normal(size=(n, dim))
    if family == "NIW":  # a different rotated, anisotropic covariance per cluster
        theta = rng.uniform(0, np.pi, K_TRUE)
        scales = rng.uniform(0.6, 1.2, (K_TRUE, dim))
        rot = np.stack([[[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]] for t in theta])
        chol = rot * scales[:, None, :]
        eps = np.einsum("nij,nj->ni", chol[z], eps)
    perm = rng.permutation(n)  # items in random order
    return np.ascontiguousarray((means[z] + eps)[perm]), np.unique(z[perm], return_inverse=True)[1].astype(np.int64)


def sigma0_for(dim):
    return SIGMA0_D2 if dim == 2 else SD_MEANS_HIGHD


def make_pack(family, Y):
    from pymc_partitions.families.kernels import DIAG_NORMAL, NIW, FamilyPack, diag_normal_hyper, niw_hyper

    dim = Y.shape[1]
    if family == "NormalNormal":
        return FamilyPack.build([(DIAG_NORMAL, Y, diag_normal_hyper(0.0, sigma0_for(dim), 1.0, dim))])
    # the model of the brief: NormalInverseWishart(mu0=0, kappa0=1, nu0=D+2, scale0=I)
    return FamilyPack.build([(NIW, Y, niw_hyper(0.0, 1.0, dim + 2.0, np.eye(dim), dim, Y.shape[0]))])


def draw_randomness(rng, n, sweeps=1):
    """The random numbers of one draw, exactly as ``CollapsedGibbs.step`` draws them."""
    orders = np.empty((sweeps, n), np.int64)
    for s in range(sweeps):
        orders[s] = rng.permutation(n)
    return orders, rng.random((sweeps, n))


def kernel_sweep(labels, pack, prior, rng):
    """One timed unit: random numbers + one compiled sweep."""
    from pymc_partitions.samplers.gibbs import gibbs_sweeps

    orders, uniforms = draw_randomness(rng, labels.shape[0])
    new, _ = gibbs_sweeps(labels, pack, prior.code, prior.kernel_params(), orders, uniforms)
    return new


def warm_up():
    """Compile (or load from numba's cache) everything the timed code calls."""
    import pymc_partitions as pmp

    rng = np.random.default_rng(123)
    for family, dim in [("NormalNormal", 2), ("NormalNormal", 50), ("NIW", 2)]:
        Y, z = make_data(family, 200, dim, seed=1)
        labels = z
        for _ in range(2):
            labels = kernel_sweep(labels, make_pack(family, Y), pmp.CRP(ALPHA), rng)


# ----------------------------------------------------------------------------- helpers


def quartiles(ts):
    q1, med, q3 = np.percentile(np.asarray(ts, float), [25, 50, 75])
    return float(med), float(q1), float(q3)


def fmt_time(s):
    if s is None or not np.isfinite(s):
        return "n/a"
    a = abs(s)
    if a >= 1.0:
        return f"{s:.3g} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if a >= 1e-6:
        return f"{s * 1e6:.3g} us"
    return f"{s * 1e9:.3g} ns"


def table(title, header, rows):
    print(f"\n## {title}\n")
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(header)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    sys.stdout.flush()


def proc_status():
    out = {}
    with open("/proc/self/status") as f:
        for key, val in re.findall(r"^(VmHWM|VmRSS):\s+(\d+) kB", f.read(), re.M):
            out[key] = int(val) * 1024
    return out


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# ----------------------------------------------------------------------------- 1. seconds per sweep


def bench_sweeps(cfg):
    import pymc_partitions as pmp

    prior = pmp.CRP(ALPHA)
    results = {}
    for family, dim, ns in cfg["sweep_cases"]:
        for n in ns:
            Y, z = make_data(family, n, dim, seed=n + dim)
            pack = make_pack(family, Y)
            rng = np.random.default_rng(n)
            labels = z
            for _ in range(cfg["burn"]):
                labels = kernel_sweep(labels, pack, prior, rng)
            gc.collect()
            times, cpu, ks, rng_times = [], [], [], []
            start = time.perf_counter()
            while len(times) < cfg["max_reps"] and (
                len(times) < cfg["min_reps"] or time.perf_counter() - start < cfg["budget"]
            ):
                t0, c0 = time.perf_counter(), time.process_time()
                labels = kernel_sweep(labels, pack, prior, rng)
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
                ks.append(int(labels.max()) + 1)
            for _ in range(min(len(times), 15)):  # the random numbers alone, for their share
                t0 = time.perf_counter()
                draw_randomness(rng, n)
                rng_times.append(time.perf_counter() - t0)
            med, q1, q3 = quartiles(times)
            results[(family, dim, n)] = dict(med=med, q1=q1, q3=q3, reps=len(times), kmin=min(ks), kmax=max(ks),
                                             rng=float(np.median(rng_times)), cpu=float(np.median(cpu)))
    rows = []
    for (family, dim, n), r in results.items():
        target = TARGETS.get((family, dim, n))
        status = "" if target is None else (
            "met" if r["med"] <= target else f"MISSED x{r['med'] / target:.1f} (CPU x{r['cpu'] / target:.1f})")
        k_ok = "" if 10 <= r["kmin"] and r["kmax"] <= 30 else " (!)"
        rows.append([
            family, dim, f"{n:.0e}".replace("+0", ""), f"{r['kmin']}-{r['kmax']}{k_ok}", fmt_time(r["med"]),
            f"{fmt_time(r['q1'])} - {fmt_time(r['q3'])}", fmt_time(r["cpu"]), r["reps"], fmt_time(r["med"] / n),
            f"{100 * r['rng'] / r['med']:.1f}%", "-" if target is None else f"<= {fmt_time(target)}", status,
        ])
    table("1. Seconds per collapsed Gibbs sweep (kernel + random numbers; wall-clock median over repeats)",
          ["family", "D", "n", "K observed", "median", "IQR", "CPU median", "reps", "per point", "RNG share", "target", "status"],
          rows)
    return results


# ----------------------------------------------------------------------------- 2. pm.sample overhead


def bench_overhead(cfg):
    import pymc as pm

    import pymc_partitions as pmp
    import pymc_partitions.pymc.steps as steps_mod
    from pymc_partitions.pymc.compat import setup_chain
    from pymc_partitions.samplers.gibbs import gibbs_sweeps

    def now():
        return time.perf_counter(), time.process_time()

    def since(t):
        w, c = now()
        return w - t[0], c - t[1]

    def med(pairs):  # (wall median, CPU median)
        a = np.asarray(pairs, float).reshape(-1, 2)
        return float(np.median(a[:, 0])), float(np.median(a[:, 1]))

    rows, results = [], {}
    for n in cfg["overhead_n"]:
        Y, z_true = make_data("NormalNormal", n, 2, seed=7 + n)
        with pm.Model() as model:
            z = pmp.Partition("z", pmp.CRP(ALPHA), n=n, initval=z_true)
            pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=SIGMA0_D2, sigma=1.0, observed=Y)
            step = pmp.CollapsedGibbs([z])
        zname = step.terms.value_name
        point0 = model.initial_point()
        point0[zname] = z_true.copy()

        def sample_per_draw(draws, seed):
            """pm.sample; per-draw times from the callback's time stamps (setup and conversion excluded)."""
            stamps = []
            with model:
                pm.sample(draws=draws, tune=0, chains=1, cores=1, step=step, progressbar=False,
                          compute_convergence_checks=False, random_seed=seed,
                          callback=lambda trace, draw: stamps.append(now()))
            return list(np.diff(np.asarray(stamps), axis=0))

        def step_loop(draws, seed):
            setup_chain(step, np.random.default_rng(seed))
            point, ts = dict(point0), []
            for _ in range(draws):
                t = now()
                point, _ = step.step(point)
                ts.append(since(t))
            return ts

        def kernel_loop(draws, seed):
            rng = np.random.default_rng(seed)
            prior_params, pack = step.terms.kernel_inputs(point0)
            labels, ts = z_true.copy(), []
            for _ in range(draws):
                t = now()
                orders, uniforms = draw_randomness(rng, n)
                labels, _ = gibbs_sweeps(labels, pack, step.terms.prior_code, prior_params, orders, uniforms)
                ts.append(since(t))
            return ts

        def rng_loop(draws, seed):
            rng, ts = np.random.default_rng(seed), []
            for _ in range(draws):
                t = now()
                draw_randomness(rng, n)
                ts.append(since(t))
            return ts

        # warm-up: pytensor compilation, numba, first pm.sample
        sample_per_draw(5, 0)
        step_loop(3, 0)
        sweep = med(kernel_loop(5, 0))[0]
        draws = int(min(cfg["overhead_max_draws"], max(20, cfg["overhead_budget"] / max(sweep, 1e-6) / 3)))

        # (a) with the real kernel: interleaved blocks of pm.sample / step loop / bare kernel
        ts_pm, ts_step, ts_kern = [], [], []
        for b in range(cfg["overhead_blocks"]):
            ts_pm += sample_per_draw(draws, 100 + b)
            ts_step += step_loop(draws, 200 + b)
            ts_kern += kernel_loop(draws, 300 + b)
        kern, stp, pms = med(ts_kern), med(ts_step), med(ts_pm)

        # (b) direct: the same loops with gibbs_sweeps replaced by a no-op (labels unchanged), so the
        # Python overhead is measured without the kernel's run-to-run noise.
        real = steps_mod.gibbs_sweeps
        steps_mod.gibbs_sweeps = lambda labels, *a, **k: (np.asarray(labels), 0.0)
        try:
            nstub = max(300, draws)
            stub_step = med(step_loop(nstub, 400))[0]
            stub_pm = med(sample_per_draw(nstub, 500))[0]
        finally:
            steps_mod.gibbs_sweeps = real
        rng_only = med(rng_loop(nstub, 600))[0]
        step_over = stub_step - rng_only  # step.step minus its random numbers (counted in the kernel time)
        pm_over = stub_pm - rng_only

        # (c) trace storage alone: PyMC 5's NDArray backend recording one point, and a bare memcpy
        rec = float("nan")
        try:
            from pymc.backends.ndarray import NDArray

            trace = NDArray(model=model)
            trace.setup(draws=nstub, chain=0, sampler_vars=step.stats_dtypes)
            stats = [{"n_clusters": K_TRUE, "log_joint": 0.0}]
            tr = []
            for _ in range(nstub):
                t = now()
                trace.record(point0, stats, in_warmup=False)
                tr.append(since(t))
            rec = med(tr)[0]
        except Exception as exc:  # PyMC internals differ across versions
            print(f"[trace.record measurement unavailable: {exc!r}]")
        buf = np.empty((nstub, n), np.int64)  # fresh pages, as a preallocated trace; amortised per draw
        t = now()
        for i in range(nstub):
            buf[i] = point0[zname]
        memcpy = since(t)[0] / nstub

        ref = kern[1]  # percentages relative to the kernel's CPU-time median (robust to other load)
        results[n] = dict(kernel=kern, step=stp, pm=pms, step_over=step_over, pm_over=pm_over, record=rec,
                          memcpy=memcpy, draws=draws)
        lbl = f"{n:.0e}".replace("+0", "")
        pct = lambda x, d=2: f"{100 * x / ref:.{d}f}%"  # noqa: E731
        rows += [
            [lbl, "bare kernel sweep (incl. RNG)", fmt_time(kern[0]), fmt_time(kern[1]), "", "",
             f"{len(ts_kern)} sweeps"],
            [lbl, "step.step(point) loop", fmt_time(stp[0]), fmt_time(stp[1]), f"{100 * (stp[1] - ref) / ref:+.1f}%", "",
             "difference of CPU medians"],
            [lbl, "pm.sample, per draw", fmt_time(pms[0]), fmt_time(pms[1]), f"{100 * (pms[1] - ref) / ref:+.1f}%", "",
             "difference of CPU medians"],
            [lbl, "step overhead (direct, excl. trace)", fmt_time(step_over), "", pct(step_over), "<= 10%",
             "met" if step_over <= 0.1 * ref else "MISSED"],
            [lbl, "pm.sample overhead (direct, incl. trace)", fmt_time(pm_over), "", pct(pm_over), "", ""],
            [lbl, "  of which PyMC loop + trace", fmt_time(pm_over - step_over), "", pct(pm_over - step_over), "", ""],
            [lbl, "  NDArray.record(point) alone", fmt_time(rec), "", pct(rec), "", ""],
            [lbl, "  memcpy of the n-vector alone", fmt_time(memcpy), "", pct(memcpy, 3), "", ""],
        ]
    table("2. Per-draw overhead of pm.sample(step=pmp.CollapsedGibbs([z])) over the bare kernel "
          "(NormalNormal, D=2; % of the kernel's CPU time per sweep)",
          ["n", "measure", "wall per draw", "CPU per draw", "% of sweep", "target", "status"], rows)
    print("\n'direct' rows: the same loops with gibbs_sweeps replaced by a no-op, minus the time of the random\n"
          "numbers (which the kernel row includes); medians of short intervals, so free of the kernel's noise.")
    return results


# ----------------------------------------------------------------------------- 3. memory


def mem_child(n):
    """Run in a fresh interpreter: memory of one n-point D=2 NormalNormal sweep; prints JSON."""
    import pymc_partitions as pmp

    base = proc_status()
    warm_up()
    prior = pmp.CRP(ALPHA)
    Y, z = make_data("NormalNormal", n, 2, seed=n)
    pack = make_pack("NormalNormal", Y)
    rng = np.random.default_rng(0)
    gc.collect()
    before = proc_status()
    reset = reset_peak_rss()
    labels = kernel_sweep(z, pack, prior, rng)
    after = proc_status()
    gc.collect()
    tracemalloc.start()
    labels = kernel_sweep(labels, pack, prior, rng)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps(dict(
        n=n, k=int(labels.max()) + 1, rss_import=base["VmRSS"], rss_before=before["VmRSS"],
        hwm_sweep=after["VmHWM"] if reset else None, rss_growth=(after["VmHWM"] - before["VmRSS"]) if reset else None,
        tracemalloc_peak=peak, maxrss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        data_bytes=Y.nbytes,
    )))


def bench_memory(cfg):
    rows, results = [], {}
    for n in cfg["mem_n"]:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--_mem-child", str(n)],
                             capture_output=True, text=True)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if out.returncode != 0 or not lines:
            print(f"[memory child failed for n={n}]\n{out.stderr[-2000:]}")
            continue
        r = json.loads(lines[-1])
        results[n] = r
        mb = lambda b: "n/a" if b is None else f"{b / 2**20:.1f} MB"  # noqa: E731
        lbl = f"{n:.0e}".replace("+0", "")
        rows.append([
            lbl, r["k"], mb(r["tracemalloc_peak"]), mb(r["rss_growth"]), mb(r["hwm_sweep"]), mb(r["maxrss"]),
            f"{8 * n * n / 2**30:.3g} GB", "< 1 GB", "met" if r["maxrss"] < 2**30 else "MISSED",
        ])
    table("3. Memory of one NormalNormal D=2 sweep (fresh subprocess)",
          ["n", "K", "tracemalloc peak (numpy)", "RSS growth in sweep", "peak RSS during sweep",
           "process peak (ru_maxrss)", "an n x n float64 would be", "target", "status"], rows)
    if len(results) >= 2:
        (n1, r1), (n2, r2) = sorted(results.items())[:2]
        print(f"\ntracemalloc peak grows x{r2['tracemalloc_peak'] / max(r1['tracemalloc_peak'], 1):.1f} for n x{n2 // n1}"
              " (linear; an n x n allocation would grow x" + f"{(n2 // n1) ** 2}).")
    imported = ", ".join(f"{r['rss_import'] / 2**20:.0f} MB" for r in results.values())
    print(f"Peak RSS includes the interpreter with PyMC imported ({imported} after import).")
    return results


# ----------------------------------------------------------------------------- 4. numpy baseline


def numpy_gibbs_sweep(labels, Y, sigma0, sigma, alpha, order, uniforms):
    """A straightforward collapsed Gibbs sweep (CRP + diagonal Normal-Normal, mu0 = 0), vectorised
    over clusters with numpy for each point: what a PyMC user would write by hand."""
    n, dim = Y.shape
    z = labels.copy()
    k = int(z.max()) + 1
    counts = np.zeros(n + 1)
    sums = np.zeros((n + 1, dim))
    counts[:k] = np.bincount(z, minlength=k)
    np.add.at(sums, z, Y)
    inv_s02, s2 = 1.0 / sigma0**2, sigma**2
    new_var = sigma0**2 + s2
    # log weight of a new cluster, up to the -D/2 log(2 pi) shared by all candidates
    log_new_const = math.log(alpha) - 0.5 * dim * math.log(new_var)
    for t in range(n):
        i = order[t]
        x = Y[i]
        c = z[i]
        counts[c] -= 1
        sums[c] -= x
        if counts[c] == 0:  # drop the empty cluster: move the last one into its place
            last = k - 1
            if c != last:
                counts[c] = counts[last]
                sums[c] = sums[last]
                z[z == last] = c
            counts[last] = 0
            sums[last] = 0
            k -= 1
        cnt = counts[:k]
        prec = inv_s02 + cnt[:, None] / s2
        var = 1.0 / prec + s2
        resid = x - sums[:k] / (s2 * prec)
        logw = np.empty(k + 1)
        logw[:k] = np.log(cnt) - 0.5 * (np.log(var) + resid * resid / var).sum(axis=1)
        logw[k] = log_new_const - 0.5 * (x @ x) / new_var
        w = np.exp(logw - logw.max())
        cum = np.cumsum(w)
        j = min(int(np.searchsorted(cum, uniforms[t] * cum[-1], side="right")), k)
        if j == k:  # open a new cluster
            k += 1
        counts[j] += 1
        sums[j] += x
        z[i] = j
    return z


def bench_baseline(cfg, sweep_results):
    import pymc_partitions as pmp

    n, dim = 10**3, 2
    Y, z = make_data("NormalNormal", n, dim, seed=n + dim)
    rng = np.random.default_rng(1)
    labels = z
    numpy_gibbs_sweep(labels, Y, SIGMA0_D2, 1.0, ALPHA, rng.permutation(n), rng.random(n))  # warm-up
    times, cpu, ks = [], [], []
    for _ in range(cfg["baseline_reps"]):
        t0, c0 = time.perf_counter(), time.process_time()
        orders, uniforms = draw_randomness(rng, n)
        labels = numpy_gibbs_sweep(labels, Y, SIGMA0_D2, 1.0, ALPHA, orders[0], uniforms[0])
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        ks.append(len(np.unique(labels)))
    med, q1, q3 = quartiles(times)
    cpu = float(np.median(cpu))
    kern = sweep_results.get(("NormalNormal", dim, n))
    if kern is None:  # not measured in part 1
        pack, prior = make_pack("NormalNormal", Y), pmp.CRP(ALPHA)
        ts, tc, lab = [], [], z
        for _ in range(10):
            t0, c0 = time.perf_counter(), time.process_time()
            lab = kernel_sweep(lab, pack, prior, rng)
            ts.append(time.perf_counter() - t0)
            tc.append(time.process_time() - c0)
        kern = dict(med=float(np.median(ts)), cpu=float(np.median(tc)), kmin=K_TRUE, kmax=K_TRUE)
    rows = [
        ["numpy per point (baseline)", f"{min(ks)}-{max(ks)}", fmt_time(med), f"{fmt_time(q1)} - {fmt_time(q3)}",
         fmt_time(cpu), fmt_time(med / n), "1.0x", "1.0x"],
        ["compiled kernel (gibbs_sweeps)", f"{kern['kmin']}-{kern['kmax']}", fmt_time(kern["med"]), "",
         fmt_time(kern["cpu"]), fmt_time(kern["med"] / n), f"{med / kern['med']:.1f}x", f"{cpu / kern['cpu']:.1f}x"],
    ]
    table(f"4. Baseline: numpy-vectorised-per-point Gibbs sweep, NormalNormal D={dim}, n={n}",
          ["sampler", "K observed", "median per sweep", "IQR", "CPU median", "per point", "speed-up (wall)",
           "speed-up (CPU)"], rows)
    return dict(baseline=med, kernel=kern["med"])


# ----------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller n and fewer repeats (about a minute)")
    ap.add_argument("--_mem-child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._mem_child is not None:
        mem_child(args._mem_child)
        return
    cfg = SETTINGS["quick" if args.quick else "full"]
    t_start = time.perf_counter()

    import logging
    import warnings

    import numba
    import pymc as pm

    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)

    import pymc_partitions  # noqa: F401

    cpu = "?"
    try:
        cpu = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read()).group(1)
    except Exception:
        pass
    print(f"# bench_gibbs ({'quick' if args.quick else 'full'}) {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"machine: {os.cpu_count()} cores, {cpu}; Python {platform.python_version()}, numpy {np.__version__}, "
          f"numba {numba.__version__}, PyMC {pm.__version__}; load average at start {os.getloadavg()[0]:.2f}")
    print(f"data: {K_TRUE} clusters; D=2 means on a 5x4 grid of spacing {SEP_D2} (sd ~1, sigma0={SIGMA0_D2}); "
          f"D=50 means ~ N(0, {SD_MEANS_HIGHD}^2) (sigma0={SD_MEANS_HIGHD}); CRP(alpha={ALPHA}); "
          "NIW: mu0=0, kappa0=1, nu0=D+2, scale0=I")

    warm_up()
    sweeps = bench_sweeps(cfg)
    bench_overhead(cfg)
    bench_memory(cfg)
    bench_baseline(cfg, sweeps)
    print(f"\ntotal wall time {time.perf_counter() - t_start:.0f} s; load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
