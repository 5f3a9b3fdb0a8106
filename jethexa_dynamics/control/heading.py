"""Heading and speed hold for the gait controller (pure core): follow ``cmd_vel`` on the IMU and odometry.

Inputs each control tick (SI, world z up): the command (vx, vy, wz) in base_link (m/s, m/s, rad/s); the
gyro's yaw rate ``gyro_z`` (rad/s, base_link z, = world yaw rate on a level body); optionally the filter's
yaw ``yaw`` (rad; without it the hold integrates the gyro); optionally the odometry position ``odom_xy``
(m, world, from the predictor). Output: the command to walk with, (vx', vy, wz'):

    psi_ref  += wz dt                                   (the heading the user asked for)
    e_lat     = lateral offset from the straight line (m, left +), only while wz = 0 and odometry is given
    e_psi     = wrap(psi_ref - k_lat e_lat - psi)       (line following: steer back toward the line)
    wz'       = wz + k_yaw e_psi + k_i int(e_psi) - k_rate (gyro_z - wz),   |wz' - wz| <= max_yaw_correction
    vy'       = vy - k_vy e_lat,   |vy' - vy| <= max_vy_correction   (side-step back onto the line)
    vx'       = vx (1 + clip(k_speed int((vx - v_odom)/vx), -max_speed_change, max_speed_change))

The correction is slew-limited to ``max_yaw_accel`` (a step in the trim would move every stance foot's
target at once: the joint targets must stay continuous). The correction ranges ``max_yaw_correction`` /
``max_vy_correction`` match the re-planner's ``yaw_allowance`` / ``vy_allowance``: the static margin of a
re-planned gait is verified over them. Gains are parameters with ranges (``PARAMS``); ``enabled=False``
passes the command through. The IMU is stale when no gyro sample came for ``imu_timeout`` s: ``update``
then passes the command through and ``imu_stale`` is True (the caller holds a safe stance).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np

from jethexa_dynamics.model.se3 import wrap_angle

# name: (default, low, high, unit)
PARAMS = {
    "k_yaw": (3.0, 0.0, 10.0, "1/s"),
    "k_i": (0.3, 0.0, 5.0, "1/s^2"),
    "k_rate": (0.0, 0.0, 2.0, ""),
    "max_yaw_accel": (0.5, 0.01, 20.0, "rad/s^2"),
    "k_lat": (2.0, 0.0, 50.0, "rad/m"),
    "k_vy": (0.5, 0.0, 10.0, "1/s"),
    "max_vy_correction": (0.01, 0.0, 0.05, "m/s"),
    "k_speed": (0.0, 0.0, 5.0, "1/s"),
    "max_yaw_correction": (0.1, 0.0, 1.0, "rad/s"),
    "max_speed_change": (0.3, 0.0, 1.0, ""),
    "imu_timeout": (0.5, 0.01, 10.0, "s"),
}


class HeadingHold:
    """Closed-loop trim of the body-velocity command (see the module docstring for the law and units)."""

    def __init__(self, enabled: bool = True, **gains):
        unknown = set(gains) - set(PARAMS)
        if unknown:
            raise ValueError("heading hold: unknown parameters %s; allowed %s" % (sorted(unknown), sorted(PARAMS)))
        self.enabled = bool(enabled)
        for name, (default, lo, hi, unit) in PARAMS.items():
            v = gains.get(name, default)
            try:
                v = float(v)
            except (TypeError, ValueError):
                v = float("nan")
            if not (math.isfinite(v) and lo <= v <= hi):
                raise ValueError("heading hold: %s=%r outside the allowed range [%g, %g] %s"
                                 % (name, gains.get(name), lo, hi, unit))
            setattr(self, name, v)
        self.last_imu_t = None   # time of the last gyro sample (s); kept by reset: the IMU did not go silent
        self.reset()

    def reset(self) -> None:
        """Forget the reference heading, the line and the integrators (new segment, stance, morphology); the
        IMU's freshness is kept (a morphology change must not read as a silent IMU)."""
        self.psi = None          # estimated yaw (rad)
        self.psi_ref = None      # reference yaw (rad)
        self.line = None         # (origin xy, direction unit xy) of the straight path
        self.i_psi = 0.0
        self.i_speed = 0.0
        self.last_odom = None    # (t, xy)
        self.e_psi = 0.0
        self.e_lat = 0.0
        self.corr = 0.0          # applied yaw-rate correction (rad/s), slew-limited
        self.corr_vy = 0.0       # applied lateral-speed correction (m/s), slew-limited

    def new_gait(self) -> None:
        """A gait switch (morphology change): clear the integrators and the applied corrections (they belong
        to the old gait) but keep the reference heading and the line, so the robot is steered back to where
        the user was walking before the damage (the yaw picked up until the damage was noticed included)."""
        self.i_psi = 0.0
        self.i_speed = 0.0
        self.corr = 0.0
        self.corr_vy = 0.0

    def imu_stale(self, t: float) -> bool:
        """True when no gyro sample came for ``imu_timeout`` s (or none yet)."""
        return self.last_imu_t is None or t - self.last_imu_t > self.imu_timeout

    def update(self, command: Sequence[float], t: float, dt: float, gyro_z: Optional[float] = None,
               yaw: Optional[float] = None, odom_xy: Optional[Sequence[float]] = None) -> Tuple[float, float, float]:
        """Corrected (vx, vy, wz) for this tick at time t (s), tick length dt (s); sensor values None when no
        new sample came this tick."""
        vx, vy, wz = (float(c) for c in command)
        if not self.enabled:
            return vx, vy, wz
        if gyro_z is not None and math.isfinite(gyro_z):
            self.last_imu_t = t
        if self.imu_stale(t):
            return vx, vy, wz
        g = float(gyro_z) if gyro_z is not None and math.isfinite(gyro_z) else wz
        if yaw is not None and math.isfinite(yaw):
            self.psi = float(yaw)
        else:
            self.psi = (0.0 if self.psi is None else self.psi) + g * dt
        if self.psi_ref is None:
            self.psi_ref = self.psi
        self.psi_ref = wrap_angle(self.psi_ref + wz * dt)
        # line following while commanded straight
        self.e_lat = 0.0
        v_odom = None
        if odom_xy is not None:
            p = np.asarray(odom_xy, dtype=float)[:2]
            if self.last_odom is not None and t > self.last_odom[0]:
                d = (p - self.last_odom[1]) / (t - self.last_odom[0])
                v_odom = float(d @ np.array([math.cos(self.psi), math.sin(self.psi)]))
            self.last_odom = (t, p)
            if wz == 0.0 and (vx != 0.0 or vy != 0.0):
                heading = self.psi_ref + math.atan2(vy, vx)
                u = np.array([math.cos(heading), math.sin(heading)])
                if self.line is None:
                    self.line = (p.copy(), u)
                o, u = self.line
                r = p - o
                self.e_lat = float(u[0] * r[1] - u[1] * r[0])
            else:
                self.line = None
        e = wrap_angle(self.psi_ref - self.k_lat * self.e_lat - self.psi)
        self.e_psi = e
        lim = self.max_yaw_correction
        if self.k_i > 0.0:
            self.i_psi = min(max(self.i_psi + e * dt, -lim / self.k_i), lim / self.k_i)
        corr = self.k_yaw * e + self.k_i * self.i_psi - self.k_rate * (g - wz)
        corr = min(max(corr, -lim), lim)
        step = self.max_yaw_accel * dt
        self.corr = min(max(corr, self.corr - step), self.corr + step)
        wz_out = wz + self.corr
        mv = self.max_vy_correction
        cvy = min(max(-self.k_vy * self.e_lat, -mv), mv)
        stepv = 0.1 * dt     # m/s^2: a gentle side-step ramp
        self.corr_vy = min(max(cvy, self.corr_vy - stepv), self.corr_vy + stepv)
        vy_out = vy + self.corr_vy
        vx_out = vx
        if self.k_speed > 0.0 and v_odom is not None and abs(vx) > 1e-6:
            m = self.max_speed_change
            self.i_speed = min(max(self.i_speed + self.k_speed * (vx - v_odom) / vx * dt, -m), m)
            vx_out = vx * (1.0 + self.i_speed)
        return vx_out, vy_out, wz_out
