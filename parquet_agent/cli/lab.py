"""JupyterLab on the project's notebooks: a named kernel for this environment, clean notebooks.

    .venv/bin/pip install -e '.[lab]'      # JupyterLab into the project's .venv
    .venv/bin/parquet-agent lab            # register the kernel (once), start Lab on notebooks/

- `install_kernel(prefix)` registers the kernel `parquet-agent` ("parquet_agent (.venv)") whose
  interpreter is this one (`sys.executable`), under `prefix/share/jupyter/kernels` (default:
  this environment's own prefix, so it never touches the user's home). The notebooks name that
  kernel; a Lab in another environment that lacks it asks for a kernel, and the notebooks' first
  code cell then says which one to pick.
- `strip_outputs(nb)` clears outputs and execution counts of a notebook (a dict, in place);
  `pre_save_hook` applies it to every notebook saved under a `notebooks/` folder, while the
  browser keeps showing the outputs. `install_server_config(prefix)` names the hook in the
  environment's Jupyter config (`etc/jupyter/jupyter_server_config.json`), so
  any Jupyter server of this environment (`parquet-agent lab`, `jupyter lab`) keeps the shipped
  notebooks clean.
- `lab_command(root)` is the JupyterLab command `parquet-agent lab` runs; as root (how many
  containers run) it adds `--allow-root`, without which JupyterLab refuses to start, and says so
  on stderr. The command replaces this process (exec), so a signal to it reaches JupyterLab.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path, PurePosixPath
from typing import Any

KERNEL_NAME = "parquet-agent"
KERNEL_DISPLAY_NAME = "parquet_agent (.venv)"
HOOK = "parquet_agent.cli.lab.pre_save_hook"


def install_kernel(prefix: str | Path | None = None) -> Path:
    """Register (or refresh) the `parquet-agent` kernel for this interpreter; return its folder."""
    from ipykernel.kernelspec import install

    where = str(prefix) if prefix is not None else sys.prefix
    return Path(install(kernel_name=KERNEL_NAME, display_name=KERNEL_DISPLAY_NAME,
                        prefix=where))


def install_server_config(prefix: str | Path | None = None) -> Path:
    """Name `pre_save_hook` in the Jupyter server config of `prefix` (default: this
    environment), keeping whatever else that file says; return the file written."""
    import json

    path = Path(prefix if prefix is not None else sys.prefix) / "etc" / "jupyter" \
        / "jupyter_server_config.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    config.setdefault("ContentsManager", {})["pre_save_hook"] = HOOK
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    return path


def strip_outputs(nb: dict[str, Any]) -> bool:
    """Clear every code cell's outputs and execution count (in place); True if any was set."""
    changed = False
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        if cell.get("outputs") or cell.get("execution_count") is not None:
            changed = True
        cell["outputs"], cell["execution_count"] = [], None
    return changed


def pre_save_hook(model: dict[str, Any], path: str, **_: Any) -> None:
    """Jupyter ContentsManager pre-save hook: notebooks under a `notebooks/` folder are saved
    without outputs (the project's notebooks are stored clean; see the module docstring)."""
    if model.get("type") == "notebook" and "notebooks" in PurePosixPath(path).parts[:-1]:
        strip_outputs(model["content"])


ROOT_NOTE = ("parquet-agent lab: running as root, so JupyterLab starts with --allow-root (it "
             "refuses root otherwise); its notebooks and terminals run as root too")


def lab_command(root: Path, *extra: str, as_root: bool = False) -> list[str]:
    """JupyterLab on `root`, opening its notebooks/ folder, with the pre-save hook; `as_root`
    adds `--allow-root` unless `extra` already allows it."""
    allow = as_root and not any(a.startswith(("--allow-root", "--ServerApp.allow_root"))
                                for a in extra)
    return [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root}",
            "--LabApp.default_url=/lab/tree/notebooks", *(["--allow-root"] if allow else []),
            *extra]


def register(subparsers) -> None:
    """`parquet-agent lab`: see the module docstring."""
    lab = subparsers.add_parser(
        "lab", help="register the project's Jupyter kernel and start JupyterLab on notebooks/ "
        "(needs the lab extra: pip install -e '.[lab]')")
    lab.add_argument("--install-only", action="store_true",
                     help="only register the `parquet-agent` kernel and the save hook for "
                     "this environment")
    lab.add_argument("--strip", nargs="+", type=Path, metavar="NOTEBOOK",
                     help="clear the outputs of these notebooks (in place) and exit")
    lab.add_argument("lab_args", nargs="*", help="more JupyterLab options (after --)")
    lab.set_defaults(handler=_lab)


def _lab(args) -> int:
    import importlib.util
    import json

    from parquet_agent.errors import UsageError

    if args.strip:
        for path in args.strip:
            nb = json.loads(path.read_text(encoding="utf-8"))
            if strip_outputs(nb):
                path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n",
                                encoding="utf-8")
                print(f"stripped {path}")
        return 0
    folder = install_kernel()
    print(f"kernel {KERNEL_NAME!r} ({KERNEL_DISPLAY_NAME}) registered in {folder}")
    print(f"notebooks/ saved without outputs: {install_server_config()}")
    if args.install_only:
        return 0
    if importlib.util.find_spec("jupyterlab") is None:
        raise UsageError("JupyterLab is not installed in this environment; install the lab "
                         "extra: .venv/bin/pip install -e '.[lab]'")
    as_root = os.geteuid() == 0
    command = lab_command(Path.cwd(), *args.lab_args, as_root=as_root)
    if "--allow-root" in command:
        print(ROOT_NOTE, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command[0], command)
    return 1  # not reached: exec replaced this process
