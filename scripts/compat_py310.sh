#!/usr/bin/env bash
# Check the robot's target stack: Python 3.10 (ROS 2 Humble) with what the README installs on the robot, numba
# 0.60 beside numpy 1.26 (pip's numpy 2 would break Humble's message packages; numba 0.60 is the first that
# compiles the kernels at the speed BENCHMARKS.md gives). Not part of CI (it installs a second environment,
# ~10 min); run it before a release.
# Usage: PY310=/path/to/python3.10 bash scripts/compat_py310.sh [pytest args]
# Humble's own numba (Ubuntu 22.04's python3-numba 0.55, the floor setup.py allows; slower, see BENCHMARKS.md):
#   COMPAT_ENV=.venv-py310-numba055 COMPAT_NUMPY=1.21.6 COMPAT_NUMBA=0.55.2 COMPAT_SCIPY=1.7.3 \
#     bash scripts/compat_py310.sh
# With Pinocchio (numbers of issue #13 on this stack):
#   WITH_PIN=1 bash scripts/compat_py310.sh test/test_model_pinocchio.py
#   OMP_NUM_THREADS=1 NUMBA_CACHE_DIR=$PWD/.venv-py310/numba-cache .venv-py310/bin/python benchmarks/bench_model.py \
#     --tag py310_numba060
set -euo pipefail
cd "$(dirname "$0")/.."
PY310=${PY310:-python3.10}
ENV=${COMPAT_ENV:-.venv-py310}
[ -x "$ENV/bin/python" ] || "$PY310" -m venv "$ENV"
NUMPY=${COMPAT_NUMPY:-1.26.4}
"$ENV/bin/python" -m pip install -q "numpy==$NUMPY" "numba==${COMPAT_NUMBA:-0.60.0}" "scipy==${COMPAT_SCIPY:-1.11.4}" \
  transforms3d pyyaml pyserial \
  smbus2 "matplotlib<3.8" pytest hypothesis 2>&1 | { grep -v '^WARNING: Location' || true; }
"$ENV/bin/python" -m pip install -q --no-deps -e . 2>&1 | { grep -v '^WARNING: Location' || true; }
if [ "${WITH_PIN:-0}" = 1 ] && [ "${NUMPY#1.26}" != "$NUMPY" ]; then
  "$ENV/bin/python" -m pip install -q "pin==2.7.0" 2>&1 | { grep -v '^WARNING: Location' || true; }   # numpy~=1.26
elif [ "${WITH_PIN:-0}" = 1 ]; then
  # Pinocchio beside numpy 1.21, for test/test_model_pinocchio.py and `benchmarks/bench_model.py --tag py310`:
  # pin 2.7.0 (cp310) is the newest whose stack is built on numpy 1.x (cmeel-boost 1.83; later ones need numpy 2,
  # and no cp310 cmeel-boost was built on numpy <= 1.22). cmeel-boost declares numpy~=1.26, but its wheels
  # target numpy's older C API and run on 1.21.6: installed without dependency resolution, exact pins.
  "$ENV/bin/python" -m pip install -q --no-deps "pin==2.7.0" "cmeel==0.62.0" "cmeel-boost==1.83.0" \
    "cmeel-urdfdom==3.1.1.1" "cmeel-console-bridge==1.0.2.3" "cmeel-tinyxml==2.6.2.3" "hpp-fcl==2.4.4" \
    "eigenpy==3.5.1" "cmeel-assimp==5.4.3.1" "cmeel-octomap==1.10.0" "cmeel-qhull==8.0.2.1" "cmeel-zlib==1.3.2" \
    2>&1 | { grep -v '^WARNING: Location' || true; }
fi
export NUMBA_CACHE_DIR=$(cd "$ENV" && pwd)/numba-cache
# the pure-Python core (no rclpy, no Pinocchio in this environment)
exec "$ENV/bin/python" -m pytest -q test/test_model_physics.py test/test_model_morphology.py \
  test/test_control_gait.py test/test_control_pid.py test/test_sim_contact.py test/test_sim_engine.py \
  test/test_hw_protocol.py test/test_hw_joints.py test/test_slip_model.py "$@"
