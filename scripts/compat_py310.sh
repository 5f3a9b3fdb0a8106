#!/usr/bin/env bash
# Check the robot's target stack: Python 3.10 (ROS 2 Humble) with numpy 1.21 and the numba/scipy of that era.
# Not part of CI (it installs a second environment, ~10 min); run it before a release.
# Usage: PY310=/path/to/python3.10 bash scripts/compat_py310.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY310=${PY310:-python3.10}
ENV=${COMPAT_ENV:-.venv-py310}
[ -x "$ENV/bin/python" ] || "$PY310" -m venv "$ENV"
"$ENV/bin/python" -m pip install -q "numpy==1.21.6" "numba==0.55.2" "scipy==1.7.3" transforms3d pyyaml pyserial \
  smbus2 "matplotlib<3.8" pytest hypothesis 2>&1 | { grep -v '^WARNING: Location' || true; }
"$ENV/bin/python" -m pip install -q --no-deps -e . 2>&1 | { grep -v '^WARNING: Location' || true; }
export NUMBA_CACHE_DIR=$PWD/$ENV/numba-cache
# the pure-Python core (no rclpy, no Pinocchio in this environment)
exec "$ENV/bin/python" -m pytest -q test/test_model_physics.py test/test_model_morphology.py \
  test/test_control_gait.py test/test_control_pid.py test/test_sim_contact.py test/test_sim_engine.py \
  test/test_hw_protocol.py test/test_hw_joints.py test/test_slip_model.py "$@"
