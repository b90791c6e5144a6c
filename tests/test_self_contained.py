"""The suite tests the project from its own tree: no test reads a path beside or above the
clone (a fresh clone with nothing beside it must pass). Licensed data the repository does not
carry is read only through tests/realdata.py, from a folder the user names."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            ids.add(id(body[0].value))
    return ids


def _outside_paths(source: str) -> list[tuple[int, str]]:
    """Path pieces that leave the tree: `... / "shared"`, "../shared", "/work/..."."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) \
                and isinstance(node.right, ast.Constant) and node.right.value == "shared":
            found.append((node.lineno, "/ 'shared'"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if "../shared" in node.value or node.value.startswith("/work/"):
                found.append((node.lineno, node.value))
    return found


def test_no_test_reads_beside_the_clone():
    offenders = [f"{path.relative_to(TESTS.parent)}:{line}: {text!r}"
                 for path in sorted(TESTS.rglob("*.py")) if path != Path(__file__).resolve()
                 for line, text in _outside_paths(path.read_text(encoding="utf-8"))]
    assert offenders == [], "\n".join(offenders)


def test_the_check_sees_the_ways_a_path_leaves_the_tree():
    assert _outside_paths('P = ROOT / ".." / "shared" / "realdata"') == [(1, "/ 'shared'")]
    assert _outside_paths('P = Path("../shared/wire_replay")') == [(1, "../shared/wire_replay")]
    assert _outside_paths('LAYERS = ["shared", "corpus"]') == []
    assert _outside_paths('P = Path("/work/shared/x")')[0][0] == 1
    assert _outside_paths('"""Reads ../shared in a docstring only."""\nX = 1') == []
