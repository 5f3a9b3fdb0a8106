"""Simulation (no rclpy): the paper's engine and what runs on it.

- :mod:`.engine` -- fixed-step gait -> IK -> PID -> contact -> dynamics -> SE(3), compiled; :mod:`.contact` --
  foot-ground contact (paper Table III).
- :mod:`.trajectory` -- a run's recorded rows (``Trajectory``: layout, ZYX Euler angles, CSV text);
  :mod:`.csv_writer` -- trajectory.csv written by a worker thread while the engine steps; :mod:`.csv_format` --
  the ``%.9g`` CSV text, compiled.
- :mod:`.cli` -- ``jethexa-sim`` (figures via :mod:`.plots`); :mod:`.recovery` -- closed-loop damage-recovery
  runs; :mod:`.closed_loop` -- the gait controller's logic driving the engine (one loop for bag synthesis,
  recovery runs and the identifier's plant); :mod:`.mjcf` -- the same robot for MuJoCo (benchmark peer).
- :mod:`.streams` -- the simulated robot's sensor streams (commands, joint states, IMU) from an independent plant
  walking with silent breaks, sensor noise, gyro bias, a body-mass error, floor friction and a slope, and their
  replay into an identifier or a predictor (tests and benchmarks).
"""
