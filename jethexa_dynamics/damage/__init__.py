"""Damage: detection of lost links from servo health (:mod:`.detection`). No rclpy here."""
