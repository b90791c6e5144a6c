# Sourced by scripts/demo and scripts/test: create .venv (if missing) and install the project.
# Needs only Python >= 3.11 with pip and venv. PYTHON picks another interpreter.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "parquet_agent needs Python >= 3.11 (found: $("$PYTHON" --version 2>&1))" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".${EXTRAS:+[$EXTRAS]}"
