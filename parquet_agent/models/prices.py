"""Prices and cost: a dated, versioned price table, and the cost of one attempt.

The bundled table is `prices.json` next to this module (USD per 1M tokens: `input`,
`cached_input`, `cache_write`, `output`, `reasoning`; each entry names its source). `PriceTable.load(path=None)`
reads it (or another file with the same shape). `PriceTable.cost(model, usage, gateway_usd=...)`
returns a `Cost`:

- a gateway-reported cost (e.g. OpenRouter `usage.cost`) is preferred: `source="gateway"`, with
  the table's figure in `computed_usd` and a note when the two disagree by more than 1 % + $1e-6;
- else the table's figure: `source="price_table"`, `price_table` = the table version;
- an unknown model gives `usd=None`, `source="unknown"` and the reason in `note`: never zero.
  `UnknownCostWarning` logs that once per model (not once per call): each model keeps one.

A model entry may declare its own price (`price = "free"` for a local model, or a table of
per-million rates): `declared_price(value)` reads it and `declared_cost(price, usage)` prices
with it, `source="declared"`; the table is then never consulted (a local server that echoes
`gpt-4o-mini` back must not be billed as OpenAI). The table prices a vendor's list price, so it
applies only where the vendor bills: its own endpoint (no `base_url`, or one on a host in
`VENDOR_HOSTS`), a gateway that bills at list (`LIST_PRICE_GATEWAYS`, which also reports its
cost), or an entry that says so with `price = "list"` (a proxy in front of the vendor). Any
other `base_url` (127.0.0.1, a private vLLM) is unknown unless its entry declares a price
(`table_applies`).

Batch: the table's `batch` section gives each vendor's batch price as a multiplier of its list
rates, with source and date (`BatchPrice`); `cost(..., batch=True)` prices a request sent in a
batch with it, said in the note. A vendor without one is priced at list, said in the note.

Usage is normalised (protocol.Usage): input includes cache reads and writes, output includes
reasoning. Cost = (input - cached - written)·input + cached·cached_input + written·cache_write
+ (output - reasoning)·output + reasoning·reasoning. A missing `cached_input`, `cache_write` or
`reasoning` price falls back to `input` / `output`, said in the note.
Model ids are matched exactly, then without a `vendor/` or `models/` prefix, then without a
date suffix (`-2025-08-07`, `-20251001`).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from parquet_agent.models.protocol import Cost, Usage

log = logging.getLogger(__name__)
_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")

# Where each vendor of the table bills at its list price (a host, its subdomains and regional
# `<region>-<host>` forms).
VENDOR_HOSTS = {"openai": ("api.openai.com",), "anthropic": ("api.anthropic.com",),
                "google": ("generativelanguage.googleapis.com", "aiplatform.googleapis.com")}
LIST_PRICE_GATEWAYS = ("openrouter.ai",)  # resells at list and reports its cost (usage.cost)
LIST = "list"  # `price = "list"`: this endpoint bills the vendor's list price (the table)


@dataclass(frozen=True)
class Price:
    model: str
    vendor: str
    input: float
    output: float
    cached_input: float | None
    reasoning: float | None
    temperature: bool  # whether the model takes a temperature (False for reasoning-only models)
    reasoning_effort: bool  # whether it takes a reasoning effort (False for non-reasoning models)
    source: str
    cache_write: float | None = None


@dataclass(frozen=True)
class BatchPrice:
    """A vendor's batch price: `multiplier` times every list rate."""

    vendor: str
    multiplier: float
    source: str
    retrieved: str


