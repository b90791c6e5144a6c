"""Contracts (issue 23, item 6): declared keys, references, ranges, allowed values, patterns and
freshness, each checked by the finding gate's own evidence; a contract written from what an
audit found to hold; the next audit finds the drift. Real files, real workers, the CLI."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_agent.audit import Auditor
from parquet_agent.audit.config import AuditConfig
from parquet_agent.audit.contracts import Contract
from parquet_agent.errors import ConfigError

BASE = dt.datetime(2025, 1, 1)


def write_shop(folder: Path, *, drift: bool = False) -> Path:
    """customers / orders, 300 orders; `drift`: an orphan order, a duplicated customer id, an
    amount out of range, a new status, a malformed sku and orders no newer than before."""
    folder.mkdir(parents=True)
    customers = [{"customer_id": f"C{i:04d}", "tier": ["gold", "silver", "bronze"][i % 3]}
                 for i in range(60)]
    orders = [{"order_id": i, "customer_id": f"C{(i * 7) % 60:04d}", "amount": 10.0 + i % 90,
               "status": ["open", "paid", "shipped"][i % 3], "sku": f"SKU-{i % 40:03d}",
               "placed": BASE + dt.timedelta(hours=i)} for i in range(300)]
    if drift:
        customers[5]["customer_id"] = customers[6]["customer_id"]
        orders[10]["customer_id"] = "X9999"
        orders[11]["amount"] = 5000.0
        orders[12]["status"] = "lost"
        orders[13]["sku"] = "sku13"
        orders = [{**o, "placed": o["placed"] - dt.timedelta(days=30)} for o in orders]
    pq.write_table(pa.Table.from_pylist(customers), folder / "customers.parquet")
    pq.write_table(pa.Table.from_pylist(orders), folder / "orders.parquet")
    return folder


def test_unknown_keys_and_bad_values_are_config_errors_that_say_what_to_write(tmp_path):
    def error(text: str) -> str:
        path = tmp_path / "c.toml"
        path.write_text(text)
        with pytest.raises(ConfigError) as caught:
            Contract.from_toml(path)
        return str(caught.value)

    message = error('[contract]\n[[contract.key]]\ncolumns = ["id"]\n')
    assert "unknown key 'key'" in message and "did you mean 'keys'" in message
    assert "allowed: keys, references, ranges, allowed, patterns, freshness, file" in message
    # a config's JSON (the manifest's record) reads back to the same contract
    config = AuditConfig.from_table({"contract": {"keys": [{"columns": ["id"]}]}})
    assert AuditConfig.from_table(config.to_json()).contract == config.contract
    message = error('[contract]\n[[contract.ranges]]\ncolum = "x"\nmin = 1\n')
    assert "[contract].ranges[0]" in message and "did you mean 'column'" in message
    assert "must be" in error('[contract]\nkeys = "id"\n')
    assert "give min, max or both" in error('[contract]\n[[contract.ranges]]\ncolumn = "x"\n')
    assert "not a regular expression" in error(
        '[contract]\n[[contract.patterns]]\ncolumn = "x"\nregex = "("\n')
    assert "'7 days' is not an age" in error(
        '[contract]\n[[contract.freshness]]\ncolumn = "x"\nmax_age = "7 days"\n')
    assert "does not exist" in error('[contract]\nfile = "nope.toml"\n')
    with pytest.raises(ConfigError, match="did you mean 'contract'"):
        AuditConfig.from_table({"contracts": {}})


def test_each_declared_check_is_proven_by_the_gate(tmp_path):
    data = write_shop(tmp_path / "shop", drift=True)
    (tmp_path / "keys.toml").write_text(
        '[contract]\n[[contract.keys]]\ntable = "customers"\ncolumns = ["customer_id"]\n')
    config = tmp_path / "audit.toml"
    config.write_text("""
