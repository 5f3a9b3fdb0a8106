"""Replay speed of ``jethexa-validate``: messages per second and real-time factor on a 60 s bag.

The bag is the simulated JetHexa walking 60 s (damage 1 at 30 s), recorded without ROS by
``jethexa_dynamics.validation.simbag`` (IMU and motion capture at 100 Hz, commands and joint states at
50 Hz), once in MCAP and once in sqlite3. Measured, best of ``--repeat`` runs:

- read: ``read_bag`` (open, deserialize, checks) alone;
- replay: each predictor of the registry on the read bag (what the real-time factor in the report is);
- whole command: ``jethexa-validate`` end to end (read, replay, metrics, JSON, CSV, plots).

Peers side by side: ``rosbags`` deserializing the same messages with nothing else (the I/O ceiling), and
``ros2 bag play``, which replays at real-time factor 1 by construction.

    .venv/bin/python benchmarks/bench_replay.py [--duration 60] [--repeat 3] [--out benchmarks/results/replay.md]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _machine import describe
from jethexa_dynamics.predictors import registry
from jethexa_dynamics.validation import bag_io, bag_messages as messages, cli, replay
from jethexa_dynamics.validation.simbag import write_sim_bag


def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _raw_rosbags(path):
    from rosbags.highlevel import AnyReader

    n = 0
    with AnyReader([Path(path)], default_typestore=messages.typestore()) as r:
        for c, _, raw in r.messages():
            r.deserialize(raw, c.msgtype)
            n += 1
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "replay.md"))
    a = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="bench_replay_"))
    rows, notes = [], []
    try:
        names = registry.predictor_names()
        for storage in ("mcap", "sqlite3"):
            bag = tmp / ("walk_" + storage)
            t = time.perf_counter()
            write_sim_bag(bag, duration=a.duration, damage_at=a.duration / 2, storage=storage)
            notes.append("{}: bag generated in {:.1f} s".format(storage, time.perf_counter() - t))
            size = sum(f.stat().st_size for f in bag.iterdir())
            t_raw, n_raw = _best(lambda: _raw_rosbags(bag), a.repeat)
            t_read, data = _best(lambda: bag_io.read_bag(bag), a.repeat)
            span = data.window[1] - data.window[0]
            n = data.n_messages
            rows.append((storage, "rosbags deserialize only (peer: I/O ceiling)", n_raw, t_raw, span))
            rows.append((storage, "read_bag (read + checks)", n, t_read, span))
            for name in names:
                pr = registry.make_predictor(name)
                replay.replay(bag_io.read_bag(bag, end=1.0), pr)          # warm-up (JIT compile)
                t_rep, _ = _best(lambda: replay.replay(data, registry.make_predictor(name)), a.repeat)
                rows.append((storage, "replay: " + name, n, t_rep, span))
            out = tmp / "out"

            def whole():
                shutil.rmtree(out, ignore_errors=True)
                code = cli.main([str(bag), "--out", str(out), "--quiet"])
                assert code == 0
            t_all, _ = _best(whole, a.repeat)
            rows.append((storage, "jethexa-validate end to end ({})".format(cli.DEFAULT_PREDICTOR), n, t_all, span))
            notes.append("{}: {} messages of the used topics, {:.1f} MB".format(storage, n, size / 1e6))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    lines = ["# Replay speed (`benchmarks/bench_replay.py`)", "",
             *describe("rosbags"),
             "- bag: {:.0f} s of the simulated JetHexa walking, damage 1 at {:.0f} s; IMU + mocap 100 Hz, commands + "
             "joint states 50 Hz (`validation/simbag.py`)".format(a.duration, a.duration / 2),
             "- best of {} runs; real-time factor = bag seconds per wall second (> 1: faster than real time); "
             "load average at the end {:.1f} (the 2 CPUs are shared with other jobs: figures vary by ~2x)".format(
                 a.repeat, os.getloadavg()[0]),
             "- peer: `ros2 bag play` replays at real-time factor 1.0 by construction", "",
             "| storage | stage | messages | wall [s] | messages/s | real-time factor |",
             "|---|---|---:|---:|---:|---:|"]
    for storage, stage, n, t, span in rows:
        lines.append("| {} | {} | {} | {:.3f} | {:.0f} | {:.1f} |".format(storage, stage, n, t, n / t, span / t))
    lines += [""] + ["- " + x for x in notes] + [""]
    text = "\n".join(lines)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
