"""Cold start: import time, and the first-call (numba compile) time of every kernel a workflow uses.

Every measurement runs in a fresh Python process. *Cold* means an empty numba cache directory
(``NUMBA_CACHE_DIR``: the package's kernels are ``@njit(cache=True)``, which cache there when it is
set, else in ``__pycache__`` next to their source files, one file per Python version); *warm* is a
second process on the same directory, which loads the compiled kernels instead. Python's own
bytecode cache is left alone (this package's modules compile to bytecode in well under a second).
Under load, wall times stretch; the CPU time (user + system) of each process is printed too.
PyTensor's own compile cache (``~/.pytensor``, the C code of the model's log density) is left as
it is unless ``--cold-pytensor`` gives every cold process an empty one too (a first run on a new
machine).

For each workflow it prints the wall time cold and warm, the numba compile time (from numba's
``numba:compile`` events), and the kernels that took longest to compile (exclusive of the
kernels they call, which are listed on their own; a kernel compiled for two argument types
appears twice).

Run: ``python benchmarks/bench_cold_start.py`` (all workflows; about 5-10 minutes on 2 cores),
``--only import,gibbs,demo``, ``--top 8``, ``--cold-pytensor``, ``--json out.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORKFLOWS = ["import", "gibbs", "niw", "bernoulli", "pgsm", "sams", "split_merge", "arm", "summaries", "w2",
             "predictive", "unbiased", "demo"]


# ----------------------------------------------------------------------------- in the child process


def _galaxies_model(family="normal", prior=None):
    import numpy as np  # noqa: PLC0415
    import pymc as pm  # noqa: PLC0415

    import pymc_partitions as pmp  # noqa: PLC0415

    if family == "niw":
        y = pmp.datasets.load_faithful()
        y = (y - y.mean(0)) / y.std(0)
    elif family == "bernoulli":
        y = (np.random.default_rng(0).random((60, 5)) < 0.4).astype(int)
    else:
        y = pmp.datasets.load_galaxies() / 1000.0
    with pm.Model() as model:
        alpha = None if prior else pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", prior(alpha) if prior else pmp.CRP(alpha), n=len(y))
        if family == "niw":
            pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=0.5, nu0=4.0, scale0=np.eye(2), observed=y)
        elif family == "bernoulli":
            pmp.BetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=y)
        else:
            pmp.NormalNormal("y", partition=z, mu0=20.0, sigma0=10.0, sigma=1.0, observed=y)
    return model, z


def _sample(model, steps=None, chains=1, **kw):
    import pymc as pm  # noqa: PLC0415

    with model:
        step = steps(model) if steps else None
        return pm.sample(draws=3, tune=2, chains=chains, cores=1, step=step, progressbar=False, random_seed=1,
                         compute_convergence_checks=False, **kw)


def _workflow(name):
    """Run one workflow once (the compile happens on the first call)."""
    import numpy as np  # noqa: PLC0415

    import pymc_partitions as pmp  # noqa: PLC0415

    if name in ("gibbs", "niw", "bernoulli"):
        _sample(_galaxies_model({"gibbs": "normal"}.get(name, name))[0])
    elif name == "pgsm":
        _sample(_galaxies_model()[0], lambda m: [pmp.CollapsedGibbs([m["z"]]), pmp.PGSM([m["z"]])])
    elif name == "sams":
        _sample(_galaxies_model()[0], lambda m: [pmp.CollapsedGibbs([m["z"]]), pmp.SAMS([m["z"]])])
    elif name == "split_merge":
        _sample(_galaxies_model()[0], lambda m: [pmp.CollapsedGibbs([m["z"]]), pmp.SplitMerge([m["z"]])])
    elif name == "arm":
        _sample(_galaxies_model()[0], lambda m: [pmp.CollapsedGibbs([m["z"]]), pmp.ARM([m["z"]])], chains=3)
    elif name == "summaries":
        draws = np.random.default_rng(0).integers(0, 3, size=(2, 20, 30))
        est = pmp.point_estimate(draws, random_seed=1)
        pmp.credible_ball(draws, est)
        pmp.coclustering(draws)
        pmp.partition_traces(draws, reference=est)
    elif name == "w2":
        idata = _sample(_galaxies_model()[0], chains=4)
        pmp.w2_convergence(idata, var_names=["z"], partitions=["z"])
    elif name == "predictive":
        model, _ = _galaxies_model()
        idata = _sample(model)
        pmp.predictive_density(idata, np.linspace(10, 30, 5)[:, None], model=model)
    elif name == "unbiased":
        model, _ = _galaxies_model(prior=lambda alpha: pmp.CRP(1.0))
        pmp.sample_unbiased(model, h={"k": pmp.h.n_clusters}, n_pairs=2, k=2, m=4, max_iter=50, random_seed=1,
                            cores=1, progressbar=False)
    else:
        raise ValueError(name)


def _child(name):
    """Measure one workflow in this (fresh) process and print a JSON line."""
    t0 = time.perf_counter()
    if name == "import":
        import pymc  # noqa: F401, PLC0415

        t1 = time.perf_counter()
        import pymc_partitions  # noqa: F401, PLC0415

        t2 = time.perf_counter()
        print(json.dumps({"import_pymc": t1 - t0, "import_pymc_partitions": t2 - t1}))
        return
    if name == "demo":
        raise ValueError("demo runs as a script")
    import pymc_partitions  # noqa: F401, PLC0415
    from numba.core import event  # noqa: PLC0415

    t1 = time.perf_counter()
    with event.install_recorder("numba:compile") as recorder:
        _workflow(name)
    t2 = time.perf_counter()
    kernels, total = _compile_times(recorder.buffer)
    print(json.dumps({"import": t1 - t0, "run": t2 - t1, "numba_compile": total, "kernels": kernels}))


def _compile_times(buffer):
    """([(kernel, signature, exclusive s, inclusive s)], total top-level compile seconds)."""
    stack, out, total = [], [], 0.0
    for stamp, ev in buffer:
        if ev.is_start:
            stack.append([stamp, 0.0, ev.data])
            continue
        start, children, data = stack.pop()
        inclusive = stamp - start
        if stack:
            stack[-1][1] += inclusive
        else:
            total += inclusive
        disp = data["dispatcher"]
        name = f"{disp.py_func.__module__.replace('pymc_partitions.', '')}.{disp.py_func.__qualname__}"
        out.append((name, str(data["args"]), inclusive - children, inclusive))
    return out, total


# ----------------------------------------------------------------------------- the driver


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args, env, timeout=1800):
    """(completed process, its CPU seconds)."""
    before = _cpu()
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{proc.stderr[-3000:]}")
    return proc, _cpu() - before


def _measure(name, env):
    if name == "demo":
        t0 = time.perf_counter()
        proc, cpu = _run([sys.executable, str(ROOT / "examples" / "demo.py")], env)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("Wall time of pm.sample")]
        return {"wall": time.perf_counter() - t0, "cpu": cpu,
                "pm_sample": float(line[0].split(":")[1].split()[0]) if line else None}
    t0 = time.perf_counter()
    proc, cpu = _run([sys.executable, __file__, "--child", name], env)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"], out["cpu"] = time.perf_counter() - t0, cpu
    return out


def _env(cold_pytensor):
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="pmp-numba-")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if cold_pytensor:
        env["PYTENSOR_FLAGS"] = ",".join(filter(None, [env.get("PYTENSOR_FLAGS", ""),
                                                       f"compiledir={tempfile.mkdtemp(prefix='pmp-pytensor-')}"]))
    return env


def _load():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(WORKFLOWS), help="comma-separated workflows: " + ",".join(WORKFLOWS))
    parser.add_argument("--top", type=int, default=6, help="kernels listed per workflow")
    parser.add_argument("--cold-pytensor", action="store_true", help="cold runs also get an empty PyTensor cache")
    parser.add_argument("--json", default=None, help="write all measurements to this file")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(names) - set(WORKFLOWS))
    if unknown:
        parser.error(f"unknown workflows {unknown}; choose from {WORKFLOWS}")
    import numba  # noqa: PLC0415
    import pymc  # noqa: PLC0415

    print(f"Python {sys.version.split()[0]}, PyMC {pymc.__version__}, numba {numba.__version__}, "
          f"{os.cpu_count()} CPUs; load average at start {_load()}; PyTensor cache "
          f"{'cold' if args.cold_pytensor else 'as is (warm)'} in cold runs")
    results = {}
    for name in names:
        env = _env(args.cold_pytensor)
        cold = _measure(name, env)
        warm_env = dict(env)
        warm_env.pop("PYTENSOR_FLAGS", None) if not args.cold_pytensor else None
        warm = _measure(name, warm_env)
        results[name] = {"cold": cold, "warm": warm, "load": _load()}
        if name == "import":
            print(f"\nimport (s)             cold    warm\n  import pymc          {cold['import_pymc']:6.2f}  "
                  f"{warm['import_pymc']:6.2f}\n  + pymc_partitions    {cold['import_pymc_partitions']:6.2f}  "
                  f"{warm['import_pymc_partitions']:6.2f}")
            continue
        if name == "demo":
            print(f"\ndemo (examples/demo.py, whole process): cold {cold['wall']:.1f} s wall, {cold['cpu']:.1f} s CPU "
                  f"(pm.sample {cold['pm_sample']:.1f} s); warm {warm['wall']:.1f} s wall, {warm['cpu']:.1f} s CPU "
                  f"(pm.sample {warm['pm_sample']:.1f} s); load {_load()}")
            continue
        print(f"\n{name}: process cold {cold['wall']:.1f} s wall / {cold['cpu']:.1f} s CPU, warm {warm['wall']:.1f} s / "
              f"{warm['cpu']:.1f} s CPU; workflow cold "
              f"{cold['run']:.1f} s of which numba compile {cold['numba_compile']:.1f} s, warm {warm['run']:.2f} s "
              f"(numba compile {warm['numba_compile']:.1f} s); load {_load()}")
        kernels = sorted(cold["kernels"], key=lambda k: -k[2])
        print(f"  {len(kernels)} kernel compilations; longest (exclusive s, inclusive s):")
        for kname, sig, exclusive, inclusive in kernels[:args.top]:
            print(f"    {exclusive:6.2f} {inclusive:6.2f}  {kname} {sig[:70]}")
        again = sorted({k[0] for k in kernels if k[0].split(".")[0] != "numba"
                        and sum(1 for q in kernels if q[0] == k[0]) > 1})
        if again:
            print(f"  compiled more than once: {', '.join(again)}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
