"""Damage: what changed on the robot, and what each verdict rests on (no rclpy here).

- :mod:`.detection` -- lost links from servo health (silent servos, confirmed by a witnessed read) and from
  joints left out of ``joint_states``; the servo-health wire format.
- :mod:`.identification` -- which morphology explains the body's motion best (a break the bus cannot see),
  the model bank of paper 003 (``DamageIdentifier``: streams, windows, bank episodes, decisions); its tuning in
  :mod:`.identifier_config` (``IdentifierConfig``), its hypotheses and their scoring in :mod:`.hypotheses`, its
  sample checks and the IMU's attitude in :mod:`.identifier_inputs`; ``jethexa-identify`` (:mod:`.identify_cli`)
  replays a bag through it.
- :mod:`.probe`, :mod:`.active_probe` -- an active probe of a leg whose link count the walk left ambiguous:
  the robot stands on its other five feet, moves the leg and scores the counts by the body's gyro reaction.
- :mod:`.evidence` -- what a morphology change rests on (servo, model, override; stall, joint_states) and when
  the gait may stop supporting on a leg.

The identifier's test plant (an independent simulated robot's streams) is :mod:`jethexa_dynamics.sim.streams`.
"""
