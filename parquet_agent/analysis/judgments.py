"""The judgments a run's re-judgings appended (`judgments/`), read back: which judgings there
are, every appended judgment by case, and which judging is primary. Written by
`judge.rejudge`; read by the fold, the case records and the report.

    judgments/<judging id>.json     the judging's info (judge provenance, created_at, batch)
    judgments/<judging id>.jsonl    its judgments, a journal of `Judgment` events
    judgments/primary.json          {"judging": id or "run"}: whose judgments figures use
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parquet_agent.store.journal import read_journal
from parquet_agent.transcript import Judgment

JUDGMENTS_DIR = "judgments"
PRIMARY_FILE = "primary.json"
RUN_JUDGE = "run"  # the name of the run's own judgments (the config's judge)


def judgments_in(path: Path) -> list[Judgment]:
    if not path.exists():
        return []
    return [e.payload for e in read_journal(path).events if isinstance(e.payload, Judgment)]


def judgings(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Judging id -> its info file, for every judging of the run."""
    folder = Path(run_dir) / JUDGMENTS_DIR
    if not folder.is_dir():
        return {}
    return {p.stem: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(folder.glob("*.json")) if p.name != PRIMARY_FILE}


def appended_judgments(run_dir: Path) -> dict[str, list[Judgment]]:
    """Case id -> every appended judgment, judging by judging, in journal order."""
    out: dict[str, list[Judgment]] = {}
    for jid in judgings(run_dir):
        for j in judgments_in(Path(run_dir) / JUDGMENTS_DIR / f"{jid}.jsonl"):
            if j.case_id:
                out.setdefault(j.case_id, []).append(j)
    return out


def primary_judging(run_dir: Path) -> str | None:
    """The primary judging's id; None: the run's own judge (the config's)."""
    path = Path(run_dir) / JUDGMENTS_DIR / PRIMARY_FILE
    if not path.exists():
        return None
    value = json.loads(path.read_text(encoding="utf-8")).get("judging")
    return None if value in (None, RUN_JUDGE) else value
