"""The public surface a notebook uses is explicit and importable."""

import subprocess
import sys

import parquet_agent


def test_public_names():
    assert parquet_agent.__all__ == sorted([
        "Agent", "AgentLimits", "AuditReport", "Auditor", "CaseExplorer", "CorpusSnapshot",
        "Experiment", "ExperimentConfig", "FindingsStore", "Judge", "ParquetAgentError",
        "RunStore", "Tools", "charts", "load_questions", "sql_frame"])


def test_core_names_resolve():
    from parquet_agent import Agent, Experiment, Judge, RunStore, Tools

    assert Experiment.from_toml and Tools.open and RunStore and Agent and Judge


def test_importing_the_package_loads_no_sdk_or_pandas():
    code = ("import sys, parquet_agent; "
            "print(sorted(m for m in ('openai', 'anthropic', 'pandas', 'ipywidgets') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_python_dash_m_is_the_cli():
    out = subprocess.run([sys.executable, "-m", "parquet_agent", "--help"], capture_output=True,
                         text=True, check=True)
    for command in ("demo", "run", "corpus", "tool", "preflight", "audit", "case-audit"):
        assert command in out.stdout
