"""The active probe in the loop (issue 23, point 1): stop, stand on the other five feet, probe, name the count.

When the damage identifier's model names a broken leg, :class:`ActiveProbe` takes the gait over for about three
seconds (by default on every such event, ``always``; with ``always=False`` only when the event lists
``alternatives``, other link counts of that leg the walking motion could not rule out):

1. stand: the gait holds its stance (the caller stops walking) and the named leg's joints go to their healthy
   stance angles, ``settle`` s (the stance move, ``STANCE_MOVE_TIME``, and the body's ringing after the walk);
2. plan: the static stability margin [m] of the whole robot's CoM inside the support polygon of the feet left
   (the legs the identifier still counts whole, the named one not among them), from the joint set-points the
   robot holds and the IMU's attitude, is computed over the whole probe (the named leg's offsets sampled over
   ``ProbeSpec.duration``) for every link-count hypothesis of the leg, with the model (the body estimate if
   given). If its minimum is not above ``min_margin`` the probe is refused and the result says so; the robot
   walks on with the identifier's count;
3. probe: the named leg's coxa and femur follow ``LinkProbe.targets`` (commands every ``command_period``),
   the gyro samples are kept by probe time; the margin is watched at every command with the IMU's attitude and
   the probe aborted (the leg back to its stance, no verdict) if it falls to ``min_margin``;
4. score: ``LinkProbe.likelihoods`` over the leg's counts 0..n-1 (models started from the set-points held and
   replaying the leg's commands as the robot got them, a late tick included, one engine per count; the gyro
   compared below ``band``, a constant gyro bias per axis fitted); the most probable count becomes the
   identifier's (``DamageIdentifier.on_probe``) when its probability is at least ``decide``; below that the
   result names no count and gives every count's probability: two hypotheses the probe cannot tell apart are
   reported as such, not guessed. The identifier's count then stays, unless the probe rules it out (p below
   1 - ``decide``): the most probable count is taken instead, the others listed beside it in its event.

``enabled`` is on by default: a stop of about three seconds after a break is cheap next to walking on with the
wrong count (the gait does not care, but every later prediction and identification starts from the wrong
model), and the 20 g coxa is never separated by walking (``benchmarks/results/identify.md``: 8/18 exact without).
Turn it off where the robot must not stop, or where the named leg cannot move freely (e.g. it is caught).
``always`` is on by default too: the walk's verdict is only as good as the models' match to the robot, and on a
plant they do not match it can be sure and wrong (MuJoCo's RF:0 named RF:2 with no alternative left,
``benchmarks/results/identify_probe_mujoco.md``); the stop is the same one the ambiguous case pays.

A leg only weak evidence calls lost (a joint its publisher left out of ``joint_states``: no servo confirmed it silent,
the model cannot tell while the body stands still) is probed too, on the caller's word (:meth:`ActiveProbe.suspect`):
the same stand, plan and motion, scored over every count of the leg, the whole leg included. A count short of the
whole leg that explains the gyro (probability at least ``decide``, misfit at most ``MAX_MISFIT``) goes to the
identifier as any probe's verdict (the loss confirmed, evidence ``model``); the whole leg at least ``decide``
probable, with every shorter count leaving more than ``MAX_MISFIT`` (the moved leg pushed on something: it is
there), rules the loss out (``present`` in the result: the caller withdraws its weak evidence); anything else is no
verdict (run once more, as below). :meth:`ActiveProbe.withdraw` drops a suspect probe whose evidence went away
(the joints are back).

Each leg is probed at most once (a later event on the same leg is left to the identifier), except that a probe
which gave no verdict because its graph was starved (more than a tenth of its IMU samples lost, ``MIN_SAMPLES``,
or fewer than half its commands seen, ``MIN_COMMANDS``), or whose best count leaves more than
``MAX_MISFIT`` times the noise's chi^2 (no count explains the motion: a starved graph's or a held leg's), is
run once more (``RETRIES``). Times in
seconds on the caller's clock; joint vectors in ``robot.joint_names`` order [rad]; quaternions (w, x, y, z)
level <- base_link; gyro [rad/s, base_link axes].

In the node graph (``nodes.damage_monitor``, parameter ``probe``) the monitor drives this class on its
identifier's worker thread: ``command`` at every ``joint_commands`` message it sees (the gait's tick, at its
arrival, with the message's move time: the commands the models replay; its return value is not sent anywhere),
``on_imu`` at every ``imu/data`` sample (by stamp). The gait controller moves the leg
(``probe_request``: the start is ``t_stand + settle`` on the ROS clock), which is why the probe's time origin is
that schedule and not the tick that plans it, and why the IMU samples are kept with their own times and placed
on the probe's grid when it is scored (``on_grid``), and ``max_lag`` lets the scoring fit the gyro's delay.

Example (the loop of ``sim.streams.walk_streams`` does this)::

    probe = ActiveProbe(identifier)
    override = probe.command(t, setpoints)        # None: walk; else stand and send (joints, q, move_time)
    probe.on_imu(t, quat, gyro)                   # every IMU sample
    probe.results                                 # one dict per model event: probed or refused, why
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np
from transforms3d.quaternions import quat2mat

from jethexa_dynamics.control.ik import LegGeometry
from jethexa_dynamics.control.support import support_margin
from jethexa_dynamics.control.walking import STANCE_MOVE_TIME, WalkingGait
from jethexa_dynamics.model import LeggedRobot, Morphology
from jethexa_dynamics.model.com import center_of_mass
from jethexa_dynamics.sim.contact import ContactModel

from .identifier_config import check_ranges, ranged
from .probe import LinkProbe, ProbeSpec

__all__ = ["ActiveProbe", "ProbeConfig", "on_grid", "probe_margin", "verdict"]

#: probe-time samples [per probe] at which the planner checks the margin
MARGIN_SAMPLES = 41
#: s after the probe's end the scoring waits for its last IMU samples (then scores what came)
LATE_SAMPLES = 0.1
#: the share of the probe's IMU samples it needs to be scored (fewer: no verdict). A probe that lost more than a
#: tenth of its samples ran in a starved node (its worker compiling, a CPU short): scored on the rest it was seen
#: sure and wrong (LM:2 at p = 1.000 for LM:1 on 107 of 200 samples); a late reader is not evidence of the body
MIN_SAMPLES = 0.9
#: the share of the probe's command ticks it needs to be scored. The models replay the commands as they came, a
#: late one included (a starved gait controller held the leg in the robot and in them alike), but a probe that
#: lost most of its ticks hardly moved the leg: too little motion to weigh the counts by
MIN_COMMANDS = 0.5
#: the best count's chi^2 per scored gyro value above which no count is taken: its residual is then more than
#: sqrt(3) = 1.7 times the gyro noise the likelihood assumes, and the probabilities (whose ratios are exact only
#: under that noise) rank motions none of the models made. Measured: the engine's loop 1.0-1.1 (its noise is the
#: assumed one), MuJoCo's loop 1.0-1.9 (the models' error, up to 0.68 per value, plus the noise), the node
#: graph 0.05-0.12 (its IMU quieter than assumed); the graph starved by two busy loops 4.6-8, once with LM:2
#: named at p = 1.000 for LM:1 (best 7.5 per value)
MAX_MISFIT = 3.0
#: probes run again after one that gave no verdict because its graph was starved (samples lost, commands late):
#: the next may find the CPU back; a probe that ran on time is not repeated
RETRIES = 1


@dataclass(frozen=True)
class ProbeConfig:
    """The active probe's tuning; every number is checked on construction (``ValueError`` naming the field and
    its allowed range)."""

    #: run the probe on a named count (False: the identifier's count stands, the result says "off")
    enabled: bool = True
    #: s standing still before the probe (the stance move and the body's settling), [0.3, 5]
    settle: float = ranged(0.8, 0.3, 5.0)
    #: m, the smallest static stability margin allowed at any instant of the probe (refused otherwise), [0, 0.1]
    min_margin: float = ranged(0.01, 0.0, 0.1)
    #: probability the best count needs to be taken, [0.5, 0.9999]
    decide: float = ranged(0.9, 0.5, 0.9999)
    #: rad/s, the gyro's noise per sample (the likelihood's sigma), [1e-4, 0.1]
    gyro_noise: float = ranged(0.005, 1e-4, 0.1)
    #: s the models stand before and after their break, [0.1, 10]
    model_settle: float = ranged(1.0, 0.1, 10.0)
    #: probe every leg the model names, not only one whose event lists alternatives (a walk that is sure and
    #: wrong, as on a plant whose contact the models do not share); False: only the ambiguous events
    always: bool = True
    #: s the measured gyro may lag or lead the probe's schedule (``LinkProbe.likelihoods``' ``max_lag``, in IMU
    #: samples): a servo's lag (MuJoCo's 20 ms), a node graph's bus, IMU filter and queues; 0: the gyro is taken
    #: on the schedule (the engine's loop applies each command at its tick), [0, 0.1]
    max_lag: float = ranged(0.03, 0.0, 0.1)
    #: Hz, the gyro is compared with the models below this frequency (``LinkProbe.misfit``'s ``band``): the probe
    #: moves at 3-5 Hz; above, the servos' answer to each 50 Hz command step, which differs from servo to servo
    #: (on MuJoCo in the node graph, compared sample by sample, it named LF:1 for LF:2 at p = 1.000), [5, 45]
    band: float = ranged(20.0, 5.0, 45.0)
    #: the probe's motion
    spec: ProbeSpec = field(default_factory=ProbeSpec)

    def __post_init__(self):
        check_ranges(self)
        for name in ("enabled", "always"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError("%s=%r: True or False" % (name, getattr(self, name)))
        if not isinstance(self.spec, ProbeSpec):
            raise ValueError("spec=%r: a ProbeSpec" % (self.spec,))


def probe_margin(robot: LeggedRobot, geometry: LegGeometry, setpoints: np.ndarray, leg: int,
                 morphology: Sequence[int], R_level: np.ndarray, probe: LinkProbe,
                 counts: Sequence[int], times: Optional[Sequence[float]] = None) -> float:
    """The smallest static stability margin [m] over the probe of leg index ``leg`` and its link ``counts``:
    the CoM of the links present (``morphology``, the leg at each count; ``model.com``) against the support
    polygon of the feet of the legs ``morphology`` counts whole (the probed one not), both from the joint
    ``setpoints`` [rad] plus the probe's offsets at probe ``times`` [s] (default ``MARGIN_SAMPLES`` instants over
    the probe), turned into the level frame by
    ``R_level`` (level <- base_link) and projected on the ground plane."""
    names = list(robot.leg_names)
    n_joints = robot.description.n_joints
    feet_legs = [i for i, k in enumerate(morphology) if i != leg and k >= n_joints[i]]
    if len(feet_legs) < 3:
        return -math.inf
    worst = math.inf
    if times is None:
        times = np.linspace(0.0, probe.spec.duration, MARGIN_SAMPLES)
    for tau in times:
        q = np.array(setpoints, dtype=float)
        q[3 * leg:3 * leg + 3] += probe.offsets(float(tau))
        feet = np.array([R_level @ geometry.fk(names[i], q[3 * i:3 * i + 3]) for i in feet_legs])
        for c in counts:
            links = [int(c) if i == leg else int(k) for i, k in enumerate(morphology)]
            mask = Morphology.from_vector(robot, links).link_mask
            com = R_level @ center_of_mass(robot, q, mask)
            worst = min(worst, support_margin(feet[:, :2], com[:2]))
    return float(worst)


class ActiveProbe:
    """The probe of a leg the identifier's model names broken (the module's docstring).

    ``identifier`` a ``DamageIdentifier`` (its ``events`` are read, its ``on_probe`` called); ``robot`` the
    healthy model (default the identifier's); ``body`` a body estimate with ``mass`` [kg] and ``com`` [m,
    base_link] (``damage.body_load.BodyEstimate``) or None; ``config`` a :class:`ProbeConfig`, ``overrides``
    its fields as keywords; ``stance`` the healthy stance's joint angles [rad] (default the walking gait's);
    ``contact`` the models' foot contact (``sim.contact.ContactModel``, e.g. ``ContactCalibration.fit``'s):
    default None, the engine's Table III (d_t = 50 N s/m), because the calibration measured on MuJoCo does not
    help the 1-vs-0 verdict (``damage.contact_calibration``).

    ``results``: one dict per model event probed or passed over (``always``: every model event naming a leg;
    otherwise the ambiguous ones): ``t_named`` [s], ``leg``, ``named`` (the identifier's count),
    ``alternatives`` [(count, share)], ``probed``, ``reason`` (the verdict, or why there was no probe: off, probed
    before, refused), and once planned ``t_start`` [s: the scheduled start, ``settle`` after the stand began],
    ``margin_planned`` [m], ``cpu_plan_s``; once scored ``t_end`` [s], ``probabilities`` {count: p}, ``count``
    (None when no count reaches ``decide``), ``taken`` (the count handed to the identifier, None if its own
    stays), ``samples`` (IMU samples scored), ``margin_min`` [m] (the model's margin watched at the IMU's
    attitude) and ``cpu_score_s`` (the three models); ``cpu_watch_s`` the margin watched over the probe;
    ``again`` (no verdict: a probe of the leg runs once more), ``withdrawn`` (a suspect probe ended because its
    weak evidence went away), ``suspect``, ``present`` (a suspect leg found there). CPU times [s] are the calling
    thread's (``time.thread_time``: in a node, its worker's alone).
    """

    def __init__(self, identifier, robot: Optional[LeggedRobot] = None, body=None,
                 config: Optional[ProbeConfig] = None, stance: Optional[Sequence[float]] = None, contact=None,
                 **overrides):
        if contact is not None and not isinstance(contact, ContactModel):
            raise ValueError("contact=%r: a sim.contact.ContactModel or None" % (contact,))
        self.contact = contact
        self.config = ProbeConfig(**overrides) if config is None else dataclasses.replace(config, **overrides)
        self.identifier = identifier
        base = (robot or identifier.robot).full
        self.robot = base if body is None else base.with_body(body.mass, body.com)
        self.geometry = LegGeometry.from_robot(self.robot)
        names = list(self.robot.joint_names)
        if stance is None:
            stance = WalkingGait(self.geometry, names).stance
        self.stance = np.asarray(stance, dtype=float).reshape(-1)
        if self.stance.shape != (len(names),) or not np.all(np.isfinite(self.stance)):
            raise ValueError("stance: %d finite joint angles [rad] expected" % len(names))
        self.results: List[dict] = []
        self._seen = len(identifier.events)
        self._morphology = tuple(identifier.morphology)       # as of the last event read: which leg an event changes
        self._probed = set()
        self._retry: Optional[dict] = None     # the result of a starved probe to run again (its leg, attempt)
        self._run: Optional[dict] = None
        # suspect probes asked for by another thread (the node's executor): (leg index, links), taken at the next
        # command; legs whose suspicion was withdrawn meanwhile (list appends and set adds: atomic under the GIL)
        self._suspects: List[Tuple[int, int]] = []
        self._withdrawn: set = set()
        self._R = np.eye(3)

    @property
    def active(self) -> bool:
        """The probe holds the robot (standing or probing)."""
        return self._run is not None

    # ---------------------------------------------------------------------------------------------- inputs
    def suspect(self, leg: int, links: int) -> None:
        """Weak evidence says leg index ``leg`` has ``links`` links: probe it at the next command (after a probe
        under way), its counts 0..whole scored (the module's docstring). Any thread."""
        n = self.robot.description.n_joints
        if not (isinstance(leg, (int, np.integer)) and 0 <= leg < len(n)):
            raise ValueError("leg=%r: an index in [0, %d)" % (leg, len(n)))
        if not (isinstance(links, (int, np.integer)) and 0 <= links < n[leg]):
            raise ValueError("links=%r: a count in [0, %d)" % (links, n[leg]))
        self._withdrawn.discard(int(leg))
        self._suspects.append((int(leg), int(links)))

    def withdraw(self, leg: int) -> None:
        """The weak evidence on leg index ``leg`` is gone (its joints are back): a suspect probe of it still to
        come is dropped, one under way ends at the next command without a verdict. Any thread."""
        self._withdrawn.add(int(leg))

    @property
    def suspect_pending(self) -> bool:
        """A suspect probe asked for and not yet ended (waiting, standing or probing)."""
        run = self._run
        return bool(self._suspects) or (run is not None and run["result"].get("suspect", False))

    def on_imu(self, t: float, quat, gyro) -> None:
        """An IMU sample: attitude (w, x, y, z) for the margin, gyro [rad/s] kept while probing. Nothing is done
        between probes (the node hands it every sample at 100 Hz): the stand before a probe brings the attitude
        up to date before the plan reads it."""
        run = self._run
        if run is None:
            return
        q = np.asarray(quat, dtype=float)
        if q.shape == (4,) and np.all(np.isfinite(q)) and np.linalg.norm(q) > 0.5:
            self._R = quat2mat(q / np.linalg.norm(q))
        if run["phase"] != "probe":
            return
        s = self.config.spec
        tau = float(t) - run["t0"]
        if -s.imu_period < tau <= s.duration + s.imu_period:
            run["raw"].append((tau, np.asarray(gyro, dtype=float)))    # placed on the probe's grid when scored
            run["last_tau"] = max(run["last_tau"], tau)

    def command(self, t: float, setpoints: Sequence[float],
                move_time: Optional[float] = None) -> Optional[Tuple[np.ndarray, np.ndarray, float]]:
        """At a command tick ``t`` [s], given the joint set-points the robot holds [rad; NaN: never commanded]:
        None (walk as planned) or (joint indices, targets [rad], move time [s]) -- the caller then holds its gait's
        stance and sends these to the named leg. The probe's models replay the leg's commands as the robot got
        them: what this returns, or, with ``move_time`` [s], ``setpoints`` themselves (a command just sent by
        someone else with that move time: a node graph's gait controller, whose ticks may come late)."""
        if self._run is not None and self._run["result"].get("suspect") and self._run["leg"] in self._withdrawn:
            run, self._run = self._run, None
            run["result"].update(withdrawn=True,
                                 reason="withdrawn: the weak evidence on %s went away" % run["result"]["leg"])
            joints = np.arange(3 * run["leg"], 3 * run["leg"] + 3)
            return joints, run["q"][joints] if "q" in run else self.stance[joints], STANCE_MOVE_TIME
        if self._run is None and not self._start(float(t)):
            return None
        run = self._run
        t, cfg, s = float(t), self.config, self.config.spec
        joints = np.arange(3 * run["leg"], 3 * run["leg"] + 3)
        if run["phase"] == "stand":
            if t < run["t_stand"] + cfg.settle - 1e-9:
                return joints, self.stance[joints], STANCE_MOVE_TIME
            if not self._plan(t, np.asarray(setpoints, dtype=float)):
                return None
        tau = t - run["t0"]
        held = run["q"][joints]
        if -s.command_period < tau < s.duration + s.command_period:
            run["max_gap"] = max(run["max_gap"], t - run["t_cmd"]) if "t_cmd" in run else 0.0
            run["t_cmd"] = t
            if move_time is not None and tau < s.duration - 1e-9:
                run["sent"].append((tau, np.array(setpoints, dtype=float)[joints], float(move_time)))
        if tau < s.duration - 1e-9:
            self._watch(run, tau)
            if not run["margin_min"] > cfg.min_margin:
                # the body tilted out of the plan (a push, a slope): stop, the leg back to its stance, walk on
                run["result"].update(margin_min=run["margin_min"], reason=(
                    "aborted at %.2f s of the probe: the static margin watched is %.3f m, not above min_margin "
                    "%.3f m" % (tau, run["margin_min"], cfg.min_margin)))
                self._run = None
                return joints, held, STANCE_MOVE_TIME
            targets = run["probe"].targets(held, tau + s.command_period)
            if move_time is None:
                run["sent"].append((tau, targets, s.command_period))
            return joints, targets, s.command_period
        if run["last_tau"] < s.duration - 1e-9 and tau < s.duration + LATE_SAMPLES:
            return joints, held, s.command_period
        self._finish(t)
        return None

    # ---------------------------------------------------------------------------------------------- steps
    def _start(self, t: float) -> bool:
        """A new model event with alternatives (any, with ``always``) on a leg not probed yet starts a probe (or
        records why not); else a starved probe's retry, if one is due and its leg still the one named."""
        while self._suspects:
            leg, links = self._suspects.pop(0)
            if leg in self._withdrawn:
                continue
            name = self.robot.leg_names[leg]
            result = {"t_named": t, "leg": name, "named": links, "alternatives": [], "probed": False,
                      "suspect": True, "attempt": 1}
            if not self.config.enabled:
                self.results.append(dict(result, reason="probe off (enabled=False)"))
                continue
            self.results.append(result)
            self._run = {"leg": leg, "phase": "stand", "t_stand": t, "result": result}
            return True
        events = self.identifier.events
        new, self._seen = events[self._seen:], len(events)
        retry, self._retry = self._retry, None
        suspect = retry is not None and retry["result"].get("suspect", False)
        if suspect and retry["leg"] in self._withdrawn:
            retry = None
        if not new and retry is not None and (suspect or self.identifier.morphology[retry["leg"]] == retry["named"]):
            result = {k: retry["result"][k] for k in ("t_named", "leg", "named", "alternatives")}
            result.update(probed=False, attempt=retry["attempt"], suspect=suspect)
            self.results.append(result)
            self._run = {"leg": retry["leg"], "phase": "stand", "t_stand": t, "result": result}
            return True
        for ev in new:
            before = self._morphology
            self._morphology = tuple(ev["morphology"])
            if ev["source"] != "model" or not (ev["alternatives"] or self.config.always):
                continue
            changed = [i for i, (a, b) in enumerate(zip(before, ev["morphology"])) if a != b]
            if not changed:
                continue
            leg = changed[0]       # a model event changes one leg
            name = self.robot.leg_names[leg]
            result = {"t_named": ev["t"], "leg": name, "named": ev["morphology"][leg], "probed": False,
                      "alternatives": [(a[leg], s) for a, s in ev["alternatives"]]}
            if not self.config.enabled:
                self.results.append(dict(result, reason="probe off (enabled=False)"))
                continue
            if leg in self._probed:
                self.results.append(dict(result, reason="%s probed before" % name))
                continue
            self._probed.add(leg)
            result["attempt"] = 1
            self.results.append(result)
            self._run = {"leg": leg, "phase": "stand", "t_stand": t, "result": result}
            return True
        return False

    def _plan(self, t: float, setpoints: np.ndarray) -> bool:
        """Build the probe from the set-points held and check the margin over it; False (refused) if too small."""
        run, cfg = self._run, self.config
        leg, joints = run["leg"], np.arange(3 * run["leg"], 3 * run["leg"] + 3)
        q = np.where(np.isfinite(setpoints), setpoints, self.stance)
        q[joints] = self.stance[joints]
        # a model event's leg lost links (which count?); a suspect leg may be whole too
        counts = tuple(range(self.robot.description.n_joints[leg] + (1 if run["result"].get("suspect") else 0)))
        probe = LinkProbe(self.robot, self.robot.leg_names[leg], spec=cfg.spec, gyro_noise=cfg.gyro_noise,
                          settle=cfg.model_settle, stance=q, contact=self.contact)
        morphology = list(self.identifier.morphology)
        c0 = time.thread_time()
        margin = probe_margin(self.robot, self.geometry, q, leg, morphology, self._R, probe, counts)
        result = run["result"]
        t0 = run["t_stand"] + cfg.settle
        result.update(t_start=t0, margin_planned=margin, cpu_plan_s=time.thread_time() - c0)
        if not margin > cfg.min_margin:
            result["reason"] = ("refused: the stance's static margin over the probe is %.3f m, not above "
                                "min_margin %.3f m" % (margin, cfg.min_margin))
            self._run = None
            return False
        n = int(round(cfg.spec.duration / cfg.spec.imu_period))
        # the probe starts on its schedule (t_stand + settle), not at the tick that plans it: a gait controller in
        # another node runs it on that schedule (``probe_request``), whatever the phase of the ticks here
        run.update(phase="probe", t0=t0, q=q, probe=probe, counts=counts, morphology=morphology,
                   gyro=np.full((n, 3), np.nan), raw=[], last_tau=-math.inf, margin_min=math.inf, max_gap=0.0,
                   sent=[])
        return True

    def _watch(self, run: dict, tau: float) -> None:
        """The model's margin at probe time ``tau`` [s] at the IMU's attitude now: its minimum is reported."""
        c0 = time.thread_time()
        m = probe_margin(self.robot, self.geometry, run["q"], run["leg"], run["morphology"], self._R, run["probe"],
                         run["counts"], times=(tau,))
        run["margin_min"] = min(run["margin_min"], m)
        run["result"]["cpu_watch_s"] = run["result"].get("cpu_watch_s", 0.0) + time.thread_time() - c0

    def _finish(self, t: float) -> None:
        """Score the counts, hand the verdict to the identifier, end the probe."""
        run, cfg = self._run, self.config
        self._run = None
        leg, result = run["leg"], run["result"]
        run["gyro"] = on_grid(run["raw"], len(run["gyro"]), cfg.spec.imu_period)
        samples = int(np.isfinite(run["gyro"]).all(axis=1).sum())
        result.update(max_command_gap=run["max_gap"])
        starved = None
        if samples < MIN_SAMPLES * len(run["gyro"]):
            # the IMU was silent or its reader starved (a node graph: a dropped link, a CPU short)
            starved = "%d of %d IMU samples came during the probe" % (samples, len(run["gyro"]))
        elif len(run["sent"]) < MIN_COMMANDS * cfg.spec.duration / cfg.spec.command_period:
            starved = "%d of its %d commands came" % (
                len(run["sent"]), int(round(cfg.spec.duration / cfg.spec.command_period)))
        if starved is not None:
            result.update(t_end=t, probed=True, samples=samples, margin_min=run["margin_min"])
            self._no_verdict(leg, result, starved)
            return
        c0 = time.thread_time()
        lag = int(round(cfg.max_lag / cfg.spec.imu_period))
        # the models replay the commands as they came (a late tick held the leg in the robot and in them alike)
        chi2 = {int(c): run["probe"].misfit(run["gyro"], int(c), lag, run["sent"], cfg.band) for c in run["counts"]}
        p = run["probe"].posterior(chi2)
        # chi^2 per scored value: ~1 when the best count explains the gyro down to its noise
        values = run["probe"].scored_values(run["gyro"], lag, cfg.band)
        misfit = {c: v / max(values, 1) for c, v in chi2.items()}
        result.update(cpu_score_s=time.thread_time() - c0, t_end=t, probed=True, probabilities=p,
                      samples=samples, margin_min=run["margin_min"], misfit_per_value=misfit)
        fittest = min(misfit, key=misfit.get)
        if result.get("suspect"):
            self._suspect_verdict(t, leg, result, p, misfit)
            return
        if misfit[fittest] > MAX_MISFIT:
            self._no_verdict(leg, result, "no count explains the gyro (the best, %s:%d, leaves %.1f times the "
                             "noise's chi^2 per value; up to %g taken)" % (result["leg"], fittest, misfit[fittest],
                                                                           MAX_MISFIT))
            return
        best, reason = verdict(result["leg"], p, cfg.decide)
        result.update(count=best, reason=reason)
        take = best
        current = self.identifier.morphology[leg]
        if best is None and p.get(current, 0.0) < 1.0 - cfg.decide:
            # no count is sure, but the one the walk named is ruled out: keep none the probe rejects; the most
            # probable goes to the identifier with the others it could not rule out beside it (its event)
            take = max(p, key=p.get)
            result["reason"] += "; %s:%d ruled out (p=%.2g): %s:%d taken, the others listed" % (
                result["leg"], current, p.get(current, 0.0), result["leg"], take)
        result["taken"] = take
        if take is not None:
            others = [(c, v) for c, v in sorted(p.items(), key=lambda kv: -kv[1])
                      if c != take and v >= 1 - cfg.decide]
            self.identifier.on_probe(t, leg, int(take), p[take], others)

    def _suspect_verdict(self, t: float, leg: int, result: dict, p: dict, misfit: dict) -> None:
        """A suspect leg's verdict: a loss that explains the gyro goes to the identifier; the whole leg, when no
        loss explains it, rules the suspicion out (``present``); else no verdict."""
        cfg, full = self.config, self.robot.description.n_joints[leg]
        best, reason = verdict(result["leg"], p, cfg.decide)
        result.update(count=best, reason=reason, present=False, taken=None)
        if best is not None and best < full and misfit[best] <= MAX_MISFIT:
            others = [(c, v) for c, v in sorted(p.items(), key=lambda kv: -kv[1]) if c != best and v >= 1 - cfg.decide]
            result["taken"] = best
            self._probed.add(leg)
            self.identifier.on_probe(t, leg, int(best), p[best], others)
        elif best == full and all(v > MAX_MISFIT for c, v in misfit.items() if c < full):
            result["present"] = True
            result["reason"] += ": the leg is there (no loss explains the gyro)"
        else:
            self._no_verdict(leg, result, "no count explains the gyro well enough to confirm or rule out the loss "
                             "(best %s:%d, misfit %.1f per value)" % (result["leg"], min(misfit, key=misfit.get),
                                                                      min(misfit.values())))

    def _no_verdict(self, leg: int, result: dict, why: str) -> None:
        """No count taken (the identifier's stays); run once more (``RETRIES``): a starved graph may have its CPU
        back, a leg held or pushed during the probe may be free. ``leg``: the probed leg's index."""
        again = result["attempt"] <= RETRIES
        result.update(count=None, taken=None, again=again,
                      reason="no verdict: " + why + ("; probing again" if again else ""))
        if again:
            self._retry = {"leg": leg, "named": self.identifier.morphology[leg], "result": result,
                           "attempt": result["attempt"] + 1}


def on_grid(samples: Sequence[Tuple[float, np.ndarray]], n: int, period: float) -> np.ndarray:
    """The gyro ``samples`` [(probe time [s], (3,) rad/s)] on the probe's grid, (n, 3) at probe times (k + 1)
    ``period``: a sample at a grid time as it is, else linear between the two samples around it when they are at
    most two periods apart, NaN in a longer gap. In a node graph the IMU's samples come a few ms off their
    period (a late timer): placed at their own time, not in the nearest slot (where two samples of one slot
    left the next one empty and shifted the series by a period)."""
    out = np.full((n, 3), np.nan)
    if not samples:
        return out
    ordered = sorted(samples, key=lambda s: s[0])
    ts = np.array([s[0] for s in ordered])
    g = np.array([s[1] for s in ordered], dtype=float)
    grid = (np.arange(n) + 1) * period
    for k, (tg, i) in enumerate(zip(grid, np.searchsorted(ts, grid - 1e-9))):
        if i < len(ts) and abs(ts[i] - tg) <= 1e-9:
            out[k] = g[i]
        elif 0 < i < len(ts) and ts[i] - ts[i - 1] <= 2.0 * period + 1e-9:
            w = (tg - ts[i - 1]) / (ts[i] - ts[i - 1])
            out[k] = (1.0 - w) * g[i - 1] + w * g[i]
    return out


def verdict(leg: str, probabilities: dict, decide: float) -> Tuple[Optional[int], str]:
    """(count, reason): the most probable link count of ``leg`` if its probability is at least ``decide``, else
    None and every count's probability ("ambiguous: LM:1 p=0.55, LM:0 p=0.45"): no guess."""
    best = max(probabilities, key=probabilities.get)
    if probabilities[best] >= decide:
        return int(best), "probe: %s:%d p=%.3f" % (leg, best, probabilities[best])
    return None, "ambiguous: " + ", ".join("%s:%d p=%.2f" % (leg, c, v) for c, v in
                                           sorted(probabilities.items(), key=lambda kv: -kv[1]))
