"""The frozen inputs of a run (`manifest.json`) and the comparison that guards resumes.

    frozen = freeze(question_ids=ids, corpus_snapshot=snap.to_json(),
                    prompt_hashes={"agent": ..., "judge": ...}, sandbox_mode="...")
    run = RunStore("runs").create("experiment", experiment_fields(config, frozen))
    run.check_resume(freeze(...same inputs now...))        # ResumeRefusedError naming changes

`manifest.json` = `{schema_version, kind, run_id, created_at, ...}`; an experiment's adds
`{config, config_hash, question_ids,
corpus_snapshot, code_hash, prompt_hashes, package_versions, sandbox_mode, manifest_hash}`
(plus `engine` for a run started on a non-local engine: its nodes and their sandbox modes).
`manifest_hash` is `b2:` over the canonical JSON of every other field, so `Run.verify()` finds an
edited manifest. It is written atomically, once, and never rewritten. `read_manifest` undoes one
flipped bit (the only flip whose result matches its hash) and says so.

`compare_frozen(old, new)` lists every difference in words ("config.limits.max_tool_calls: 12 ->
8", "corpus file 2025-01.parquet changed", "prompt 'judge' changed", "code changed"). Fields that
cannot change results may differ on resume, and are listed apart (`allowed=`) so the resume can
record them: `limits.case_workers`, `limits.data_workers`, the experiment's display `name`,
how long a batch-judged run waits for its batch (`judge.batch_wait_s`), and
the port of a model's or the judge's `base_url` (a local server restarted elsewhere); the
snapshot's `taken_at` and file `mtime_ns` are ignored (a touched but identical file is the same
input). Everything else (model, prompt, tools, judge, questions, code) is refused.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from parquet_agent.files import canonical_json, tagged_hash
from parquet_agent.store.bitflip import flip_bit

SCHEMA_VERSION = 2  # 2: `kind` (a manifest without it is an experiment's, version 1)
# distributions whose versions are frozen: ours and those that shape requests, SQL or numbers
TRACKED_PACKAGES = ("parquet_agent", "duckdb", "pyarrow", "pandas", "numpy", "pydantic", "openai",
                    "anthropic", "google-genai", "httpx2", "httpx", "xxhash")
# where cases run does not change results: a run started on Ray resumes locally and back
RESUME_IGNORED = {("config", "engine")}
RECORDED_FIELDS = ("engine",)  # in the manifest, not compared on resume
RESUME_ALLOWED = {("config", "limits", "case_workers"), ("config", "limits", "data_workers"),
                  ("config", "name"), ("config", "judge", "batch_wait_s")}
FROZEN_FIELDS = ("question_ids", "corpus_snapshot", "code_hash", "prompt_hashes",
                 "package_versions", "sandbox_mode")


CODE_SUFFIXES = (".py", ".json", ".js", ".css", ".html", ".toml")  # code and package data


def code_hash(package_dir: str | Path | None = None) -> str:
    """`b2:` over the package's code and data files (`.py` and the price table, report assets,
    ...): sorted relative paths and contents, nothing else."""
    root = Path(package_dir) if package_dir else Path(__file__).resolve().parents[1]
    return tree_hash(root, [root], CODE_SUFFIXES)


def tree_hash(root: Path, folders: Sequence[Path], suffixes: Sequence[str], *,
              digest_size: int = 32) -> str:
    """`b2:` over the files with `suffixes` under `folders`: their paths relative to `root`,
    sorted, and their contents (`__pycache__` left out)."""
    h = hashlib.blake2b(digest_size=digest_size)
    files = [p for folder in folders for p in Path(folder).rglob("*")
             if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts]
    for path in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        # length-prefixed, so moving bytes between a name and a file cannot collide
        h.update(f"{len(rel)}:{rel}:{len(data)}:".encode())
        h.update(data)
    return "b2:" + h.hexdigest()


def package_versions(names: Sequence[str] = TRACKED_PACKAGES) -> dict[str, str | None]:
    """Installed versions of `names` (None for one that is not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def freeze(config: object = None, *, question_ids: Sequence[str],
           corpus_snapshot: Mapping[str, Any] | str | None, prompt_hashes: Mapping[str, str],
           sandbox_mode: str, code: str | None = None,
           packages: Mapping[str, str | None] | None = None,
           engine: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The `frozen` dict for `RunStore.create` / `Run.check_resume`.

    `config` is accepted for readability and not used: `create(config, frozen)` and
    `check_resume(frozen, config)` take the config themselves.

    `corpus_snapshot` is `CorpusSnapshot.to_json()` (a dict, or its JSON text); `code` and
    `packages` default to `code_hash()` and `package_versions()` of this process. `engine`
    (optional) describes where the first session's cases ran (`engine.CaseEngine.describe()`:
    kind, nodes and each node's sandbox mode); it is recorded, never compared on resume.
    """
    snapshot: Mapping[str, Any] | None
    if isinstance(corpus_snapshot, str):
        import json

        snapshot = json.loads(corpus_snapshot)
    else:
        snapshot = corpus_snapshot
    return {
        "question_ids": list(question_ids),
        "corpus_snapshot": dict(snapshot) if snapshot is not None else None,
        "code_hash": code if code is not None else code_hash(),
        "prompt_hashes": dict(prompt_hashes),
        "package_versions": dict(packages) if packages is not None else package_versions(),
        "sandbox_mode": sandbox_mode,
    } | ({"engine": dict(engine)} if engine is not None and engine.get("kind") != "local" else {})


def build_manifest(run_id: str, created_at: str, kind: str,
                   fields: Mapping[str, Any]) -> dict[str, Any]:
    """A new run's manifest: `schema_version`, `kind`, `run_id`, `created_at`, the kind's own
    `fields` (an experiment's config and frozen inputs, an audit's dataset and snapshot, ...)
    and `manifest_hash` over all of them."""
    reserved = sorted(set(fields) & {"schema_version", "kind", "run_id", "created_at",
                                     "manifest_hash"})
    if reserved:
        raise ValueError(f"manifest fields {reserved} are the core's own")
    body = {"schema_version": SCHEMA_VERSION, "kind": kind, "run_id": run_id,
            "created_at": created_at, **fields}
    body["manifest_hash"] = manifest_hash(body)
    return body


def manifest_hash(manifest: Mapping[str, Any]) -> str:
    return tagged_hash(canonical_json({k: v for k, v in manifest.items() if k != "manifest_hash"}))


def read_manifest(path: Path) -> tuple[Any, str | None]:
    """The manifest at `path` (ValueError when it is not JSON), and a note when one flipped bit
    was undone: the one flip that makes the manifest match its own `manifest_hash` again (a
    wrong guess matches with probability 2^-256). An edit of more than one bit is left as read,
    for `Run.verify()` to report."""
    raw = path.read_bytes()
    try:
        manifest, problem = json.loads(raw), None
    except RecursionError:  # no flipped bit makes 100,000 '[' a manifest: do not try them all
        raise ValueError(f"{path.name} is not a manifest: its JSON nests too deeply to read") \
            from None
    except ValueError as exc:  # a flip that broke the JSON: try each bit of the file
        manifest, problem = None, exc
    else:
        stored = manifest.get("manifest_hash") if isinstance(manifest, dict) else None
        if stored is None or stored == manifest_hash(manifest):
            return manifest, None
    fixed = _flip_in_a_value(manifest, stored) if problem is None else None
    for bit in range(8 * len(raw)) if fixed is None else ():
        try:
            candidate = json.loads(flip_bit(raw, bit))
        except (ValueError, RecursionError):
            continue
        if isinstance(candidate, dict) and candidate.get("manifest_hash") == manifest_hash(
                candidate):
            fixed = candidate
            break
    if fixed is None:
        if problem is not None:
            raise problem
        return manifest, None
    again = json.dumps(fixed, indent=1, ensure_ascii=False, sort_keys=True).encode() + b"\n"
    where = [i for i, (a, b) in enumerate(zip(raw, again)) if a != b]  # as RunStore writes it
    at = f" (byte {where[0]})" if len(where) == 1 and len(raw) == len(again) else ""
    return fixed, (f"{path.name} had one flipped bit{at}: repaired on read; the file on disk is "
                   "still damaged (restore it from a copy)")


def _flip_in_a_value(manifest: dict[str, Any], stored: Any) -> dict[str, Any] | None:
    """The manifest as frozen when one bit of its stored hash, or of one value (the JSON still
    parsing), was flipped: found on its canonical bytes, one hash per bit (~0.3 s per 4 KiB)."""
    body = canonical_json({k: v for k, v in manifest.items() if k != "manifest_hash"})
    computed = tagged_hash(body)
    if isinstance(stored, str) and len(stored) == len(computed) and sum(
            bin(ord(a) ^ ord(b)).count("1") for a, b in zip(stored, computed)) == 1:
        return manifest | {"manifest_hash": computed}
    for bit in range(8 * len(body)):
        candidate = flip_bit(body, bit)
        if tagged_hash(candidate) == stored:
            try:
                return json.loads(candidate) | {"manifest_hash": stored}
            except ValueError:
                return None
    return None


def _diff(path: tuple[str, ...], old: Any, new: Any, out: list[str], allowed: list[str]) -> None:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            if path + (key,) in RESUME_IGNORED:
                continue
            if key not in new:
                out.append(f"{'.'.join(path + (key,))} removed (was {old[key]!r})")
            elif key not in old:
                out.append(f"{'.'.join(path + (key,))} added ({new[key]!r})")
            else:
                _diff(path + (key,), old[key], new[key], out, allowed)
    elif isinstance(old, list) and isinstance(new, list) and path[-1:] == ("models",):
        if len(old) != len(new):
            out.append(f"config.models: {len(old)} -> {len(new)} models")
            return
        for i, (a, b) in enumerate(zip(old, new)):
            _diff(path[:-1] + (f"models[{i}]",), a, b, out, allowed)
    elif old != new:
        harmless = path in RESUME_ALLOWED or (path[-1:] == ("base_url",)
                                              and _only_port_differs(old, new))
        (allowed if harmless else out).append(f"{'.'.join(path)}: {old!r} -> {new!r}")


def _only_port_differs(old: Any, new: Any) -> bool:
    """Two URLs that differ in their port only (the same server software, restarted)."""
    if not (isinstance(old, str) and isinstance(new, str)):
        return False
    a, b = urlsplit(old), urlsplit(new)
    try:
        return (a.scheme, a.hostname, a.path, a.query) == (b.scheme, b.hostname, b.path,
                                                           b.query) and a.port != b.port
    except ValueError:  # a port that is not a number
        return False


def _corpus_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    if old is None or new is None:
        return [] if old == new else ["corpus snapshot added or removed"]
    before = {f["name"]: f for f in old.get("files", [])}
    after = {f["name"]: f for f in new.get("files", [])}
    out = [f"corpus file {n} removed" for n in sorted(set(before) - set(after))]
    out += [f"corpus file {n} added" for n in sorted(set(after) - set(before))]
    for name in sorted(set(before) & set(after)):
        keys = [k for k in ("content_hash", "size", "rows", "schema")
                if before[name].get(k) != after[name].get(k)]
        if keys:
            out.append(f"corpus file {name} changed ({', '.join(keys)})")
    if not out and {k: v for k, v in old.items() if k not in ("files", "taken_at")} != \
            {k: v for k, v in new.items() if k not in ("files", "taken_at")}:
        out.append("corpus snapshot changed")
    return out


def compare_frozen(old: Mapping[str, Any], new: Mapping[str, Any],
                   allowed: list[str] | None = None) -> list[str]:
    """Every difference between two manifests' frozen inputs (incl. `config`) that a resume
    must refuse, in words; the harmless ones (see the module docstring) are appended to
    `allowed` when it is given."""
    changes: list[str] = []
    if old.get("code_hash") != new.get("code_hash"):
        changes.append(f"code changed (code hash {old.get('code_hash')} -> {new.get('code_hash')})")
    _diff(("config",), old.get("config"), new.get("config"), changes,
          allowed if allowed is not None else [])
    qa, qb = list(old.get("question_ids") or []), list(new.get("question_ids") or [])
    if qa != qb:
        removed = [q for q in qa if q not in set(qb)]
        added = [q for q in qb if q not in set(qa)]
        what = (f"removed {removed[:5]}" if removed else "") + (" " if removed and added else "") \
            + (f"added {added[:5]}" if added else "")
        changes.append(f"question ids changed: {what or 'same ids, other order'}")
    changes += _corpus_changes(old.get("corpus_snapshot"), new.get("corpus_snapshot"))
    pa, pb = old.get("prompt_hashes") or {}, new.get("prompt_hashes") or {}
    for name in sorted(set(pa) | set(pb)):
        if pa.get(name) != pb.get(name):
            state = "added" if name not in pa else "removed" if name not in pb else "changed"
            changes.append(f"prompt {name!r} {state}")
    va, vb = old.get("package_versions") or {}, new.get("package_versions") or {}
    for name in sorted(set(va) | set(vb)):
        if va.get(name) != vb.get(name):
            changes.append(f"package {name}: {va.get(name)} -> {vb.get(name)}")
    if old.get("sandbox_mode") != new.get("sandbox_mode"):
        changes.append(f"sandbox mode: {old.get('sandbox_mode')!r} -> {new.get('sandbox_mode')!r}")
    return changes
