"""The CaseExplorer fits a JupyterLab pane (slow tier: `pytest -m slow`; needs the lab extra and
Chromium): JupyterLab 1,400 px wide with the file browser open leaves the notebook a ~930 px
pane. Every case section, every tool call and raw block opened, must fit it (nothing wider than
its output area, no sideways scrolling), and an API attempt's row stays a few lines tall (its
raw file paths get the table's whole width). The screenshot is kept in the test's tmp folder."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.lab_server import parquet_agent_lab

WIDTH = 1400
MEASURE = """() => {
  const box = document.querySelector('.pa-case');
  const pane = box.closest('.jp-OutputArea-output');
  const wide = [];
  for (const el of pane.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > pane.getBoundingClientRect().right + 1)
      wide.push(el.tagName + '.' + el.className + ' ' + Math.round(r.width));
  }
  const rows = [...box.querySelectorAll('table.pa-attempts tr.pa-attempt')];
  const left = document.querySelector('#filebrowser');
  return {pane: pane.clientWidth, explorer: pane.scrollWidth, case: box.scrollWidth,
          sticking_out: wide.slice(0, 8), rows: rows.map(r => r.getBoundingClientRect().height),
          row_heights_with_files: rows.map(r => r.getBoundingClientRect().height +
              (r.nextElementSibling ? r.nextElementSibling.getBoundingClientRect().height : 0)),
          file_browser: left ? left.getBoundingClientRect().width : 0};
}"""


def _notebook(root, run_dir, case_id):
    nb = new_notebook(cells=[new_code_cell(
        "from parquet_agent import CaseExplorer\n"
        f"CaseExplorer(r\"{run_dir}\", case_id={case_id!r})")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}})
    nbformat.write(nb, root / "explore.ipynb")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(900)
def test_the_explorer_fits_a_1400px_lab_with_the_file_browser_open(http_run, browser, tmp_path):
    pytest.importorskip("jupyterlab", reason="the lab extra: pip install -e '.[lab]'")
    from playwright.sync_api import expect

    root = tmp_path / "root"
    root.mkdir()
    _notebook(root, http_run, "Q002__fake__sql")  # a retried answer: three API attempts
    with parquet_agent_lab(root, tmp_path) as (url, token, _):
        page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{url}/lab/tree/explore.ipynb?reset&token={token}")
        page.wait_for_selector(".jp-Notebook .jp-CodeCell .cm-content", timeout=90_000)
        page.wait_for_function("""() => { const w = window.jupyterapp.shell.currentWidget;
            const k = w && w.sessionContext && w.sessionContext.session
                      && w.sessionContext.session.kernel;
            return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }""",
                               timeout=90_000)
        page.evaluate("() => window.jupyterapp.commands.execute('filebrowser:activate')")
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        expect(page.locator(".pa-case")).to_be_visible(timeout=120_000)
        page.evaluate("() => document.querySelectorAll('.pa-case details')"
                      ".forEach(d => { d.open = true; })")
        page.wait_for_timeout(500)
        seen = page.evaluate(MEASURE)
        page.evaluate("() => document.querySelector('.pa-count').closest('.jp-OutputArea-output')"
                      ".scrollIntoView({block: 'start'})")
        page.screenshot(path=str(tmp_path / "explorer-1400-top.png"))
        page.evaluate("() => document.querySelector('section.pa-sec[data-section=\"6\"]')"
                      ".scrollIntoView({block: 'start'})")
        page.screenshot(path=str(tmp_path / "explorer-1400.png"))
        page.close()
    assert seen["file_browser"] > 150, seen  # the file browser is open beside the notebook
    assert seen["pane"] < 1000, seen
    assert seen["sticking_out"] == [], seen
    assert seen["explorer"] <= seen["pane"] + 1 and seen["case"] <= seen["pane"] + 1, seen
    assert len(seen["rows"]) == 4, seen  # a 503, its retry, the tool-result turn, the judge
    assert max(seen["row_heights_with_files"]) < 100, seen  # was 142 px: paths in four lines
    assert errors == []
