"""Typed errors for bag validation.

Every problem with the *input* (the bag, the window, the options) raises a subclass of
:class:`BagError` (itself a ``ValueError``, see docs/development.md) whose message is meant for the user;
``jethexa-validate`` prints it and exits with :data:`EXIT_BAD_INPUT` instead of a traceback.
"""
from __future__ import annotations

#: exit status of ``jethexa-validate`` for bad bags / bad options (argparse uses 2 as well)
EXIT_BAD_INPUT = 2


class BagError(ValueError):
    """The bag (or the requested part of it) cannot be validated."""


class NotABagError(BagError):
    """The path is not a rosbag2 directory (missing, a plain file, or no metadata.yaml)."""


class CorruptBagError(BagError):
    """The bag exists but cannot be read (truncated storage file, broken metadata, bad CDR)."""


class MissingTopicsError(BagError):
    """Required topics are absent; ``missing`` names them, ``available`` lists what the bag has."""

    def __init__(self, missing, available):
        self.missing = list(missing)
        self.available = dict(available)
        have = "\n".join("  {}  [{}]".format(t, ty) for t, ty in sorted(self.available.items()))
        super().__init__(
            "missing required topic(s): {}\nthe bag has:\n{}".format(
                ", ".join(self.missing), have or "  (no topics)"))


class UnknownMessageTypeError(BagError):
    """A topic we need carries a message type we cannot interpret."""


class TimeJumpError(BagError):
    """Time stamps go backwards or jump forward by more than the allowed gap."""


class EmptyWindowError(BagError):
    """The requested time window holds no (or too few) messages of a required topic."""
