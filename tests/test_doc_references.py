"""What a newcomer opens first (the README, configs/, notebooks/) names only documents that
are in the repository (issue 27 item 7: configs/demo.toml sent readers to a DESIGN.md that
is not)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIRST_OPENED = [REPO / "README.md", *sorted((REPO / "configs").glob("*.toml")),
                *sorted((REPO / "notebooks").glob("*.ipynb"))]
MD_REFERENCE = re.compile(r"[\w./-]*\b[\w-]+\.md\b")


def _found(reference: str, where: Path) -> bool:
    candidates = [REPO / reference, where.parent / reference, REPO / "docs" / reference]
    return any(c.is_file() for c in candidates)


def test_every_document_named_is_in_the_repository():
    missing = [f"{path.relative_to(REPO)}: {m.group(0)}" for path in FIRST_OPENED
               for m in MD_REFERENCE.finditer(path.read_text(encoding="utf-8"))
               if not _found(m.group(0), path)]
    assert missing == []


def test_the_check_sees_a_missing_document(tmp_path):
    assert MD_REFERENCE.findall("as in DESIGN.md.") == ["DESIGN.md"]
    assert not _found("DESIGN.md", REPO / "configs" / "demo.toml")
    assert _found("docs/models.md", REPO / "README.md") and _found("models.md", REPO / "README.md")
