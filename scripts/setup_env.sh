#!/usr/bin/env bash
# Create (or refresh) .venv with the package and everything its tests and demo need.
# Idempotent: reinstalls only when setup.py or requirements-dev.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.jethexa-installed
want=$(cat setup.py requirements-dev.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements-dev.txt
  .venv/bin/python -m pip install -q -e '.[test,bench]'
  echo "$want" > "$stamp"
fi
