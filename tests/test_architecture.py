"""The package's import graph: no circles, and the layers of docs/architecture.md point downwards.

The graph is read from the source with :mod:`ast` (nothing is imported). Counted: every
``import``/``from ... import`` of a ``pymc_partitions`` module anywhere in a file, at module
level, inside functions (deferred imports) and under ``if TYPE_CHECKING`` alike, because a
deferred import is still a dependency and a circle hidden in a function body is still a circle.
``from pkg import name`` counts an edge to ``pkg.name`` when that is a module, else to ``pkg``.
Not counted: the implicit import of the parent packages' ``__init__`` (importing
``pymc_partitions.pymc.steps`` runs ``pymc_partitions/__init__.py``, which imports everything:
counting that would make every module a circle with the top package). Each ``__init__.py`` is a
node of its own with the edges it writes.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "pymc_partitions"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

# the layers (see docs/architecture.md); a module belongs to the first prefix it starts with
MODEL = ("pymc_partitions.pymc",)
RESULTS = ("pymc_partitions.results",)
KERNELS = (
    "pymc_partitions.samplers",
    "pymc_partitions.families",
    "pymc_partitions.summaries",
    "pymc_partitions.diagnostics",
    "pymc_partitions.coupling",
    "pymc_partitions.partition",
    "pymc_partitions.priors",
)


def module_names(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name -> file of every module of the package (``__init__.py`` names its package)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _imports(name: str, path: Path, modules: dict[str, Path]):
    """(module imported from, names imported) of every import statement of the module ``name``."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            yield source, [alias.name for alias in node.names]


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the package modules it imports (see the module docstring for what counts)."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for source, names in _imports(name, path, modules):
            targets = [f"{source}.{n}" if f"{source}.{n}" in modules else source for n in names] or [source]
            for target in targets:
                # `import pymc_partitions.x.y` names the deepest existing module
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _in(name: str, layer: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in layer)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Edges that point upwards: model side or kernels into results; kernels into the PyMC layer."""
    bad = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            if (_in(source, MODEL) or _in(source, KERNELS)) and _in(target, RESULTS):
                bad.append(f"{source} -> {target}")
            elif _in(source, KERNELS) and _in(target, MODEL):
                bad.append(f"{source} -> {target}")
    return bad


def test_graph_is_read():
    graph = import_graph()
    assert "pymc_partitions.pymc.steps" in graph
    assert "pymc_partitions.samplers.gibbs" in graph["pymc_partitions.pymc.steps"]
    # a function-level import counts
    assert any(graph.values())


def test_no_import_circles():
    found = cycles(import_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_layers_point_downwards():
    bad = layer_violations(import_graph())
    assert not bad, "imports against the layers: " + "; ".join(bad)


#: The result containers of both lines (kept in pymc/compat.py, where the model side builds results):
#: on the results side only the reader imports them; the other modules read through it.
CONTAINERS = {"is_datatree", "is_inferencedata", "is_multitrace", "not_a_result_hint", "_check_result", "group_names",
              "posterior_dataset", "made_group", "add_groups", "new_result"}
READER = "pymc_partitions.results.reader"


def test_results_side_reads_results_through_the_reader():
    modules = module_names()
    bad = [f"{name} imports {sorted(set(names) & CONTAINERS)} from {source}"
           for name, path in modules.items() if _in(name, RESULTS) and name != READER
           for source, names in _imports(name, path, modules)
           if source == "pymc_partitions.pymc.compat" and set(names) & CONTAINERS]
    assert not bad, "; ".join(bad)


def test_checks_catch_a_circle_and_an_upward_import():
    """The two checks above can fail: a made-up graph with a circle and upward edges."""
    graph = {
        "pymc_partitions.samplers.gibbs": {"pymc_partitions.samplers.network"},
        "pymc_partitions.samplers.network": {"pymc_partitions.samplers.gibbs", "pymc_partitions.pymc.steps"},
        "pymc_partitions.pymc.steps": {"pymc_partitions.results.reader"},
        "pymc_partitions.results.reader": {"pymc_partitions.pymc.steps"},
    }
    assert cycles(graph) == [
        ["pymc_partitions.pymc.steps", "pymc_partitions.results.reader"],
        ["pymc_partitions.samplers.gibbs", "pymc_partitions.samplers.network"],
    ]
    assert layer_violations(graph) == [
        "pymc_partitions.pymc.steps -> pymc_partitions.results.reader",
        "pymc_partitions.samplers.network -> pymc_partitions.pymc.steps",
    ]


def test_pmp_h_is_the_module_that_defines_the_functions():
    """``pmp.h`` (and ``import pymc_partitions.h``) is :mod:`pymc_partitions.coupling.functions`."""
    import pymc_partitions as pmp  # noqa: PLC0415
    import pymc_partitions.h  # noqa: PLC0415
    from pymc_partitions.coupling import functions  # noqa: PLC0415
    from pymc_partitions.h import n_clusters  # noqa: PLC0415

    assert pmp.h is pymc_partitions.h is functions and n_clusters is functions.n_clusters
    assert set(functions.__all__) <= set(dir(pmp.h))


def test_every_name_in_a_modules_all_exists():
    """``from module import *`` works for every module: each name its ``__all__`` lists is defined
    (``results.loo`` listed an ``install`` it no longer had)."""
    import importlib  # noqa: PLC0415

    missing = {}
    for name in module_names():
        module = importlib.import_module(name)
        absent = [entry for entry in getattr(module, "__all__", ()) if not hasattr(module, entry)]
        if absent:
            missing[name] = absent
    assert not missing
