"""A damage in the running graph, judged on the emulated world's truth (the weak-evidence tests and benchmark).

The sim graph (``graph_spec``'s nodes with their YAML parameters and the launch ``arguments``) runs in this
process on one executor, every message through DDS; by default with ``interface:=topics`` (no servo driver: the
world publishes ``joint_states`` and ``imu/data`` itself) and ``recovery:=true``. The robot walks straight at
``command`` m/s; once it walks, the emulator's parameters ``changes`` are set at simulated times after that
(e.g. ``[(8.0, "damage", "RM")]``: RM removed 8 s into the walk). The world's state is sampled on the world's own
clock (``Engine.time``), so every figure is in simulated seconds whatever the machine's load; with it, what the
nodes said: the monitor's morphology and evidence, the seized joints, the probes, the gait's state and morphology.

Example::

    run = run_damage([(8.0, "damage", "RM")], seconds=25.0)
    run.confirmed("RM", 0)          # s after the damage the monitor's RM:0 rested on strong evidence (None: never)
    run.speed_fraction(17.0, 25.0)  # mean speed along the heading at the damage over that span / the command
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from jethexa_dynamics.damage.evidence import STRONG


@dataclass
class Sample:
    t: float                      # world time [s]
    pos: np.ndarray               # base position [m, world]
    rpy: np.ndarray               # roll, pitch, yaw [rad]
    monitor: Tuple[int, ...]      # the damage monitor's morphology
    evidence: Dict[str, str]      # its evidence per shortened leg
    seized: Tuple[str, ...]       # joints it reports seized
    gait: Tuple[int, ...]         # the gait controller's morphology (what it walks on)
    state: str                    # the gait controller's state


@dataclass
class DamageRun:
    samples: List[Sample]
    t_walk: float                 # world time the walk was seen to start [s]
    changes: List[Tuple[float, str, str]]   # (world time, emulator parameter, value) as applied
    command: float
    probes: List[dict] = field(default_factory=list)   # the monitor's active-probe results
    log: List[Tuple[float, str]] = field(default_factory=list)   # (world time, what changed)

    @property
    def t_damage(self) -> float:
        return self.changes[0][0]

    def _after(self, t0: float) -> List[Sample]:
        return [s for s in self.samples if s.t >= t0]

    def confirmed(self, leg: str, links: int) -> Optional[float]:
        """Seconds after the first change until the monitor's ``leg:links`` rested on strong evidence."""
        legs = "LF LM LR RF RM RR".split()
        for s in self._after(self.t_damage):
            if s.monitor[legs.index(leg)] == links and s.evidence.get(leg) in STRONG:
                return s.t - self.t_damage
        return None

    def max_tilt_deg(self, t0: Optional[float] = None) -> float:
        """Largest |roll| or |pitch| [deg] from ``t0`` (default the first change) on."""
        rpy = np.array([s.rpy for s in self._after(self.t_damage if t0 is None else t0)])
        return float(np.degrees(np.abs(rpy[:, :2]).max())) if len(rpy) else math.nan

    def speed_fraction(self, t0: float, t1: float) -> float:
        """Mean speed along the heading at the first change over [t_damage + t0, t_damage + t1] (world time
        after the damage) over the command."""
        a = min(self.samples, key=lambda s: abs(s.t - (self.t_damage + t0)))
        b = min(self.samples, key=lambda s: abs(s.t - (self.t_damage + t1)))
        h = min(self.samples, key=lambda s: abs(s.t - self.t_damage)).rpy[2]
        d = b.pos[:2] - a.pos[:2]
        along = float(d[0] * math.cos(h) + d[1] * math.sin(h))
        return along / max(b.t - a.t, 1e-9) / self.command

    def seized_ever(self) -> Tuple[str, ...]:
        return tuple(sorted({j for s in self.samples for j in s.seized}))

    def gait_morphologies(self) -> List[Tuple[int, ...]]:
        """The gait's morphologies in order (each once per stretch)."""
        return _stretches(s.gait for s in self.samples)

    def monitor_morphologies(self) -> List[Tuple[int, ...]]:
        """The damage monitor's morphologies in order (each once per stretch)."""
        return _stretches(s.monitor for s in self.samples)


def _stretches(values) -> list:
    """``values`` with each run of equal ones once."""
    out: list = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return out


def run_damage(changes: Sequence[Tuple[float, str, str]], seconds: float = 25.0, plant: str = "engine",
               command: float = 0.05, arguments: Optional[Dict[str, str]] = None,
               params: Optional[Dict[str, Dict[str, Any]]] = None, period: float = 0.02,
               start_timeout: float = 240.0) -> DamageRun:
    """Walk, apply ``changes`` [(world s after the walk started, emulator parameter, value)], sample until
    ``seconds`` of world time after the walk started; the graph closed after. ``arguments``: sim launch arguments
    over the defaults here; ``params``: {node: {parameter: value}} on top; ``period`` [s, wall]: sampling."""
    from rclpy.parameter import Parameter

    from jethexa_dynamics.nodes.graph import Graph, Watcher, add_launch_graph, wait_for

    args = {"interface": "topics", "plant": plant, "recovery": "true",
            "port_link": "/tmp/jethexa_damage_run_%d" % os.getpid()}
    args.update(arguments or {})
    g = Graph()
    try:
        nodes = add_launch_graph(g, "sim", args, params=params)
        w = g.add(Watcher)
        w.drive(command)
        g.start()
        emu, mon, gc = nodes["robot_emulator"], nodes["damage_monitor"], nodes["gait_controller"]

        def world():
            with emu.lock:
                return emu.engine.time, emu.engine.pose

        x0 = world()[1][0, 3]
        if not wait_for(lambda: gc.state == "walking" and world()[1][0, 3] - x0 > 0.01, start_timeout):
            raise RuntimeError("the graph did not start walking within %.0f s (gait state %s)"
                               % (start_timeout, gc.state))
        t_walk = world()[0]
        pending = sorted(changes)
        applied: List[Tuple[float, str, str]] = []
        samples: List[Sample] = []
        log: List[Tuple[float, str]] = []
        last = None
        from transforms3d.euler import mat2euler
        while True:
            t, pose = world()
            while pending and t - t_walk >= pending[0][0]:
                _, name, value = pending.pop(0)
                res = emu.set_parameters([Parameter(name, value=value)])[0]
                if not res.successful:
                    raise ValueError("robot_emulator %s=%r: %s" % (name, value, res.reason))
                applied.append((t, name, value))
                log.append((t, "world: %s=%r" % (name, value)))
            with mon._lock:
                monitor = tuple(mon.current or ())
                evidence = dict(mon.evidence)
                seized = tuple(sorted(mon.seized))
            s = Sample(t, pose[:3, 3].copy(), np.array(mat2euler(pose[:3, :3], "sxyz")), monitor, evidence, seized,
                       tuple(gc.walker.links_per_leg), gc.state)
            key = (s.monitor, tuple(sorted(s.evidence.items())), s.seized, s.gait, s.state)
            if key != last:
                log.append((t, "monitor %s %s seized %s | gait %s %s" % (list(s.monitor), s.evidence,
                                                                          list(s.seized), list(s.gait), s.state)))
                last = key
            samples.append(s)
            if t - t_walk >= seconds:
                break
            time.sleep(period)
        probe = mon.active_probe
        probes = [dict(r) for r in probe.results] if probe is not None else []
        if g.spin_error is not None:
            raise RuntimeError("the graph's executor failed: %r" % (g.spin_error,))
        return DamageRun(samples, t_walk, applied, command, probes, log)
    finally:
        g.close()
