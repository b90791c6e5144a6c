"""Small real corpora for the tools tests: tool-ready Parquet (LayoutWriter) plus the real index.

Row groups are cut at 8 KB of text so a 60-row corpus has many row groups: scoped reads and
index lookups are exercised for real. Folders come from tmp_path_factory (mode 0700 as root), so
the tests also show that workers which dropped root read the corpus through descriptors only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable

import psutil
import pyarrow as pa
import pytest

from parquet_agent.corpus.index import build_index
from parquet_agent.corpus.layout import LayoutWriter
from parquet_agent.tools import Tools
from parquet_agent.tools.sandbox import SandboxLimits

NAMES = ["Northwind Traders", "Contoso Mining", "Fabrikam Foods", "Tailspin Toys", "Wingtip Air"]
FORMS = ["10-K", "10-Q", "8-K"]


def filing(i: int) -> dict:
    company = f"{NAMES[i % 5]} {i // 5} Inc."
    cik = str(1000 + i)
    header = (
        f"ACCESSION NUMBER: {stem(i)}\nCONFORMED SUBMISSION TYPE: {FORMS[i % 3]}\n"
        f"CONFORMED PERIOD OF REPORT: 20241231\nFILED AS OF DATE: 2025{1 + i % 2:02d}{10 + i % 15:02d}\n"
        f"COMPANY CONFORMED NAME: {company}\nCENTRAL INDEX KEY: {cik.zfill(10)}\n\n# {company}\n\n"
    )
    body = "".join(
        f"Paragraph {k} of filing {i}: total revenue was {100 + i + k} million dollars. Ünïcödé ✓.\n"
        for k in range(20 + (i % 4) * 10)
    )
    text = header + body + f"\nEND OF FILING {i}\n"
    return {
        "accession": cik.zfill(10) if i % 2 else cik, "file_stem": stem(i), "year": 2025,
        "month": 1 + i % 2, "parsed_md": text, "char_count": len(text),
        "md5": hashlib.md5(text.encode()).hexdigest(), "has_ocr": False, "source_format": "html",
    }


def stem(i: int) -> str:
    return f"{1000 + i:010d}-25-{i:06d}"


ROWS = 60


def write_files(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for month in (1, 2):
        rows = [filing(i) for i in range(ROWS) if 1 + i % 2 == month]
        with LayoutWriter(folder / f"2025-{month:02d}.parquet", row_group_text_bytes=8_000) as out:
            out.write(pa.Table.from_pylist(rows))


def file_hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tools")
    folder = root / "corpus"
    write_files(folder)
    build_index(folder)
    (root / "secret.csv").write_text("api_key\nsk-SECRET-123\n")
    shutil.copy(folder / "2025-01.parquet", root / "outside.parquet")
    return folder


@pytest.fixture(scope="session")
def plain_corpus_dir(tmp_path_factory) -> Path:
    """The same files without a sidecar index."""
    folder = tmp_path_factory.mktemp("tools-noindex") / "corpus"
    write_files(folder)
    return folder


@pytest.fixture(scope="session")
def tools(corpus_dir) -> Tools:
    with Tools.open(corpus_dir, "sql+stream", cache="off") as t:
        yield t


@pytest.fixture(scope="session")
def tight_tools(corpus_dir) -> Tools:
    """Short CPU and wall limits so the exhaustion tests finish in seconds."""
    limits = SandboxLimits(cpu_seconds=1.5, wall_seconds=2.5)
    with Tools.open(corpus_dir, "sql+stream", cache="off", limits=limits) as t:
        yield t


def running_calls(tools: Tools, cpu_s: float = 0.1) -> int:
    """The fork server's children busy on a call: `cpu_s` of user time at least (a pre-forked
    spare has used next to none)."""
    busy = 0
    for child in psutil.Process(tools.sandbox.server_pid).children():
        try:
            busy += child.cpu_times().user >= cpu_s
        except psutil.Error:  # exited between the listing and the look
            continue
    return busy


def is_root() -> bool:
    return os.geteuid() == 0


def report_from_child(work: Callable[[int], dict], keep_fds=()) -> dict:
    """Fork; the child runs `work(write_fd)` (it hardens itself, keeping `write_fd`) and its dict
    comes back as JSON. What escapes `work` (a failed harden or lock) is reported under "harden"."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            seen = work(write_fd)
        except BaseException as exc:  # noqa: BLE001
            seen = {"harden": repr(exc)}
        os.write(write_fd, json.dumps(seen).encode())
        os._exit(0)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    os.close(read_fd)
    for fd in keep_fds:
        os.close(fd)
    return json.loads(data)
