"""The judge piece: an independent model scores each answer, beside deterministic checks.

- `judge.judgment`: the prompt, the judge's input block, the judgment schema and its parser;
- `judge.core`: `Judge` (structured output, one repair request, unscored with the reason);
- `judge.checks`: deterministic checks (cited spans received, numeric match, abstention);
- `judge.rubric`: `RubricJudgeModel`, the offline judge built from those checks.

May import: shared, corpus, models. Nothing above the agent layer.
"""

from parquet_agent.judge.checks import (
    NUMERIC_TOLERANCE,
    citations,
    deterministic_checks,
    numbers,
    says_not_found,
)
from parquet_agent.judge.core import (
    CHARS_PER_TOKEN,
    JUDGE_OUTPUT_TOKENS,
    Judge,
    Verdict,
    fit_evidence,
    repair_turn,
)
from parquet_agent.judge.judgment import (
    INPUT_MARKER,
    JUDGE_PROMPT_VERSION,
    JUDGE_SYSTEM,
    JUDGMENT_SCHEMA,
    JUDGMENT_TOOL,
    VERDICTS,
    JudgeInput,
    input_from_request,
    judge_prompt_hash,
    parse_judgment,
    parse_reply,
)
from parquet_agent.judge.rubric import RubricJudgeModel, rubric_grade

__all__ = [
    "CHARS_PER_TOKEN", "INPUT_MARKER", "JUDGE_OUTPUT_TOKENS", "JUDGE_PROMPT_VERSION",
    "JUDGE_SYSTEM", "JUDGMENT_SCHEMA", "JUDGMENT_TOOL", "NUMERIC_TOLERANCE", "VERDICTS", "Judge",
    "JudgeInput", "RubricJudgeModel", "Verdict", "citations", "deterministic_checks",
    "fit_evidence", "input_from_request", "judge_prompt_hash", "numbers", "parse_judgment",
    "parse_reply", "repair_turn", "rubric_grade", "says_not_found",
]
