#!/usr/bin/env bash
# Set up .venv and run the whole test suite (slow tests included) on parallel workers (pytest-xdist, one ROS
# domain each: test/conftest.py). Extra args go to pytest: -m "not slow" (the quick loop), a test file,
# -n 0 (one process, no workers). JETHEXA_TEST_WORKERS sets the number of workers (default 3: most tests wait
# on real time, not on a CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
source scripts/ros_env.sh
export OMP_NUM_THREADS=1
source scripts/numba_env.sh
workers=(-n "${JETHEXA_TEST_WORKERS:-3}" --dist loadgroup)
for arg in "$@"; do
  case "$arg" in
    -n|-n*|--numprocesses|--numprocesses=*|no:xdist|-pno:xdist) workers=() ;;
  esac
done
# (exit status 5: the selection matched no test; test/conftest.py says so in one line)
exec .venv/bin/python -m pytest -q ${workers[@]+"${workers[@]}"} "$@"
