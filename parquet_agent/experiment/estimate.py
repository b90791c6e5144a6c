"""What a run will cost, before it starts: cases x expected turns x tokens, priced, as a range.

    estimates = estimate_config(config)            # one CostEstimate per model and the judge
    print(estimate_text(estimates))                 # `parquet-agent preflight --estimate`, `run`
    print(check_text(estimates, run))               # afterwards: the actual cost against it

The model of a case (stated, so the range can be judged):
- the prompt is the strategy's system prompt plus its tool specs (JSON) plus the question;
- a case takes from `LOW_TURNS` model turns (one tool call, then the answer; one turn closed
  book) up to `max_rounds` (or `max_tool_calls` + 1, whichever is smaller);
- each turn after the first adds one tool result of `TOOL_OUTPUT_CHARS` characters (a small
  result at the low end, a `read_filing` window at the high end) and the call itself; each
  request resends the whole conversation, so input tokens grow with the square of the turns;
- each turn writes `OUTPUT_TOKENS` tokens; a judge call reads the question, the answer and the
  tool evidence once;
- tokens are characters / `CHARS_PER_TOKEN`.
Prices come from the model entry's own `price` when it has one (the `price` key of the models
config), else the dated price table; offline providers (`baseline`, `scripted`, `rubric`) are
free; a model with no price is "unknown", never 0.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from parquet_agent.experiment.config import ExperimentConfig
    from parquet_agent.models.spec import ModelSpec

CHARS_PER_TOKEN = 4
LOW_TURNS = 2
TOOL_OUTPUT_CHARS = (600, 4_500)
CALL_CHARS = 200  # a tool call as the model writes it, and its message framing
OUTPUT_TOKENS = (40, 400)
JUDGE_PROMPT_CHARS = 3_000
OFFLINE = ("baseline", "scripted", "rubric")


@dataclass(frozen=True)
class CostEstimate:
    """The expected cost of one model's cases (or of the judge's calls), as a range."""

    model: str
    cases: int
    turns: tuple[int, int]
    input_tokens: tuple[int, int]
    output_tokens: tuple[int, int]
    usd: tuple[float, float] | None  # None: no price known for this model
    price: str  # where the price comes from: "free (offline)", "price table ...", "declared"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _tokens(chars: float) -> int:
    return int(chars / CHARS_PER_TOKEN)


def case_tokens(prompt_chars: float, turns: int, tool_chars: int,
                output_tokens: int) -> tuple[int, int]:
    """(input, output) tokens of one case of `turns` model turns."""
    step = _tokens(tool_chars + CALL_CHARS) + output_tokens
    # turn k (0-based) resends the prompt and k earlier (call, result, reply) exchanges
    return turns * _tokens(prompt_chars) + step * turns * (turns - 1) // 2, turns * output_tokens


def _price(spec: ModelSpec):
    """(Price or None, where it comes from)."""
    from parquet_agent.models.prices import LIST, PriceTable, declared_price, table_applies

    if spec.provider in OFFLINE:
        return "free", "free (offline)"
    declared = getattr(spec, "price", None)  # the models config's own `price` key
    if declared is not None and declared != LIST:
        return declared_price(declared, model=spec.model, where=spec.name), "declared in config"
    base_url = getattr(spec, "base_url", None)
    if not table_applies(base_url, declared):
        return None, f"{base_url} is not the vendor's endpoint: declare `price`"
    table = PriceTable.load()
    return table.lookup(spec.model), f"price table {table.version}"


def _usd(price, input_tokens: int, output_tokens: int) -> float | None:
    if price == "free":
        return 0.0
    if price is None:
        return None
    return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


def _batch_factor(price, where: str) -> tuple[float, str]:
    """`[judge] batch = true`: the judge's calls at its vendor's batch price (the table's)."""
    from parquet_agent.models.prices import PriceTable

    vendor = getattr(price, "vendor", None)
    rate = PriceTable.load().batch.get(vendor) if isinstance(vendor, str) else None
    if rate is None:
        return 1.0, f"{where}; no batch price: at list"
    return rate.multiplier, f"{where}; batch price {rate.multiplier:g} x list"


def estimate_config(config: ExperimentConfig, question_ids: tuple[str, ...] | None = None,
                    questions: dict[str, str] | None = None) -> list[CostEstimate]:
    """One estimate per model and one for the judge. `question_ids` / `questions` (id ->
    text) default to the config's sample of its questions file."""
    from parquet_agent.agent.loop import NO_TOOLS, system_prompt
    from parquet_agent.corpus.questions import load_questions
    from parquet_agent.tools.specs import ALL_TOOLS, STRATEGIES, tool_spec

    if question_ids is None or questions is None:
        qs = load_questions(config.questions)
        question_ids = config.sample.select(qs.ids)
        questions = {q: qs.question(q).question for q in question_ids}
    mean_question = sum(len(questions[q]) for q in question_ids) / max(len(question_ids), 1)
    limits = config.limits
    high_turns = max(LOW_TURNS, min(limits.max_rounds, limits.max_tool_calls + 1))
    lows, highs, turns_seen = [0, 0], [0, 0], []
    for strategy in config.strategies:
        specs = [] if strategy == NO_TOOLS else [asdict(tool_spec(ALL_TOOLS[n]))
                                                 for n in STRATEGIES[strategy]]
        prompt = len(system_prompt(strategy)) + len(json.dumps(specs)) + mean_question
        span = (1, 1) if strategy == NO_TOOLS else (LOW_TURNS, high_turns)
        turns_seen.append(span)
        low = case_tokens(prompt, span[0], TOOL_OUTPUT_CHARS[0], OUTPUT_TOKENS[0])
        high = case_tokens(prompt, span[1], TOOL_OUTPUT_CHARS[1], OUTPUT_TOKENS[1])
        for acc, pair in ((lows, low), (highs, high)):
            acc[0] += pair[0] * len(question_ids)
            acc[1] += pair[1] * len(question_ids)
    turns = (min(t[0] for t in turns_seen), max(t[1] for t in turns_seen))
    cases = len(question_ids) * len(config.strategies)
    out = []
    for spec in config.models:
        price, where = _price(spec)
        low_usd, high_usd = _usd(price, *lows), _usd(price, *highs)
        out.append(CostEstimate(spec.name, cases, turns, (lows[0], highs[0]),
                                (lows[1], highs[1]),
                                _usd_range(low_usd, high_usd), where))
    judged = cases * len(config.models)
    judge_in = (_tokens(JUDGE_PROMPT_CHARS + mean_question + TOOL_OUTPUT_CHARS[0]) * judged,
                _tokens(JUDGE_PROMPT_CHARS + mean_question + TOOL_OUTPUT_CHARS[1]
                        * (high_turns - 1)) * judged)
    judge_out = (OUTPUT_TOKENS[0] * judged, OUTPUT_TOKENS[1] * judged)
    price, where = _price(config.judge)
    factor, where = _batch_factor(price, where) if config.judge.batch else (1.0, where)
    low_usd, high_usd = (None if u is None else u * factor for u in (
        _usd(price, judge_in[0], judge_out[0]), _usd(price, judge_in[1], judge_out[1])))
    out.append(CostEstimate(f"judge {config.judge.name}", judged, (1, 1), judge_in, judge_out,
                            _usd_range(low_usd, high_usd), where))
    return out


def _usd_range(low: float | None, high: float | None) -> tuple[float, float] | None:
    """Both ends, or None when the price is unknown (then both are None)."""
    return None if low is None or high is None else (low, high)


def total(estimates: list[CostEstimate]) -> tuple[float, float] | None:
    """The whole run's range (None when any part has no price)."""
    known = [e.usd for e in estimates if e.usd is not None]
    if len(known) < len(estimates):
        return None
    return (sum(u[0] for u in known), sum(u[1] for u in known))


def estimate_text(estimates: list[CostEstimate]) -> str:
    """The estimate as a few lines for a terminal."""
    lines = ["estimated cost before the run (a range; see parquet_agent.experiment.estimate):"]
    for e in estimates:
        usd = "unknown (no price)" if e.usd is None else f"${e.usd[0]:.4f} – ${e.usd[1]:.4f}"
        lines.append(f"  {e.model}: {e.cases} calls/cases, {e.turns[0]}–{e.turns[1]} turns, "
                     f"{e.input_tokens[0]:,}–{e.input_tokens[1]:,} input tokens: {usd} "
                     f"[{e.price}]")
    whole = total(estimates)
    lines.append("  total: " + ("unknown (a model has no price; set `price` in its entry)"
                                if whole is None else f"${whole[0]:.4f} – ${whole[1]:.4f}"))
    return "\n".join(lines)


def check_text(estimates: list[CostEstimate], actual_usd: float | None,
               unknown_attempts: int = 0) -> str:
    """The actual cost against the estimate, in one line."""
    whole = total(estimates)
    if actual_usd is None or unknown_attempts:
        return (f"actual cost: unknown for {unknown_attempts} attempts; estimate was "
                + ("unknown" if whole is None else f"${whole[0]:.4f} – ${whole[1]:.4f}"))
    if whole is None:
        return f"actual cost ${actual_usd:.4f}; there was no full estimate (a price is missing)"
    where = ("within" if whole[0] <= actual_usd <= whole[1] else
             "below" if actual_usd < whole[0] else "above")
    return (f"actual cost ${actual_usd:.4f}: {where} the estimate "
            f"${whole[0]:.4f} – ${whole[1]:.4f}")
