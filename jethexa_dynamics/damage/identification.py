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
"""
from __future__ import annotations

import math
from collections import deque
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from transforms3d.euler import euler2mat, mat2euler

from jethexa_dynamics.hardware.protocol import MAX_MOVE_TIME_S
from jethexa_dynamics.model import LeggedRobot, Morphology, format_morphology
from jethexa_dynamics.model.scenarios import single_leg_losses

FORMAT = "jethexa-identify/1"


def single_leg_hypotheses(links_per_leg: Sequence[int], revisable: Sequence[bool] = (),
                          max_links: Optional[Sequence[int]] = None) -> List[Tuple[int, ...]]:
    """The current morphology first, then ``model.scenarios.single_leg_losses`` of it (on the ``revisable``
    legs every other link count)."""
    return [tuple(int(k) for k in links_per_leg)] + single_leg_losses(links_per_leg, max_links, revisable)


_FLOAT_EPS = float(np.finfo(float).eps)     # transforms3d.quaternions.quat2mat's
_EPS4 = 4.0 * _FLOAT_EPS                    # transforms3d.euler.mat2euler's


def imu_attitude(q, gyro) -> Tuple[float, float, float]:
    """(roll, pitch, world z-rate) of a unit quaternion (w, x, y, z) and body rates (arrays): what
    ``R = quat2mat(q); roll, pitch, _ = mat2euler(R, "sxyz"); R[2] @ gyro`` give, bit for bit (the same
    operations, on Python floats: ~3x cheaper, for every IMU sample)."""
    w, x, y, z = q.tolist()
    nq = w * w + x * x + y * y + z * z
    if nq < _FLOAT_EPS:
        r00, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    else:
        s = 2.0 / nq
        X, Y, Z = x * s, y * s, z * s
        wX, wY, wZ = w * X, w * Y, w * Z
        xX, xY, xZ = x * X, x * Y, x * Z
        yY, yZ, zZ = y * Y, y * Z, z * Z
        r00, r10, r11, r12 = 1.0 - (yY + zZ), xY + wZ, 1.0 - (xX + zZ), yZ - wX
        r20, r21, r22 = xZ - wY, yZ + wX, 1.0 - (xX + yY)
    cy = math.sqrt(r00 * r00 + r10 * r10)
    roll = math.atan2(r21, r22) if cy > _EPS4 else math.atan2(-r12, r11)
    return roll, math.atan2(-r20, cy), float(np.array((r20, r21, r22)).dot(gyro))


def _huber(z, c):
    a = np.abs(z)
    return np.where(a < c, 0.5 * z * z, c * a - 0.5 * c * c)


class _Hyp:
    """One hypothesis: its links per leg, its model (an Engine) and its accumulated log-likelihood."""

    __slots__ = ("links", "engine", "ll", "active", "yaw0", "mse", "pruned")

    def __init__(self, links, engine):
        self.links, self.engine, self.ll, self.active, self.yaw0 = links, engine, 0.0, False, 0.0
        self.mse = deque(maxlen=3)    # mean square residuals (units of the floors) of the last windows
        self.pruned = False           # ruled out in this bank episode: not simulated, its belief frozen


class DamageIdentifier:
    """Belief over morphology hypotheses from commands, joint states and the IMU (module docstring).

    Parameters: ``robot`` healthy ``LeggedRobot`` (default JetHexa); ``window`` s between re-anchors
    (0.2-3); ``threshold`` posterior probability a swap needs (0.5-0.999); ``confirm`` consecutive windows
    above it (1-10); ``stay_prior`` prior probability of "no change" (0.5-0.999); ``forget`` per-window
    factor of the log-likelihood sum (0-1); ``sigma_rp`` (rad) and ``sigma_yaw`` (rad) residual floors;
    ``samples`` comparison points per window; ``dt`` model step (s); ``screen`` pre-screen on;
    ``screen_z`` z-score of the confirmed model's window residual that starts the whole bank; ``quiet`` s
    after a change without a further decision (the gait re-phases, the robot settles: evidence keeps
    accumulating meanwhile); ``min_gain`` how many times smaller the winner's recent mean square residual
    must be than the confirmed model's (an effect size: a real break gives ~100x, see the module
    docstring); ``max_misfit`` (rad) the largest recent RMS residual of a winner (it must explain the motion
    itself); ``unexplained_misfit`` (rad) the confirmed model's recent RMS residual above which, with no hypothesis
    within ``max_misfit``, the motion is ``unexplained``; ``prune`` during a bank episode, hypotheses below this
    fraction of the most probable one are no longer simulated (0: never); ``max_gap`` s: an IMU or joint-state
    stream silent longer than this (an executor stall, a dropped link) is a data gap -- the window it falls in, and
    those starting within ``gap_settle`` s after the data resumes, are driven through by the commands but not scored
    (a stalled plant or a stale anchor is not evidence of damage; 1 s: a servo driver paused for a second lets the
    gait's commands run ahead of the legs, and on resuming the legs catch up in one jolt that shakes the body for
    most of a second -- a false RR:1 with 0.3 s, issue 21); ``morphology`` initial links per leg.
    """

    def __init__(self, robot=None, window=0.5, threshold=0.9, confirm=2, stay_prior=0.95, forget=0.85,
                 sigma_rp=math.radians(0.25), sigma_yaw=math.radians(0.25), samples=5, dt=2e-3, screen=True,
                 screen_z=1.2, quiet=2.0, min_gain=3.0, max_misfit=math.radians(2.0),
                 unexplained_misfit=math.radians(6.0), prune=1e-6, max_gap=0.2, gap_settle=1.0, morphology=None):
        checks = (("window", window, 0.2, 3.0), ("threshold", threshold, 0.5, 0.999),
                  ("confirm", confirm, 1, 10), ("stay_prior", stay_prior, 0.5, 0.999),
                  ("forget", forget, 0.0, 1.0), ("sigma_rp", sigma_rp, 1e-4, 0.2),
                  ("sigma_yaw", sigma_yaw, 1e-4, 0.2), ("samples", samples, 1, 50), ("dt", dt, 2e-4, 5e-3),
                  ("screen_z", screen_z, 0.5, 100.0), ("quiet", quiet, 0.0, 10.0),
                  ("min_gain", min_gain, 1.0, 100.0), ("max_misfit", max_misfit, 1e-3, math.pi / 2),
                  ("unexplained_misfit", unexplained_misfit, 1e-3, math.pi / 2),
                  ("prune", prune, 0.0, 0.1), ("max_gap", max_gap, 0.02, 5.0),
                  ("gap_settle", gap_settle, 0.0, 5.0))
        for name, val, lo, hi in checks:
            if not (isinstance(val, (int, float)) and math.isfinite(val) and lo <= val <= hi):
                raise ValueError("%s=%r outside the allowed range [%g, %g]" % (name, val, lo, hi))
        self.robot = (robot or LeggedRobot.jethexa()).full
        self.leg_names = list(self.robot.leg_names)
        self.joint_names = list(self.robot.joint_names)
        self.nj = len(self.joint_names)
        self._limits = (np.asarray(self.robot.joint_lower, dtype=float),
                        np.asarray(self.robot.joint_upper, dtype=float))
        self.window, self.threshold, self.confirm = float(window), float(threshold), int(confirm)
        self.stay_prior, self.forget = float(stay_prior), float(forget)
        self.sigma_floor = np.array([sigma_rp, sigma_rp, sigma_yaw], dtype=float)
        self.samples, self.dt, self.screen, self.screen_z = int(samples), float(dt), bool(screen), float(screen_z)
        self.huber_c = 3.0
        self.learn_z = 3.0        # windows above this z are not learnt into the residual level
        # called before each further model of a bank window: a live node on a thread of its own pauses there so
        # the other threads of its process (a servo bus, the executor) get the interpreter between models
        self.between_models = None
        self.quiet = float(quiet)
        self.min_gain = float(min_gain)
        # mean square residuals are kept in units of the floors (``_Hyp.mse``): a residual of r rad on every
        # channel is r**2 * _per_rad2 there
        self._per_rad2 = float(np.mean(self.sigma_floor ** -2.0))
        self.max_misfit = float(max_misfit)
        self._max_mse = self.max_misfit ** 2 * self._per_rad2
        # "unexplained" needs misses well beyond a winner's bound: the model of a damaged robot's gait misses by
        # 2-2.5 deg RMS with the right morphology (the demo's four-legged crawl), which is no unexplained motion
        self.unexplained_misfit = float(unexplained_misfit)
        self._unexplained_mse = self.unexplained_misfit ** 2 * self._per_rad2
        self.prune = float(prune)
        self.max_gap, self.gap_settle = float(max_gap), float(gap_settle)
        self._quiet_until = -math.inf
        self._skip_until = -math.inf       # windows starting before this are driven through, not scored
        self.gaps = 0                      # data gaps seen (IMU or joints silent longer than max_gap)
        self.skipped_windows = 0
        n_joints = self.robot.description.n_joints
        healthy = tuple(int(n) for n in n_joints)
        self.max_links = healthy
        self.model_morphology = healthy if morphology is None else self._links(morphology)
        self.servo_morphology = healthy
        self._pool: Dict[Tuple[int, ...], object] = {}
        self.hyps: List[_Hyp] = []
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
        self._since_bank = 1 << 30        # windows since the bank last ran
        # measurement buffers
        self._cmds: deque = deque()          # (t, q, move_time, joint indices)
        self._imu: deque = deque()           # (t, roll, pitch, yaw-rate world z (bias not removed))
        self._joints: Optional[Tuple[float, np.ndarray]] = None
        self._t_cmd = self._t_imu = self._t_joint = -math.inf
        self._t_origin: Optional[float] = None
        self._w0: Optional[float] = None     # current window start (caller's clock)
        self._meas0 = None                   # (roll, pitch) at the window start
        self.gyro_bias = 0.0                 # world z-rate bias estimate (rad/s)
        self._scale2 = np.zeros(3)           # running mean square residual of the confirmed model
        self._scale_n = 0
        self._above = 0
        self._candidate = None
        self._inconclusive = 0
        self._recentre(self.morphology, keep=None)

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
        from jethexa_dynamics.sim.engine import Engine
        e = self._pool.get(links)
        if e is None:
            e = Engine(self.robot, gait=None, dt=self.dt, record_every=0)
            e.set_morphology(Morphology.from_vector(self.robot, list(links)))
            e.events = []
            self._pool[links] = e
        return e

    def _recentre(self, links, keep):
        """Hypotheses = ``links`` and its single-leg further losses; their models start from ``keep``'s
        state (an engine snapshot) when given."""
        rev = [m < s for m, s in zip(self.model_morphology, self.servo_morphology)]
        self.hyps = [_Hyp(h, self._engine(h)) for h in single_leg_hypotheses(links, rev, self.max_links)]
        if keep is not None:
            self._start_from(self.hyps[0], keep)
        self.hyps[0].active = True      # the others start from its snapshot when the bank next runs
        self._above, self._candidate = 0, None

    def _start_from(self, h, snap):
        h.engine.restore(snap)
        h.engine.set_morphology(Morphology.from_vector(self.robot, list(h.links)))
        h.engine.events = []
        h.ll = 0.0
        h.mse.clear()
        h.active = True
        h.pruned = False

    # ---------------------------------------------------------------------------------------------- inputs
    def _reject(self, reason, msg):
        self.rejections[reason] = self.rejections.get(reason, 0) + 1
        self.last_rejection = msg
        return False

    def _vec(self, x, n, name):
        a = np.asarray(x, dtype=np.float64).reshape(-1)
        if a.shape != (n,):
            return None, "%s must have %d values, got %d" % (name, n, a.size)
        if not all(map(math.isfinite, a.tolist())):
            return None, "%s must be finite (no NaN/inf)" % name
        return a, ""

    def _stamp(self, t, last, name):
        try:
            t = float(t)
        except (TypeError, ValueError):
            return None, "%s stamp %r is not a time" % (name, t)
        if not math.isfinite(t):
            return None, "%s stamp must be finite, got %r" % (name, t)
        if t < last:
            return None, "%s stamp %.6f s is before the previous one %.6f s (out of order)" % (name, t, last)
        return t, ""

    def on_command(self, t, q, t_target, joints=None) -> bool:
        """Joint command received at ``t``: ``joints`` (indices into ``joint_names``, default all) to reach ``q``
        (rad) at ``t_target`` (s, the same clock; the Predictor protocol's meaning: a target time before ``t``
        is an immediate move); NaN entries are joints this command leaves alone."""
        t, err = self._stamp(t, self._t_cmd, "command")
        if t is None:
            return self._reject("command", err)
        idx = np.arange(self.nj) if joints is None else np.asarray(joints, dtype=np.int64).reshape(-1)
        a = np.asarray(q, dtype=np.float64).reshape(-1)
        if a.shape != idx.shape or (idx.size and (idx.min() < 0 or idx.max() >= self.nj)):
            return self._reject("command", "command must have %d values (one per joint), got %d"
                                % (idx.size, a.size))
        if np.any(np.isinf(a)) or np.all(np.isnan(a)):
            return self._reject("command", "command must be finite joint angles (rad); NaN = joint not commanded")
        lo, hi = self._limits
        with np.errstate(invalid="ignore"):
            out = (a < lo[idx] - 1e-9) | (a > hi[idx] + 1e-9)
        if np.any(out):
            k = int(np.argmax(out))
            j = int(idx[k])
            return self._reject("command", "command %s = %.4g rad: outside its limits [%.4f, %.4f] rad"
                                % (self.joint_names[j], a[k], lo[j], hi[j]))
        try:
            mt = float(t_target) - t
        except (TypeError, ValueError):
            mt = math.nan
        mt = max(0.0, mt) if math.isfinite(mt) else mt
        if not (math.isfinite(mt) and mt <= MAX_MOVE_TIME_S):
            return self._reject("command", "command t_target=%r: must be a time within %g s after the command's %r"
                                % (t_target, MAX_MOVE_TIME_S, t))
        ok = np.isfinite(a)
        self._t_cmd = t
        self._cmds.append((t, a[ok].copy(), mt, idx[ok].copy()))
        return True

    def on_joints(self, t, q) -> bool:
        """Measured joint angles (rad); NaN entries (unmeasured joints) are allowed."""
        t, err = self._stamp(t, self._t_joint, "joints")
        if t is None:
            return self._reject("joints", err)
        a = np.asarray(q, dtype=np.float64).reshape(-1)
        if a.shape != (self.nj,) or np.any(np.isinf(a)) or np.all(np.isnan(a)):
            return self._reject("joints", "joints must be %d angles (rad), finite or NaN (unmeasured)" % self.nj)
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
        t, err = self._stamp(t, self._t_imu, "imu")
        if t is None:
            return self._reject("imu", err)
        qv, err = self._vec(quat, 4, "imu orientation")
        n = math.sqrt(qv.dot(qv)) if qv is not None else 0.0      # np.linalg.norm's bits
        if qv is None or not n > 0.5:
            return self._reject("imu", err or "imu orientation must be a unit quaternion (w, x, y, z)")
        w, err = self._vec(gyro, 3, "imu angular_velocity")
        if w is None:
            return self._reject("imu", err)
        roll, pitch, yaw_rate = imu_attitude(qv / n, w)      # yaw_rate: world z component of the body rate
        if t - self._t_imu > self.max_gap and math.isfinite(self._t_imu):
            self._gap(t)
        self._t_imu = t
        if self._t_origin is None:
            self._t_origin = t
        self._imu.append((t, roll, pitch, yaw_rate))
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

    # ---------------------------------------------------------------------------------------------- windows
    def _event(self, t, source, prob):
        self._quiet_until = t + self.quiet
        self._scale_n = 0          # the residual level is learnt again for the new model and gait
        self.events.append({"t": t, "morphology": list(self.morphology), "source": source,
                            "probability": float(prob)})

    def _advance(self, t):
        if self._w0 is None:
            if self._joints is None:
                return                          # nothing to anchor the joints on yet
            self._start_window(self._imu[-1][0])
            return
        while self._imu and self._imu[-1][0] >= self._w0 + self.window - 1e-9:
            self._run_window()

    def _start_window(self, t0):
        """Anchor every active model at ``t0`` on the latest measurements."""
        self._w0 = t0
        s = next(x for x in reversed(self._imu) if x[0] <= t0 + 1e-9)
        self._meas0 = s
        q = self._joints[1] if self._joints is not None else None
        for h in self.hyps:
            if h.active and not h.pruned:
                self._anchor(h, t0, s, q)
        # drop what is older than the window start (keep the command in force)
        while len(self._cmds) > 1 and self._cmds[1][0] <= t0:
            self._cmds.popleft()
        while self._imu and self._imu[0][0] < t0:
            self._imu.popleft()

    def _anchor(self, h, t0, s, q):
        from jethexa_dynamics.sim.engine import SimulationError
        e = h.engine
        try:
            e.advance(t0 - self._t_origin)
        except SimulationError:
            self.sim_failures += 1
            if h is not self.hyps[0]:
                h.active = False          # restarts from the confirmed model at the next bank run
                return
            e.reset_standing()
        yaw = mat2euler(e.R, "sxyz")[2]
        e.R[:] = euler2mat(s[1], s[2], yaw, "sxyz")
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
        """(n, 3) measured roll, pitch and yaw change since t0 (gyro integrated, bias removed)."""
        imu = list(self._imu)
        ts = np.array([x[0] for x in imu])
        rates = np.array([x[3] for x in imu]) - self.gyro_bias
        t_prev = np.concatenate([[t0], ts[:-1]])
        dpsi = np.cumsum(rates * np.clip(ts - t_prev, 0.0, None))
        return np.array([[imu[i][1], imu[i][2], dpsi[i]] for i in idx]), ts[idx]

    def _simulate(self, h, t0, t_s):
        """Drive hypothesis h's model from t0 through the window's commands; (n, 3) predicted roll, pitch,
        yaw change at the times t_s."""
        e = h.engine
        out = np.empty((len(t_s), 3))
        cmds = list(self._cmds)
        ci = 0
        # the command in force at t0 (issued earlier) is already applied; apply those after t0 in order
        while ci < len(cmds) and cmds[ci][0] <= t0:
            ci += 1
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
        after = [x[0] for x in self._imu if x[0] > t0 + 1e-9]
        inside = [t for t in after if t <= t1 + 1e-9]
        t_next = inside[-1] if inside else after[0]
        cmds = list(self._cmds)
        ci = 0
        while ci < len(cmds) and cmds[ci][0] <= t0:
            ci += 1
        for h in self.hyps:
            if not h.active or h.pruned:
                continue
            try:
                self._drive(h.engine, cmds, ci, t_next)
            except SimulationError:
                self.sim_failures += 1
                if h is self.hyps[0]:
                    h.engine.reset_standing()
                else:
                    h.active = False
        self.skipped_windows += 1
        self._above, self._candidate = 0, None      # a gap adds no confidence to a candidate
        self._start_window(t_next)

    def _simulate_safe(self, h, t0, t_s, meas):
        """Residuals of hypothesis h; a model that fails (falls over, diverges) explains nothing: infinite
        residual this window, and it restarts from the confirmed model at the next bank run."""
        from jethexa_dynamics.sim.engine import SimulationError
        try:
            if self.between_models is not None:
                self.between_models()
            return self._simulate(h, t0, t_s) - meas
        except SimulationError:
            self.sim_failures += 1
            h.active = False
            return np.full_like(meas, 1.0)      # 1 rad: far beyond any real residual, still finite

    def _run_window(self):
        t0 = self._w0
        t1 = t0 + self.window
        idx = self._sample_times(t0)
        in_win = [x for x in self._imu if x[0] <= t1 + 1e-9]
        stale = self._joints is None or t1 - self._joints[0] > self.max_gap     # the joints went silent
        if not idx or stale or t0 < self._skip_until - 1e-9 or not any(t0 < x[0] <= t1 + 1e-9 for x in self._imu):
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
            self.sim_failures += 1
            cur.engine.reset_standing()
            self._start_window(in_win[-1][0] if in_win else t1)
            return
        e_cur = pred - meas
        sigma = np.sqrt(self.sigma_floor ** 2 + self._scale2)
        z_cur = float(np.sqrt(np.mean((e_cur / sigma) ** 2)))
        self.last_z = z_cur
        self.z_log.append((t1, z_cur))
        p_prev = self.probabilities()
        # the bank goes on while some other hypothesis holds clearly more than its prior
        p_other = (1.0 - self.stay_prior) / max(len(self.hyps) - 1, 1)
        others_live = any(h.active and p > 2.0 * p_other for h, p in zip(self.hyps[1:], p_prev[1:]))
        run_bank = not self.screen or z_cur > self.screen_z or others_live
        if run_bank and not others_live and self._since_bank + 1 < self.bank_every:
            self._defer_window(e_cur, z_cur, p_prev, in_win[-1][0] if in_win else t1)
            return
        self._since_bank = 0 if run_bank else self._since_bank + 1
        if run_bank:
            self.bank_windows += 1
            # hypotheses the episode has already ruled out are not simulated again (their belief is kept) ...
            for h, p in zip(self.hyps[1:], p_prev[1:]):
                if h.active and p < self.prune * p_prev.max():
                    h.pruned = True
            # ... until the confirmed model is surprised again (a new damage): then every one restarts
            surprise = z_cur > self.screen_z
            for h in self.hyps[1:]:
                if not h.active or (h.pruned and surprise):
                    self._start_from(h, snap)
                    h.yaw0 = cur.yaw0      # the snapshot is the confirmed model's anchor: same yaw origin
            errs = [e_cur] + [None if h.pruned else self._simulate_safe(h, t0, t_s, meas) for h in self.hyps[1:]]
        else:
            for h in self.hyps[1:]:
                h.active, h.ll, h.pruned = False, 0.0, False
            errs = [e_cur]
        # window log-likelihoods (robust) and the belief
        if len(errs) > 1:
            # the best hypothesis' misfit counts as noise too: a mismatch common to every model (timing, an
            # unmodelled gait transient, the IMU filter) widens σ instead of favouring a wrong hypothesis
            best = np.min([np.mean(np.minimum(err, 1.0) ** 2, axis=0) for err in errs if err is not None], axis=0)
            sigma = np.sqrt(self.sigma_floor ** 2 + np.maximum(self._scale2, best))
        for h, err in zip(self.hyps, errs):
            if err is None:
                continue
            h.ll = self.forget * h.ll - float(np.sum(_huber(err / sigma, self.huber_c)))
            h.mse.append(float(np.mean((np.minimum(np.abs(err), 1.0) / self.sigma_floor) ** 2)))
        probs = self.probabilities()
        self.windows += 1
        self.history.append((t1, [(h.links, p) for h, p in zip(self.hyps, probs)]))
        settled = min(0.9, self.stay_prior - 1e-9)
        if z_cur < self.learn_z and p_prev[0] >= settled:
            # the residual level of the confirmed model is learnt from every window the belief was settled
            # before, unless it is gross (a damage's residual must not be learnt as model error); a level learnt
            # only from the quiet windows (z < 0.9) never reached the live graph's (IMU filter, timing jitter:
            # healthy windows at z 2-2.6 there, each of which flipped the belief)
            self._update_scale(e_cur, bias=z_cur < 0.75 * self.screen_z and probs[0] >= settled)
        self._update_unexplained()
        self._decide(t1, probs)
        self._start_window(in_win[-1][0] if in_win else t1)

    def _update_unexplained(self):
        """``residual_rms`` (rad): the confirmed model's RMS residual over its recent windows; ``unexplained``:
        it misses by more than ``unexplained_misfit`` and every other hypothesis the bank scored by more than
        ``max_misfit`` (none scored: the same), i.e. no morphology of the bank explains the body's motion -- a
        seized joint, an obstacle, a shortened foot, an attitude estimate gone wrong. Cleared once the confirmed
        model is back under half ``unexplained_misfit`` in mean square (hysteresis). The morphology is kept
        meanwhile (``_decide`` withholds on ``max_misfit``)."""
        def ms(h):
            return float(np.mean(h.mse)) if h.mse else 0.0
        cur = ms(self.hyps[0])
        self.residual_rms = math.sqrt(cur / self._per_rad2)
        if self.unexplained:
            self.unexplained = cur > 0.5 * self._unexplained_mse
        else:
            others = [ms(h) for h in self.hyps[1:] if h.active and not h.pruned and h.mse]
            self.unexplained = cur > self._unexplained_mse and all(m > self._max_mse for m in others)
        self.unexplained_windows += int(self.unexplained)

    def _defer_window(self, e_cur, z_cur, p_prev, t_next):
        """Degraded mode: the pre-screen was surprised but no episode is under way and the bank ran less than
        ``bank_every`` windows ago. Nothing is scored or decided; the other hypotheses (none clearly above its
        prior) stay off, as after a quiet window; the confirmed model's residual level is learnt by the rule
        of every window (the z-score is above ``screen_z``: never the gyro bias)."""
        self._since_bank += 1
        self.deferred_windows += 1
        for h in self.hyps[1:]:
            h.active, h.ll, h.pruned = False, 0.0, False
        if z_cur < self.learn_z and p_prev[0] >= min(0.9, self.stay_prior - 1e-9):
            self._update_scale(e_cur, bias=False)
        self._start_window(t_next)

    def probabilities(self, hyps=None) -> np.ndarray:
        """Posterior over ``hyps`` (default ``self.hyps``; the first is the confirmed morphology); inactive
        ones count as equal to the confirmed one (no evidence against it)."""
        hyps = self.hyps if hyps is None else hyps
        n = len(hyps)
        prior = np.full(n, (1.0 - self.stay_prior) / max(n - 1, 1))
        prior[0] = self.stay_prior if n > 1 else 1.0
        ll = np.array([h.ll if h.active else hyps[0].ll for h in hyps])
        a = np.log(prior) + ll - ll.max()
        p = np.exp(a - a.max())
        return p / p.sum()

    def _update_scale(self, e_cur, bias):
        """Slow estimates of the confirmed model's residual level and (``bias``: a quiet window) of the gyro's
        yaw-rate bias; the caller asks only while the belief is settled (a damage must not be learnt away)."""
        self._scale_n = min(self._scale_n + 1, 40)
        a = 1.0 / self._scale_n
        if bias:    # the yaw change at the last sample over the window duration is the bias seen in this window
            self.gyro_bias += 0.5 * a * float(-e_cur[-1, 2]) / self.window
        ms = np.mean(e_cur ** 2, axis=0)
        ms[2] = np.mean((e_cur[:, 2] - e_cur[-1, 2] * np.arange(1, len(e_cur) + 1) / len(e_cur)) ** 2)
        self._scale2 += a * (ms - self._scale2)

    def leg_probabilities(self, probs=None) -> np.ndarray:
        """P(leg i changed) = the summed probability of the hypotheses that differ from the confirmed one on
        leg i (all of them are single-leg changes)."""
        probs = self.probabilities() if probs is None else probs
        base = self.hyps[0].links
        out = np.zeros(len(self.leg_names))
        for h, p in zip(self.hyps[1:], probs[1:]):
            out[next(i for i, (a, b) in enumerate(zip(h.links, base)) if a != b)] += p
        return out

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
            if probs[0] >= 0.5 or self._inconclusive > 1:
                self._above, self._candidate = 0, None
            return
        self._inconclusive = 0
        if self._candidate == i:
            self._above += 1
        else:
            self._candidate, self._above = i, 1
        if self._above >= self.confirm:
            base = self.hyps[0].links
            k = max((j for j, h in enumerate(self.hyps) if j and h.links[i] != base[i]), key=lambda j: probs[j])
            winner = self.hyps[k]
            n = len(winner.mse)     # the same recent windows for both
            if not (n and np.mean(winner.mse) * self.min_gain <= np.mean(list(self.hyps[0].mse)[-n:])):
                return          # likelier, but not clearly better: keep waiting
            if np.mean(winner.mse) > self._max_mse:
                self.unexplained_decisions += 1
                return          # the least wrong of models that all miss the motion: no evidence of a morphology
            keep = winner.engine.snapshot()
            self.model_morphology = tuple(winner.links[j] if j == i else m
                                          for j, m in enumerate(self.model_morphology))
            self._recentre(self.morphology, keep)
            self._event(t, "model", float(legs[i]))

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
