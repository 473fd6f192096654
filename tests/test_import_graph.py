"""The import graph of the project's packages: imports point one way, and nothing hides a circle.

README: ``contest -> synth -> scoring -> numpy/scipy``. Within a package, modules may import each
other, but never in a circle: a circle works only as long as some import sits inside a function
(or below the definitions it needs), and breaks at the next innocent reordering. So the graph here
counts every import statement, at module level or inside a function, and an import inside a
function is allowed only for a heavy or optional dependency, said on its line
(``# local: <reason>``).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bench", "contest", "scoring", "synth")
#: Which package may import which (the one-way direction of the README's architecture). The
#: benchmarks (bench/) measure everything and nothing imports them.
MAY_IMPORT = {"scoring": {"scoring"}, "synth": {"synth", "scoring"}, "contest": {"contest", "synth", "scoring"},
              "bench": {"bench", "contest", "synth", "scoring"}}


def _modules() -> dict[str, tuple[Path, bool]]:
    """{dotted module name: (file, is a package's __init__)} of the project's own code."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if "migrations" in rel.parts:
                continue
            parts = rel.with_suffix("").parts
            is_package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


MODULES = _modules()


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The project modules an import statement loads (submodules named by ``from X import y`` too)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = (module if is_package else module.rsplit(".", 1)[0]).split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        names = [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names]
    out = []
    for name in names:
        while name and name not in MODULES and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in MODULES and name != module:
            out.append(name)
    return out


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    """(edges between project modules, local imports without a stated reason as 'file:line: code')."""
    edges: dict[str, set[str]] = {}
    unexplained = []
    for module, (path, is_package) in MODULES.items():
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        edges[module] = {t for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
                         for t in _targets(module, is_package, node)}
        for func in ast.walk(tree):
            if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(func):
                    if isinstance(node, ast.Import | ast.ImportFrom) and "# local:" not in lines[node.lineno - 1]:
                        unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return edges, unexplained


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, set[str]], list[str]]:
    """:func:`_graph`, read when a test of this file runs: parsing every module takes about 2 s, which every
    test process paid at collection while it was computed at import."""
    return _graph()


def test_the_graph_sees_the_imports_it_must_see(graph):
    """The checker is not vacuous: known edges are found, and a constructed circle is reported."""
    edges, _ = graph
    assert {"scoring.vocabulary", "scoring.traces"} <= edges["scoring.scores"]
    assert "scoring.algorithms.registry" in edges["scoring.algorithms.attacks"]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle(package, graph):
    circles = [c for c in _circles(graph[0]) if c[0].split(".")[0] == package]
    assert not circles, f"import circles in {package}: {circles}"


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_inside_functions_say_why(package, graph):
    found = [line for line in graph[1] if line.startswith(f"{package}/")]
    assert not found, "imports inside functions without '# local: <reason>':\n" + "\n".join(found)


def test_imports_point_one_way(graph):
    wrong = sorted(f"{m} imports {t}" for m, targets in graph[0].items() for t in targets
                   if t.split(".")[0] not in MAY_IMPORT[m.split(".")[0]])
    assert not wrong, wrong
