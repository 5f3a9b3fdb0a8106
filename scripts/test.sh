#!/usr/bin/env bash
# Set up .venv and run the whole test suite (slow tests included). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
source scripts/ros_env.sh
export OMP_NUM_THREADS=1
source scripts/numba_env.sh
exec .venv/bin/python -m pytest -q "$@"
