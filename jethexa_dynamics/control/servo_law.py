"""The servo's law as the robot's estimators read it (light: no numba, for the nodes' parameter specs too).

A position-controlled servo holds its set-point ``s`` against the load with

    tau = kp (s - q) + ki int(s - q) dt + D,     D = kd (sdot - qdot)  ('error')   or   D = -kd qdot  ('rate')

The paper's PID (Farghdani et al., Sec. VI-A; ``control.pid``, the emulated servo) puts kd on the tracking error's
rate; a position actuator (MuJoCo's ``position`` with ``kv``, many hobby servos) damps the joint's own rate. Which
one a real Hiwonder servo runs is not published: it is found once against a known body
(``damage.body_load``, docs/identification.md).
"""
from __future__ import annotations

#: (kp [N m/rad], ki [N m/(rad s)], kd [N m s/rad]) of Farghdani et al. Sec. VI-A
PAPER_GAINS = (50.0, 10.0, 1.0)
#: where kd acts: 'error' (on the tracking error's rate) or 'rate' (on the joint's own rate)
SERVO_DAMPING = ("error", "rate")
#: the gains a user may give: (name, lowest, highest, unit) for kp, ki, kd (damage_monitor's ``body_servo_*``
#: parameters, jethexa-calibrate/-identify's ``--servo-*`` options)
SERVO_GAINS = (("kp", 0.1, 1000.0, "N m/rad"), ("ki", 0.0, 1000.0, "N m/(rad s)"), ("kd", 0.0, 100.0, "N m s/rad"))