@dataclass(frozen=True)
class PriceTable:
    version: str
    retrieved: str
    prices: Mapping[str, Price]
    batch: Mapping[str, BatchPrice] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | None = None) -> "PriceTable":
        if path is None:
            raw = resources.files("parquet_agent.models").joinpath("prices.json").read_text()
        else:
            raw = Path(path).read_text()
        data = json.loads(raw)
        prices = {
            model: Price(
                model=model,
                vendor=e["vendor"],
                input=float(e["input"]),
                output=float(e["output"]),
                cached_input=_opt(e.get("cached_input")),
                reasoning=_opt(e.get("reasoning")),
                temperature=bool(e.get("temperature", True)),
                reasoning_effort=bool(e.get("reasoning_effort", True)),
                source=e.get("source", ""),
                cache_write=_opt(e.get("cache_write")),
            )
            for model, e in data["models"].items()
        }
        batch = {vendor: BatchPrice(vendor, float(e["multiplier"]), e["source"], e["retrieved"])
                 for vendor, e in data.get("batch", {}).items()}
        return cls(version=data["version"], retrieved=data["retrieved"], prices=prices,
                   batch=batch)

    def lookup(self, model: str | None) -> Price | None:
        if not model:
            return None
        candidates = [model]
        if "/" in model:
            candidates.append(model.rsplit("/", 1)[1])
        for c in list(candidates):
            stripped = _DATE_SUFFIX.sub("", c)
            if stripped != c:
                candidates.append(stripped)
        for c in candidates:
            if c in self.prices:
                return self.prices[c]
        return None

    def cost(
        self,
        models: tuple[str | None, ...],
        usage: Usage,
        *,
        gateway_usd: float | None = None,
        batch: bool = False,
    ) -> Cost:
        """Cost of one attempt. `models` are tried in order (actual model first, then requested).
        `batch`: the request went through the vendor's batch API."""
        price = next((p for p in (self.lookup(m) for m in models) if p is not None), None)
        computed, note = (None, None)
        if price is not None:
            computed, note = _compute(price, usage)
            if batch and computed is not None:
                computed, note = self._batch(price, computed, note)
        if gateway_usd is not None:
            if computed is not None and abs(computed - gateway_usd) > 0.01 * gateway_usd + 1e-6:
                note = _join(
                    note,
                    f"gateway reported ${gateway_usd:.6f}, price table {self.version} gives "
                    f"${computed:.6f}",
                )
            return Cost(gateway_usd, "gateway", self.version if computed is not None else None,
                        computed, note)
        if computed is None:
            names = ", ".join(m for m in models if m) or "(none)"
            why = note or f"no price for {names} in price table {self.version}"
            return Cost(None, "unknown", self.version, None, why)
        return Cost(computed, "price_table", self.version, None, note)

    def _batch(self, price: Price, computed: float, note: str | None) -> tuple[float, str]:
        rate = self.batch.get(price.vendor)
        if rate is None:
            return computed, _join(note, f"no batch price for {price.vendor} in price table "
                                   f"{self.version}: priced at list")
        return computed * rate.multiplier, _join(note, (
            f"batch price: {rate.multiplier:g} x list ({rate.source}, retrieved "
            f"{rate.retrieved})"))


class UnknownCostWarning:
    """Logs "cost unknown" once for the model that owns it, at its first unpriced attempt, with
    what to do; later attempts stay silent (their records still say `source="unknown"`).
    Thread-safe: case workers share a model."""

    def __init__(self, name: str):
        self.name = name
        self._said = False
        self._lock = threading.Lock()

    def note(self, cost: Cost) -> None:
        if cost.source != "unknown":
            return
        with self._lock:
            if self._said:
                return
            self._said = True
        log.warning("cost unknown for model %r: %s; its costs show as unknown (never 0) and this "
                    "is said once per model: set `price` in its entry (\"free\" for a local "
                    "model, \"list\" for an endpoint that bills the vendor's list price, or USD "
                    "per 1M input/output tokens)", self.name, cost.note)


