# Sourced by scripts/demo and scripts/test: create .venv (if missing) and install the project.
# Needs only Python >= 3.11 with pip and venv. PYTHON picks another interpreter.
# Says what it does on stderr (stdout stays the command's own: `demo --quiet` prints nothing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "parquet_agent needs Python >= 3.11 (found: $("$PYTHON" --version 2>&1))" >&2; exit 1; }
_setup_started=$SECONDS
_setup_what="parquet_agent${EXTRAS:+[$EXTRAS]}"
if [ ! -x .venv/bin/python ]; then
  echo "setting up .venv with $("$PYTHON" --version 2>&1): $_setup_what and its dependencies" \
       "(about 1-2 minutes the first time, quiet while pip works) ..." >&2
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
else
  echo "checking .venv: $_setup_what (a few seconds when nothing changed) ..." >&2
fi
# setuptools boxes a warning into every editable install that a folder named like the package
# may shadow it; here that folder is the package itself, so the box is only noise on setup
PYTHONWARNINGS="ignore:Editable installation" \
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".${EXTRAS:+[$EXTRAS]}"
echo ".venv ready in $((SECONDS - _setup_started)) s" >&2
