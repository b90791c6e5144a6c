"""Fail closed (issue 14): where neither the uid drop (root) nor Landlock can keep a worker from
writing the corpus, the tools refuse to start and say why and what to do, unless running
unprotected was accepted explicitly; then the recorded mode says UNPROTECTED.

The real case is a non-root caller on a kernel without Landlock. Tests run it for real as user
nobody (`runuser`, as root) with a throwaway virtual environment nobody can execute, and take
"no Landlock" from the sandbox's documented detection input `PARQUET_AGENT_ASSUME_NO_LANDLOCK`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from parquet_agent.errors import SandboxUnavailable
from parquet_agent.tools import Tools
from parquet_agent.tools.sandbox import NO_LANDLOCK_ENV, Capabilities
from tests.tools.conftest import write_files


def test_detection_input_reports_no_landlock_and_mode_says_so():
    caps = Capabilities.detect({NO_LANDLOCK_ENV: "1"})
    assert caps.landlock_abi == 0
    assert Capabilities(root=False, landlock_abi=0).protects_corpus is False
    assert Capabilities(root=True, landlock_abi=0).protects_corpus is True
    assert Capabilities(root=False, landlock_abi=3).protects_corpus is True
    assert "no Landlock" in Capabilities(root=False, landlock_abi=0).mode()


def test_unprotected_capabilities_refuse_to_start_in_process(corpus_dir):
    with pytest.raises(SandboxUnavailable) as caught:
        Tools.open(corpus_dir, "sql", capabilities=Capabilities(root=False, landlock_abi=0))
    message = str(caught.value)
    assert "not root" in message and "Landlock" in message and "allow_unprotected" in message


@pytest.fixture(scope="module")
def public_corpus(public_tmp) -> Path:
    folder = public_tmp / "corpus"
    write_files(folder)
    subprocess.run(["chmod", "-R", "a+rX", str(public_tmp)], check=True)
    return folder


PROBE = textwrap.dedent("""
    import json, sys
    from parquet_agent.errors import SandboxUnavailable
    from parquet_agent.tools import Tools
    try:
        with Tools.open(sys.argv[1], "sql", allow_unprotected=sys.argv[2] == "yes") as tools:
            result = tools.call("sql", query="SELECT count(*) FROM filings")
            print(json.dumps({"mode": tools.sandbox_mode, "rows": result.output["rows"]}))
    except SandboxUnavailable as exc:
        print(json.dumps({"refused": str(exc)}))
""")


def _as_nobody(python: Path, corpus: Path, allow: bool, no_landlock: bool) -> dict:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8"}
    if no_landlock:
        env[NO_LANDLOCK_ENV] = "1"
    done = subprocess.run(
        ["runuser", "-u", "nobody", "--", "env", *(f"{k}={v}" for k, v in env.items()),
         str(python), "-c", PROBE, str(corpus), "yes" if allow else "no"],
        capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_non_root_without_landlock_refuses_to_start(nobody_python, public_corpus):
    answer = _as_nobody(nobody_python, public_corpus, allow=False, no_landlock=True)
    assert "refused" in answer, answer
    assert "not root" in answer["refused"] and "Landlock" in answer["refused"]
    assert "allow_unprotected" in answer["refused"]  # what to do


def test_non_root_without_landlock_runs_when_accepted_and_says_unprotected(nobody_python, public_corpus):
    answer = _as_nobody(nobody_python, public_corpus, allow=True, no_landlock=True)
    assert answer.get("rows") == [[60]], answer
    assert answer["mode"].startswith("UNPROTECTED"), answer


def test_non_root_with_landlock_starts(nobody_python, public_corpus):
    from parquet_agent.tools.sandbox import landlock_abi

    if not landlock_abi():
        pytest.skip("this kernel has no Landlock")
    answer = _as_nobody(nobody_python, public_corpus, allow=False, no_landlock=False)
    assert answer.get("rows") == [[60]], answer
    assert "UNPROTECTED" not in answer["mode"] and "+landlock" in answer["mode"]


def _experiment_as_nobody(python: Path, folder: Path, allow: bool) -> subprocess.CompletedProcess:
    from tests.harness_corpus import make_harness_corpus

    corpus = make_harness_corpus(folder / "hc")
    script = folder / "script.json"
    script.write_text(json.dumps(["I do not know."] * 4))  # 1 health check + 3 cases
    config = folder / f"exp-{allow}.toml"
    config.write_text(textwrap.dedent(f"""
        name = "unprotected"
        corpus = "{corpus}"
        questions = "{corpus / 'questions.jsonl'}"
        strategies = ["sql"]
        runs_dir = "{folder / 'runs'}"
        [[models]]
        name = "s"
        provider = "scripted"
        script = "{script}"
        [judge]
        provider = "rubric"
        [limits]
        allow_unprotected_sandbox = {str(allow).lower()}
        """))
    subprocess.run(["chmod", "-R", "a+rwX", str(folder)], check=True)
    return subprocess.run(
        ["runuser", "-u", "nobody", "--", "env", "PATH=/usr/bin:/bin", "HOME=/nonexistent",
         f"{NO_LANDLOCK_ENV}=1", str(python), "-m", "parquet_agent", "run", str(config),
         "--run-dir", str(folder / "runs" / f"r-{allow}"), "--quiet"],
        capture_output=True, text=True, timeout=300, cwd="/")


def test_experiment_refuses_then_records_unprotected_in_manifest_and_report(nobody_python, public_tmp):
    folder = public_tmp / "exp"
    folder.mkdir()
    refused = _experiment_as_nobody(nobody_python, folder, allow=False)
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "allow_unprotected_sandbox" in refused.stderr and "Traceback" not in refused.stderr
    done = _experiment_as_nobody(nobody_python, folder, allow=True)
    assert done.returncode == 0, done.stderr[-2000:]
    run_dir = folder / "runs" / "r-True"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["sandbox_mode"].startswith("UNPROTECTED"), manifest["sandbox_mode"]
    exported = subprocess.run([sys.executable, "-m", "parquet_agent", "export", str(run_dir)],
                              capture_output=True, text=True, timeout=300)
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert json.loads((run_dir / "summary.json").read_text())["sandbox_mode"].startswith("UNPROTECTED")
    assert 'id="unprotected"' in (run_dir / "report.html").read_text()
