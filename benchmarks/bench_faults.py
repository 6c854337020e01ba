"""What an interrupt, a dead worker and a hung pair cost in ``pmp.sample_unbiased``, measured.

    python benchmarks/bench_faults.py            # every scenario (about 2 minutes on 2 cores)
    python benchmarks/bench_faults.py --quick    # fewer pairs, no Dask

Each scenario runs in a fresh Python process (signals and worker processes stay separate):

* Ctrl-C: a real SIGINT sent to the process 5 s (Dask: 15 s) into a run of 3000 pairs (a 7-item model whose h
  sleeps 2 ms per call, so pairs take ~40 ms), in each mode; prints the time from the signal to
  the return, the pairs kept, the recorded interruption and the worker processes left behind.
* Worker deaths: SIGKILL of a worker process at given times during 1500 pairs on 2 workers;
  prints the pairs met and whether the estimates equal an undisturbed ``cores=1`` run.
* Hung pairs: two pairs whose h sleeps forever, ``pair_timeout=1``.
* The cost of refusing unrepresentable inputs (``check_representable``) beside one Gibbs sweep.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

Y = np.array([-2.1, -1.7, -1.9, 0.1, 1.8, 2.2, 1.9])


class SlowK:
    """The number of clusters, after ``delay`` seconds."""

    __name__ = "k"

    def __init__(self, delay):
        self.delay = delay

    def __call__(self, labels):
        if self.delay:
            time.sleep(self.delay)
        return labels.max() + 1.0


class HangingStart:
    """init: all singletons, except that the pairs in ``hang`` never start (pair i of a run uses
    child i of its seed, which the Generator remembers)."""

    def __init__(self, hang):
        self.hang = set(hang)

    def __call__(self, rng):
        if rng.bit_generator.seed_seq.spawn_key[-1] in self.hang:
            time.sleep(1e9)
        return np.arange(len(Y))


def _model():
    import pymc as pm  # noqa: PLC0415

    import pymc_partitions as pmp  # noqa: PLC0415

    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(Y))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=Y)
    return model


def _children():
    import psutil  # noqa: PLC0415

    return [p for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]


def interrupt(mode, n_pairs):
    import pymc_partitions as pmp  # noqa: PLC0415

    kw = dict(h=SlowK(0.002), n_pairs=n_pairs, k=1, m=20, random_seed=3, progressbar=False)
    cluster = client = None
    delay = 5.0  # seconds from the call to the SIGINT
    if mode == "cores=1":
        kw["cores"] = 1
    elif mode == "processes":
        kw["cores"] = 2
    elif mode == "time_budget, 2 workers":
        kw.update(cores=2, time_budget=600.0, n_pairs=None)
    elif mode == "pilot":
        kw.update(cores=2, k=None, m=None, pilot_pairs=n_pairs)
    elif mode == "thread pool":
        kw["executor"] = cf.ThreadPoolExecutor(2)
    elif mode == "dask":
        import logging  # noqa: PLC0415

        from distributed import Client, LocalCluster  # noqa: PLC0415

        logging.getLogger("distributed").setLevel(logging.CRITICAL)  # the cancelled tasks' shutdown chatter
        delay = 15.0  # the Dask workers import the package when the first task arrives (seconds)
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
        kw["executor"] = client
    sent = {}

    def fire():
        sent["at"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    threading.Timer(delay, fire).start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pmp.sample_unbiased(_model(), **kw)
    back = time.perf_counter() - sent["at"]
    attrs = result["unbiased"].attrs
    status = result["meeting"]["status"].values
    left = len(_children()) if client is None else 0
    print(f"| {mode}{'' if delay == 5.0 else f' ({delay:.0f} s into the run)'} | {back:.2f} s | {len(status)} | {attrs['interrupted']} / {attrs['interrupted_during']} | "
          f"{left} |", flush=True)
    if client is not None:
        client.close()
        cluster.close()


def deaths(times, n_pairs):
    import pymc_partitions as pmp  # noqa: PLC0415

    model = _model()
    kw = dict(h=SlowK(0.001), n_pairs=n_pairs, k=1, m=20, random_seed=3, progressbar=False, cores=2)
    killed = []

    def killer():
        t0 = time.perf_counter()
        for t in times:
            time.sleep(max(0.0, t - (time.perf_counter() - t0)))
            kids = _children()
            if kids:
                os.kill(kids[0].pid, signal.SIGKILL)
                killed.append(t)

    threading.Thread(target=killer, daemon=True).start()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pmp.sample_unbiased(model, **kw)
    took = time.perf_counter() - t0
    reference = pmp.sample_unbiased(model, **dict(kw, h=SlowK(0.0), cores=1))
    status = result["meeting"]["status"].values.astype(str)
    same = np.array_equal(reference["unbiased"]["k"].values, result["unbiased"]["k"].values)
    print(f"| SIGKILL at {killed} s | {took:.1f} s | {len(status)} | {(status == 'met').sum()} | "
          f"{result['unbiased'].attrs['worker_failures']} | {same} |", flush=True)


def hung(n_pairs):
    import pymc_partitions as pmp  # noqa: PLC0415

    model = _model()
    kw = dict(h=SlowK(0.0), n_pairs=n_pairs, k=1, m=20, random_seed=3, progressbar=False)
    free = pmp.sample_unbiased(model, init="singletons", cores=1, **kw)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pmp.sample_unbiased(model, init=HangingStart({17, 90}), cores=2, pair_timeout=1.0, **kw)
    took = time.perf_counter() - t0
    status = result["meeting"]["status"].values.astype(str)
    met = status == "met"
    same = np.array_equal(free["unbiased"]["k"].values[met], result["unbiased"]["k"].values[met])
    print(f"| {n_pairs} pairs, pair_timeout=1 | {took:.1f} s | {met.sum()} | {(~met).sum()} "
          f"({', '.join(sorted(set(status[~met])))}) | {same} |", flush=True)


def check_cost():
    from pymc_partitions.families import kernels  # noqa: PLC0415
    from pymc_partitions.priors import CRP  # noqa: PLC0415
    from pymc_partitions.samplers.gibbs import gibbs_sweeps  # noqa: PLC0415

    rng = np.random.default_rng(0)
    prior = CRP(1.0)

    def median(f, repeats):
        f()
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            f()
            times.append(time.perf_counter() - t)
        return float(np.median(times))

    n = 10_000
    for name, dim in (("Normal-Normal", 2), ("Normal-Normal", 50), ("NIW", 2)):
        y = rng.normal(size=(n, dim)) + 4.0 * rng.integers(0, 10, size=(n, 1))
        if name == "NIW":
            part = (kernels.NIW, y, kernels.niw_hyper(0.0, 1.0, dim + 2.0, np.eye(dim), dim, n))
        else:
            part = (kernels.DIAG_NORMAL, y, kernels.diag_normal_hyper(0.0, 10.0, 1.0, dim))
        pack = kernels.FamilyPack.build([part])
        labels = rng.integers(0, 10, size=n)
        check = median(lambda: kernels.check_representable(*part), 30)
        sweep = median(lambda: gibbs_sweeps(labels, pack, prior.code, prior.kernel_params(),
                                            rng.permutation(n)[None], rng.random((1, n))), 7)
        print(f"| {name}, D = {dim}, n = 10^4 | {check * 1e6:.0f} us | {sweep * 1e3:.2f} ms | "
              f"{100 * check / sweep:.1f} % |", flush=True)


def _run(args):
    return subprocess.run([sys.executable, __file__, *args], check=False).returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer pairs, no Dask")
    parser.add_argument("--scenario", nargs="+", help=argparse.SUPPRESS)  # one scenario, in this process
    args = parser.parse_args()
    if args.scenario:
        kind, rest = args.scenario[0], args.scenario[1:]
        if kind == "interrupt":
            interrupt(rest[0], int(rest[1]))
        elif kind == "deaths":
            deaths([float(t) for t in rest[1:]], int(rest[0]))
        elif kind == "hung":
            hung(int(rest[0]))
        else:
            check_cost()
        return
    n_int, n_death = (1000, 600) if args.quick else (3000, 1500)
    print(f"# pmp.sample_unbiased under faults ({os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')})\n")
    print("Ctrl-C 5 s into the run:\n\n| mode | SIGINT to return | pairs kept | interrupted / during | "
          "worker processes left |\n|---|---|---|---|---|", flush=True)
    modes = ["cores=1", "processes", "time_budget, 2 workers", "thread pool", "pilot"]
    try:
        import distributed  # noqa: F401, PLC0415

        modes += [] if args.quick else ["dask"]
    except ImportError:
        pass
    for mode in modes:
        _run(["--scenario", "interrupt", mode, str(n_int)])
    print("\nWorker processes killed (2 workers):\n\n| deaths | wall time | pairs | met | worker_failures | "
          "equal to an undisturbed cores=1 run |\n|---|---|---|---|---|---|", flush=True)
    for times in ([], [5.0], [3.0, 6.0, 9.0]):
        _run(["--scenario", "deaths", str(n_death), *map(str, times)])
    print("\nHung pairs:\n\n| run | wall time | met | failed | kept pairs equal to an undisturbed run |\n"
          "|---|---|---|---|---|", flush=True)
    _run(["--scenario", "hung", "150"])
    print("\nRefusing unrepresentable inputs (checked when a FamilyPack is built):\n\n| family | "
          "check_representable | one Gibbs sweep | share |\n|---|---|---|---|", flush=True)
    _run(["--scenario", "cost"])


if __name__ == "__main__":
    main()
