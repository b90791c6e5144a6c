"""Imports flow one way: lower layers never import higher ones, modules form no import cycle,
and no module imports another module's private (`_name`) names. And the house's size rules:
no module over 500 lines, no function over 80 (docs/STYLE: small modules with one job).

Every `import` / `from ... import` of every module under `parquet_agent/` is read with `ast`,
module-level and lazy ones alike (inside functions, methods and `if TYPE_CHECKING:` blocks:
a lazy import is still a dependency, it only moves the failure to run time). The order is the
one docs/architecture.md draws; change it there and here together.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "parquet_agent"

# Lowest first: the package's folders are its layers (docs/architecture.md draws the same table).
# A module may import its own layer and the layers below it. The loose top-level modules are the
# shared layer; the package's `__init__`, `__main__` and the contract's `case_audit` command sit
# with the CLI on top. No module is reassigned by name.
SHARED = ("parquet_agent.errors", "parquet_agent.files", "parquet_agent.memory",
          "parquet_agent.checks", "parquet_agent.escape", "parquet_agent.console",
          "parquet_agent.lazy")
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("shared", SHARED),
    *((name, (f"parquet_agent.{name}",)) for name in (
        "corpus", "models", "tools", "transcript", "store", "analysis", "agent", "judge",
        "engine", "report", "experiment", "audit", "explore", "bench")),
    ("cli", ("parquet_agent.cli", "parquet_agent.__main__", "parquet_agent.case_audit")),
)

# Back-edges still excused, each to be removed by moving code down or up. An entry that no longer
# matches an import fails the test, so this list cannot outlive the edges it excuses.
PENDING_BACK_EDGES: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module
    file: str  # relative to the repository
    line: int
    names: tuple[str, ...]  # names taken with `from target import ...`
    typing_only: bool = False  # under `if TYPE_CHECKING:`: a dependency, but never executed

    def where(self) -> str:
        return f"{self.file}:{self.line}: {self.source} -> {self.target}"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, modules: dict[str, Path], package_dir: Path = PACKAGE) -> list[Edge]:
    """Every import of our own package in `path`, resolved to the module it loads."""
    source = module_name(path, package_dir)
    file = str(path.relative_to(package_dir.parent))
    package = source if path.name == "__init__.py" else source.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = {id(n) for block in ast.walk(tree) if _is_type_checking(block)
                   for stmt in block.body for n in ast.walk(stmt)}
    edges = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            edges += [Edge(source, a.name, file, node.lineno, (), id(node) in typing_only)
                      for a in node.names if a.name.split(".")[0] == "parquet_agent"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "parquet_agent":
                continue
            plain = []
            for alias in node.names:  # `from pkg import submodule` depends on the submodule
                if f"{target}.{alias.name}" in modules:
                    edges.append(Edge(source, f"{target}.{alias.name}", file, node.lineno, (),
                                      id(node) in typing_only))
                else:
                    plain.append(alias.name)
            if plain:
                edges.append(Edge(source, target, file, node.lineno, tuple(plain),
                                  id(node) in typing_only))
    return edges


def _is_type_checking(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def layer_of(module: str) -> int:
    if module == "parquet_agent":
        return len(LAYERS) - 1
    best, rank = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    return rank


def all_edges() -> list[Edge]:
    modules = all_modules()
    return [e for path in modules.values() for e in imports_of(path, modules)]


def back_edges(edges: list[Edge]) -> list[Edge]:
    return [e for e in edges if layer_of(e.target) > layer_of(e.source)]


def private_imports(edges: list[Edge]) -> list[Edge]:
    return [e for e in edges if e.target != e.source
            and any(n.startswith("_") and not n.startswith("__") for n in e.names)]


def cycles(edges: list[Edge]) -> list[list[Edge]]:
    """The import cycles between modules, each as the edges that close it (Tarjan's SCCs).
    Imports under `if TYPE_CHECKING:` never run, so they close no cycle."""
    graph: dict[str, list[Edge]] = {}
    for e in edges:
        if e.source != e.target and not e.typing_only:
            graph.setdefault(e.source, []).append(e)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for e in graph.get(v, ()):
            if e.target not in index:
                visit(e.target)
                low[v] = min(low[v], low[e.target])
            elif e.target in stack:
                low[v] = min(low[v], index[e.target])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [[e for v in sorted(c) for e in graph[v] if e.target in c] for c in found]


def describe(edges: list[Edge]) -> str:
    return "\n".join(
        f"  {e.where()} ({LAYERS[layer_of(e.source)][0]} -> {LAYERS[layer_of(e.target)][0]}"
        + (f"; imports {', '.join(e.names)}" if e.names else "") + ")" for e in edges)


# -- the tests ------------------------------------------------------------------------------------


def test_every_module_has_a_layer():
    unmapped = sorted(m for m in all_modules() if layer_of(m) < 0)
    assert not unmapped, f"modules in no layer (add them to LAYERS and docs/architecture.md): {unmapped}"


def test_no_lower_layer_imports_a_higher_one():
    found = [e for e in back_edges(all_edges()) if (e.source, e.target) not in PENDING_BACK_EDGES]
    assert not found, ("imports that run against the layer order "
                       "(docs/architecture.md; move the code down or inject it):\n" + describe(found))


def test_pending_back_edges_still_exist():
    seen = {(e.source, e.target) for e in back_edges(all_edges())}
    gone = sorted(PENDING_BACK_EDGES - seen)
    assert not gone, f"no longer imported: remove these from PENDING_BACK_EDGES: {gone}"


def test_modules_form_no_import_cycle():
    found = cycles(all_edges())
    assert not found, "import cycles between modules:\n" + "\n".join(
        describe(c) for c in found)


def piece_of(module: str) -> str:
    """The top-level piece a module belongs to: its folder, or the module at the top."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def test_top_level_pieces_form_no_import_cycle():
    """Folders are the layers: no cycle among the top-level pieces either (lazy imports
    included), so each folder can be read, tested and replaced from the bottom up."""
    pieces = [Edge(piece_of(e.source), piece_of(e.target), e.file, e.line, e.names)
              for e in all_edges() if piece_of(e.source) != piece_of(e.target)
              and not e.typing_only]
    found = cycles(pieces)
    assert not found, "import cycles between top-level pieces:\n" + "\n".join(
        describe(c) for c in found)


def test_no_module_imports_another_modules_private_names():
    found = private_imports(all_edges())
    assert not found, ("private names imported across modules (make them public where they "
                       "live, or move them):\n" + describe(found))


MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def oversized(path: Path, root: Path) -> list[str]:
    """`file: N lines` for a module over MAX_MODULE_LINES and `file:line name(): N lines` for
    each function or method (nested ones too, decorators included) over MAX_FUNCTION_LINES."""
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(root).as_posix()
    found = []
    if len(text.splitlines()) > MAX_MODULE_LINES:
        found.append(f"{rel}: {len(text.splitlines())} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if node.end_lineno - start + 1 > MAX_FUNCTION_LINES:
                found.append(f"{rel}:{start} {node.name}(): {node.end_lineno - start + 1} lines")
    return found


def test_no_module_over_500_lines_and_no_function_over_80():
    found = [f for path in sorted(PACKAGE.rglob("*.py")) for f in oversized(path, PACKAGE.parent)]
    assert not found, ("over the size rules (split the module by job, the function by step):\n"
                       + "\n".join(f"  {f}" for f in found))


# -- the checker checks what it claims ------------------------------------------------------------


def test_checker_sees_lazy_relative_and_private_imports(tmp_path):
    pkg = tmp_path / "parquet_agent"
    (pkg / "store").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "store" / "__init__.py").write_text("")
    (pkg / "store" / "run.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import parquet_agent.report\n"
        "def compare():\n    from parquet_agent.explore.compare import _pair\n"
        "    from ..report import exporter\n")
    modules = {"parquet_agent.store.run": pkg / "store" / "run.py",
               "parquet_agent.report.exporter": pkg / "report" / "exporter.py"}
    edges = imports_of(pkg / "store" / "run.py", modules, pkg)
    assert sorted((e.line, e.target, e.names, e.typing_only) for e in edges) == [
        (3, "parquet_agent.report", (), True),
        (5, "parquet_agent.explore.compare", ("_pair",), False),
        (6, "parquet_agent.report.exporter", (), False)]
    assert len(back_edges(edges)) == 3 and [e.line for e in private_imports(edges)] == [5]
    loop = [Edge("a.x", "a.y", "a/x.py", 1, ()), Edge("a.y", "a.x", "a/y.py", 2, ()),
            Edge("a.y", "a.z", "a/y.py", 3, ())]
    assert cycles(loop) == [loop[:2]]


def test_size_checker_counts_modules_functions_and_methods(tmp_path):
    lines = ["def fits():", *(f"    x = {i}" for i in range(79)),  # 80 lines: allowed
             "class K:", "    @staticmethod", "    def method():",  # 81 with its decorator
             *(f"        y = {i}" for i in range(79))]
    lines += [""] * (MAX_MODULE_LINES + 1 - len(lines))
    module = tmp_path / "big.py"
    module.write_text("\n".join(lines) + "\n")
    assert oversized(module, tmp_path) == [f"big.py: {MAX_MODULE_LINES + 1} lines",
                                           "big.py:82 method(): 81 lines"]
    module.write_text("\n".join(lines[:MAX_MODULE_LINES - 1]) + "\n")
    assert oversized(module, tmp_path) == ["big.py:82 method(): 81 lines"]
