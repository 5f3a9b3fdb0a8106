"""Damage identification with the modular model: which morphology explains the IMU best (no rclpy).

A broken bracket or a lost foot leaves every servo answering, so the bus cannot see it; the body's motion
can. :class:`DamageIdentifier` keeps a belief over morphology hypotheses -- the current (confirmed)
morphology and every single-leg further loss of 1, 2 or 3 links (19 for a healthy hexapod) -- and scores
them with a bank of short-horizon predictions of the modular Boltzmann-Hamel model (the simulation
engine in servo-target mode, paper 003), one per hypothesis:

* every ``window`` seconds each hypothesis' model is re-anchored on the measurements (roll and pitch from
  the IMU orientation, joint angles from the servos; velocities, height and yaw stay its own) and driven
  open loop through the window by the recorded joint commands;
* at ``samples`` points in the window the residuals e = (roll_pred - roll_meas, pitch_pred - pitch_meas,
  Δψ_pred - Δψ_meas) are formed, Δψ being the yaw change since the window start (measured: the gyro's
  world z-rate integrated, minus a gyro bias ``b_z`` that is estimated from the confirmed hypothesis'
  yaw residual, slowly, only while the belief is settled -- a constant gyro bias is thus taken out);
* the window log-likelihood of hypothesis h is -Σ ρ(e/σ) with a Huber ρ (robust to single bad
  samples), σ = the floors ``sigma_rp``/``sigma_yaw`` combined with the best hypothesis' misfit in
  this window and the confirmed model's own recent
  residual level (so a model error common to all hypotheses, e.g. a wrong body mass, does not read as
  damage);
* the belief is a forgetting sum of window log-likelihoods plus a log prior that favours "no change"
  (``stay_prior``); a swap to a leg needs P(leg changed) > ``threshold`` in ``confirm`` consecutive windows
  (hysteresis) and the winner's recent mean square residual ``min_gain`` times below the confirmed
  model's (an effect size: with a silent LM femur+tibia break the healthy model misses roll by ~2.4 deg
  RMS, the right one by ~0.24 deg, a factor ~100 in mean square), and the winner explaining the motion itself:
  its recent RMS residual at most ``max_misfit`` (2 deg; the right model of a real break: 0.07-0.18 deg in the
  tests' plants and over DDS). When no hypothesis explains the body's motion -- an attitude estimate still
  converging from a jolted first sample (tens of degrees off for seconds), the robot lifted or carried -- the
  least wrong of them is no evidence of a morphology. No decision for ``quiet`` s after a
  change (the gait re-phases). Then the hypotheses are re-centred on h, so a second damage is found the same way.

Servo-silence evidence (``DamageDetector`` of the servo driver's health reports) is fused in: the
morphology reported is the per-leg minimum of the servo's and the model's, and a servo-detected change
re-centres the bank at once (source ``servo``).

Pre-screen (cheap): with ``screen=True`` only the confirmed hypothesis runs while its own residual stays
normal (this is the predictor's model, one engine); when a window's residual z-score exceeds
``screen_z``, or while any other hypothesis still holds probability, the whole bank runs -- from a
snapshot taken at the window start, so screening adds no delay. Within such an episode the hypotheses
already ruled out (below ``prune`` times the most probable) are no longer simulated, until the confirmed
model is surprised again.

Data gaps: an IMU or joint-state stream silent longer than ``max_gap`` (a stalled executor, a dropped link)
leaves its window, and those starting within ``gap_settle`` after the data resumes, unscored: the models are
driven through them by the commands and re-anchored after them (``gaps``, ``skipped_windows``).

Degraded mode (``bank_every`` > 1, set by a live node whose worker falls behind the data, ``nodes/degrade.py``):
a bank episode (the whole bank, started by a surprised pre-screen) starts at most every ``bank_every``-th
window; an episode under way (another hypothesis holds clearly more than its prior) goes on every window as
usual. A window whose episode start is deferred is not scored: the confirmed model runs and its residual level
is learnt as in any window, the other hypotheses stay off, and no belief, candidate row or decision changes
(``deferred_windows``). Every decision thus rests on the same fully scored consecutive windows as in the normal
mode: a break may be named up to ``bank_every - 1`` windows later, never on less evidence.

Streams: times in seconds on any single clock; joint vectors in ``robot.joint_names`` order (rad);
quaternions (w, x, y, z) world <- base_link; gyro rad/s in base_link axes. Bad samples (NaN/inf, wrong
size, time going backwards) are rejected and counted (``rejections``), never raised: a live node keeps
running on the next good sample.

Where the pieces are: :mod:`.identifier_config` (``IdentifierConfig``, the tuning and its ranges, and the fixed
numbers of the scoring), :mod:`.hypotheses` (the hypotheses, the window score, the posterior),
:mod:`.identifier_inputs` (the sample checks, the IMU's attitude); this module: the streams, the windows, the
bank episodes and the decisions.
"""
from __future__ import annotations

import dataclasses
import math
from collections import deque
from typing import Dict, List, Optional, Tuple

import numpy as np
from transforms3d.euler import euler2mat, mat2euler

