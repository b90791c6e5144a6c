"""Writes tests/store/fixtures/run-v<N>: a small run folder in journal schema version N, the
current one (checked in).

Run it only when the on-disk format changes on purpose: it writes a new folder (run-v1 was
written by schema version 1, run-v2 by version 2, ...) and never touches the old ones, which the
tests keep reading through the versioned reader.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from store_fixtures import (  # noqa: E402
    conversation_bodies,
    make_attempt,
    make_config,
    make_frozen,
    make_reply,
)

from parquet_agent.experiment.run import create_run
from parquet_agent.store import (  # noqa: E402
    CaseFinished,
    CaseStarted,
    Judgment,
    ModelAttempt,
    ModelTurn,
    RunStore,
    ToolCallEvent,
)
from parquet_agent.transcript import SCHEMA_VERSION  # noqa: E402


def main() -> None:
    target = Path(__file__).parent / "fixtures"
    name = f"run-v{SCHEMA_VERSION}"
    shutil.rmtree(target / name, ignore_errors=True)
    run = create_run(RunStore(target), make_config(target), make_frozen(), run_id=name)
    for i, finish in ((1, True), (2, False)):
        case = f"Q00{i}__flash__sql"
        j = run.journal(case)
        j.append(CaseStarted(case_id=case, question_id=f"Q00{i}", model="flash", strategy="sql"))
        for turn, body in enumerate(conversation_bodies(i, turns=2), 1):
            label = f"{case}/turn-{turn:02d}"
            req = run.raw.write(f"{label}/attempt-1.request.json", body)
            resp = run.raw.write(f"{label}/attempt-1.response.json", b'{"id":"r%d"}' % turn)
            j.append(ModelAttempt(label, make_attempt(label)))
            j.append(ModelTurn(turn=turn, label=label, request_path=req, response_path=resp,
                               reply=make_reply(text=f"answer {turn}")))
            j.append(ToolCallEvent(turn=turn, call_id=f"c{turn}", name="sql", arguments={},
                                   ok=True, model_text="rows " * 400))
        if finish:
            j.append(Judgment(judge="judge", correctness=75.0, citation_support=50.0,
                              rationale="fine", scored=True))
            j.append(CaseFinished(status="complete", answer="answer 2", wall_ms=12.0))
    run.raw.write("meta/models.json", b'{"data":[{"id":"m"}]}')
    run.close()
    (target / name / ".lock").unlink()


if __name__ == "__main__":
    main()
