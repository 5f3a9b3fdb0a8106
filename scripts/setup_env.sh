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
  # (grep drops pip's notes about optional local package mirrors that this machine may not have)
  pipq() { .venv/bin/python -m pip install -q "$@" 2>&1 | { grep -v '^WARNING: Location' || true; }; }
  pipq --upgrade pip
  pipq -r requirements-dev.txt
  # (setuptools' generic note on every editable install, which reads like a failure; nothing of ours)
  PYTHONWARNINGS='ignore:Editable installation' pipq -e '.[test,bench]'
  .venv/bin/python -c "import jethexa_dynamics, rclpy, pinocchio" || { echo "setup failed" >&2; exit 1; }
  echo "$want" > "$stamp"
fi
# compile the numba kernels once per source tree (scripts/test.sh and demo.sh use the same cache)
source scripts/numba_env.sh
if [ ! -d "$NUMBA_CACHE_DIR" ]; then
  .venv/bin/python -m jethexa_dynamics.warmup
fi
