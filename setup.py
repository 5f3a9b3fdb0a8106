"""ament_python package, also installable with plain ``pip install .`` (no ROS needed for the core)."""
from glob import glob

from setuptools import find_namespace_packages, setup

PACKAGE = "jethexa_dynamics"

NODES = ["servo_driver", "imu", "gait_controller", "predictor", "damage_monitor", "robot_emulator", "robot", "stock_adapter"]

setup(
    name=PACKAGE,
    version="0.1.0",
    # urdf/ and config/ are reachable from the Python package too (symlinks under data/), so
    # ``LeggedRobot.jethexa()`` and the servo table work after a plain pip install. Those data directories
    # are listed as (namespace) packages with their package_data: setuptools warns about data in a
    # directory that is not in ``packages``.
    packages=find_namespace_packages(include=[PACKAGE, PACKAGE + ".*"], exclude=["*.__pycache__"]),
    package_data={PACKAGE + ".data.urdf": ["*.urdf"], PACKAGE + ".data.config": ["*.yaml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
        ("share/" + PACKAGE + "/launch", glob("launch/*.launch.py")),
        ("share/" + PACKAGE + "/config", glob("config/*.yaml")),
        ("share/" + PACKAGE + "/policy", glob("policy/*.policy.xml")),   # SROS2 policies (docs/security.md)
        ("share/" + PACKAGE + "/urdf", glob("urdf/*")),
    ],
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.21",
        "scipy>=1.7",
        "numba>=0.55",   # 0.55 = Ubuntu 22.04 (ROS 2 Humble) python3-numba; scripts/compat_py310.sh tests 0.55.2
        "pyyaml>=5.4",
        "pyserial>=3.5",
        "smbus2>=0.4",
        "transforms3d>=0.4",
        "matplotlib>=3.5",
        "rosbags>=0.9.15",
    ],
    extras_require={
        "test": ["pytest>=7", "hypothesis>=6", "pin>=2.7"],
        "bench": ["pin>=2.7", "mujoco>=3.0"],
    },
    zip_safe=False,
    maintainer="jethexa_dynamics developers",
    maintainer_email="dev@jethexa-dynamics.invalid",
    description="Fast modular whole-body dynamics and ROS 2 stack for the Hiwonder JetHexa hexapod.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "jethexa-demo = jethexa_dynamics.demo:main",
            "jethexa-sim = jethexa_dynamics.sim.cli:main",
            "jethexa-bus-emulator = jethexa_dynamics.hardware.emulator_cli:main",
            "jethexa-validate = jethexa_dynamics.validation.cli:main",
            "jethexa-identify = jethexa_dynamics.damage.identify_cli:main",
            "jethexa-calibrate = jethexa_dynamics.damage.calibrate_cli:main",
            "jethexa-model-report = jethexa_dynamics.model.report:main",
            "jethexa-warmup = jethexa_dynamics.warmup:main",
        ]
        # nodes start through nodes/entry.py: Ctrl-C while they import exits 0 at once
        + ["{0} = jethexa_dynamics.nodes.entry:{0}".format(n) for n in NODES],
    },
)
