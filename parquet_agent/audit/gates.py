"""Three evaluation gates, each a fail-fast chain of evaluators built from config.

    gate = Gate.build("finding", ["rules", "judge"], rules=FindingRules(...), model=m, judge=j)
    outcome = gate.evaluate(subject, step=7, sink=raw)   # GateOutcome(verdict, evaluations)

An evaluator returns PASS, WARN or FAIL with a critique. `rules` is deterministic (one rule set
per gate, `rules.py`); `self` asks the auditor's own model to critique; `judge` asks an
independent model. The chain runs in config order and stops at the first FAIL (the composite);
the gate's verdict is the worst one seen. Every evaluation is a frozen `Evaluation` with what was
evaluated, the verdict, the critique and the raw request/response paths of model evaluators, and
the loop journals each one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from parquet_agent.audit.prompt import DATA_RULE, quoted
from parquet_agent.report.audit_model import Evaluation  # findings.json's record of it
from parquet_agent.errors import ConfigError, ModelCallError
from parquet_agent.models.protocol import (
    total_cost,
    GenerationSettings,
    Model,
    ModelRequest,
    RawSink,
    SystemMessage,
    UserMessage,
)

VERDICTS = ("PASS", "WARN", "FAIL")  # ascending badness
GATES = ("action", "finding", "run")
EVALUATORS = ("rules", "self", "judge")


@dataclass(frozen=True)
class GateOutcome:
    verdict: str
    evaluations: tuple[Evaluation, ...]

    @property
    def critique(self) -> str:
        return " | ".join(f"{e.evaluator}: {e.critique}" for e in self.evaluations
                          if e.verdict != "PASS")


def worst(verdicts: list[str]) -> str:
    return max(verdicts, key=VERDICTS.index, default="PASS")


Rule = Callable[[dict[str, Any]], tuple[str, str]]  # subject -> (verdict, critique)


class Evaluator(Protocol):
    name: str

    def evaluate(self, gate: str, subject: dict[str, Any], step: int, sink: RawSink) -> Evaluation: ...


class RulesEvaluator:
    """Deterministic: the gate's rule function."""

    name = "rules"

    def __init__(self, rule: Rule):
        self._rule = rule

    def evaluate(self, gate: str, subject: dict[str, Any], step: int, sink: RawSink) -> Evaluation:
        verdict, critique = self._rule(subject)
        return Evaluation(gate, self.name, step, verdict, critique, _shown(subject))


_ASK = (
    "You review one {what} of an autonomous data-quality auditor of a Parquet dataset. "
    "Reply with one JSON object and nothing else: {{\"verdict\": \"PASS\" | \"WARN\" | \"FAIL\", "
    "\"critique\": \"one or two sentences\"}}. FAIL when it is wrong or not a defect of the data "
    "(for example a documented property of the dataset), WARN when it is doubtful, PASS when "
    "it is sound. " + DATA_RULE.replace("\n", " ")
)
_WHAT = {"action": "proposed action", "finding": "proposed finding with evidence the gate "
         "computed itself", "run": "decision to conclude the audit, with its coverage"}


class ModelEvaluator:
    """`self` (the auditor's model) or `judge` (an independent model) asked for a verdict."""

    def __init__(self, name: str, model: Model):
        self.name = name
        self.model = model

    def evaluate(self, gate: str, subject: dict[str, Any], step: int, sink: RawSink) -> Evaluation:
        shown = _shown(subject)
        request = ModelRequest(
            messages=(SystemMessage(_ASK.format(what=_WHAT[gate])),
                      UserMessage(f"The {_WHAT[gate]}:\n" + quoted(shown))),
            settings=GenerationSettings(temperature=0.0, max_output_tokens=600, tool_choice="none"),
            purpose="judge", label=f"audit/step-{step:03d}/{self.name}-{gate}")
        try:
            result = self.model.complete(request, sink)
        except ModelCallError as exc:
            paths = tuple(p for a in exc.attempts for p in (a.request_path, a.response_path) if p)
            return Evaluation(gate, self.name, step, "WARN",
                              f"the {self.name} evaluator could not be asked ({exc}); not counted "
                              "against the subject", shown, paths)
        paths = tuple(p for a in result.attempts for p in (a.request_path, a.response_path) if p)
        verdict, critique = parse_verdict(result.reply.text)
        usage = {"input_tokens": result.reply.usage.input_tokens,
                 "output_tokens": result.reply.usage.output_tokens,
                 "cost_usd": total_cost(result.attempts)}  # None when any is unpriced
        return Evaluation(gate, self.name, step, verdict, critique, shown, paths, usage)


def parse_verdict(text: str | None) -> tuple[str, str]:
    """(verdict, critique) from a model's reply; an unreadable reply is a WARN that says so."""
    raw = (text or "").strip()
    start, end = raw.find("{"), raw.rfind("}")
    try:
        data = json.loads(raw[start:end + 1]) if start >= 0 else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or str(data.get("verdict", "")).upper() not in VERDICTS:
        return "WARN", f"the evaluator's reply is not a verdict object: {raw[:300]!r}"
    return str(data["verdict"]).upper(), str(data.get("critique") or "")


@dataclass(frozen=True)
class Gate:
    name: str
    chain: tuple[Evaluator, ...]

    @classmethod
    def build(cls, name: str, evaluators: list[str], *, rules: Rule,
              model: Model | None = None, judge: Model | None = None) -> Gate:
        if name not in GATES:
            raise ConfigError(f"unknown gate {name!r}; the gates are {', '.join(GATES)}")
        chain: list[Evaluator] = []
        for evaluator in evaluators:
            if evaluator == "rules":
                chain.append(RulesEvaluator(rules))
            elif evaluator == "self" and model is not None:
                chain.append(ModelEvaluator("self", model))
            elif evaluator == "judge" and judge is not None:
                chain.append(ModelEvaluator("judge", judge))
            elif evaluator in ("self", "judge"):
                raise ConfigError(f"gate {name!r} lists evaluator {evaluator!r} but no "
                                  f"{'auditor' if evaluator == 'self' else 'judge'} model is "
                                  "configured; add [audit.judge] or drop it from the chain")
            else:
                raise ConfigError(f"gate {name!r}: unknown evaluator {evaluator!r}; "
                                  f"use {', '.join(EVALUATORS)}")
        return cls(name, tuple(chain))

    def evaluate(self, subject: dict[str, Any], step: int, sink: RawSink) -> GateOutcome:
        """Run the chain, stopping at the first FAIL (fail-fast composite)."""
        evaluations: list[Evaluation] = []
        for evaluator in self.chain:
            evaluation = evaluator.evaluate(self.name, subject, step, sink)
            evaluations.append(evaluation)
            if evaluation.verdict == "FAIL":
                break
        return GateOutcome(worst([e.verdict for e in evaluations]), tuple(evaluations))


def _shown(subject: dict[str, Any]) -> dict[str, Any]:
    """The subject as JSON-able data (what is recorded and what model evaluators read)."""
    return json.loads(json.dumps(subject, ensure_ascii=False, default=str))
