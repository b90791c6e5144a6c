"""A judge-only experiment config pointing at a fake provider server, for the tests that take
one through `--judge CONFIG` (`parquet-agent judge`, `bench financebench-judge`).

    config = judge_config(tmp_path, server.url, name="strict")
    subprocess.run([..., "--judge", str(config)], env={**os.environ, **JUDGE_KEY_ENV})
"""

from __future__ import annotations

from pathlib import Path

JUDGE_KEY_VARIABLE = "FAKE_JUDGE_KEY"
JUDGE_KEY_ENV = {JUDGE_KEY_VARIABLE: "sk-fake-judge-key-0000"}  # obviously fake


def judge_config(folder: Path, url: str, *, name: str | None = None,
                 provider: str = "openai", model: str = "gpt-4o-mini") -> Path:
    """`folder/judge.toml`: a minimal experiment whose `[judge]` is `provider:model` at the fake
    server `url` (its key in `JUDGE_KEY_VARIABLE`); the default judge name when `name` is None."""
    path = Path(folder) / "judge.toml"
    named = f'name = "{name}"\n' if name else ""
    path.write_text(f"""
name = "j"
corpus = "."
questions = "q.jsonl"
[[models]]
name = "m"
provider = "baseline"
[judge]
{named}provider = "{provider}"
model = "{model}"
api_key_env = "{JUDGE_KEY_VARIABLE}"
base_url = "{url}/v1"
""")
    return path
