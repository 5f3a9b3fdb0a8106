"""Fit the models' foot contact to the plant with a probe of a healthy leg (issue 23, point 1).

The active probe's 1-vs-0 link verdict rests on the body's yaw reaction, which the feet's tangential contact sets
(the engine's viscous damper ``d_t``, ``sim.contact``). The engine has no tangential stiffness, so the fit is
one-dimensional: the ``d_t`` [N s/m] whose model best predicts the gyro while a *healthy* leg (known morphology),
its femur raised ``lift`` rad so the foot is in the air, runs the probe's motion (``ProbeSpec``) on the other
five feet. Scored with ``LinkProbe.misfit`` (the same Gaussian gyro likelihood, a constant bias per axis fitted):
a log-spaced grid over ``d_t_range``, then a golden-section search in the grid's bracket.

Measured (``benchmarks/results/identify_probe_mujoco_calibrated.md``): on the engine it recovers the plant's
own d_t (48.7-50.8 for 50, each leg lifted in turn; 35 and 80 within 5 % in the tests); on MuJoCo (``sim.mjcf``:
stiff soft-constraint contact, position servos without rate feed-forward) every leg's healthy probe fits
d_t = 55-59 N s/m with a misfit of chi^2 5200-8200 left (a damper cannot reproduce MuJoCo's whole-leg reaction),
while the 1-link breaks are best fitted at d_t = 40: the fit does not carry over from a whole leg's reaction to
a 20 g coxa's, and scoring with it the MuJoCo loop gets 9/18 exact (52/90 over 5 seeds) against 14/18 (75/90)
with the default (the lag below fitted too: d_t 75-77, 11/18 against 17/18 without the fit). So
``ActiveProbe`` does not use it unless given (``contact``, default None). What does help on MuJoCo is fitting
the gyro's lag (``ProbeConfig.max_lag``; ``probe`` module docstring).

Example::

    cal = ContactCalibration(robot, "LM", stance=stance)      # stance: the joint set-points held [rad]
    gyro = cal.run(plant)                                    # plant standing in cal.stance (the leg lifted)
    fit = cal.fit(gyro)                                      # fit.d_t [N s/m], fit.contact (a ContactModel)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.sim.contact import ContactModel
from jethexa_dynamics.sim.engine import SimulationError

from .probe import LinkProbe, ProbeSpec

__all__ = ["ContactCalibration", "ContactFit", "LIFT"]

#: rad the healthy leg's femur is raised for the calibration: the foot ~7 cm up in the gait's stance, still
#: ~3 cm up at the probe's lowest femur angle (-0.28 rad)
LIFT = 0.6
#: golden-section steps after the grid: the bracket (two grid steps) shrinks by 0.618 each, to ~1 %
GOLDEN_STEPS = 10


@dataclass(frozen=True)
class ContactFit:
    """The fit: ``d_t`` [N s/m] the best tangential damper, ``chi2`` its misfit (``LinkProbe.misfit``, the
    healthy leg's probe), ``chi2_base`` the misfit of the contact the fit started from (``base``), ``grid``
    ((d_t, chi2), ...) every evaluated point in order, ``contact`` the fitted ``ContactModel``."""
    d_t: float
    chi2: float
    chi2_base: float
    grid: Tuple[Tuple[float, float], ...]
    contact: ContactModel


class ContactCalibration:
    """The calibration probe of healthy leg ``leg`` of ``robot`` (default the JetHexa) and the fit of the models'
    tangential damper to its gyro.

    ``stance`` the joint set-points [rad, ``robot.joint_names`` order] the robot stands in (default the engine's
    standing pose); the calibration stands in it with the leg's femur raised ``lift`` [rad, 0.2-1.0]
    (``self.stance``); ``spec``, ``gyro_noise`` [rad/s] and ``settle`` [s] as ``LinkProbe``'s; ``base`` the
    contact whose other parameters (normal spring and damper, friction, ground) the fitted one keeps (default
    Table III); ``d_t_range`` [N s/m] (lo, hi) the search interval within [1, 1e4] (a model that diverges at the
    engine's 1 ms step, d_t ~300 and up, scores chi^2 = inf); ``points`` the grid's size
    [5, 50]. Bad input: ValueError naming the field and its range."""

    def __init__(self, robot: Optional[LeggedRobot] = None, leg: str = "LM", stance: Optional[Sequence[float]] = None,
                 spec: ProbeSpec = ProbeSpec(), gyro_noise: float = 0.005, settle: float = 1.0, lift: float = LIFT,
                 base: Optional[ContactModel] = None, d_t_range: Tuple[float, float] = (10.0, 200.0),
                 points: int = 9):
        self.robot = robot if robot is not None else LeggedRobot.jethexa()
        if not (isinstance(lift, (int, float)) and math.isfinite(lift) and 0.2 <= lift <= 1.0):
            raise ValueError("lift=%r outside the allowed range [0.2, 1] rad" % (lift,))
        lo, hi = (float(x) for x in d_t_range)
        if not (math.isfinite(lo) and math.isfinite(hi) and 1.0 <= lo < hi <= 1e4):
            raise ValueError("d_t_range=%r: lo < hi within [1, 1e4] N s/m" % (d_t_range,))
        if not (isinstance(points, int) and 5 <= points <= 50):
            raise ValueError("points=%r outside the allowed range [5, 50]" % (points,))
        if base is not None and not isinstance(base, ContactModel):
            raise ValueError("base=%r: a ContactModel" % (base,))
        self.base = base if base is not None else ContactModel()
        self.leg, self.spec, self.gyro_noise, self.settle = leg, spec, gyro_noise, settle
        self.d_t_range, self.points = (lo, hi), points
        # the healthy model's probe (validates leg, noise, settle, stance, the rates) gives the joint layout
        probe = LinkProbe(self.robot, leg, spec=spec, gyro_noise=gyro_noise, settle=settle, stance=stance)
        q = (probe.stance if probe.stance is not None else
             probe.standing_engine().setpoints()).copy()
        q[probe.joints[1]] += lift              # femur up: the foot leaves the ground, the leg swings in the air
        self.stance = q

    def probe(self, d_t: Optional[float] = None) -> LinkProbe:
        """The calibration's ``LinkProbe`` (the leg lifted, healthy models) with the models' tangential damper
        ``d_t`` [N s/m] (default ``base``'s)."""
        b = self.base
        contact = b if d_t is None else ContactModel(k_z=b.k_z, d_z=b.d_z, d_t=d_t, friction=b.friction, mu=b.mu,
                                                      ground_z=b.ground_z)
        return LinkProbe(self.robot, self.leg, spec=self.spec, gyro_noise=self.gyro_noise, settle=self.settle,
                         stance=self.stance, contact=contact)

    def run(self, plant, noise: Optional[Tuple[np.random.Generator, float]] = None) -> np.ndarray:
        """The calibration probe on ``plant`` (healthy, standing settled in ``self.stance``; anything
        ``LinkProbe.run`` drives): the gyro (n, 3) [rad/s, base_link axes]."""
        return self.probe().run(plant, noise=noise)

    def fit(self, gyro: np.ndarray, max_lag: int = 0) -> ContactFit:
        """The d_t [N s/m] whose healthy model best predicts ``gyro`` (n, 3) [rad/s] (least ``misfit``, the gyro's
        shift fitted within +-``max_lag`` samples as ``LinkProbe.likelihoods`` does): the grid in log d_t, then
        golden-section steps in the bracket around its best point."""
        seen = {}

        def chi2(log_d):
            d = float(math.exp(log_d))
            if d not in seen:
                try:
                    seen[d] = self.probe(d).misfit(gyro, 3, max_lag)
                except SimulationError:         # a damper too stiff for the engine's 1 ms step: not the plant's
                    seen[d] = math.inf
            return seen[d]

        lo, hi = (math.log(x) for x in self.d_t_range)
        xs = np.linspace(lo, hi, self.points)
        ys = [chi2(x) for x in xs]
        k = int(np.argmin(ys))
        a, b = xs[max(k - 1, 0)], xs[min(k + 1, len(xs) - 1)]
        g = (math.sqrt(5.0) - 1.0) / 2.0
        c, d = b - g * (b - a), a + g * (b - a)
        for _ in range(GOLDEN_STEPS):
            if chi2(c) < chi2(d):
                b, d = d, c
                c = b - g * (b - a)
            else:
                a, c = c, d
                d = a + g * (b - a)
        best = min(seen, key=seen.get)
        base = self.probe().misfit(gyro, 3, max_lag) if self.base.d_t not in seen else seen[self.base.d_t]
        return ContactFit(d_t=best, chi2=seen[best], chi2_base=base, grid=tuple(seen.items()),
                          contact=self.probe(best).contact)
