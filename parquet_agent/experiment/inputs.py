"""What a run checks and hashes about its inputs before the freeze: the corpus snapshot against
the folder's manifest, the scope file against the questions and corpus, and the content hashes
of the inputs and prompts that would change results (recorded in the manifest; a resume whose
hashes differ is refused)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from parquet_agent.agent.loop import PROMPT_VERSION, system_prompt
from parquet_agent.corpus.index import CorpusIndex
from parquet_agent.corpus.manifest import MANIFEST_NAME, read_corpus_manifest
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import ConfigError, CorpusError
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.files import sha256_file
from parquet_agent.judge import judge_prompt_hash


def load_scopes(config: ExperimentConfig, question_ids: tuple[str, ...],
                 snapshot: CorpusSnapshot) -> dict[str, list[str]] | None:
    """The `scope` file's file_stems per question, checked against the questions and corpus."""
    if config.scope is None:
        return None
    try:
        data = json.loads(config.scope.read_text(encoding="utf-8"))
        scopes = data["scopes"]
    except FileNotFoundError:
        raise ConfigError(f"scope: no such file {config.scope}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"scope {config.scope.name}: expected JSON "
                          '{"schema_version": 1, "scopes": {question_id: [file_stem, ...]}} '
                          f"({exc})") from None
    missing = [q for q in question_ids if not scopes.get(q)]
    if missing:
        raise ConfigError(f"scope {config.scope.name}: no file_stems for {len(missing)} sampled "
                          f"question(s): {', '.join(missing[:10])}; every sampled question needs "
                          "a scope (none is silently unscoped)")
    index = CorpusIndex.open(config.corpus, snapshot)
    unknown = sorted({s for q in question_ids for s in scopes[q] if index.locate(s) is None})
    if unknown:
        raise ConfigError(f"scope {config.scope.name}: {len(unknown)} file_stem(s) are not in "
                          f"the corpus: {', '.join(unknown[:10])}")
    return {q: list(scopes[q]) for q in question_ids}


def checked_snapshot(corpus: Path) -> CorpusSnapshot:
    """Snapshot the corpus; when its folder has a manifest, the files must match it."""
    snapshot = CorpusSnapshot.take(corpus)
    if (corpus / MANIFEST_NAME).exists():
        check = read_corpus_manifest(corpus).snapshot.diff(snapshot)  # hashes taken once
        if not check.ok:
            raise CorpusError(f"{corpus} differs from its manifest.json: {check.describe()}; "
                              "rebuild the corpus or its manifest before running")
    return snapshot


def input_hashes(config: ExperimentConfig) -> dict[str, str]:
    """Content hashes of the input files whose change would change results: the questions
    (texts and references, not only their ids), the scope file and scripted models' scripts."""
    hashes = {"questions": sha256_file(config.questions)}
    if config.scope is not None:
        hashes["scope"] = sha256_file(config.scope)
    for spec in (*config.models, config.judge):
        if spec.script:
            hashes[f"script:{spec.name}"] = sha256_file(Path(spec.script))
    return hashes


def prompt_hashes(tools: dict[str, Any]) -> dict[str, str]:
    def h(text: str) -> str:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    hashes = {f"agent:{s}": h(PROMPT_VERSION + system_prompt(s)) for s in tools}
    hashes["judge"] = judge_prompt_hash()
    for s, t in tools.items():
        specs = [asdict(spec) for spec in t.specs()]
        hashes[f"tools:{s}"] = h(json.dumps(specs, sort_keys=True))
    return hashes