from jethexa_dynamics.model import LeggedRobot, Morphology, format_morphology

from .hypotheses import (Hypothesis, leg_probabilities, link_shares, other_prior, posterior, score_window,
                         single_leg_hypotheses)
from .identifier_config import (AMBIGUOUS_SHARE, BACK_ON_CONFIRMED, BIAS_GAIN, BIAS_Z_FRACTION, GROUND_DEADBAND,
                                GROUND_GAIN, GROUND_MAX_STEP, GROUND_STABLE, GROUND_STEPS, HUBER_C,
                                INCONCLUSIVE_WINDOWS, IdentifierConfig, LEARN_Z, LIVE_PRIOR_FACTOR, MAX_GROUND_TILT,
                                MAX_RESIDUAL, MODEL_CONTACT, PROB_TOL, SCALE_MEMORY, SETTLED, TIME_TOL,
                                UNEXPLAINED_CLEAR)
from .identifier_inputs import check_command, check_imu, check_joints, check_stamp

__all__ = ["DamageIdentifier", "FORMAT", "IdentifierConfig"]

FORMAT = "jethexa-identify/1"
_NEVER = 1 << 30     # windows since the bank last ran, before it first runs


def _turn(x: float, y: float, angle: float) -> Tuple[float, float]:
    """The vector (x, y) turned by ``angle`` [rad] about z (level-frame small-angle tilts between headings)."""
    c, s = math.cos(angle), math.sin(angle)
    return x * c - y * s, x * s + y * c

