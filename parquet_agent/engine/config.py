"""The `[engine]` table of an experiment config: where the grid's cases run.

    [engine]
    kind = "ray"                  # "local" (default): threads in this process
    address = "auto"              # "auto" | "<host>:<port>" (GCS) | "ray://<host>:10001"
    nodes = 2                     # how many Ray nodes to use (default: every alive node)
    case_workers_per_node = 4     # cases in flight per node (API calls overlap)
    data_workers_per_node = 1     # data tools at once per node (its sandbox's gate)
    corpus = "/mnt/corpus"        # the corpus path on every node (default: the config's corpus)
    allowed_nodes = ["head", "node-a"]  # the only nodes that get cases and keys (names or ids)
    allow_unauthenticated = false # true: run on a cluster without token auth (docs/ray.md)

    [engine.corpus_by_node]       # or a path per node name (`ray start --node-name ...`)
    node-a = "/data/corpus"

Only the keys above are allowed (a typo is an error naming the key). Where cases run does not
change results, so a run started on one engine resumes on another (see `store.manifest`).
No Ray import here: the config is read on machines without Ray installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from parquet_agent.errors import ConfigError

ENGINE_KINDS = ("local", "ray")
ENGINE_KEYS = ("kind", "address", "nodes", "case_workers_per_node", "data_workers_per_node",
               "corpus", "corpus_by_node", "allowed_nodes", "allow_unauthenticated")


@dataclass(frozen=True)
class EngineConfig:
    """Where cases run. `corpus_by_node` maps a Ray node name to that node's corpus path;
    `allowed_nodes` (node names or ids; None: every alive node, with a warning) are the only
    nodes given cases and credentials; `allow_unauthenticated` lets a run use a cluster that
    does not enforce Ray's token authentication (refused otherwise)."""

    kind: str = "local"
    address: str = "auto"
    nodes: int | None = None
    case_workers_per_node: int = 4
    data_workers_per_node: int = 1
    corpus: str | None = None
    corpus_by_node: tuple[tuple[str, str], ...] = ()
    allowed_nodes: tuple[str, ...] | None = None
    allow_unauthenticated: bool = False
    _where: str = field(default="[engine]", repr=False, compare=False)

    def __post_init__(self) -> None:
        w = self._where
        if self.kind not in ENGINE_KINDS:
            raise ConfigError(f"{w}.kind: {self.kind!r} is not one of {', '.join(ENGINE_KINDS)}")
        if not isinstance(self.address, str) or not self.address.strip():
            raise ConfigError(f'{w}.address: expected "auto", "<host>:<port>" or '
                              f'"ray://<host>:<port>", got {self.address!r}')
        if self.nodes is not None:
            _positive(f"{w}.nodes", self.nodes)
        _positive(f"{w}.case_workers_per_node", self.case_workers_per_node)
        _positive(f"{w}.data_workers_per_node", self.data_workers_per_node)
        if self.corpus is not None and (not isinstance(self.corpus, str) or not self.corpus):
            raise ConfigError(f"{w}.corpus: expected a path string, got {self.corpus!r}")
        pairs = self.corpus_by_node
        if isinstance(pairs, Mapping):
            pairs = tuple(sorted(pairs.items()))
        for name, path in pairs:
            if not isinstance(name, str) or not isinstance(path, str) or not name or not path:
                raise ConfigError(f"{w}.corpus_by_node: expected node name = path strings, "
                                  f"got {name!r} = {path!r}")
        object.__setattr__(self, "corpus_by_node", tuple(pairs))
        if not isinstance(self.allow_unauthenticated, bool):
            raise ConfigError(f"{w}.allow_unauthenticated: expected true or false, "
                              f"got {self.allow_unauthenticated!r}")
        if self.allowed_nodes is not None:
            names = self.allowed_nodes
            if (isinstance(names, str) or not isinstance(names, (list, tuple)) or not names
                    or not all(isinstance(n, str) and n.strip() for n in names)):
                raise ConfigError(f"{w}.allowed_nodes: expected a non-empty list of node names "
                                  f"or ids, got {names!r}")
            object.__setattr__(self, "allowed_nodes", tuple(names))

    @classmethod
    def parse(cls, data: Any, where: str = "[engine]") -> EngineConfig:
        """From the TOML table (unknown keys are errors)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a table, got {data!r}")
        unknown = [k for k in data if k not in ENGINE_KEYS]
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r}; allowed: "
                              f"{', '.join(ENGINE_KEYS)}")
        return cls(**data, _where=where)

    def corpus_for(self, node_name: str, default: str) -> str:
        """This node's corpus path: its own entry, else `corpus`, else `default`."""
        return dict(self.corpus_by_node).get(node_name) or self.corpus or default

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "address": self.address,
                               "case_workers_per_node": self.case_workers_per_node,
                               "data_workers_per_node": self.data_workers_per_node}
        if self.nodes is not None:
            out["nodes"] = self.nodes
        if self.corpus is not None:
            out["corpus"] = self.corpus
        if self.corpus_by_node:
            out["corpus_by_node"] = dict(self.corpus_by_node)
        if self.allowed_nodes is not None:
            out["allowed_nodes"] = list(self.allowed_nodes)
        if self.allow_unauthenticated:
            out["allow_unauthenticated"] = True
        return out


def _positive(where: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: expected an integer >= 1, got {value!r}")
