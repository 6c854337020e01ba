"""Run every ```python block of README.md and docs/*.md, and the example script.

Each Markdown file's blocks run in order in one fresh namespace (later blocks may use names
defined by earlier ones), in a temporary working directory so that files the examples write
(e.g. ``pmp.save(idata, "galaxies_dpmm.nc")``) do not land in the repository. Shell commands
must be fenced as ```bash; they are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from limits import CHILD_PYTHON_TIMEOUT

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def code_blocks(path: Path, language: str = "python") -> list[tuple[int, str]]:
    """(line number, source) of every fenced block in ``language``."""
    text = path.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start()) + 2, m.group(2))
        for m in _FENCE.finditer(text)
        if m.group(1).lower() == language
    ]


def test_doc_files_found():
    names = {p.name for p in DOC_FILES}
    assert {"README.md", "getting_started.md", "models.md", "steps.md", "unbiased.md", "summaries.md"} <= names


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_examples_run(path, tmp_path, monkeypatch):
    blocks = code_blocks(path)
    if not blocks:
        pytest.skip(f"{path.name} has no python blocks")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"docs_{path.stem}"}
    for line, source in blocks:
        code = compile(source, f"{path.relative_to(ROOT)}:{line}", "exec")
        try:
            exec(code, namespace)
        except Exception as exc:  # name the failing block in the report
            raise AssertionError(f"python block at {path.name} line {line} failed: {exc!r}") from exc


def test_readme_quick_start_works_on_two_groups_and_on_a_reloaded_result(tmp_path, monkeypatch):
    """The quick start calls pmp.summary(idata) after the `with` block: it must work when every
    draw has at most two clusters (labels only 0/1) and on the result saved and loaded again."""
    import arviz as az  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    import pymc_partitions as pmp  # noqa: PLC0415

    monkeypatch.chdir(tmp_path)
    source = code_blocks(ROOT / "README.md")[0][1]
    data_line = next(line for line in source.splitlines() if line.startswith("y = "))
    summaries = source[source.index("print(pmp.summary(idata))"):]
    # far out in the prior's tails (mu0 = 20, sigma0 = 10), so that no draw opens a third cluster
    two_groups = "y = np.r_[np.full(20, -40.0), np.full(20, 80.0)] + np.random.default_rng(0).normal(scale=0.3, size=40)"
    namespace = {"__name__": "readme_two_groups"}
    exec(compile(source.replace(data_line, two_groups), "README.md quick start", "exec"), namespace)
    idata = namespace["idata"]
    assert pmp.posterior_dataset(idata)["z"].values.max() == 1  # two clusters at most in every draw
    pmp.save(idata, "two.nc")
    idata.to_netcdf("two_az.nc")
    for reloaded in (pmp.load("two.nc"), az.from_netcdf("two_az.nc")):
        exec(compile(summaries, "README.md quick start", "exec"), dict(namespace, idata=reloaded))


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_shell_commands_not_fenced_as_python(path):
    for line, source in code_blocks(path):
        assert not re.search(r"^\s*(pip|python|bash|cd|git)\s", source, re.MULTILINE), (
            f"{path.name} line {line}: shell command in a python block; fence it as bash"
        )


def test_readme_opens_with_install_and_test_commands():
    blocks = [src.strip() for _, src in code_blocks(ROOT / "README.md", "bash")]
    assert blocks[:2] == [
        "pip install -e . && python examples/demo.py",
        'pip install -e ".[test]" && python -m pytest -q',
    ]


def test_demo_script_runs():
    env = dict(os.environ)  # this checkout's package, not another installed one
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=CHILD_PYTHON_TIMEOUT, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout.lower()
    assert "number of clusters" in out, proc.stdout
    assert re.search(r"^\s*\d+\s+[01]\.\d{3}\s*$", proc.stdout, re.MULTILINE), proc.stdout  # K / probability rows
    assert "alpha" in out
    # the wall time beside PyMC's "took ... seconds", and what the difference is (issue 24 item 9)
    wall, drawing = map(float, re.search(r"Wall time of pm.sample: ([0-9.]+) s, of which drawing the chains "
                                         r"([0-9.]+) s \(PyMC's 'took \.\.\. seconds'\)", proc.stdout).groups())
    assert 0.0 < drawing <= wall + 0.05, proc.stdout
    assert "one-time compilation of the numba kernels and PyTensor functions" in proc.stdout


def test_karate_irm_example_runs(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "karate_irm.py"), "--quick"],
        cwd=tmp_path, capture_output=True, text=True, timeout=CHILD_PYTHON_TIMEOUT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ari = float(re.search(r"adjusted Rand index to the two factions: (-?[0-9.]+)", proc.stdout).group(1))
    assert ari > 0.3, proc.stdout  # the IRM's clusters follow the split (hubs apart): about 0.6
    assert (tmp_path / "karate_coclustering.png").stat().st_size > 1000


def test_ethanol_regressions_example_runs(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "ethanol_regressions.py"), "--quick"],
        cwd=tmp_path, capture_output=True, text=True, timeout=CHILD_PYTHON_TIMEOUT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    k = re.search(r"point estimate: (\d+) clusters, sizes \[(\d+), (\d+)", proc.stdout)
    assert k and k.group(1) == "2", proc.stdout  # the lean and the rich branch
    slopes = [float(v) for v in re.findall(r"E = [0-9.]+ \+ (-?[0-9.]+) NOx", proc.stdout)]
    assert len(slopes) == 2 and min(slopes) < 0 < max(slopes), proc.stdout  # one rising, one falling line
    assert (tmp_path / "ethanol_regressions.png").stat().st_size > 10_000


def test_unbiased_example_runs(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "unbiased_gene.py"), "--quick"],
        cwd=tmp_path, capture_output=True, text=True, timeout=CHILD_PYTHON_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"largest cluster \| data\] = 0\.\d{3} \(SE 0\.\d{3}; 95% CI", proc.stdout), proc.stdout
    for coupling in ("ot", "maximal", "crn"):
        assert re.search(rf"^{coupling}\s+meeting time median \d+", proc.stdout, re.MULTILINE), proc.stdout
    assert (tmp_path / "unbiased_gene.png").stat().st_size > 10_000


def test_docstring_examples_run():
    """Every ``>>>`` example in the package's docstrings (doctest)."""
    import doctest  # noqa: PLC0415
    import importlib  # noqa: PLC0415
    import pkgutil  # noqa: PLC0415

    import pymc_partitions  # noqa: PLC0415

    tried = 0
    for info in pkgutil.walk_packages(pymc_partitions.__path__, "pymc_partitions."):
        module = importlib.import_module(info.name)
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, f"{info.name}: {result.failed} docstring example(s) failed"
        tried += result.attempted
    assert tried >= 5
