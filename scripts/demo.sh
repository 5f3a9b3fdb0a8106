#!/usr/bin/env bash
# Set up .venv and run the main job: the whole node graph on the emulated robot, walking, with a damage
# event mid-run, printing predicted vs measured pose. Extra args go to jethexa-demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
source scripts/ros_env.sh
source scripts/numba_env.sh
exec .venv/bin/jethexa-demo "$@"
