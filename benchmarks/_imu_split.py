#!/usr/bin/env python3
"""The node processes with the CPU time of the imu node's emulated MPU6050 counted apart (a measuring instrument
of ``bench_nano_budget.py``; the nodes themselves are unchanged).

    python benchmarks/_imu_split.py [--local-motion] EXECUTABLE [ARGS ...] --ros-args ...

takes the arguments of ``python -m jethexa_dynamics.nodes.entry`` (``graph.start_process(..., launcher=...)``):
``imu --ros-args ...`` (a process per node) or ``robot servo_driver imu ... --ros-args ...`` (the robot's nodes
in one process, as the launch files start them by default).

In the sim graph the imu node runs the MPU6050 register model (``hardware.mpu6050_emulator``) in the robot's
process: every register read or write the driver makes goes into that Python model instead of the I2C bus.
This runs ``jethexa_dynamics.nodes.entry EXECUTABLE`` as the launch file does, with the model's methods wrapped
to add their thread CPU time to the imu node's own ``CpuLoad`` under the stage ``emulated MPU6050`` (so
/diagnostics carries ``cpu_s emulated MPU6050`` next to ``cpu_s sample``, the tick that contains it, and
``cpu_s emulator/imu_motion``, the callback that feeds the model the emulated robot's motion). Cost: two
``thread_time`` calls per register access (~1 µs, 100 accesses per second).

``--local-motion`` (for the split's A/B measurement; executable ``imu``): the node runs its robot code path
(``source: i2c``, no ``emulator/imu_motion`` subscription) on the same register model standing in for
``smbus2.SMBus``, fed by a slow constant rotation computed in the process. Pass a parameter file with ``source:
i2c``.
"""
import os
import signal
import sys
import time

STAGE = "emulated MPU6050"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def _instrument():
    from jethexa_dynamics.hardware import mpu6050_emulator
    from jethexa_dynamics.nodes import imu

    nodes = []
    init = imu.ImuNode.__init__

    def node_init(self, **kwargs):
        nodes.append(self)           # self.cpu exists once ThinNode.__init__ ran (before the chip is touched)
        init(self, **kwargs)

    imu.ImuNode.__init__ = node_init

    def timed(fn):
        def wrapped(*args, **kwargs):
            c0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                cpu = getattr(nodes[0], "cpu", None) if nodes else None
                if cpu is not None:
                    cpu.add(STAGE, time.thread_time() - c0)
        return wrapped

    cls = mpu6050_emulator.Mpu6050Emulator
    for name in ("read_byte_data", "read_i2c_block_data", "write_byte_data", "write_i2c_block_data"):
        setattr(cls, name, timed(getattr(cls, name)))
    return mpu6050_emulator


def _local_motion(mpu6050_emulator):
    """``smbus2.SMBus(n)`` -> the register model on a slow rotation (0.1 rad/s about z, 0.05 about x)."""
    import types

    fake = types.ModuleType("smbus2")
    fake.SMBus = lambda bus=None: mpu6050_emulator.Mpu6050Emulator(
        motion=mpu6050_emulator.constant_rotation((0.05, 0.0, 0.1)))
    sys.modules["smbus2"] = fake


def main():
    from jethexa_dynamics.nodes import entry

    for sig in (signal.SIGINT, signal.SIGTERM):      # as entry.start: no traceback while importing
        signal.signal(sig, entry._exit_now)
    argv = sys.argv[1:]
    own = argv[:argv.index("--ros-args")] if "--ros-args" in argv else argv
    local = "--local-motion" in own
    if local:
        argv.remove("--local-motion")
    if not argv or argv[0] not in ("imu", "robot"):
        print("usage: _imu_split.py [--local-motion] {imu,robot} [NODE ...] --ros-args ...", file=sys.stderr)
        return 2
    emu = _instrument()
    if local:
        _local_motion(emu)
    return entry.start(argv[0], [sys.argv[0]] + argv[1:])


if __name__ == "__main__":
    sys.exit(main())