def _compute(price: Price, usage: Usage) -> tuple[float | None, str | None]:
    if usage.input_tokens is None or usage.output_tokens is None:
        return None, f"usage lacks token counts; cannot price {price.model}"
    notes = []
    cached = usage.cached_tokens or 0
    written = usage.cache_write_tokens or 0
    reasoning = usage.reasoning_tokens or 0
    cached_price = price.cached_input
    if cached and cached_price is None:
        cached_price = price.input
        notes.append("no cached-input price: cached tokens priced as input")
    write_price = price.cache_write
    if written and write_price is None:
        write_price = price.input
        notes.append("no cache-write price: cache writes priced as input")
    reasoning_price = price.reasoning
    if reasoning and reasoning_price is None:
        reasoning_price = price.output
        notes.append("no reasoning price: reasoning tokens priced as output")
    usd = (
        (usage.input_tokens - cached - written) * price.input
        + cached * (cached_price or 0.0)
        + written * (write_price or 0.0)
        + (usage.output_tokens - reasoning) * price.output
        + reasoning * (reasoning_price or 0.0)
    ) / 1_000_000
    return usd, "; ".join(notes) or None


_RATES = ("input", "output", "cached_input", "cache_write", "reasoning")


def table_applies(base_url: str | None, price: Any = None) -> bool:
    """Whether the price table may price calls to `base_url`: the vendor's own endpoint (none
    given, or a host of `VENDOR_HOSTS`), a list-price gateway, or an entry with
    `price = "list"`."""
    if base_url is None or price == LIST:
        return True
    host = (urlsplit(base_url).hostname or "").lower()
    hosts = [h for names in VENDOR_HOSTS.values() for h in names] + list(LIST_PRICE_GATEWAYS)
    # subdomains, and Vertex's regional hosts (`us-central1-aiplatform.googleapis.com`)
    return any(host == h or host.endswith(("." + h, "-" + h)) for h in hosts)


def not_the_vendor(base_url: str, model: str) -> Cost:
    """The cost of a call to an endpoint the table does not price (`table_applies` false)."""
    return Cost(None, "unknown", None, None, (
        f"{base_url} is not the vendor's endpoint, so the price table's list price for {model} "
        "does not apply (a local server may answer under any name)"))


def declared_price(value: Any, *, model: str, where: str) -> Price | None:
    """A model entry's `price`: `"free"` (cost 0 by declaration, e.g. a local model), a table
    of USD per 1M tokens with `input` and `output` and optionally the other rates, or `"list"`
    (None: the price table prices it, see `table_applies`). Raises ValueError with what is
    wrong."""
    if value == LIST:  # the table's own price, where it would not apply by itself
        return None
    if value == "free":
        return Price(model, "declared", 0.0, 0.0, 0.0, 0.0, True, True,
                     f"{where}: price = \"free\"", cache_write=0.0)
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: price must be \"free\", \"list\" or a table of USD per 1M tokens "
                         f"({', '.join(_RATES)}), got {value!r}")
    unknown = sorted(set(value) - set(_RATES))
    if unknown or "input" not in value or "output" not in value:
        raise ValueError(f"{where}: price table needs input and output (USD per 1M tokens) and "
                         f"may have {', '.join(_RATES[2:])}; got keys {sorted(value)}")
    rates: dict[str, float | None] = {}
    for k in _RATES:
        v = value.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
            raise ValueError(f"{where}: price.{k} must be a non-negative number, got {v!r}")
        rates[k] = None if v is None else float(v)
    input_rate, output_rate = rates["input"], rates["output"]
    if input_rate is None or output_rate is None:  # a table built in Python may hold None
        raise ValueError(f"{where}: price.input and price.output must be numbers (USD per 1M "
                         f"tokens), got {value.get('input')!r} and {value.get('output')!r}")
    return Price(model, "declared", input_rate, output_rate, rates["cached_input"],
                 rates["reasoning"], True, True, f"{where}: declared price",
                 cache_write=rates["cache_write"])


def declared_cost(price: Price, usage: Usage) -> Cost:
    """Cost with the model entry's own price (`source="declared"`), never the table's."""
    usd, note = _compute(price, usage)
    if usd is None:
        return Cost(None, "unknown", None, None, note)
    return Cost(usd, "declared", None, None, _join(note, price.source) if note else price.source)


def _opt(value: Any) -> float | None:
    return None if value is None else float(value)


def _join(a: str | None, b: str) -> str:
    return f"{a}; {b}" if a else b
