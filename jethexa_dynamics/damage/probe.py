"""An active probe of a leg whose link count the walking motion left ambiguous (issue 23, point 1).

While walking, the identifier names the broken leg but often not how many links it lost: a 20 g coxa, or a stump
that touches nothing, changes the body's attitude by less than the IMU's noise. Standing statically stable on
its other five legs, the robot can instead move what is left of that leg and watch the body's reaction: the
modular model, with each link-count hypothesis, predicts a different reaction.

The choice, measured on the project's engine (the papers are silent on it):

- Attitude does not separate the counts. Five stiff feet hold the body: the tilt differences between hypotheses
  are 0.002-0.02 deg, under the IMU's 0.1 deg noise, and a body 10 % heavier than the model tilts every
  hypothesis by 0.005 deg, enough to pick the wrong count.
- The body's angular rate does, for a fast probe. The reaction torque of a swinging stump shows in the gyro
  (x, y and yaw). The coxa's 20 g is the hard part (LM:1 against LM:0): its reaction torque grows with the
  acceleration, amplitude x (2 pi f)^2, and the rate limit bounds amplitude x 2 pi f, so a fast small swing
  beats a slow wide one. The default, 2 s with the coxa at 5 Hz (+-0.18 rad, 5.9 rad/s at its peak, under the
  URDF's 6 rad/s) and the femur at 3 Hz (+-0.28 rad, 5.7 rad/s), separates 1 from 0 links by a noise-free
  chi^2 of 46-53 (gyro noise 0.005 rad/s per sample; expected log-likelihood ratio half that), 2 from 1 by
  390-630 (``LinkProbe.predicted`` per count, LM, RM and RF); the first probe (coxa 2 Hz +-0.45, femur 4 Hz
  +-0.23, 6 s) cut to 2 s separates 1 from 0 by only 8-9: a coin toss with noise. The stance
  stays statically stable: the whole robot's CoM is more than 5 cm inside the other five feet.
- The 1-vs-0 evidence is all yaw, and the body's yaw reaction is set by the feet's tangential contact (the
  engine's viscous damper ``d_t``): models with d_t 20 or 200 N s/m instead of 50 change the prediction by chi^2
  160-400 (a plant at d_t 40-75 still ranks LM:1 first, at 30 not), and MuJoCo's stiff contact leaves a misfit
  of chi^2 25-36 (``benchmarks/results/identify_probe_mujoco.md``). The models' contact must be the plant's
  for that verdict; 2 against fewer links
  (the femur's reaction, roll and pitch as well) depends on it less (misfit chi^2 260-470 on MuJoCo against
  separations of 400-840).
- Most of that MuJoCo misfit is timing, not contact: MuJoCo's position servos (kv/kp = 20 ms, no rate
  feed-forward, against the engine's PID) make its gyro the models' 2 samples (20 ms) late, on every leg and
  count; with the shift fitted (``likelihoods``' ``max_lag`` >= 2 samples) the noise-free 1-link misfit falls
  to chi^2 8-14 against 37-45 for 0 links. A contact calibration from a lifted healthy leg
  (:mod:`.contact_calibration`) recovers an engine plant's d_t within 5 %, but on MuJoCo fits d_t 55-59 N s/m,
  which makes the 1-link misfit worse (41-60, above the 0-link's): a damper fitted to a whole leg's reaction
  does not carry over to the 20 g coxa's (``benchmarks/results/identify_probe_mujoco_calibrated.md``).
- A constant gyro bias does not matter: the score fits one per axis (the residual's mean over the probe is
  taken out, the profile likelihood of a constant offset), so neither the plant's bias nor a still stretch
  before the probe is needed; what the fit takes away is only the signal's mean, which a probe that starts and
  ends at rest barely has.

``LinkProbe`` gives the probe's joint targets and scores a measured gyro series against the model's prediction
for each link count (a Gaussian likelihood, the gyro's noise per sample). The models start from the stance the
robot stands in (``stance``: the joint set-points it holds), with the hypothesis' break. The closed loop that
stops, stands on the other five feet, runs it and acts on the result: :mod:`.active_probe`.

Example::

    probe = LinkProbe(robot, "LM")
    q = probe.targets(q_stance_leg, t)            # the leg's joint targets [rad] at probe time t [s]
    probe.likelihoods(gyro, counts=(0, 1, 2))     # {count: probability}, gyro (n, 3) rad/s at 100 Hz
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from jethexa_dynamics.control.walking import STANCE_MOVE_TIME
from jethexa_dynamics.model import LeggedRobot


@dataclass(frozen=True)
class ProbeSpec:
    """The probe: ``duration`` [s]; the coxa at ``coxa_hz`` [Hz] with amplitude ``coxa_amp`` [rad], the femur at
    ``femur_hz`` with ``femur_amp``; both windowed by sin^2 over the duration (they start and end at rest); joint
    commands every ``command_period`` [s] (the gait's 50 Hz), the IMU every ``imu_period`` [s]."""
    duration: float = 2.0
    coxa_hz: float = 5.0
    coxa_amp: float = 0.18
    femur_hz: float = 3.0
    femur_amp: float = 0.28
    command_period: float = 0.02
    imu_period: float = 0.01

    def __post_init__(self):
        for name, lo, hi in (("duration", 0.5, 30.0), ("coxa_hz", 0.1, 10.0), ("femur_hz", 0.1, 10.0),
                             ("coxa_amp", 0.0, 1.0), ("femur_amp", 0.0, 1.0), ("command_period", 0.005, 0.1),
                             ("imu_period", 0.001, 0.1)):
            v = getattr(self, name)
            if not (math.isfinite(v) and lo <= v <= hi):
                raise ValueError("%s=%r outside the allowed range [%g, %g]" % (name, v, lo, hi))

    def peak_rate(self) -> Tuple[float, float]:
        """An upper bound of each moved joint's rate [rad/s] (coxa, femur): the sine's, the window's slope added."""
        w = math.pi / self.duration
        return (self.coxa_amp * (2 * math.pi * self.coxa_hz + w), self.femur_amp * (2 * math.pi * self.femur_hz + w))


def _bridged(g: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """The rows of ``g`` (n, 3) not ``ok`` filled in linearly from the rows around them (the ends held)."""
    if ok.all():
        return g
    k = np.arange(len(g))
    return np.column_stack([np.interp(k, k[ok], g[ok, a]) for a in range(g.shape[1])])


class LinkProbe:
    """The probe of leg ``leg`` of ``robot`` (healthy model; the hypotheses are its breaks ``LEG:n``): targets,
    the model's predicted gyro per link count, and the likelihoods of a measured gyro series.

    ``gyro_noise`` [rad/s] the IMU's noise per sample (the likelihood's sigma); ``spec`` the probe; ``settle``
    [s] the models stand this long before and after their break; ``stance`` the joint set-points [rad, all
    joints in ``robot.joint_names`` order] the robot holds when the probe starts (default: the engine's standing
    pose); ``contact`` the models' foot contact (a ``sim.contact.ContactModel``; default the engine's, Table III;
    :mod:`.contact_calibration` fits one to the plant). Raises ValueError naming the field for an unknown leg
    or a probe faster than the URDF's joint rate limits."""

    def __init__(self, robot: Optional[LeggedRobot] = None, leg: str = "LM", spec: ProbeSpec = ProbeSpec(),
                 gyro_noise: float = 0.005, settle: float = 1.0, stance: Optional[Sequence[float]] = None,
                 contact=None):
        self.robot = robot if robot is not None else LeggedRobot.jethexa()
        names = list(self.robot.leg_names)
        if leg not in names:
            raise ValueError("leg=%r: one of %s" % (leg, ", ".join(names)))
        if not (math.isfinite(gyro_noise) and gyro_noise > 0):
            raise ValueError("gyro_noise=%r must be a rate > 0 rad/s" % (gyro_noise,))
        if not (math.isfinite(settle) and 0.1 <= settle <= 10.0):
            raise ValueError("settle=%r outside the allowed range [0.1, 10] s" % (settle,))
        self.leg, self.spec, self.gyro_noise, self.settle = leg, spec, float(gyro_noise), float(settle)
        self.stance = None
        if stance is not None:
            self.stance = np.asarray(stance, dtype=float).reshape(-1)
            if self.stance.shape != (len(self.robot.joint_names),) or not np.all(np.isfinite(self.stance)):
                raise ValueError("stance: %d finite joint angles [rad] expected" % len(self.robot.joint_names))
        self.leg_index = names.index(leg)
        self.joints = np.arange(3 * self.leg_index, 3 * self.leg_index + 3)
        limits = np.asarray(self.robot.joint_velocity, dtype=float)[self.joints[:2]]
        for name, rate, lim in zip(("coxa_amp", "femur_amp"), spec.peak_rate(), limits):
            if rate > lim:
                raise ValueError("%s: the probe reaches %.2f rad/s, over the joint's %.2f rad/s" % (name, rate, lim))
        self.contact = contact
        self._predicted: Dict[int, np.ndarray] = {}

    def offsets(self, t: float) -> np.ndarray:
        """The leg's joint offsets [rad] (coxa, femur, tibia) from its stance at probe time ``t`` [s]."""
        s = self.spec
        if t <= 0.0 or t >= s.duration:
            return np.zeros(3)
        w = math.sin(math.pi * t / s.duration) ** 2
        return w * np.array([s.coxa_amp * math.sin(2 * math.pi * s.coxa_hz * t),
                             s.femur_amp * math.sin(2 * math.pi * s.femur_hz * t), 0.0])

    def targets(self, q_stance: Sequence[float], t: float) -> np.ndarray:
        """The leg's joint targets [rad] at probe time ``t``: its stance angles plus the offsets."""
        return np.asarray(q_stance, dtype=float) + self.offsets(t)

    def schedule(self, q_stance: Sequence[float]) -> list:
        """The probe's commands on its own schedule: [(probe time [s], the leg's joint targets [rad], move time
        [s])], one every ``command_period`` from 0 on, each aiming at the targets one period ahead (the servo
        reaches them at the end of its move), from the stance angles ``q_stance`` of the leg."""
        s = self.spec
        n = int(math.ceil(s.duration / s.command_period - 1e-9))
        return [(j * s.command_period, self.targets(q_stance, (j + 1) * s.command_period), s.command_period)
                for j in range(n)]

    def run(self, engine, noise: Optional[Tuple[np.random.Generator, float]] = None, on_sample=None,
            commands: Optional[Sequence[Tuple[float, Sequence[float], float]]] = None) -> np.ndarray:
        """Run the probe on ``engine`` (standing, the break applied and settled; servo-target mode; or anything
        with its ``setpoints``, ``set_joint_targets``, ``step``, ``imu`` and ``dt``, e.g. ``sim.mjcf``'s
        ``MujocoServoPlant``): the leg's ``commands`` [(probe time [s], its three joint targets [rad], move time
        [s])], default its ``schedule``, each applied at the IMU sample time nearest its time (one before 0 at 0,
        one at or after ``duration`` never); the gyro [rad/s, body axes] every ``imu_period``: returns (n, 3) at probe
        times (k + 1) ``imu_period``. ``noise``: (rng, sigma) added to each sample (a test's stand-in for the IMU);
        ``on_sample(k, engine)`` after each sample (an oracle's look at the plant)."""
        s = self.spec
        if commands is None:
            commands = self.schedule(engine.setpoints()[self.joints].copy())
        # each command at the IMU sample nearest its time, after that sample: the engine's servo answers a command
        # step with a transient of a few ms, which a gyro sampled 1 ms after the step catches and one sampled at it
        # misses (a measured gyro's phase against the commands is its own; ``misfit``'s lag fit takes up the rest)
        grid = int(round(s.imu_period / engine.dt))
        at = [(max(0, grid * int(round(tau / s.imu_period))), np.asarray(q, dtype=float), float(mt))
              for tau, q, mt in sorted(commands, key=lambda c: c[0]) if tau < s.duration - 1e-9]
        n = int(round(s.duration / s.imu_period))
        out = np.empty((n, 3))
        i = step = 0
        for k in range(n):
            end = int(round((k + 1) * s.imu_period / engine.dt))
            while i < len(at) and at[i][0] < end:
                if at[i][0] > step:
                    engine.step(at[i][0] - step)
                    step = at[i][0]
                engine.set_joint_targets(at[i][1], move_time=at[i][2], joints=self.joints)
                i += 1
            engine.step(end - step)
            step = end
            gyro, _ = engine.imu()
            out[k] = gyro if noise is None else gyro + noise[0].normal(0.0, noise[1], 3)
            if on_sample is not None:
                on_sample(k, engine)
        return out

    def standing_engine(self, robot: Optional[LeggedRobot] = None, links: int = 3):
        """An engine of ``robot`` (default the model) standing in its stance (``stance`` if given, reached from
        the engine's standing pose in ``STANCE_MOVE_TIME``), leg broken to ``links`` links and settled for
        ``settle`` s: where the probe starts."""
        from jethexa_dynamics.sim.engine import Engine

        eng = Engine(robot if robot is not None else self.robot, gait=None, record_every=0, contact=self.contact)
        if self.stance is not None:
            eng.set_joint_targets(self.stance, move_time=STANCE_MOVE_TIME)
        eng.step(int(round(self.settle / eng.dt)))
        if links < 3:
            eng.set_breaks("%s:%d" % (self.leg, links))
        eng.step(int(round(self.settle / eng.dt)))
        return eng

    def predicted(self, links: int, commands=None) -> np.ndarray:
        """The model's gyro series for the probe with the leg at ``links`` links: on the probe's ``schedule``
        (computed once), or replaying ``commands`` (``run``'s: the commands the robot was actually sent, e.g. a
        starved gait controller's late ticks)."""
        if commands is not None:
            return self.run(self.standing_engine(links=links), commands=commands)
        if links not in self._predicted:
            self._predicted[links] = self.run(self.standing_engine(links=links))
        return self._predicted[links]

    def misfit(self, gyro: np.ndarray, links: int, max_lag: int = 0, commands=None,
               band: Optional[float] = None) -> float:
        """chi^2 (= -2 log-likelihood, the constants dropped) of the measured gyro series (n, 3) [rad/s, base_link
        axes; rows of NaN skipped] against the model's prediction with the leg at ``links`` links (``predicted``,
        ``commands`` as there): residuals over ``gyro_noise``, a constant bias per axis fitted, the best shift in
        [-max_lag, max_lag] samples (see ``likelihoods``). 0 when the model is the plant.

        ``band`` [Hz]: compare only below this frequency (the residual's Fourier coefficients in (0, band], each
        two values of white noise; rows of NaN bridged linearly first). Above it a gyro holds the servos' answer
        to each command step (at the 50 Hz command rate and its sidebands, near the 100 Hz IMU's Nyquist
        frequency), whose sampled size depends on the phase of the commands against the samples and on the servo
        (the engine's, MuJoCo's, a real one), not on the links; the probe's own motion is at 3-5 Hz. None: every
        sample as it is."""
        gyro = np.asarray(gyro, dtype=float)
        m = int(max_lag)
        if m < 0:
            raise ValueError("max_lag=%r: a number of samples >= 0" % (max_lag,))
        pred = self.predicted(int(links), commands)
        n = min(len(pred), len(gyro))
        if n == 0:
            raise ValueError("gyro: no samples to score")
        if n <= 2 * m:
            raise ValueError("gyro: %d samples, too few for max_lag=%d" % (n, m))
        g, ok = self._scored(gyro, m, n)
        if not ok.any():
            raise ValueError("gyro: no samples to score")
        if band is not None:
            g, ok = _bridged(g, ok), np.ones(len(g), dtype=bool)
            keep = self._band(len(g), band)
        best = math.inf
        for lag in range(-m, m + 1):      # measured sample k against predicted sample k - lag
            r = g[ok] - pred[m - lag:n - m - lag][ok]
            if band is None:
                r = r - r.mean(axis=0)          # the constant gyro bias per axis, fitted (profile likelihood)
                chi2 = float(np.sum((r / self.gyro_noise) ** 2))
            else:                               # Parseval: E|R_k|^2 = n sigma^2 for white noise (the bias is R_0)
                chi2 = float(2.0 * np.sum(np.abs(np.fft.rfft(r, axis=0)[keep]) ** 2) / (len(r) * self.gyro_noise ** 2))
            best = min(best, chi2)
        return best

    def _band(self, n: int, band: float) -> np.ndarray:
        """Which of the ``rfft`` coefficients of ``n`` samples are in (0, ``band``] Hz, below the Nyquist one."""
        if not (math.isfinite(band) and band > 0.0):
            raise ValueError("band=%r: a frequency > 0 Hz" % (band,))
        f = np.fft.rfftfreq(n, self.spec.imu_period)
        return (f > 0.0) & (f <= band) & (f < 0.5 / self.spec.imu_period)

    @staticmethod
    def _scored(gyro: np.ndarray, m: int, n: int) -> Tuple[np.ndarray, np.ndarray]:
        """The measured samples every shift is compared over (the first and last ``m`` of ``n`` left out) and
        which of them came (rows of NaN: samples that never came)."""
        g = gyro[m:n - m]
        return g, np.all(np.isfinite(g), axis=1)

    def scored_values(self, gyro: np.ndarray, max_lag: int = 0, band: Optional[float] = None) -> int:
        """How many values ``misfit`` sums (3 axes of each sample that came, inside the lag margins; with
        ``band``, 3 axes x 2 per Fourier coefficient kept): its chi^2 per value is about 1 when a count explains
        the gyro down to ``gyro_noise``."""
        gyro = np.asarray(gyro, dtype=float)
        n = min(int(round(self.spec.duration / self.spec.imu_period)), len(gyro))
        g, ok = self._scored(gyro, int(max_lag), n)
        if band is not None:
            return 6 * int(self._band(len(g), band).sum())
        return 3 * int(ok.sum())

    def likelihoods(self, gyro: np.ndarray, counts: Sequence[int] = (0, 1, 2), max_lag: int = 0) -> Dict[int, float]:
        """{link count: probability} of the measured gyro series (n, 3) [rad/s; rows of NaN skipped] under each
        count's prediction, equal priors, independent Gaussian noise of ``gyro_noise`` per sample and axis, and a
        constant bias per axis fitted (so a gyro bias changes nothing): each count's ``misfit``.

        ``max_lag`` [samples]: the measurement may lag (or lead) the probe's schedule by up to this many samples
        (in a node graph the commands reach the servos and the IMU's samples reach the scorer through a bus, a
        filter and queues): each count's best shift in [-max_lag, max_lag] is taken (profile likelihood), every
        shift compared over the same samples (the first and last ``max_lag`` of the probe left out, where its
        window keeps the leg nearly still). 0: the samples as they are (the offline loop)."""
        return self.posterior({int(c): self.misfit(gyro, int(c), max_lag) for c in counts})

    @staticmethod
    def posterior(misfits: Dict[int, float]) -> Dict[int, float]:
        """{link count: probability} from each count's ``misfit`` (chi^2), equal priors."""
        log = {c: -0.5 * v for c, v in misfits.items()}
        top = max(log.values())
        w = {c: math.exp(v - top) for c, v in log.items()}
        total = sum(w.values())
        return {c: v / total for c, v in w.items()}