[audit.contract]
file = "keys.toml"
[[audit.contract.references]]
from = "orders.customer_id"
to = "customers.customer_id"
[[audit.contract.ranges]]
column = "orders.amount"
min = 0
max = 1000
[[audit.contract.allowed]]
column = "orders.status"
values = ["open", "paid", "shipped"]
[[audit.contract.patterns]]
column = "orders.sku"
regex = "SKU-[0-9]{3}"
[[audit.contract.freshness]]
column = "orders.placed"
not_before = "2025-01-05"
[[audit.contract.ranges]]
column = "orders.discount"
max = 1
""")
    report = Auditor(AuditConfig.from_toml(config), store=tmp_path / "f.sqlite").run(
        data, run_dir=tmp_path / "run")
    status = {c.check: c.status for c in report.contract}
    assert status == {"keys[0].duplicates": "violated", "keys[0].nulls": "holds",
                      "references[0]": "violated", "ranges[0]": "violated",
                      "allowed[0]": "violated", "patterns[0]": "violated",
                      "freshness[0]": "violated", "ranges[1]": "not_checked"}
    counts = {f.title: f.evidence.count for f in report.findings if f.title.startswith("contract")}
    assert counts["contract: customers.customer_id is a key, but values repeat"] == 2
    assert counts["contract: orders.amount outside its declared range"] == 1
    assert counts["contract: orders.status has a value the contract does not allow"] == 1
    assert counts["contract: orders.sku does not match its declared pattern"] == 1
    assert counts["contract: orders.placed is not fresh"] == 1
    orphan = next(f for f in report.findings if f.title.startswith("contract: orders.customer_id"))
    # the orphan, and the orders of the customer id the duplicate replaced
    assert orphan.evidence.count >= 1 and orphan.view == "orders"
    assert orphan.columns == ("customers.customer_id", "orders.customer_id")
    assert "orders.discount" in next(c.reason for c in report.contract
                                     if c.check == "ranges[1]")
    assert "contract: 8 checks, 6 violated, 1 holds, 1 not_checked" in report.text()


def _cli(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "parquet_agent", "audit", *args],
                          capture_output=True, text=True, check=False, timeout=600).stdout


def test_a_written_contract_holds_on_its_data_and_finds_the_drift(tmp_path):
    clean = write_shop(tmp_path / "shop")
    store = str(tmp_path / "f.sqlite")
    _cli("run", str(clean), "--run-dir", str(tmp_path / "a"), "--store", store, "--quiet")
    out = _cli("contract", str(tmp_path / "a"), "--out", str(tmp_path / "contract.toml"))
    assert "contract entries written" in out
    contract = Contract.from_toml(tmp_path / "contract.toml")
    assert {(k.table, tuple(k.columns)) for k in contract.keys} >= {("customers", ("customer_id",))}
    assert [(r.from_, r.to) for r in contract.references] == [
        ("orders.customer_id", "customers.customer_id")]
    assert {r.column for r in contract.ranges} >= {"orders.amount"}
    assert {a.column for a in contract.allowed} >= {"orders.status", "customers.tier"}
    assert ("orders.sku", "[A-Z]+\\-[0-9]+") in [(p.column, p.regex) for p in contract.patterns]
    assert [f.column for f in contract.freshness] == ["orders.placed"]
    same = _cli("run", str(clean), "--run-dir", str(tmp_path / "b"), "--store", store,
                "--contract", str(tmp_path / "contract.toml"), "--quiet")
    assert f"contract: {len(contract) + len(contract.keys)} checks" in same
    assert "violated" not in same.split("contract:", 1)[1].splitlines()[0]
    drifted = write_shop(tmp_path / "shop2", drift=True)
    later = _cli("run", str(drifted), "--run-dir", str(tmp_path / "c"), "--store", store,
                 "--contract", str(tmp_path / "contract.toml"), "--quiet")
    for title in ("customers.customer_id is a key, but values repeat",
                  "orders.customer_id refers to customers.customer_id",
                  "orders.amount outside its declared range",
                  "orders.status has a value the contract does not allow",
                  "orders.sku does not match its declared pattern",
                  "orders.placed is not fresh"):
        assert f"contract: {title}" in later, title
