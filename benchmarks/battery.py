"""Reliability battery: hostile cases, each run in its own process with a timeout, classified.

Every case is a small program written as a user would write it (the cases of issues 19 and 24,
and their siblings: other families, priors, executors, result readers). A case states what a
correct package does: return a value that passes a check (computed independently of the package
where a number is involved), or refuse with an error whose message matches a pattern (it names
the argument or says what to do). Each outcome is one of

- ``correct``: the value passes its check;
- ``clear error``: a refusal expected by the case, with the expected message;
- ``unclear``: a refusal expected by the case, but with another message;
- ``silent wrong``: a value returned where the check fails or a refusal was expected;
- ``crash``: an exception where a value was expected, or the process died (signal, exit code);
- ``hang``: no answer within the case's timeout.

Run: ``python benchmarks/battery.py`` (all cases, both outcome counts and one line per case that is
not correct / clear error); ``--only substring`` to run some; ``--jobs 2`` runs two cases at once.
It needs the ``dask`` extra for the Dask cases. Figures: ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass

PRELUDE = """
import json, math, os, sys, tempfile, warnings
import numpy as np
warnings.simplefilter("ignore")
import pymc as pm
import pymc_partitions as pmp
from scipy.special import gammaln
QUIET = dict(draws=20, tune=10, chains=1, cores=1, progressbar=False, random_seed=1, compute_convergence_checks=False)
TMP = tempfile.mkdtemp()
from fractions import Fraction
def log_rising(x, m):  # log of x (x+1) ... (x+m-1), exactly in rationals, rounded once
    x, p = Fraction(x), Fraction(1)
    for j in range(m):
        p *= x + j
    return math.log(p.numerator) - math.log(p.denominator)
def finite_dirichlet_reference(a, k, sizes):  # weights ~ Dirichlet(a, ..., a), k of them: k!/(k-K)! prod (a)_{n_j} / (k a)_n
    falling = math.log(math.prod(k - j for j in range(len(sizes))))
    return falling + sum(log_rising(a, s) for s in sizes) - log_rising(Fraction(k) * Fraction(a), sum(sizes))
