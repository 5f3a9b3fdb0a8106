"""Argument checking shared by the console scripts (no rclpy): bad input ends in ONE line, exit status 2.

Every check runs while the command line is parsed, i.e. before any work starts (no simulation, no node, no
bag is touched). :class:`ArgumentParser` prints ``<prog>: error: argument --opt: <why, allowed values>`` on
one line (argparse's default prints the usage block first) and exits with status 2. The ``type=`` factories
below raise :class:`argparse.ArgumentTypeError`, so argparse names the option in that line.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import sys
import tempfile
from typing import Callable, Optional

#: exit status of a bad command line (argparse's own)
EXIT_USAGE = 2


class ArgumentParser(argparse.ArgumentParser):
    """argparse with a one-line error: ``prog: error: argument --opt: why`` on stderr, exit status 2."""

    _width: Optional[int] = None

    def error(self, message: str):
        self.exit(EXIT_USAGE, "%s: error: %s\n" % (self.prog, " ".join(str(message).split())))

    def _get_formatter(self):
        # argparse builds a formatter for every add_argument (to check its metavar), and each one asks the
        # terminal for its size: a quarter of building jethexa-sim's parser. One query per parser, same width.
        if self._width is None:
            self._width = shutil.get_terminal_size().columns - 2
        return self.formatter_class(prog=self.prog, width=self._width)


def _interval(lo, hi, lo_open, hi_open, unit) -> str:
    a = "-inf" if lo is None else "%g" % lo
    b = "inf" if hi is None else "%g" % hi
    return "%s%s, %s%s%s" % ("(" if lo_open or lo is None else "[", a, b, ")" if hi_open or hi is None else "]",
                             (" " + unit) if unit else "")


def number(lo: Optional[float] = None, hi: Optional[float] = None, lo_open: bool = False, hi_open: bool = False,
           unit: str = "", integer: bool = False) -> Callable[[str], float]:
    """``type=`` for a finite number (an integer with ``integer``) in the stated interval."""
    rng = _interval(lo, hi, lo_open, hi_open, unit)
    kind = "an integer" if integer else "a number"

    def parse(text: str):
        try:
            v = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not %s (allowed: %s)" % (text, kind, rng)) from None
        ok = math.isfinite(v)
        ok = ok and (lo is None or (v > lo if lo_open else v >= lo))
        ok = ok and (hi is None or (v < hi if hi_open else v <= hi))
        if not ok:
            raise argparse.ArgumentTypeError("%s outside the allowed range %s" % (text, rng))
        return v

    parse.__name__ = "integer" if integer else "number"
    return parse


def param(spec) -> Callable[[str], object]:
    """``type=`` from a node parameter spec (``monitor.params.ParamSpec``): the same range as the node's."""
    def parse(text: str):
        value: object = text
        if spec.kind in ("double", "int"):
            try:
                value = int(text) if spec.kind == "int" else float(text)
            except ValueError:
                raise argparse.ArgumentTypeError("%r rejected (allowed: %s)" % (text, spec.range_text())) from None
        try:
            return spec.validate(value)
        except ValueError:
            raise argparse.ArgumentTypeError("%r rejected (allowed: %s)" % (text, spec.range_text())) from None

    parse.__name__ = spec.name
    return parse


def checked(parse: Callable[[str], object]) -> Callable[[str], str]:
    """``type=`` from a parser of the package that raises ``ValueError`` naming the problem (damage specs,
    fault specs): the text is kept, its error becomes the option's one line."""
    def check(text: str) -> str:
        try:
            parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text

    check.__name__ = getattr(parse, "__name__", "value")
    return check


def _nearest_existing(path: str) -> str:
    p = os.path.abspath(path)
    while not os.path.exists(p):
        p = os.path.dirname(p)
    return p


def _probe_writable(directory: str, target: str) -> None:
    """Create and remove a file in ``directory`` (``os.access`` says yes to root everywhere, even /proc)."""
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        raise argparse.ArgumentTypeError("cannot write %s: %s is not writable (%s)"
                                         % (target, directory, exc.strerror or exc)) from None


def _check_creatable(path: str) -> None:
    """``path`` (absent) could be created: its nearest existing ancestor is a writable directory."""
    base = _nearest_existing(path)
    if not os.path.isdir(base):
        raise argparse.ArgumentTypeError("%s: %s is not a directory" % (path, base))
    _probe_writable(base, path)


def output_dir(text: str) -> str:
    """``type=`` for an output directory: an existing writable directory, or one that can be created."""
    if not text:
        raise argparse.ArgumentTypeError("empty path (allowed: a writable directory)")
    if os.path.exists(text):
        if not os.path.isdir(text):
            raise argparse.ArgumentTypeError("%s exists and is not a directory (allowed: a writable directory)"
                                             % text)
        _probe_writable(text, text)
    else:
        _check_creatable(text)
    return text


def new_dir(text: str) -> str:
    """``type=`` for a directory that must not exist yet (rosbag2 never writes into an existing one)."""
    if not text:
        raise argparse.ArgumentTypeError("empty path (allowed: a new directory)")
    if os.path.lexists(text):
        raise argparse.ArgumentTypeError("%s already exists (allowed: a path that does not exist yet; "
                                         "choose another name or remove it)" % text)
    _check_creatable(text)
    return text


def output_file(text: str) -> str:
    """``type=`` for a file to write: not a directory, in a writable (or creatable) directory."""
    if not text or os.path.isdir(text):
        raise argparse.ArgumentTypeError("%r is not a file path (allowed: a file in a writable directory)" % text)
    parent = os.path.dirname(os.path.abspath(text))
    if os.path.isdir(parent):
        _probe_writable(parent, text)
    else:
        _check_creatable(parent)
    return text


def existing_file(text: str) -> str:
    """``type=`` for an input file that must exist."""
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError("%s does not exist (allowed: an existing, readable file)" % text)
    return text


def existing_path(text: str) -> str:
    """``type=`` for an input file or directory that must exist."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError("%s: no such file or directory (allowed: an existing file or directory)" % text)
    return text


_TOPIC = re.compile(r"^(~/|/)?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$")


def topic_name(text: str) -> str:
    """``type=`` for a ROS 2 topic name (``imu/data``, ``/mocap/pose``; letters, digits, ``_`` and ``/``)."""
    if not _TOPIC.match(text):
        raise argparse.ArgumentTypeError("%r is not a ROS topic name (allowed: tokens of letters, digits and _ "
                                         "not starting with a digit, separated by /)" % text)
    return text


def parse_and_run(prog: str, parser: argparse.ArgumentParser, run: Callable, argv, errors) -> tuple:
    """``parser.parse_args(argv)``, then ``run(args)``: (exit status, args, run's result). A bad option: argparse's
    one line (printed) and its status; an error of ``errors`` raised by ``run``: one line ``prog: error: ...`` on
    stderr and ``EXIT_USAGE``, with args and None. A real bug still shows its traceback."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a bad option (one line already printed) or --help
        return exc.code, None, None
    try:
        return 0, args, run(args)
    except errors as err:
        print("%s: error: %s" % (prog, str(err).replace("\n", "\n  ")), file=sys.stderr)
        return EXIT_USAGE, args, None

