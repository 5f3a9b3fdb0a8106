"""The ``jethexa-bus-emulator`` console script, run as a subprocess and driven through its pty."""
import contextlib
import os
import signal
import time
import subprocess
import sys

import pytest

from jethexa_dynamics.hardware.bus import open_bus
from jethexa_dynamics.hardware.errors import ServoTimeout
from jethexa_dynamics.hardware.joints import JointServoBus
from jethexa_dynamics.hardware.servo_table import load_servo_table


def launch(*args):
    exe = os.path.join(os.path.dirname(sys.executable), "jethexa-bus-emulator")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "jethexa_dynamics.hardware.emulator_cli"]
    return subprocess.Popen(cmd + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@contextlib.contextmanager
def serving(*args):
    """The console script serving; yields (process, pty path); ends with SIGINT, which must exit 0."""
    proc = launch(*args)
    try:
        port = proc.stdout.readline().strip()  # the first line is the pty path
        assert port.startswith("/dev/"), (port, proc.stderr.read() if proc.poll() is not None else "")
        yield proc, port
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize("transport", ["uart", "rrc"])
def test_cli_serves_until_sigint(transport):
    with serving("--transport", transport, "--faults", "11:no_reply") as (proc, port):
        table = load_servo_table()
        joints = JointServoBus(open_bus(transport, port, reply_timeout=1.0), table, read_timeout=1.0)
        joints.command({j: 0.25 for j in table.joint_names}, 0.0)
        pos, errs = joints.read_all_positions(timeout=1.0)
        assert list(errs) == ["coxa_joint_LM"] and isinstance(errs["coxa_joint_LM"], ServoTimeout)
        assert all(abs(v - 0.25) < 0.003 for v in pos.values()) and len(pos) == 17
        joints.close()


def test_cli_board_streams_its_imu_and_battery():
    from jethexa_dynamics.hardware.board_reports import BatteryReport, ImuReport

    with serving("--transport", "rrc", "--battery-rate", "10") as (proc, port):
        bus = open_bus("rrc", port)
        try:
            got = []
            deadline = time.monotonic() + 20.0
            while time.monotonic() < deadline and not (any(isinstance(r, BatteryReport) for r in got)
                                                       and sum(isinstance(r, ImuReport) for r in got) > 5):
                got += bus.poll_reports()
                time.sleep(0.02)
            assert any(isinstance(r, BatteryReport) and r.mv == 11100 for r in got)
            assert sum(isinstance(r, ImuReport) for r in got) > 5
        finally:
            bus.close()


def test_cli_rejects_bad_fault_spec():
    proc = launch("--faults", "5:explode")
    try:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2 and "fault kind" in err and out == ""
    finally:
        if proc.poll() is None:
            proc.kill()


def test_cli_answers_as_the_protocol_says():
    """Hand-written frames (test_hw_servo_faults.py) against the console script: 36 returns the setting of 35,
    a broadcast POS_READ is not answered, ID 1 answers its own POS_READ."""
    import serial

    from test_hw_servo_faults import (B_POS_READ, LED_ERROR_READ, LED_ERROR_REPLY_5, LED_ERROR_REPLY_7,
                                      LED_ERROR_WRITE_5, POS_READ, POS_REPLY_500)

    with serving() as (proc, port), serial.Serial(port, 115200, timeout=0.5) as line:
        def ask(frame, n):
            line.reset_input_buffer()
            line.write(frame)
            return line.read(n)

        assert ask(LED_ERROR_READ, 7) == LED_ERROR_REPLY_7
        line.write(LED_ERROR_WRITE_5)
        assert ask(LED_ERROR_READ, 7) == LED_ERROR_REPLY_5
        assert ask(B_POS_READ, 8) == b""            # 18 servos, no collision: nobody answers
        assert ask(POS_READ, 8) == POS_REPLY_500
