"""Servo-bus throughput: the protocol's physical limit at 115200 baud vs what the driver achieves.

Physical limit: one MOVE_TIME_WRITE frame is 10 bytes = 100 bits at 8N1; 18 servos = 1800 bits per tick.
Measured (this machine, pty emulator, so no wire time): the driver's CPU cost of one 18-servo group move and of
one read round trip; the reachable control rate on the robot is then 1 / (wire time + driver overhead).
Also: MPU6050 read + conversion and Madgwick update cost (the IMU node runs them at 100 Hz).

Usage: ``.venv/bin/python benchmarks/bench_bus.py [--out benchmarks/results/bus.md] [--quick]``
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

from _machine import describe
from jethexa_dynamics.hardware import (BusEmulator, DirectUartBus, JointServoBus, MadgwickFilter, Mpu6050,
                                       Mpu6050Emulator, RrcBoardBus, load_servo_table, static_motion)
from jethexa_dynamics.hardware.protocol import frame_wire_time

BAUD = 115200
N = 18


def timeit(fn, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), sorted(ts)[int(0.95 * (len(ts) - 1))]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bus.md"))
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args(argv)
    reps = 200 if args.quick else 2000
    table = load_servo_table()
    q = {s.joint: 0.1 for s in table}

    # -- physical limits at 115200 8N1 ------------------------------------------------------------------
    move = frame_wire_time(10 * N, BAUD)
    move_sync = frame_wire_time(10 * N + 6, BAUD)
    read = frame_wire_time(6 + 8, BAUD)
    hiwonder_read = read + 0.005 + frame_wire_time(0, BAUD)  # Hiwonder waits a fixed 5 ms before reading
    rrc_move = frame_wire_time(9 + 3 * N, 1_000_000)

    # -- measured driver overhead (pty: bytes cost no wire time) -------------------------------------------
    res = {}
    for transport, cls in (("uart", DirectUartBus), ("rrc", RrcBoardBus)):
        with BusEmulator(table, transport=transport).start() as em:
            joints = JointServoBus(cls(em.port, reply_timeout=0.5), table)
            res[transport, "command"] = timeit(lambda: joints.command(q, 0.02), reps)
            time.sleep(0.2)
            joints.bus._ser.reset_input_buffer()
            res[transport, "read"] = timeit(lambda: joints.bus.read_position(5), reps // 4)
            res[transport, "tick"] = timeit(lambda: joints.poll(0.004), reps // 10)
            joints.close()
    emu = Mpu6050Emulator(static_motion())
    imu = Mpu6050(emu, sleep_fn=lambda s: None)
    imu.initialize()
    res["imu", "read"] = timeit(imu.read, reps)
    f = MadgwickFilter()
    g, a = np.array([0.01, -0.02, 0.03]), np.array([0.1, 0.2, 9.8])
    res["imu", "filter"] = timeit(lambda: f.update(g, a, 0.01), reps)

    cmd_cpu = res["uart", "command"][0]
    read_rt = res["uart", "read"][0]
    rate_writes = 1.0 / (move + cmd_cpu)
    budget_50 = 0.020 - move - cmd_cpu
    reads_50 = max(0, int(budget_50 // (read + read_rt)))

    ms = lambda s: "%.3f" % (s * 1e3)  # noqa: E731
    lines = [
        "# Servo bus throughput (`benchmarks/bench_bus.py`)",
        "",
        *describe("pyserial"),
        "- driver side measured against the pty emulator (no wire time; the box is shared, medians over %d runs)"
        % reps,
        "",
        "## Physical limit of the JetHexa's bus (115200 baud, 8N1 = 10 bits per byte)",
        "",
        "| what | bytes | wire time [ms] | max rate [Hz] |",
        "|---|---|---|---|",
        "| 18 x MOVE_TIME_WRITE (one group write) | %d | %s | %.1f |" % (10 * N, ms(move), 1 / move),
        "| 18 x MOVE_TIME_WAIT_WRITE + MOVE_START | %d | %s | %.1f |" % (10 * N + 6, ms(move_sync), 1 / move_sync),
        "| one position read (6 B request + 8 B reply) | 14 | %s | %.0f reads/s |" % (ms(read), 1 / read),
        "| 18 position reads, wire only | %d | %s | %.1f |" % (14 * N, ms(N * read), 1 / (N * read)),
        "| 18 position reads, Hiwonder's 5 ms wait | %d | %s | %.1f |" % (14 * N, ms(N * hiwonder_read),
                                                                       1 / (N * hiwonder_read)),
        "| RRC board group move (1 Mbaud USB link only) | %d | %s | %.0f |" % (9 + 3 * N, ms(rrc_move), 1 / rrc_move),
        "",
        "## Driver cost on this machine",
        "",
        "| operation | median [ms] | p95 [ms] |",
        "|---|---|---|",
    ]
    names = {("uart", "command"): "UART: validate + encode + write 18-joint group move",
             ("uart", "read"): "UART: one position read round trip (driver + emulator)",
             ("uart", "tick"): "UART: `poll(budget=4 ms)`",
             ("rrc", "command"): "RRC: validate + encode + write 18-joint group move",
             ("rrc", "read"): "RRC: one position read round trip (driver + emulator)",
             ("rrc", "tick"): "RRC: `poll(budget=4 ms)`",
             ("imu", "read"): "MPU6050: 14-byte burst + SI + remap (emulated SMBus)",
             ("imu", "filter"): "Madgwick update"}
    for k, label in names.items():
        lines.append("| %s | %s | %s |" % (label, ms(res[k][0]), ms(res[k][1])))
    lines += [
        "",
        "## Reachable control rate (115200 baud)",
        "",
        "- writes only: 1 / (%s ms wire + %s ms driver) = **%.1f Hz** for 18 servos (limit %.1f Hz)."
        % (ms(move), ms(cmd_cpu), rate_writes, 1 / move),
        "- at Hiwonder's 50 Hz tick: %s ms remain after the move -> **%d position reads per tick** "
        "(wire %s ms + driver %s ms each, servo reply latency not included - VERIFY on the robot); "
        "a full 18-joint position sweep then takes %.0f ticks = %.0f ms."
        % (ms(budget_50), reads_50, ms(read), ms(read_rt), (N / reads_50) if reads_50 else float("inf"),
           (N / reads_50 * 20) if reads_50 else float("inf")),
        "- closed-loop position feedback for all 18 joints at 50 Hz is impossible on this bus (reference §0.3): "
        "the predictor runs on commands + IMU with the round-robin reads as a slow check.",
        "",
    ]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