class DamageIdentifier:
    """Belief over morphology hypotheses from commands, joint states and the IMU (module docstring).

    ``robot``: the healthy ``LeggedRobot`` (default JetHexa). ``config``: an :class:`IdentifierConfig` (default:
    its defaults); ``overrides``, its field names as keywords (``DamageIdentifier(window=1.0)``), replace fields
    of it; a value out of its range raises ``ValueError`` naming the field and the range. ``morphology``: initial
    links per leg (default healthy). The tuning is kept in attributes of the fields' names, read at each window:
    a live node may change ``window``, ``threshold``, ``confirm`` and ``max_gap`` between windows.
    """

    def __init__(self, robot=None, config: Optional[IdentifierConfig] = None, morphology=None, **overrides):
        cfg = IdentifierConfig(**overrides) if config is None else dataclasses.replace(config, **overrides)
        base = (robot or LeggedRobot.jethexa()).full
        # a copy with gravity of its own: the models stand on the learnt ground, so their gravity leans with it
        self.robot = base.with_gravity(base.gravity)
        self._g = float(np.linalg.norm(base.gravity))
        self.leg_names = list(self.robot.leg_names)
        self.joint_names = list(self.robot.joint_names)
        self.nj = len(self.joint_names)
        self._limits = (np.asarray(self.robot.joint_lower, dtype=float),
                        np.asarray(self.robot.joint_upper, dtype=float))
        self._tune(cfg)
        # called before each further model of a bank window: a live node on a thread of its own pauses there so
        # the other threads of its process (a servo bus, the executor) get the interpreter between models
        self.between_models = None
        n_joints = self.robot.description.n_joints
        healthy = tuple(int(n) for n in n_joints)
        self.max_links = healthy
        self.model_morphology = healthy if morphology is None else self._links(morphology)
        self.servo_morphology = healthy
        self._pool: Dict[Tuple[int, ...], object] = {}
        self.hyps: List[Hypothesis] = []
        self._init_state()
        self._recentre(self.morphology, keep=None)

    def _tune(self, cfg: IdentifierConfig) -> None:
        """The tuning as attributes, and what derives from it."""
        self.window, self.threshold, self.confirm = float(cfg.window), float(cfg.threshold), int(cfg.confirm)
        self.stay_prior, self.forget = float(cfg.stay_prior), float(cfg.forget)
        self.sigma_floor = np.array([cfg.sigma_rp, cfg.sigma_rp, cfg.sigma_yaw], dtype=float)
        self.samples, self.dt, self.screen = int(cfg.samples), float(cfg.dt), bool(cfg.screen)
        self.screen_z = float(cfg.screen_z)
        self.huber_c = HUBER_C
        self.learn_z = LEARN_Z
        self.quiet = float(cfg.quiet)
        self.min_gain = float(cfg.min_gain)
        # mean square residuals are kept in units of the floors (``Hypothesis.mse``): a residual of r rad on every
        # channel is r**2 * _per_rad2 there
        self._per_rad2 = float(np.mean(self.sigma_floor ** -2.0))
        self.max_misfit = float(cfg.max_misfit)
        self._max_mse = self.max_misfit ** 2 * self._per_rad2
        # "unexplained" needs misses well beyond a winner's bound: the model of a damaged robot's gait misses by
        # 2-2.5 deg RMS with the right morphology (the demo's four-legged crawl), which is no unexplained motion
        self.unexplained_misfit = float(cfg.unexplained_misfit)
        self._unexplained_mse = self.unexplained_misfit ** 2 * self._per_rad2
        self.prune = float(cfg.prune)
        self.max_gap, self.gap_settle = float(cfg.max_gap), float(cfg.gap_settle)

    def _init_state(self) -> None:
        """Counters, outputs, measurement buffers and window state of a fresh identifier."""
        self._quiet_until = -math.inf
        self._skip_until = -math.inf       # windows starting before this are driven through, not scored
        self.gaps = 0                      # data gaps seen (IMU or joints silent longer than max_gap)
        self.skipped_windows = 0
        self.rejections: Dict[str, int] = {}
        self.last_rejection = ""
        self.events: List[dict] = []
        self.history: List[Tuple[float, List[Tuple[Tuple[int, ...], float]]]] = []
        self.windows = 0
        self.z_log: List[Tuple[float, float]] = []   # (window end, z-score of the confirmed model)
        self.sim_failures = 0
        self.bank_windows = 0
        self.bank_every = 1               # degraded mode: a bank episode starts at most every n-th window
        self.deferred_windows = 0         # windows whose episode start was deferred: not scored
        self.unexplained_decisions = 0    # decisions withheld because even the winner missed the motion
        self.unexplained = False          # no hypothesis explains the motion now (``_update_unexplained``)
        self.unexplained_windows = 0
        self.residual_rms = 0.0           # rad, the confirmed model's recent RMS residual
        self._since_bank = _NEVER         # windows since the bank last ran
        # measurement buffers
        self._cmds: deque = deque()          # (t, q, move_time, joint indices)
        # (t, roll, pitch, yaw-rate world z (bias not removed), heading: that rate integrated with the bias removed)
        self._imu: deque = deque()
        self._joints: Optional[Tuple[float, np.ndarray]] = None
        self._t_cmd = self._t_imu = self._t_joint = -math.inf
        self._t_origin: Optional[float] = None
        self._w0: Optional[float] = None     # current window start (caller's clock)
        self._meas0 = None                   # (roll, pitch) at the window start
        self.gyro_bias = 0.0                 # world z-rate bias estimate (rad/s)
        # the ground under the robot: its normal's (x, y) in the level frame whose x axis is the heading at the
        # first sample (small-angle: (pitch, -roll) of the ground there, rad). The models stand on level ground in
        # their world, so they are anchored and compared in the ground's frame: a slope is no damage
        self.ground_slope = np.zeros(2)
        self._ground_n = 0
        self._ground_steps: deque = deque(maxlen=GROUND_STEPS)
        self._heading = 0.0
        self._scale2 = np.zeros(3)           # running mean square residual of the confirmed model
        self._scale_n = 0
        self._above = 0
        self._candidate = None
        self._inconclusive = 0

    # ---------------------------------------------------------------------------------------------- set-up
    def _links(self, links):
        v = tuple(int(k) for k in links)
        if len(v) != len(self.leg_names) or any(not 0 <= k <= m for k, m in zip(v, self.max_links)):
            raise ValueError("morphology must give %d link counts in [0, 3], got %r" % (len(self.leg_names), links))
        return v

    @property
    def morphology(self) -> Tuple[int, ...]:
        """The fused morphology: per leg the minimum of the servo's and the model's link counts."""
        return tuple(min(a, b) for a, b in zip(self.servo_morphology, self.model_morphology))

    def _engine(self, links):
        from jethexa_dynamics.sim.contact import ContactModel
        from jethexa_dynamics.sim.engine import Engine
        e = self._pool.get(links)
        if e is None:
            e = Engine(self.robot, gait=None, dt=self.dt, record_every=0,
                       contact=ContactModel(friction=MODEL_CONTACT[0], mu=MODEL_CONTACT[1]))
            e.set_morphology(Morphology.from_vector(self.robot, list(links)))
            e.events = []
            self._pool[links] = e
        return e

    def _recentre(self, links, keep):
        """Hypotheses = ``links`` and its single-leg further losses; their models start from ``keep``'s
        state (an engine snapshot) when given."""
        rev = [m < s for m, s in zip(self.model_morphology, self.servo_morphology)]
        self.hyps = [Hypothesis(h, self._engine(h)) for h in single_leg_hypotheses(links, rev, self.max_links)]
        if keep is not None:
            self.hyps[0].restart(keep, self.robot)
        self.hyps[0].active = True      # the others start from its snapshot when the bank next runs
        self._above, self._candidate = 0, None

    # ---------------------------------------------------------------------------------------------- inputs
    def _reject(self, reason, msg):
        self.rejections[reason] = self.rejections.get(reason, 0) + 1
        self.last_rejection = msg
        return False

    def on_command(self, t, q, t_target, joints=None) -> bool:
        """Joint command received at ``t``: ``joints`` (indices into ``joint_names``, default all) to reach ``q``
        (rad) at ``t_target`` (s, the same clock; the Predictor protocol's meaning: a target time before ``t``
        is an immediate move); NaN entries are joints this command leaves alone."""
        t, err = check_stamp(t, self._t_cmd, "command")
        if t is None:
            return self._reject("command", err)
        cmd, err = check_command(t, q, t_target, joints, self._limits, self.joint_names)
        if cmd is None:
            return self._reject("command", err)
        self._t_cmd = t
        self._cmds.append((t,) + cmd)
        return True

    def on_joints(self, t, q) -> bool:
        """Measured joint angles (rad); NaN entries (unmeasured joints) are allowed."""
        t, err = check_stamp(t, self._t_joint, "joints")
        if t is None:
            return self._reject("joints", err)
        a, err = check_joints(q, self.nj)
        if a is None:
            return self._reject("joints", err)
        if t - self._t_joint > self.max_gap and math.isfinite(self._t_joint):
            self._gap(t)
        self._t_joint = t
        self._joints = (t, a.copy())
        return True

    def _gap(self, t):
        """Data resumed at ``t`` after a gap: the windows until ``t + gap_settle`` are not scored."""
        self.gaps += 1
        self._skip_until = max(self._skip_until, t + self.gap_settle)

    def on_imu(self, t, quat, gyro, accel=None) -> bool:
        """IMU sample: orientation (w, x, y, z), body rates (rad/s); the acceleration is not used yet.
        Completes the windows that end at or before ``t``; returns False if rejected."""
        t, err = check_stamp(t, self._t_imu, "imu")
        if t is None:
            return self._reject("imu", err)
        attitude, err = check_imu(quat, gyro)
        if attitude is None:
            return self._reject("imu", err)
        roll, pitch, yaw_rate = attitude      # yaw_rate: world z component of the body rate
        if t - self._t_imu > self.max_gap and math.isfinite(self._t_imu):
            self._gap(t)
        if math.isfinite(self._t_imu):
            self._heading += (yaw_rate - self.gyro_bias) * min(t - self._t_imu, self.max_gap)
        self._t_imu = t
        if self._t_origin is None:
            self._t_origin = t
        self._imu.append((t, roll, pitch, yaw_rate, self._heading))
        self._advance(t)
        return True

    def on_servo_morphology(self, t, links) -> bool:
        """Servo-silence evidence (``DamageDetector.morphology``): legs it reports short are taken at once."""
        try:
            v = self._links(links)
        except (ValueError, TypeError) as e:
            return self._reject("servo", str(e))
        if v == self.servo_morphology:
            return True
        before = self.morphology
        self.servo_morphology = v
        if self.morphology != before:
            keep = self.hyps[0].engine.snapshot()
            self.model_morphology = tuple(min(a, b) for a, b in zip(self.model_morphology, v))
            self._recentre(self.morphology, keep)
            self._event(float(t) if self._t_origin is None else max(float(t), self._t_origin), "servo", 1.0)
        return True

    def on_probe(self, t, leg: int, links: int, prob: float, alternatives=()) -> bool:
        """An active probe's verdict (``damage.active_probe``): leg index ``leg`` has ``links`` links, with
        probability ``prob``; ``alternatives`` [(count, probability)] the other counts it could not rule out.
        The model's count of that leg becomes ``links`` (up or down: the probe outranks the walking evidence it
        was run to settle), the bank is re-centred there and an event of source ``probe`` is recorded. Returns
        False (nothing changed) if the count is already the model's."""
        if not (isinstance(leg, (int, np.integer)) and 0 <= leg < len(self.leg_names)):
            raise ValueError("leg=%r: an index in [0, %d)" % (leg, len(self.leg_names)))
        if not (isinstance(links, (int, np.integer)) and 0 <= links <= self.max_links[leg]):
            raise ValueError("links=%r: a count in [0, %d]" % (links, self.max_links[leg]))
        if self.model_morphology[leg] == links:
            return False
        keep = self.hyps[0].engine.snapshot()
        self.model_morphology = tuple(int(links) if j == leg else m for j, m in enumerate(self.model_morphology))
        self._recentre(self.morphology, keep)
        alt = [(tuple(int(k) if j == leg else m for j, m in enumerate(self.morphology)), p) for k, p in alternatives]
        self._event(float(t), "probe", prob, alt)
        return True

    # ---------------------------------------------------------------------------------------------- windows
    def _event(self, t, source, prob, alternatives=()):
        """A morphology change: ``prob`` the evidence's probability; ``alternatives`` [(links per leg, share of
        the leg's probability)] of the changed leg's link counts the motion could not rule out (model events)."""
        self._quiet_until = t + self.quiet
        self._scale_n = 0          # the residual level is learnt again for the new model and gait
        self.events.append({"t": t, "morphology": list(self.morphology), "source": source,
                            "probability": float(prob),
                            "alternatives": [(list(links), float(s)) for links, s in alternatives]})

    def _advance(self, t):
        if self._w0 is None:
            if self._joints is None:
                return                          # nothing to anchor the joints on yet
            self._start_window(self._imu[-1][0])
            return
        while self._imu and self._imu[-1][0] >= self._w0 + self.window - TIME_TOL:
            self._run_window()

    def _start_window(self, t0):
        """Anchor every active model at ``t0`` on the latest measurements."""
        self._w0 = t0
        s = next(x for x in reversed(self._imu) if x[0] <= t0 + TIME_TOL)
        self._meas0 = s
        q = self._joints[1] if self._joints is not None else None
        self._lean_gravity(s[4])
        for h in self.hyps:
            if h.active and not h.pruned:
                self._anchor(h, t0, s, q)
        # drop what is older than the window start (keep the command in force)
        while len(self._cmds) > 1 and self._cmds[1][0] <= t0:
            self._cmds.popleft()
        while self._imu and self._imu[0][0] < t0:
            self._imu.popleft()

    def _lean_gravity(self, heading):
        """The models' world is the ground's frame: its gravity leans downhill, as the ground estimate at the
        body's ``heading`` says, turned to the confirmed model's own yaw (every model shares one gravity)."""
        roll, pitch = self.ground_tilt(heading)
        yaw = mat2euler(self.hyps[0].engine.R, "sxyz")[2] if self.hyps else 0.0
        g = euler2mat(0.0, 0.0, yaw, "sxyz") @ euler2mat(roll, pitch, 0.0, "sxyz").T @ np.array([0.0, 0.0, -self._g])
        self.robot.set_gravity(g)

    def _model_failed(self, h) -> bool:
        """Hypothesis h's model failed (fell over, diverged): the confirmed one (True) stands up again, another
        is off until the next bank run restarts it from the confirmed model."""
        self.sim_failures += 1
        if h is self.hyps[0]:
            h.engine.reset_standing()
            return True
        h.active = False
        return False

    def _anchor(self, h, t0, s, q):
        from jethexa_dynamics.sim.engine import SimulationError
        e = h.engine
        try:
            e.advance(t0 - self._t_origin)
        except SimulationError:
            if not self._model_failed(h):
                return
        yaw = mat2euler(e.R, "sxyz")[2]
        g_roll, g_pitch = self.ground_tilt(s[4])
        e.R[:] = euler2mat(s[1] - g_roll, s[2] - g_pitch, yaw, "sxyz")
        if q is not None:
            ok = np.isfinite(q) & (e.pid.active > 0)
            e.theta[ok] = q[ok]
        h.yaw0 = yaw

    def _sample_times(self, t0):
        """IMU stamps in (t0, t0 + window] nearest to ``samples`` equally spaced points."""
        ts = np.array([x[0] for x in self._imu])
        idx = []
        for k in range(1, self.samples + 1):
            target = t0 + self.window * k / self.samples
            i = int(np.argmin(np.abs(ts - target)))
            if ts[i] > t0 and (not idx or i > idx[-1]):
                idx.append(i)
        return idx

    def _measured(self, t0, idx):
        """(n, 3) measured roll and pitch relative to the ground (``ground_tilt`` removed) and yaw change since t0
        (gyro integrated, bias removed)."""
        imu = list(self._imu)
        ts = np.array([x[0] for x in imu])
        rates = np.array([x[3] for x in imu]) - self.gyro_bias
        t_prev = np.concatenate([[t0], ts[:-1]])
        dpsi = np.cumsum(rates * np.clip(ts - t_prev, 0.0, None))
        g_roll, g_pitch = self.ground_tilt(imu[idx[0]][4]) if idx else (0.0, 0.0)
        return np.array([[imu[i][1] - g_roll, imu[i][2] - g_pitch, dpsi[i]] for i in idx]), ts[idx]

    @staticmethod
    def _first_after(cmds, t0):
        """Index of the first of ``cmds`` issued after ``t0``: the command in force at ``t0`` (issued earlier)
        is already applied."""
        ci = 0
        while ci < len(cmds) and cmds[ci][0] <= t0:
            ci += 1
        return ci

    def _simulate(self, h, t0, t_s):
        """Drive hypothesis h's model from t0 through the window's commands; (n, 3) predicted roll, pitch,
        yaw change at the times t_s."""
        e = h.engine
        out = np.empty((len(t_s), 3))
        cmds = list(self._cmds)
        ci = self._first_after(cmds, t0)
        yaw_prev, unwrap = h.yaw0, 0.0
        for k, ts in enumerate(t_s):
            ci = self._drive(e, cmds, ci, ts)
            r, p, y = mat2euler(e.R, "sxyz")
            d = y - yaw_prev
            unwrap += d - 2 * math.pi * round(d / (2 * math.pi))
            yaw_prev = y
            out[k] = (r, p, unwrap)
        return out

    def _drive(self, e, cmds, ci, t):
        """Advance engine ``e`` to ``t``, applying the commands ``cmds[ci:]`` issued up to ``t`` at their
        times; returns the index of the first command not applied."""
        while ci < len(cmds) and cmds[ci][0] <= t:
            tc, q, mt, idx = cmds[ci]
            e.advance(tc - self._t_origin)
            e.set_joint_targets(q, move_time=mt, joints=idx)
            ci += 1
        e.advance(t - self._t_origin)
        return ci

    def _skip_window(self, t0, t1):
        """A window not scored (a data gap, or the settling after one): every running model is driven through
        it by the commands and re-anchored at the next start -- the first IMU sample after the window when
        the window holds none after ``t0`` (the gap), else the last one in it."""
        from jethexa_dynamics.sim.engine import SimulationError
        after = [x[0] for x in self._imu if x[0] > t0 + TIME_TOL]
        inside = [t for t in after if t <= t1 + TIME_TOL]
        t_next = inside[-1] if inside else after[0]
        cmds = list(self._cmds)
        ci = self._first_after(cmds, t0)
        for h in self.hyps:
            if not h.active or h.pruned:
                continue
            try:
                self._drive(h.engine, cmds, ci, t_next)
            except SimulationError:
                self._model_failed(h)
        self.skipped_windows += 1
        self._above, self._candidate = 0, None      # a gap adds no confidence to a candidate
        self._start_window(t_next)

    def _simulate_safe(self, h, t0, t_s, meas):
        """Residuals of hypothesis h; a model that fails (falls over, diverges) explains nothing: the largest
        residual (``MAX_RESIDUAL`` on every channel) this window, and it restarts from the confirmed model at
        the next bank run."""
        from jethexa_dynamics.sim.engine import SimulationError
        try:
            if self.between_models is not None:
                self.between_models()
            return self._simulate(h, t0, t_s) - meas
        except SimulationError:
            self._model_failed(h)
            return np.full_like(meas, MAX_RESIDUAL)

    def _settled(self) -> float:
        """P(confirmed morphology) at and above which the belief counts as settled."""
        return min(SETTLED, self.stay_prior - PROB_TOL)

    def _run_window(self):
        """Score the window that starts at the current anchor: the confirmed model first (the pre-screen), the
        whole bank when that model is surprised or an episode is under way; then the belief, the learnt
        levels, the decision, and the next window's anchor."""
        t0 = self._w0
        t1 = t0 + self.window
        idx = self._sample_times(t0)
        in_win = [x for x in self._imu if x[0] <= t1 + TIME_TOL]
        t_next = in_win[-1][0] if in_win else t1      # the next window's start
        stale = self._joints is None or t1 - self._joints[0] > self.max_gap     # the joints went silent
        if (not idx or stale or t0 < self._skip_until - TIME_TOL
                or not any(t0 < x[0] <= t1 + TIME_TOL for x in self._imu)):
            self._skip_window(t0, t1)
            return
        meas, t_s = self._measured(t0, idx)
        cur = self.hyps[0]
        snap = cur.engine.snapshot()      # the window start, for hypotheses (re)started in this window
        # pre-screen: the confirmed model alone first
        from jethexa_dynamics.sim.engine import SimulationError
        try:
            pred = self._simulate(cur, t0, t_s)
        except SimulationError:
            # the confirmed model itself failed (e.g. a fall it cannot integrate): no evidence this window;
            # it stands up again and is re-anchored at the next window start
            self._model_failed(cur)
            self._start_window(t_next)
            return
        e_cur = pred - meas
        sigma = np.sqrt(self.sigma_floor ** 2 + self._scale2)
        z_cur = float(np.sqrt(np.mean((e_cur / sigma) ** 2)))
        self.last_z = z_cur
        self.z_log.append((t1, z_cur))
        p_prev = self.probabilities()
        # the bank goes on while some other hypothesis holds clearly more than its prior
        p_other = other_prior(len(self.hyps), self.stay_prior)
        others_live = any(h.active and p > LIVE_PRIOR_FACTOR * p_other for h, p in zip(self.hyps[1:], p_prev[1:]))
        run_bank = not self.screen or z_cur > self.screen_z or others_live
        if run_bank and not others_live and self._since_bank + 1 < self.bank_every:
            self._defer_window(e_cur, z_cur, p_prev, t_next)
            return
        self._since_bank = 0 if run_bank else self._since_bank + 1
        if run_bank:
            errs = self._run_bank(snap, z_cur > self.screen_z, p_prev, t0, t_s, meas, e_cur)
        else:
            self._others_off()
            errs = [e_cur]
        score_window(self.hyps, errs, self.sigma_floor, self._scale2, self.forget, self.huber_c)
        probs = self.probabilities()
        self.windows += 1
        self.history.append((t1, [(h.links, p) for h, p in zip(self.hyps, probs)]))
        settled = self._settled()
        self._learn_ground(errs, self._meas0[4], p_prev[0] >= settled)
        if z_cur < self.learn_z and p_prev[0] >= settled:
            # the residual level of the confirmed model is learnt from every window the belief was settled
            # before, unless it is gross (a damage's residual must not be learnt as model error); a level learnt
            # only from the quiet windows (z < 0.9) never reached the live graph's (IMU filter, timing jitter:
            # healthy windows at z 2-2.6 there, each of which flipped the belief)
            self._update_scale(e_cur, bias=z_cur < BIAS_Z_FRACTION * self.screen_z and probs[0] >= settled)
        self._update_unexplained()
        self._decide(t1, probs)
        self._start_window(t_next)

    def ground_tilt(self, heading: float) -> Tuple[float, float]:
        """(roll, pitch) [rad] of the ground as the body sees it at ``heading`` (rad, the gyro's integrated yaw):
        the ground's slope turned into the body's heading (small angles); level below ``GROUND_DEADBAND``: the
        estimate wanders by a few tenths of a degree on level ground (gait transients), which must change nothing
        there."""
        if math.hypot(*self.ground_slope) <= GROUND_DEADBAND:
            return 0.0, 0.0
        x, y = _turn(*self.ground_slope, -heading)      # the normal in the body's heading frame
        return -y, x

    def _ground_moving(self) -> bool:
        """The ground estimate moved by more than ``GROUND_STABLE`` over its last steps, or stands at its bound:
        the models' anchoring is not to be trusted for a decision (a slope learnt settles within a few windows)."""
        return (sum(self._ground_steps) > GROUND_STABLE
                or float(np.abs(self.ground_slope).max()) >= 0.95 * MAX_GROUND_TILT)

    def _learn_ground(self, errs, heading, settled):
        """The ground's tilt, from the window's best-fitting model: every model stands on level ground in its
        world, so one anchored on a slope settles towards level over the window, and the roll/pitch it ends
        below the measured is slope not yet learnt. Learnt while the belief was ``settled`` before the window,
        when no hypothesis fits ``min_gain`` times better than the confirmed one (a miss common to every model),
        or when even the best model misses by more than ``max_misfit`` (no morphology explains the tilt: a
        robot that starts on a slope learns it in its first windows); not while a hypothesis that fits clearly
        better is gaining belief (a damage's tilt is its own hypothesis' to explain)."""
        best = min((e for e in errs if e is not None), key=lambda e: float(np.mean(e[:, :2] ** 2)))
        best_ms = min(h.mse[-1] for h, e in zip(self.hyps, errs) if e is not None and h.mse)
        common = best_ms * self.min_gain > self.hyps[0].mse[-1]      # no hypothesis clearly better than the rest
        if not (settled or common or best_ms > self._max_mse):
            self._ground_steps.append(0.0)
            return
        self._ground_n = min(self._ground_n + 1, SCALE_MEMORY)
        d_roll, d_pitch = -GROUND_GAIN / self._ground_n * best[-1, :2]      # in the body's heading frame
        size = math.hypot(d_roll, d_pitch)
        if size > GROUND_MAX_STEP:
            d_roll, d_pitch = d_roll * GROUND_MAX_STEP / size, d_pitch * GROUND_MAX_STEP / size
        self._ground_steps.append(min(size, GROUND_MAX_STEP))
        self.ground_slope = np.clip(self.ground_slope + _turn(d_pitch, -d_roll, heading), -MAX_GROUND_TILT,
                                    MAX_GROUND_TILT)

    def _run_bank(self, snap, surprise, p_prev, t0, t_s, meas, e_cur):
        """A bank window: the residuals of every hypothesis (the confirmed model's ``e_cur`` first; None for
        one ruled out in this episode), each other model (re)started from the window-start ``snap`` where
        needed. ``surprise``: the confirmed model's residual started the bank."""
        self.bank_windows += 1
        # hypotheses the episode has already ruled out are not simulated again (their belief is kept) ...
        for h, p in zip(self.hyps[1:], p_prev[1:]):
            if h.active and p < self.prune * p_prev.max():
                h.pruned = True
        # ... until the confirmed model is surprised again (a new damage): then every one restarts
        for h in self.hyps[1:]:
            if not h.active or (h.pruned and surprise):
                h.restart(snap, self.robot)
                h.yaw0 = self.hyps[0].yaw0      # the snapshot is the confirmed model's anchor: same yaw origin
        return [e_cur] + [None if h.pruned else self._simulate_safe(h, t0, t_s, meas) for h in self.hyps[1:]]

    def _others_off(self):
        """The hypotheses other than the confirmed one stop: no model runs, no belief is kept."""
        for h in self.hyps[1:]:
            h.active, h.ll, h.pruned = False, 0.0, False

    def _update_unexplained(self):
        """``residual_rms`` (rad): the confirmed model's RMS residual over its recent windows; ``unexplained``:
        it misses by more than ``unexplained_misfit`` and every other hypothesis the bank scored by more than
        ``max_misfit`` (none scored: the same), i.e. no morphology of the bank explains the body's motion -- a
        seized joint, an obstacle, a shortened foot, an attitude estimate gone wrong. Cleared once the confirmed
        model is back under half ``unexplained_misfit`` in mean square (hysteresis). The morphology is kept
        meanwhile (``_decide`` withholds on ``max_misfit``)."""
        cur = self.hyps[0].recent_misfit()
        self.residual_rms = math.sqrt(cur / self._per_rad2)
        if self.unexplained:
            self.unexplained = cur > UNEXPLAINED_CLEAR * self._unexplained_mse
        else:
            others = [h.recent_misfit() for h in self.hyps[1:] if h.active and not h.pruned and h.mse]
            self.unexplained = cur > self._unexplained_mse and all(m > self._max_mse for m in others)
        self.unexplained_windows += int(self.unexplained)

    def _defer_window(self, e_cur, z_cur, p_prev, t_next):
        """Degraded mode: the pre-screen was surprised but no episode is under way and the bank ran less than
        ``bank_every`` windows ago. Nothing is scored or decided; the other hypotheses (none clearly above its
        prior) stay off, as after a quiet window; the confirmed model's residual level is learnt by the rule
        of every window (the z-score is above ``screen_z``: never the gyro bias)."""
        self._since_bank += 1
        self.deferred_windows += 1
        self._others_off()
        if z_cur < self.learn_z and p_prev[0] >= self._settled():
            self._update_scale(e_cur, bias=False)
        self._start_window(t_next)

    def probabilities(self, hyps=None) -> np.ndarray:
        """Posterior over ``hyps`` (default ``self.hyps``; the first is the confirmed morphology); inactive
        ones count as equal to the confirmed one (no evidence against it)."""
        return posterior(self.hyps if hyps is None else hyps, self.stay_prior)

    def _update_scale(self, e_cur, bias):
        """Slow estimates of the confirmed model's residual level and (``bias``: a quiet window) of the gyro's
        yaw-rate bias; the caller asks only while the belief is settled (a damage must not be learnt away)."""
        self._scale_n = min(self._scale_n + 1, SCALE_MEMORY)
        a = 1.0 / self._scale_n
        if bias:    # the yaw change at the last sample over the window duration is the bias seen in this window
            self.gyro_bias += BIAS_GAIN * a * float(-e_cur[-1, 2]) / self.window
        ms = np.mean(e_cur ** 2, axis=0)
        ms[2] = np.mean((e_cur[:, 2] - e_cur[-1, 2] * np.arange(1, len(e_cur) + 1) / len(e_cur)) ** 2)
        self._scale2 += a * (ms - self._scale2)

    def leg_probabilities(self, probs=None) -> np.ndarray:
        """P(leg i changed) = the summed probability of the hypotheses that differ from the confirmed one on
        leg i (all of them are single-leg changes)."""
        probs = self.probabilities() if probs is None else probs
        return leg_probabilities(self.hyps, probs, len(self.leg_names))

    def _decide(self, t, probs):
        """A swap needs the leg's probability above ``threshold`` in ``confirm`` windows in a row; the link
        count is then the most probable one on that leg (the coxa weighs 20 g: 0 and 1 link are close).
        One inconclusive window in between (no leg above the threshold, the confirmed model not back
        either: a window of weak signal, e.g. a starved IMU) neither confirms nor breaks the row; another
        leg above the threshold, or the belief back on the confirmed morphology, does."""
        legs = self.leg_probabilities(probs)
        i = int(np.argmax(legs))
        if t < self._quiet_until:
            self._above, self._candidate = 0, None
            return
        if legs[i] < self.threshold:
            self._inconclusive += 1
            if probs[0] >= BACK_ON_CONFIRMED or self._inconclusive > INCONCLUSIVE_WINDOWS:
                self._above, self._candidate = 0, None
            return
        self._inconclusive = 0
        if self._candidate == i:
            self._above += 1
        else:
            self._candidate, self._above = i, 1
        if self._above >= self.confirm:
            self._swap(t, i, probs, float(legs[i]))

    def _swap(self, t, i, probs, p_leg):
        """Leg i confirmed: the most probable hypothesis changing it becomes the model's morphology, if it explains
        the motion clearly better than the confirmed model and well enough itself."""
        base = self.hyps[0].links
        k = max((j for j, h in enumerate(self.hyps) if j and h.links[i] != base[i]), key=lambda j: probs[j])
        winner = self.hyps[k]
        n = len(winner.mse)     # the same recent windows for both
        if not (n and np.mean(winner.mse) * self.min_gain <= np.mean(list(self.hyps[0].mse)[-n:])):
            return          # likelier, but not clearly better: keep waiting
        if np.mean(winner.mse) > self._max_mse or self._ground_moving():
            # the least wrong of models that all miss the motion, or models anchored on a ground estimate still
            # on the move (an attitude that drifts is no slope): no evidence of a morphology
            self.unexplained_decisions += 1
            return
        keep = winner.engine.snapshot()
        shares = link_shares(self.hyps, probs, i)
        self.model_morphology = tuple(winner.links[j] if j == i else m
                                      for j, m in enumerate(self.model_morphology))
        self._recentre(self.morphology, keep)
        alternatives = [(tuple(k if j == i else m for j, m in enumerate(self.morphology)), s)
                        for k, s in sorted(shares.items(), key=lambda kv: -kv[1])
                        if k != winner.links[i] and s >= AMBIGUOUS_SHARE]
        self._event(t, "model", p_leg, alternatives)

    # ---------------------------------------------------------------------------------------------- outputs
    def top(self, n=3) -> List[Tuple[Tuple[int, ...], float]]:
        """The ``n`` most probable hypotheses as (links per leg, probability). Safe to call from another
        thread than the one feeding the identifier (it reads one list of hypotheses)."""
        hyps = self.hyps
        probs = self.probabilities(hyps)
        order = np.argsort(-probs)[:n]
        return [(hyps[i].links, float(probs[i])) for i in order]

    def describe(self, links) -> str:
        """``healthy`` or e.g. ``LM:1`` (the legs short of links)."""
        return format_morphology(links, self.leg_names, self.max_links)