def two_groups(n=12):
    return np.r_[np.full(n // 2, -4.0), np.full(n - n // 2, 4.0)] + np.linspace(-1, 1, n)
def small_result(n=8, draws=20):
    y = two_groups(n)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=1.0, observed=y)
        idata = pm.sample(**{**QUIET, "draws": draws})
    return model, idata
"""

RUNNER = """
import json, sys, traceback
source = sys.stdin.read()
scope = {}
try:
    exec(compile(source, "<case>", "exec"), scope)
    outcome = {"value": bool(scope["ok"]), "detail": str(scope.get("detail", ""))[:300]}
except BaseException as error:  # noqa: BLE001 (SystemExit and KeyboardInterrupt from the case too)
    outcome = {"error": type(error).__name__, "message": str(error)[:600],
               "where": traceback.extract_tb(error.__traceback__)[-1].filename}
print("BATTERY-RESULT " + json.dumps(outcome), flush=True)
"""


@dataclass(frozen=True)
class Case:
    """``code`` sets ``ok`` (and optionally ``detail``) when a value is expected; ``error`` is the
    pattern of the expected refusal's message (then ``ok`` is never reached)."""

    name: str
    code: str
    error: str | None = None
    timeout: float = 240.0


CASES = [
    # --- counts beyond int32 (issue 19 item 1) and siblings ---------------------------------------
    Case("counts>=2^31: GammaPoisson logp exact", """
y = np.array([5_000_000_000, 5_000_000_000, 3, 4, 5])
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=5)
    pmp.GammaPoisson("y", partition=z, observed=y)
got = float(m.compile_logp()({"z": np.array([0, 0, 1, 1, 1])}))
def block(c):  # Gamma(1, 1) prior on the rate, counts c
    s, k = float(np.sum(c)), len(c)
    return gammaln(1 + s) - (1 + s) * math.log(1 + k) - sum(gammaln(np.asarray(c, float) + 1))
want = block(y[:2]) + block(y[2:]) + math.log(2) - math.log(120)
ok = abs(got - want) <= 1e-9 * abs(want); detail = (got, want)
"""),
    Case("counts>=2^31: observed_data keeps them", """
y = np.array([2**31 + 7, 3, 4, 5])
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=4)
    pmp.GammaPoisson("y", partition=z, observed=y)
    idata = pm.sample(**QUIET)
obs = pmp.posterior_dataset(idata, "observed_data")["y"].values.ravel()
ok = int(obs[0]) == 2**31 + 7; detail = obs[:2]
"""),
    Case("counts>=2^31: Gibbs log joint matches logp", """
y = np.array([3_000_000_000, 3_000_000_001, 3, 4, 5])
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=5)
    pmp.GammaPoisson("y", partition=z, observed=y)
    idata = pm.sample(**QUIET)
post = pmp.posterior_dataset(idata)["z"].values.reshape(-1, 5)
lj = pmp.posterior_dataset(idata, "sample_stats")["log_joint"].values.ravel()
logp = m.compile_logp()
ok = all(abs(float(logp({"z": post[i]})) - lj[i]) <= 1e-6 * abs(lj[i]) for i in range(3)); detail = lj[:3]
"""),
    Case("categories beyond int32: DirichletCategorical", """
y = np.array([[0], [1], [2**31 + 1], [0]])
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=4)
    pmp.DirichletCategorical("y", partition=z, observed=y)
ok = False
""", error=r"categor"),
    Case("count 2^63+10 (uint64) names the 2^52 limit", """
y = np.array([2**63 + 10, 3, 4], dtype=np.uint64)
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=3)
    pmp.GammaPoisson("y", partition=z, observed=y)
ok = False
""", error=r"2\^?52|2\*\*52|4503599627370496"),
    Case("negative count refused", """
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=3)
    pmp.GammaPoisson("y", partition=z, observed=np.array([-1, 3, 4]))
ok = False
""", error=r"non-negative"),
    # --- PyMC entry points that reach the partition (item 2) --------------------------------------
    Case("sample_smc on a partition", """
y = two_groups(24)
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=24)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    idata = pm.sample_smc(draws=200, chains=1, progressbar=False, random_seed=1)
k = pmp.posterior_dataset(idata)["z"].values.reshape(-1, 24).max(axis=1) + 1
ok = (k >= 2).mean() > 0.9; detail = np.bincount(k)
""", error=r"sample_smc|SMC"),
    Case("sample_smc with alpha ~ Gamma", """
y = two_groups(24)
with pm.Model():
    a = pm.Gamma("a", 1, 1)
    z = pmp.Partition("z", pmp.CRP(a), n=24)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    idata = pm.sample_smc(draws=100, chains=1, progressbar=False, random_seed=1)
ok = False
""", error=r"sample_smc|SMC"),
    Case("find_MAP with a partition", """
y = two_groups(24)
with pm.Model():
    a = pm.Gamma("a", 1, 1)
    z = pmp.Partition("z", pmp.CRP(a), n=24)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    point = pm.find_MAP(progressbar=False)
ok = False
""", error=r"find_MAP"),
    Case("pm.Metropolis on a partition", """
y = two_groups(8)
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    pm.sample(step=pm.Metropolis([z]), **QUIET)
ok = False
""", error=r"CollapsedGibbs|partition"),
    Case("z in two CollapsedGibbs steps", """
y = two_groups(8)
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    pm.sample(step=[pmp.CollapsedGibbs([z]), pmp.CollapsedGibbs([z])], **QUIET)
ok = False
""", error=r"CollapsedGibbs|twice|two"),
    Case("nuts_sampler='numpyro' names the partition", """
y = two_groups(8)
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    pm.sample(nuts_sampler="numpyro", **QUIET)
ok = False
""", error=r"partition|Partition|discrete variables"),
    # --- weights (item 3) --------------------------------------------------------------------------
    Case("coclustering with weights summing to inf", """
d = np.array([[0, 0, 1, 1], [0, 1, 1, 1]])
c = pmp.coclustering(d, weights=[1e308, 1e308])
ok = np.allclose(c, 0.5 * (np.equal.outer(d[0], d[0]).astype(float) + np.equal.outer(d[1], d[1]))); detail = np.asarray(c)
"""),
    Case("point_estimate with exp(709) weights", """
d = np.array([[0, 0, 1, 1], [0, 0, 0, 1], [0, 1, 1, 1]])
w = np.exp([709.0, 709.0, 708.0])
pe = pmp.point_estimate(d, weights=w, random_seed=0)
ref = pmp.point_estimate(d, weights=w / w.max(), random_seed=0)
ok = np.array_equal(np.asarray(pe.labels), np.asarray(ref.labels)) and abs(pe.expected_loss - ref.expected_loss) < 1e-9 and pe.expected_loss > 0
detail = (pe.expected_loss, ref.expected_loss)
"""),
    Case("credible_ball with weights summing to inf", """
d = np.array([[0, 0, 1, 1], [0, 0, 0, 1], [0, 1, 1, 1]])
w = np.array([1e308, 1e308, 1e307])
b1 = pmp.credible_ball(d, d[0], weights=w); b2 = pmp.credible_ball(d, d[0], weights=w / 1e308)
ok = repr(b1) == repr(b2); detail = repr(b1)[:200]
"""),
    Case("weights with NaN refused", """
pmp.coclustering(np.array([[0, 0, 1], [0, 1, 1]]), weights=[np.nan, 1.0])
ok = False
""", error=r"weights"),
    # --- large k (item 4) --------------------------------------------------------------------------
    Case("FiniteDirichlet log_eppf at k = 1e15", """
labels = np.array([0, 0, 1, 2, 2, 2]); a, k = 0.5, 10**15
want = finite_dirichlet_reference(a, k, (2, 1, 3))
got = pmp.FiniteDirichlet(a, k).log_eppf(labels)
ok = abs(got - want) < 1e-8 * abs(want); detail = (got, want)
"""),
    Case("FiniteDirichlet log_eppf at k = 1e18", """
labels = np.array([0, 0, 1, 2, 2, 2]); a, k = 0.5, 10**18
want = finite_dirichlet_reference(a, k, (2, 1, 3))
got = pmp.FiniteDirichlet(a, k).log_eppf(labels)
ok = abs(got - want) < 1e-8 * abs(want); detail = (got, want)
"""),
    Case("FiniteDirichlet model logp at k = 1e18", """
a, k = 0.5, 10**18
with pm.Model() as m:
    z = pmp.Partition("z", pmp.FiniteDirichlet(a, k), n=6)
got = float(m.compile_logp()({"z": np.array([0, 0, 1, 2, 2, 2])}))
want = finite_dirichlet_reference(a, k, (2, 1, 3))
ok = abs(got - want) < 1e-6 * abs(want); detail = (got, want)
"""),
    Case("FiniteDirichlet k beyond int64 refused", """
pmp.FiniteDirichlet(0.5, 2**64)
ok = False
""", error=r"\bk\b"),
    Case("PitmanYor log_eppf with huge alpha", """
labels = np.array([0, 0, 1, 2, 2, 2]); a, d = 1e16, 0.3
# prod_{j=1}^{K-1} (a + j d) prod_b (1 - d)_{n_b - 1} / (a + 1)_{n - 1}, in rationals
fa, fd = Fraction(a), Fraction(d)
want = (sum(log_rising(fa + j * fd, 1) for j in range(1, 3)) + sum(log_rising(1 - fd, s - 1) for s in (2, 1, 3))
        - log_rising(fa + 1, 5))
got = pmp.PitmanYor(a, d).log_eppf(labels)
ok = abs(got - want) < 1e-8 * abs(want); detail = (got, want)
"""),
    # --- EscobarWest (item 5) ----------------------------------------------------------------------
    Case("EscobarWest with alpha ~ Gamma(1e-3, 1e-3)", """
y = two_groups(12)
with pm.Model():
    a = pm.Gamma("a", 1e-3, 1e-3)
    z = pmp.Partition("z", pmp.CRP(a), n=12)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    idata = pm.sample(step=[pmp.CollapsedGibbs([z]), pmp.EscobarWest([a])], **{**QUIET, "draws": 200})
v = pmp.posterior_dataset(idata)["a"].values.ravel()
ok = np.all(v >= 0) and np.all(np.isfinite(v)); detail = (v.min(), v.max())
"""),
    Case("EscobarWest with alpha ~ Gamma(1e-3, 1e-3), default steps", """
y = two_groups(12)
with pm.Model():
    a = pm.Gamma("a", 1e-3, 1e-3)
    z = pmp.Partition("z", pmp.CRP(a), n=12)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    idata = pm.sample(**{**QUIET, "draws": 200})
v = pmp.posterior_dataset(idata)["a"].values.ravel()
ok = np.all(v >= 0) and np.all(np.isfinite(v)); detail = (v.min(), v.max())
"""),
    Case("PriorSlice on a PitmanYor discount ~ Beta(1e-3, 1e-3)", """
y = two_groups(12)
with pm.Model():
    d = pm.Beta("d", 1e-3, 1e-3)
    z = pmp.Partition("z", pmp.PitmanYor(1.0, d), n=12)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    idata = pm.sample(**{**QUIET, "draws": 100})
v = pmp.posterior_dataset(idata)["d"].values.ravel()
ok = np.all((v >= 0) & (v <= 1)); detail = (v.min(), v.max())
"""),
    # --- Dask and executors (items 6, 7, SystemExit) ----------------------------------------------
    Case("Dask: pair_timeout stops a pair stuck inside h", """
from dask.distributed import Client, LocalCluster
import time as _t
y = two_groups(8)
with pm.Model() as model:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
marker, PARENT = os.path.join(TMP, "stuck"), os.getpid()
def h(labels):  # the package probes h once in the parent; the first call in a worker hangs forever
    if os.getpid() != PARENT and not os.path.exists(marker):  # the first call anywhere hangs forever
        open(marker, "w").close()
        _t.sleep(10_000)
    return float(labels.max() + 1)
with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
    out = pmp.sample_unbiased(model, h=h, n_pairs=40, k=1, m=5, executor=client, random_seed=1,
                              progressbar=False, pair_timeout=3.0)
status = list(out["meeting"]["status"].values)
status = list(map(str, status))
ok = len(status) == 40 and sum('timeout' in s for s in status) == 1; detail = {s[:60]: status.count(s) for s in set(status)}
""", timeout=200.0),
    Case("Dask: h that kills its worker", """
from dask.distributed import Client, LocalCluster
y = two_groups(8)
with pm.Model() as model:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
import glob
PARENT = os.getpid()
def h(labels):  # the first four calls in workers kill their worker (the parent probes h once)
    n = len(glob.glob(os.path.join(TMP, "killed-*")))
    if os.getpid() != PARENT and n < 4:
        open(os.path.join(TMP, f"killed-{n}"), "w").close()
        os._exit(1)
    return float(labels.max() + 1)
with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
    out = pmp.sample_unbiased(model, h=h, n_pairs=20, k=1, m=5, executor=client, random_seed=1, progressbar=False)
status = list(map(str, out["meeting"]["status"].values))
ok = len(status) == 20; detail = {s[:60]: status.count(s) for s in set(status)}
""", timeout=400.0),
    Case("Dask: h that kills its worker twice, allowed-failures 0", """
import dask, glob
from dask.distributed import Client, LocalCluster
y = two_groups(8)
with pm.Model() as model:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
PARENT = os.getpid()
def h(labels):  # the first two calls in workers kill their worker: within retries=2, so every pair meets
    n = len(glob.glob(os.path.join(TMP, "killed-*")))
    if os.getpid() != PARENT and n < 2:
        open(os.path.join(TMP, f"killed-{n}"), "w").close()
        os._exit(1)
    return float(labels.max() + 1)
with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
        Client(cluster) as client:
    out = pmp.sample_unbiased(model, h=h, n_pairs=20, k=1, m=5, executor=client, random_seed=1, progressbar=False)
status = list(map(str, out["meeting"]["status"].values))
ok = status == ["met"] * 20; detail = {s[:60]: status.count(s) for s in set(status)}
""", timeout=400.0),
    Case("cores=1: SystemExit from h keeps the finished pairs", """
y = two_groups(8)
with pm.Model() as model:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
seen = {"n": 0}
def h(labels):
    seen["n"] += 1
    if seen["n"] == 4:  # the first call is the package's probe of h
        sys.exit(3)
    return float(labels.max() + 1)
out = pmp.sample_unbiased(model, h=h, n_pairs=6, k=1, m=3, cores=1, random_seed=1, progressbar=False)
status = list(map(str, out["meeting"]["status"].values))
ok = len(status) == 6 and sum("SystemExit" in s for s in status) == 1; detail = status
"""),
    Case("thread pool: pair_timeout with a hung h", """
import concurrent.futures, threading, time as _t
y = two_groups(8)
with pm.Model() as model:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
marker, PARENT = os.path.join(TMP, "hung"), os.getpid()
def h(labels):  # the first call in a pair hangs for 60 s (a marker file: each task may hold its own copy of h;
    if threading.current_thread() is not threading.main_thread():  # created atomically, so one call hangs)
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            pass
        else:
            _t.sleep(60)
    return float(labels.max() + 1)
with concurrent.futures.ThreadPoolExecutor(2) as pool:  # a first run loads the job and compiles
    pmp.sample_unbiased(model, h=lambda labels: 1.0, n_pairs=4, k=1, m=3, executor=pool, random_seed=2, progressbar=False)
    out = pmp.sample_unbiased(model, h=h, n_pairs=10, k=1, m=3, executor=pool, random_seed=1, progressbar=False,
                              pair_timeout=5.0)
status = list(map(str, out["meeting"]["status"].values))
ok = len(status) == 10 and sum("timeout" in s for s in status) == 1; detail = status
""", timeout=300.0),
    # --- files (items 8, 9, 10, x.nc/) -------------------------------------------------------------
    Case("load a FIFO", """
path = os.path.join(TMP, "fifo.nc"); os.mkfifo(path)
pmp.load(path)
ok = False
""", error=r"fifo\.nc", timeout=60.0),
    Case("load a directory", """
pmp.load(TMP)
ok = False
""", error=r"(?i)director", timeout=60.0),
    Case("save 'x.nc/'", """
model, idata = small_result()
pmp.save(idata, os.path.join(TMP, "x.nc") + "/")
ok = False
""", error=r"x\.nc"),
    Case("save interrupted by SIGKILL: the next save removes the stale temporary", """
import signal, subprocess, glob, time as _t, arviz as az
x = {"x": np.random.default_rng(0).random((1, 1000, 4000))}
big = az.from_dict(posterior=x) if az.__version__.startswith("0.") else az.from_dict({"posterior": x})
pmp.save(big, os.path.join(TMP, "src.nc"))
target = os.path.join(TMP, "big.nc")
left = []
for attempt in range(6):
    child = subprocess.Popen([sys.executable, "-c", f"import pymc_partitions as pmp; r = pmp.load({os.path.join(TMP, 'src.nc')!r})\\nwhile True: pmp.save(r, {target!r})"])
    _t.sleep(12 + attempt); child.send_signal(signal.SIGKILL); child.wait()
    left = glob.glob(os.path.join(TMP, ".big.nc*"))
    if left:
        break
pmp.save(big, target)
after = glob.glob(os.path.join(TMP, ".big.nc*"))
ok = bool(left) and not after; detail = (left, after)
""", timeout=400.0),
    Case("save interrupted by SIGTERM removes its temporary", """
import signal, subprocess, glob, time as _t, arviz as az
x = {"x": np.random.default_rng(0).random((1, 1000, 4000))}
big = az.from_dict(posterior=x) if az.__version__.startswith("0.") else az.from_dict({"posterior": x})
pmp.save(big, os.path.join(TMP, "src.nc"))
target = os.path.join(TMP, "big.nc")
left = []
for attempt in range(4):
    child = subprocess.Popen([sys.executable, "-c", f"import pymc_partitions as pmp; r = pmp.load({os.path.join(TMP, 'src.nc')!r})\\nwhile True: pmp.save(r, {target!r})"])
    _t.sleep(12 + attempt); child.send_signal(signal.SIGTERM); child.wait()
    left += glob.glob(os.path.join(TMP, ".big.nc*"))
ok = not left; detail = left
""", timeout=400.0),
    Case("load a file with corrupt bytes (uncompressed)", """
model, idata = small_result(draws=200)
path = pmp.save(idata, os.path.join(TMP, "r.nc"), compress=False)
raw = bytearray(open(path, "rb").read())
z_before = pmp.posterior_dataset(pmp.load(path))["z"].values.copy()
bad = 0
rng = np.random.default_rng(0)
for pos in rng.choice(len(raw), size=40, replace=False):
    mutated = bytearray(raw); mutated[pos] ^= 0xFF
    open(path, "wb").write(mutated)
    try:
        loaded = pmp.load(path)
        if not np.array_equal(pmp.posterior_dataset(loaded)["z"].values, z_before):
            bad += 1
    except (ValueError, OSError):
        pass
ok = bad == 0; detail = bad
""", timeout=400.0),
    Case("load a file with corrupt metadata names the path", """
model, idata = small_result(draws=50)
path = pmp.save(idata, os.path.join(TMP, "meta.nc"))
raw = bytearray(open(path, "rb").read())
for pos in range(0, 2048, 97):
    raw[pos] ^= 0x5A
open(path, "wb").write(raw)
pmp.load(path)
ok = False
""", error=r"meta\.nc", timeout=120.0),
    # --- results readers and unclear errors --------------------------------------------------------
    Case("point_estimate on a MultiTrace", """
y = two_groups(8)
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    trace = pm.sample(return_inferencedata=False, **QUIET)
pmp.point_estimate(trace)
ok = False
""", error=r"MultiTrace|return_inferencedata|to_inference_data"),
    Case("credible_ball on a MultiTrace", """
y = two_groups(8)
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=y)
    trace = pm.sample(return_inferencedata=False, **QUIET)
pmp.credible_ball(trace, np.zeros(8, int))
ok = False
""", error=r"MultiTrace|return_inferencedata|to_inference_data"),
    Case("plot_clustering(y, idata) swapped", """
import matplotlib; matplotlib.use("Agg")
model, idata = small_result()
pmp.plot_clustering(two_groups(8), idata)
ok = False
""", error=r"plot_clustering"),
    Case("sigma as a PyMC variable of the wrong shape", """
y = np.c_[two_groups(8), two_groups(8)]
with pm.Model():
    s = pm.HalfNormal("s", shape=3)
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=s, observed=y)
ok = False
""", error=r"sigma"),
    Case("CRP alpha as a PyMC variable of shape 2", """
with pm.Model():
    a = pm.Gamma("a", 1, 1, shape=2)
    z = pmp.Partition("z", pmp.CRP(a), n=8)
ok = False
""", error=r"alpha"),
    Case("GammaPoisson beta as a PyMC variable of the wrong shape", """
y = np.ones((6, 2), dtype=int)
with pm.Model():
    b = pm.Gamma("b", 1, 1, shape=3)
    z = pmp.Partition("z", pmp.CRP(1.0), n=6)
    pmp.GammaPoisson("y", partition=z, beta=b, observed=y)
ok = False
""", error=r"beta"),
    Case("ragged list as observed", """
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=3)
    pmp.NormalNormal("y", partition=z, observed=[[1.0, 2.0], [3.0], [4.0, 5.0]])
ok = False
""", error=r"observed"),
    Case("nullable pandas Float64 frame with NA", """
import pandas as pd
df = pd.DataFrame({"a": pd.array([1.0, None, 3.0], dtype="Float64"), "b": pd.array([1.0, 2.0, 3.0], dtype="Float64")})
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=3)
    pmp.NormalNormal("y", partition=z, observed=df)
ok = False
""", error=r"missing|NA|NaN"),
    Case("nullable pandas Float64 frame without NA is read", """
import pandas as pd
df = pd.DataFrame({"a": pd.array([1.0, 2.0, 3.0], dtype="Float64")})
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=3)
    pmp.NormalNormal("y", partition=z, observed=df)
ok = np.isfinite(float(m.compile_logp()({"z": np.array([0, 0, 1])})))
"""),
    Case("predictive_density after set_data with NaN", """
y = two_groups(8)
with pm.Model() as m:
    d = pm.Data("d", y)
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=d)
    idata = pm.sample(**QUIET)
    pm.set_data({"d": np.full(8, np.nan)})
dens = pmp.predictive_density(idata, np.array([0.0, 4.0]), model=m)
ok = bool(np.all(np.isfinite(dens["density"].values))); detail = dens["density"].values
"""),
    Case("predictive_density with another model's hyperparameters", """
model, idata = small_result()
with pm.Model() as other:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=100.0, sigma0=5.0, sigma=1.0, observed=two_groups(8) + 1.0)
pmp.predictive_density(idata, np.array([0.0]), model=other)
ok = False
""", error=r"model"),
    Case("not a collapsed likelihood lists every family", """
y = two_groups(8)
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pm.Normal("y", mu=z, sigma=1, observed=y)
    pm.sample(**QUIET)
ok = False
""", error=r"(?s)(?=.*NormalNormal)(?=.*NormalInverseWishart)(?=.*BetaBernoulli)(?=.*GammaPoisson)(?=.*DirichletCategorical)(?=.*BetaBernoulliNetwork)"),
    Case("PGSM with n = 1", """
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=1)
    pmp.NormalNormal("y", partition=z, observed=np.array([0.3]))
    pm.sample(step=[pmp.PGSM([z])], **QUIET)
ok = False
""", error=r"(?i)partition .*(small|one item)|n = 1|single item|too small"),
    # --- issue 24 ----------------------------------------------------------------------------------
    Case("posterior predictive with 2-D pm.Data", """
y = np.c_[two_groups(10), -two_groups(10)]
with pm.Model() as m:
    d = pm.Data("d", y)
    z = pmp.Partition("z", pmp.CRP(1.0), n=10)
    pmp.NormalInverseWishart("y", partition=z, observed=d)
    idata = pm.sample(**QUIET)
    pp = pm.sample_posterior_predictive(idata, progressbar=False, random_seed=1)
    after = float(m.compile_logp()(m.initial_point()))
rep = pmp.posterior_dataset(pp, "posterior_predictive")["y"].values
ok = rep.shape[-2:] == (10, 2) and np.isfinite(after); detail = rep.shape
"""),
    Case("summary of a <= 2-cluster result without a model", """
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(0.01), n=12)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=50, sigma=0.1, observed=np.r_[np.full(6, -40.0), np.full(6, 40.0)])
    idata = pm.sample(**QUIET)
assert pmp.posterior_dataset(idata)["z"].values.max() <= 1
s = pmp.summary(idata)
ok = len(s) >= 3; detail = list(s.index)
"""),
    Case("summaries of a reloaded result", """
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(0.01), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=50, sigma=0.1, observed=np.r_[np.full(4, -40.0), np.full(4, 40.0)])
    idata = pm.sample(**QUIET)
assert pmp.posterior_dataset(idata)["z"].values.max() <= 1
path = pmp.save(idata, os.path.join(TMP, "two.nc"))
r = pmp.load(path)
s = pmp.summary(r); pe = pmp.point_estimate(r); c = pmp.coclustering(r)
ok = c.shape == (8, 8) and len(np.asarray(pe.labels)) == 8; detail = list(s.index)
"""),
    Case("summary with a constant invariant is quiet", """
import warnings as w
y = np.r_[np.full(6, -40.0), np.full(6, 40.0)]
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(0.01), n=12)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=50, sigma=0.1, observed=y)
    idata = pm.sample(**{**QUIET, "chains": 2, "initvals": [{"z": np.repeat([0, 1], 6)}] * 2})
with w.catch_warnings(record=True) as caught:
    w.simplefilter("always")
    s = pmp.summary(idata)
ok = not [c for c in caught if "invalid value" in str(c.message)]; detail = [str(c.message)[:80] for c in caught]
"""),
    Case("plot_credible_ball with D = 4", """
import matplotlib; matplotlib.use("Agg")
y = np.c_[two_groups(8), two_groups(8), two_groups(8), two_groups(8)]
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalInverseWishart("y", partition=z, observed=y)
    idata = pm.sample(**QUIET)
ball = pmp.credible_ball(idata, pmp.point_estimate(idata).labels)
pmp.plot_credible_ball(y, ball)
ok = True
"""),
    Case("set_data with a different n", """
y = two_groups(8)
with pm.Model() as m:
    d = pm.Data("d", y)
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=5, sigma=1, observed=d)
    pm.set_data({"d": two_groups(10)})
    pm.sample(**QUIET)
ok = False
""", error=r"\bn\b|8|10"),
    # --- non-conjugate clusters (issue 21): the slot model as a user writes it --------------------------
    Case("nc: Student-t slot model, labels canonical, slots follow", """
y = two_groups(12)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=12)
    mu = pm.Normal("mu", 0.0, 5.0, shape=12)
    sigma = pm.HalfNormal("sigma", 2.0, shape=12)
    pm.StudentT("y", nu=4, mu=mu[z], sigma=sigma[z], observed=y)
    idata = pm.sample(**{**QUIET, "draws": 50})
post = pmp.posterior_dataset(idata)
lab = post["z"].values.reshape(-1, 12).astype(int)
first = [np.unique(r, return_index=True)[1] for r in lab]
canon = all((np.sort(f) == f).all() and (np.unique(r) == np.arange(r.max() + 1)).all() for f, r in zip(first, lab))
mu_v = post["mu"].values.reshape(-1, 12)
ok = canon and np.isfinite(mu_v).all() and (lab.max(axis=1) >= 1).mean() > 0.9; detail = (canon, np.bincount(lab.max(axis=1)))
"""),
    Case("nc: compute_log_likelihood is log p(y_i | z_-i, phi, y_-i)", """
from scipy import stats
from scipy.special import logsumexp
y = two_groups(8)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    mu = pm.Normal("mu", 0.0, 5.0, shape=8)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    idata = pm.sample(**QUIET)
    pm.compute_log_likelihood(idata, progressbar=False)
post = pmp.posterior_dataset(idata)
got = pmp.posterior_dataset(idata, "log_likelihood")["y"].values.reshape(-1, 8)
lab = post["z"].values.reshape(-1, 8).astype(int)
mu_v = post["mu"].values.reshape(-1, 8)
want = np.empty_like(got)
for d in range(len(lab)):  # docs/nonconjugate.md: item i's cluster integrated out given z_-i (exact new-cluster term here)
    for i in range(8):
        others = np.delete(lab[d], i)
        ks, counts = np.unique(others, return_counts=True)
        terms = [math.log(c) + stats.norm.logpdf(y[i], mu_v[d][k], 1.0) for k, c in zip(ks, counts)]
        terms.append(stats.norm.logpdf(y[i], 0.0, math.sqrt(26.0)))  # alpha = 1: log 1 + the prior predictive
        want[d, i] = logsumexp(terms) - math.log(7 + 1.0)
ok = np.allclose(got, want, atol=0.05); detail = float(np.abs(got - want).max())
"""),
    Case("nc: predictive_density integrates to one", """
y = two_groups(12)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=12)
    mu = pm.Normal("mu", 0.0, 5.0, shape=12)
    sigma = pm.HalfNormal("sigma", 2.0, shape=12)
    pm.StudentT("y", nu=4, mu=mu[z], sigma=sigma[z], observed=y)
    idata = pm.sample(**{**QUIET, "draws": 40})
grid = np.linspace(-200, 200, 40001)
dens = pmp.predictive_density(idata, grid, model=m, random_seed=1)["density"].values
mass = float(np.sum((dens[1:] + dens[:-1]) / 2) * (grid[1] - grid[0]))
ok = abs(mass - 1.0) < 0.02; detail = mass
"""),
    Case("nc: sample_posterior_predictive gives every item per draw", """
y = two_groups(10)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=10)
    mu = pm.Normal("mu", 0.0, 5.0, shape=10)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    idata = pm.sample(**QUIET)
    pp = pm.sample_posterior_predictive(idata, progressbar=False, random_seed=1)
v = pmp.posterior_dataset(pp, "posterior_predictive")["y"].values
ok = v.shape == (1, 20, 10) and np.isfinite(v).all() and abs(v.mean() - y.mean()) < 3; detail = (v.shape, float(v.mean()))
"""),
    Case("nc: pmp.summary and pmp.loo on a slot model", """
y = two_groups(12)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=12)
    mu = pm.Normal("mu", 0.0, 5.0, shape=12)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    idata = pm.sample(**{**QUIET, "draws": 60})
    pm.compute_log_likelihood(idata, progressbar=False)
table = pmp.summary(idata, model=m)
elpd = pmp.loo(idata, model=m)
val = float(getattr(elpd, "elpd_loo", getattr(elpd, "elpd", np.nan)))
ok = len(table) >= 2 and np.isfinite(val) and val < 0; detail = (list(table.index)[:6], val)
"""),
    Case("nc: FiniteDirichlet(alpha, 3) with 3 slots keeps K <= 3", """
y = np.r_[np.full(4, -6.0), np.full(4, 0.0), np.full(4, 6.0), np.full(4, 12.0)] + np.linspace(-0.5, 0.5, 16)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.FiniteDirichlet(1.0, 3), n=16)
    mu = pm.Normal("mu", 0.0, 10.0, shape=3)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    idata = pm.sample(**{**QUIET, "draws": 60})
k = pmp.posterior_dataset(idata)["z"].values.reshape(-1, 16).max(axis=1) + 1
ok = k.max() <= 3 and k.min() >= 1; detail = np.bincount(k)
"""),
    Case("nc: one item", """
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=1)
    mu = pm.Normal("mu", 0.0, 5.0, shape=1)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=np.array([2.0]))
    idata = pm.sample(**QUIET)
post = pmp.posterior_dataset(idata)
ok = (post["z"].values == 0).all() and np.isfinite(post["mu"].values).all(); detail = float(post["mu"].values.mean())
"""),
    Case("nc: two chains in two processes", """
y = two_groups(10)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=10)
    mu = pm.Normal("mu", 0.0, 5.0, shape=10)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    idata = pm.sample(**{**QUIET, "chains": 2, "cores": 2})
mu_v = pmp.posterior_dataset(idata)["mu"].values
ok = mu_v.shape[0] == 2 and not np.array_equal(mu_v[0], mu_v[1]) and np.isfinite(mu_v).all(); detail = mu_v.shape
"""),
    Case("nc: NaN in the observed values", """
y = two_groups(8); y[3] = np.nan
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    mu = pm.Normal("mu", 0.0, 5.0, shape=8)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    idata = pm.sample(**QUIET)
ok = False
""", error=r"NaN|nan|missing|imput"),
    Case("nc: a slot of n - 1 rows", """
y = two_groups(8)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    mu = pm.Normal("mu", 0.0, 5.0, shape=7)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    idata = pm.sample(**QUIET)
ok = False
""", error=r"'mu'.*(7|8)|(7|8).*'mu'"),
    Case("nc: a discrete slot", """
y = two_groups(8)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    lam = pm.Poisson("lam", 3.0, shape=8)
    pm.Normal("y", mu=lam[z], sigma=1.0, observed=y)
    idata = pm.sample(**QUIET)
ok = False
""", error=r"lam.*discrete|discrete.*lam"),
    Case("nc: a base measure without random draws (pm.Flat)", """
y = two_groups(8)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    mu = pm.Flat("mu", shape=8)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    idata = pm.sample(**QUIET)
ok = False
""", error=r"mu"),
    Case("nc: m = 0 auxiliaries", """
y = two_groups(8)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    mu = pm.Normal("mu", 0.0, 5.0, shape=8)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    idata = pm.sample(step=pmp.NonConjugateGibbs([z], m=0), **QUIET)
ok = False
""", error=r"\bm\b"),
    Case("nc: a covariate with NaN", """
x = np.linspace(-1, 1, 8); x[2] = np.nan
y = two_groups(8)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    beta = pm.Normal("beta", 0.0, 5.0, shape=8)
    pm.Normal("y", mu=beta[z] * x, sigma=1.0, observed=y)
    idata = pm.sample(**QUIET)
ok = False
""", error=r"NaN"),
    Case("nc: pm.set_data with more items", """
y = two_groups(8)
with pm.Model() as m:
    yd = pm.Data("yd", y)
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    mu = pm.Normal("mu", 0.0, 5.0, shape=8)
    pm.Normal("y", mu=mu[z], sigma=1.0, observed=yd)
    idata = pm.sample(**QUIET)
    pm.set_data({"yd": two_groups(9)})
    idata = pm.sample(**QUIET)
ok = False
""", error=r"set_data|shape|9"),
    Case("nc: a likelihood that does not read the partition is warned of", """
y = two_groups(8)
with pm.Model() as m:
    z = pmp.Partition("z", pmp.CRP(1.0), n=8)
    mu = pm.Normal("mu", 0.0, 5.0, shape=8)
    pm.Normal("y", mu=mu, sigma=1.0, observed=y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = pm.sample(**QUIET)
said = [str(w.message) for w in caught if "'z' is read by none" in str(w.message)]
ok = len(said) == 1 and "mu[z]" in said[0]; detail = said
"""),
    # --- a known partition and PyMC's graph transforms (session 46) ---------------------------------
    Case("observed partition: alpha's posterior by quadrature", """
from scipy import integrate, stats
with pm.Model() as m:
    alpha = pm.Gamma("alpha", 2.0, 1.0)
    pmp.Partition("z", pmp.CRP(alpha), n=8, observed=[2, 2, 0, 0, 0, 2, 1, 1])
    idata = pm.sample(draws=2000, tune=500, chains=2, cores=1, progressbar=False, random_seed=1)
got = float(pmp.posterior_dataset(idata)["alpha"].mean())
lp = lambda a: stats.gamma.logpdf(a, 2.0) + 3 * math.log(a) + gammaln(a) - gammaln(a + 8)  # CRP EPPF, K = 3
mass = integrate.quad(lambda a: math.exp(lp(a)), 1e-9, 80)[0]
want = integrate.quad(lambda a: a * math.exp(lp(a)), 1e-9, 80)[0] / mass
ok = abs(got - want) < 0.1; detail = (got, want)
"""),
    Case("observed partition of 7 labels for n = 6", """
with pm.Model():
    pmp.Partition("z", pmp.CRP(1.0), n=6, observed=[0, 0, 1, 2, 3, 3, 4])
ok = False
""", error=r"'z': observed labels must have length n=6"),
    Case("observed partition with a label 0.5", """
with pm.Model():
    pmp.Partition("z", pmp.CRP(1.0), n=6, observed=[0.5, 0, 1, 2, 2, 2])
ok = False
""", error=r"'z': observed labels must be integers"),
    Case("pm.do fixes alpha: the partition's exact posterior", """
y = np.array([-3.0, 0.1, 3.0])
with pm.Model() as m:
    alpha = pm.Gamma("alpha", 2.0, 1.0)
    z = pmp.Partition("z", pmp.CRP(alpha), n=3)
    pmp.NormalNormal("y", partition=z, mu0=0, sigma0=2, sigma=1, observed=y)
with pm.do(m, {"alpha": 0.3}):
    idata = pm.sample(draws=3000, tune=200, chains=2, cores=1, progressbar=False, random_seed=4, compute_convergence_checks=False)
from scipy import stats
def log_joint(p):  # CRP(0.3) EPPF times the Normal-Normal marginal of each block, written here
    total = sum(math.log(0.3) + gammaln((p == b).sum()) for b in np.unique(p)) + gammaln(0.3) - gammaln(3.3)
    for b in np.unique(p):
        yb = y[p == b]
        total += stats.multivariate_normal.logpdf(yb, np.zeros(len(yb)), np.eye(len(yb)) + 4.0)
    return total
parts = [(0,0,0),(0,0,1),(0,1,0),(0,1,1),(0,1,2)]
w = np.array([math.exp(log_joint(np.array(p))) for p in parts]); w /= w.sum()
lab = pmp.posterior_dataset(idata)["z"].values.reshape(-1, 3).astype(int)
freq = np.array([np.mean((lab == np.array(p)).all(1)) for p in parts])
tv = 0.5 * np.abs(freq - w).sum()
ok = tv < 0.03; detail = (tv, freq.round(3), w.round(3))
"""),
    Case("pm.observe makes the partition data", """
with pm.Model() as m:
    alpha = pm.Gamma("alpha", 2.0, 1.0)
    pmp.Partition("z", pmp.CRP(alpha), n=8)
with pm.observe(m, {"z": np.array([2, 2, 0, 0, 0, 2, 1, 1])}):
    idata = pm.sample(draws=2000, tune=500, chains=2, cores=1, progressbar=False, random_seed=1)
got = float(pmp.posterior_dataset(idata)["alpha"].mean())
ok = abs(got - 1.720) < 0.1; detail = got  # 1.720: the quadrature of the case above
"""),
]
for form, code in [
    ("pm.Censored with far bounds", 'pm.Censored("yy", pm.Normal.dist(mu[z], 0.7), lower=-1e6, upper=1e6, observed=y)'),
    ("pm.Truncated with far bounds", 'pm.Truncated("yy", pm.Normal.dist(mu[z], 0.7), lower=-1e6, upper=1e6, observed=y)'),
    ("pm.CustomDist", 'pm.CustomDist("yy", mu[z], logp=lambda v, m: -0.5 * ((v - m) / 0.7) ** 2, observed=y)'),
    ("pm.MvNormal rows", 'pm.MvNormal("yy", mu=mu[z][:, None], cov=[[0.49]], observed=y[:, None])'),
]:
    CASES.append(Case(f"nc: {form}: the collapsed model's partition posterior", f"""
from collections import Counter
y = np.array([-2.0, -1.6, 0.1, 1.7, 2.2])
RUN = dict(draws=6000, tune=500, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)
def law(idata):
    c = Counter(map(tuple, pmp.posterior_dataset(idata)["z"].values.reshape(-1, 5).astype(int).tolist()))
    return {{k: v / sum(c.values()) for k, v in c.items()}}
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=5)
    pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=0.7, observed=y)
    want = law(pm.sample(**RUN, random_seed=1))
with pm.Model():
    z = pmp.Partition("z", pmp.CRP(1.0), n=5)
    mu = pm.Normal("mu", 0.0, 2.0, shape=5)
    {code}
    got = law(pm.sample(**RUN, random_seed=2))
tv = 0.5 * sum(abs(got.get(k, 0) - want.get(k, 0)) for k in set(got) | set(want))
ok = tv < 0.04; detail = tv
""", timeout=400))


def run_case(case: Case) -> dict:
    """Run one case in a fresh interpreter; the outcome and the time it took."""
    source = textwrap.dedent(PRELUDE) + textwrap.dedent(case.code)
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", RUNNER], input=source, capture_output=True, text=True,
                              timeout=case.timeout, cwd=tempfile.gettempdir(),
                              env={**os.environ, "PYTHONWARNINGS": "ignore"}, start_new_session=True)
    except subprocess.TimeoutExpired:
        return {"name": case.name, "outcome": "hang", "detail": f"no answer in {case.timeout:.0f} s",
                "seconds": time.perf_counter() - start}
    seconds = time.perf_counter() - start
    lines = [line for line in proc.stdout.splitlines() if line.startswith("BATTERY-RESULT ")]
    if not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"name": case.name, "outcome": "crash", "detail": f"exit {proc.returncode}: {' | '.join(tail)}",
                "seconds": seconds}
    result = json.loads(lines[-1][len("BATTERY-RESULT "):])
    if "value" in result:
        outcome = "silent wrong" if (case.error is not None or not result["value"]) else "correct"
        return {"name": case.name, "outcome": outcome, "detail": result.get("detail", ""), "seconds": seconds}
    message = f"{result['error']}: {result['message']}"
    if case.error is not None:
        outcome = "clear error" if re.search(case.error, message) else "unclear"
    else:
        outcome = "crash"
    return {"name": case.name, "outcome": outcome, "detail": message[:300], "seconds": seconds}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="run the cases whose name contains this")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once")
    parser.add_argument("--json", default=None, help="also write the outcomes to this file")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.only is None or args.only in c.name]
    import pymc  # noqa: PLC0415 (versions for the header only)

    print(f"# battery: {len(cases)} cases, Python {sys.version.split()[0]}, PyMC {pymc.__version__}, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        outcomes = list(pool.map(run_case, cases))
    for row in outcomes:
        mark = "" if row["outcome"] in ("correct", "clear error") else "  <--"
        print(f"{row['outcome']:>12}  {row['seconds']:6.1f} s  {row['name']}{mark}")
        if mark:
            print(f"{'':>24}{row['detail']}")
    counts = collections.Counter(row["outcome"] for row in outcomes)
    order = ["correct", "clear error", "unclear", "silent wrong", "crash", "hang"]
    print("counts: " + ", ".join(f"{key} {counts.get(key, 0)}" for key in order))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(outcomes, handle, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
