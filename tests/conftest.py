"""Fixtures shared by every test folder.

`browser`: one headless Debian Chromium driven by Playwright's sync API for the whole session.
There must be exactly one: a second `sync_playwright()` started while the first is alive fails
("Playwright Sync API inside the asyncio loop"). Tests that need it skip cleanly where Chromium
is missing; `.ci/run` installs it, so CI never skips them.
"""

from __future__ import annotations

import os

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Chromium not installed at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()
