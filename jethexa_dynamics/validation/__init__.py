"""jethexa_dynamics.validation: rosbag2 I/O with ``rosbags`` and ``jethexa-validate`` (no rclpy here).

- :mod:`.bag_io`    ``BagWriter`` (Humble-readable metadata v8, MCAP or sqlite3) and the checked ``read_bag``;
- :mod:`.errors`    typed bad-bag errors (all ``ValueError``), exit status 2 in the CLI;
- :mod:`.replay`    replay a bag through a predictor (by name from :mod:`jethexa_dynamics.predictors.registry`);
- :mod:`.metrics`   orientation/position errors, drift per metre walked, per-morphology segments;
- :mod:`.report`, :mod:`.plots`, :mod:`.cli`   JSON/CSV/table, PNG plots, the command;
- :mod:`.bag_messages`, :mod:`.synthetic`, :mod:`.simbag`   bag messages without ROS, synthetic and simulated bags.

The live recorder for ROS nodes is :mod:`jethexa_dynamics.nodes.bag_recorder`. See docs/validation.md.
"""
