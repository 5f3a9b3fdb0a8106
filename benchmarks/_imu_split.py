#!/usr/bin/env python3
"""The ``imu`` node with the CPU time of its emulated MPU6050 counted apart (a measuring instrument of
``bench_nano_budget.py``; the node itself is unchanged).

    python benchmarks/_imu_split.py [--local-motion] --ros-args ...    (the arguments of ``entry imu``)

In the sim graph the imu node runs the MPU6050 register model (``hardware.mpu6050_emulator``) in its own
process: every register read or write the driver makes goes into that Python model instead of the I2C bus.
This runs ``jethexa_dynamics.nodes.entry imu`` as the launch file does, with the model's methods wrapped to
add their thread CPU time to the node's own ``CpuLoad`` under the stage ``emulated MPU6050`` (so /diagnostics
carries ``cpu_s emulated MPU6050`` next to ``cpu_s sample``, the tick that contains it, and ``cpu_s
emulator/imu_motion``, the callback that feeds the model the emulated robot's motion). Cost: two
``thread_time`` calls per register access (~1 µs, 100 accesses per second).

``--local-motion`` (for the split's A/B measurement): the node runs its robot code path (``source: i2c``, no
``emulator/imu_motion`` subscription) on the same register model standing in for ``smbus2.SMBus``, fed by a
slow constant rotation computed in the process. Pass ``-p source:=i2c`` or a parameter file that says so.
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
    local = "--local-motion" in argv[:argv.index("--ros-args")] if "--ros-args" in argv else "--local-motion" in argv
    if local:
        argv.remove("--local-motion")
    emu = _instrument()
    if local:
        _local_motion(emu)
    return entry.start("imu", [sys.argv[0]] + argv)


if __name__ == "__main__":
    sys.exit(main())
