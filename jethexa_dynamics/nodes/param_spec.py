"""Declarative parameter specifications and their validation (no rclpy).

A :class:`ParamSpec` names a node parameter, its type, default, description and allowed range.
``nodes/_common.py`` turns specs into declared rclpy parameters (with descriptors and ranges) and uses
:meth:`ParamSpec.validate` to accept or reject ``ros2 param set`` changes; the launch tests use the same
specs to check that every ``config/*.yaml`` only names declared parameters with valid values.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

import yaml

from .messages import InputError

KINDS = ("bool", "int", "double", "string", "int_array", "double_array", "string_array")
#: each kind in words, as a range text begins
KIND_TEXT = {"bool": "true or false", "int": "integer", "double": "number", "string": "string",
             "int_array": "integer list", "double_array": "number list", "string_array": "string list"}


class ParamError(InputError):
    """A parameter value outside its declared type or range (message names the parameter and range)."""


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "%g" % v
    return repr(v)


@dataclass(frozen=True)
class ParamSpec:
    """One node parameter.

    ``lo``/``hi`` bound numbers (inclusive; for arrays every element), ``choices`` restricts strings (and
    every element of a string array), ``length`` fixes an array's length (an int or a tuple of allowed
    lengths), ``pattern`` is a regular expression a string (every element of a string array) must match in full
    (``pattern_text`` says what it allows, in words), ``read_only`` parameters can only be set at start-up
    (launch/YAML).
    """

    name: str
    kind: str
    default: Any
    description: str
    lo: Optional[float] = None
    hi: Optional[float] = None
    choices: Optional[Tuple[Any, ...]] = None
    length: Any = None
    unit: str = ""
    read_only: bool = False
    pattern: Optional[str] = None
    pattern_text: str = ""
    #: a parser of the package that raises ``ValueError`` naming what is wrong (e.g. a joint map's text): the
    #: value must parse; ``pattern_text`` says what it allows
    check: Optional[Any] = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError("ParamSpec %s: kind must be one of %s" % (self.name, KINDS))
        self.validate(self.default)  # a spec's own default must be valid

    # ------------------------------------------------------------------ describing
    def range_text(self) -> str:
        """Human-readable allowed range, e.g. ``float in [1, 100] Hz``."""
        parts = [KIND_TEXT[self.kind]]
        if self.lo is not None or self.hi is not None:
            lo = "-inf" if self.lo is None else _fmt(self.lo)
            hi = "inf" if self.hi is None else _fmt(self.hi)
            parts.append("in [%s, %s]%s" % (lo, hi, (" " + self.unit) if self.unit else ""))
        elif self.unit:
            parts.append("(%s)" % self.unit)
        if self.choices:
            parts.append("one of {%s}" % ", ".join(str(c) for c in self.choices))
        if self.pattern is not None or self.check is not None:
            parts.append(self.pattern_text or "matching %s" % self.pattern)
        if self.length is not None:
            lens = self.length if isinstance(self.length, tuple) else (self.length,)
            parts.append("of length %s" % " or ".join(str(n) for n in lens))
        return " ".join(parts)

    def full_description(self) -> str:
        return "%s [%s]%s" % (self.description, self.range_text(), " (read-only)" if self.read_only else "")

    # ------------------------------------------------------------------ validating
    def _fail(self, value: Any, why: str) -> ParamError:
        return ParamError("parameter '%s' = %s rejected: %s (allowed: %s)"
                          % (self.name, _short(value), why, self.range_text()))

    def _scalar(self, v: Any, kind: str) -> Any:
        if kind == "bool":
            if not isinstance(v, bool):
                raise self._fail(v, "not a boolean")
            return v
        if kind == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                raise self._fail(v, "not an integer")
            v = self._bounded(int(v))
            if self.choices and v not in self.choices:
                raise self._fail(v, "not an allowed value")
            return v
        if kind == "double":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self._fail(v, "not a number")
            v = float(v)
            if not math.isfinite(v):
                raise self._fail(v, "not finite")
            return self._bounded(v)
        if not isinstance(v, str):
            raise self._fail(v, "not a string")
        if self.choices and v not in self.choices:
            raise self._fail(v, "unknown value")
        if self.pattern is not None and re.fullmatch(self.pattern, v) is None:
            raise self._fail(v, "malformed")
        if self.check is not None:
            try:
                self.check(v)
            except ValueError as exc:
                raise self._fail(v, str(exc)) from None
        return v

    def _bounded(self, v):
        if self.lo is not None and v < self.lo:
            raise self._fail(v, "below %s" % _fmt(self.lo))
        if self.hi is not None and v > self.hi:
            raise self._fail(v, "above %s" % _fmt(self.hi))
        return v

    def validate(self, value: Any) -> Any:
        """Return the normalised value or raise :class:`ParamError` naming the parameter and range."""
        if not self.kind.endswith("_array"):
            return self._scalar(value, self.kind)
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise self._fail(value, "not a list")
        items = list(value)
        if self.length is not None:
            lens = self.length if isinstance(self.length, tuple) else (self.length,)
            if len(items) not in lens:
                raise self._fail(value, "wrong length %d" % len(items))
        elem = self.kind[: -len("_array")]
        return [self._scalar(v, elem) for v in items]


def _short(value: Any, limit: int = 60) -> str:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        text = repr(value)
    else:
        text = repr(list(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ParamSet:
    """An ordered collection of :class:`ParamSpec` for one node."""

    def __init__(self, node_name: str, specs: Iterable[ParamSpec]):
        self.node_name = node_name
        self.specs: Dict[str, ParamSpec] = {}
        for s in specs:
            if s.name in self.specs:
                raise ValueError("duplicate parameter %s in %s" % (s.name, node_name))
            self.specs[s.name] = s

    def __iter__(self):
        return iter(self.specs.values())

    def __contains__(self, name: str) -> bool:
        return name in self.specs

    def __getitem__(self, name: str) -> ParamSpec:
        return self.specs[name]

    def defaults(self) -> Dict[str, Any]:
        return {n: s.default for n, s in self.specs.items()}

    def validate(self, values: Mapping[str, Any]) -> Dict[str, Any]:
        """Validate a mapping of parameter values; unknown names are rejected."""
        out = {}
        for name, value in values.items():
            if name not in self.specs:
                raise ParamError("parameter '%s' is not declared by node %s (known: %s)"
                                 % (name, self.node_name, ", ".join(sorted(self.specs))))
            out[name] = self.specs[name].validate(value)
        return out


def load_node_yaml(path: str, node_name: str) -> Dict[str, Any]:
    """Read ``<node_name>: ros__parameters: {...}`` from a ROS 2 parameter file (``/**`` also accepted)."""
    with open(path, "r", encoding="utf-8") as f:
        doc = yaml.safe_load(f) or {}
    for key in (node_name, "/" + node_name, "/**"):
        section = doc.get(key)
        if isinstance(section, dict) and isinstance(section.get("ros__parameters"), dict):
            return dict(section["ros__parameters"])
    raise ParamError("%s: no '%s: ros__parameters:' section" % (path, node_name))


def package_share_dir(package: str = "jethexa_dynamics") -> Optional[str]:
    """The colcon-installed share directory of ``package``; None without an ament index (a pip install or the
    source tree) or when the package is not registered there."""
    try:
        from ament_index_python.packages import get_package_share_directory  # type: ignore
    except ImportError:
        return None
    try:
        return get_package_share_directory(package)
    except (LookupError, ValueError, OSError):
        # PackageNotFoundError is a KeyError; ValueError: not a package name; OSError: no AMENT_PREFIX_PATH
        return None


def config_dir() -> str:
    """Directory of the packaged ``config/*.yaml`` (works from a source tree and a pip/colcon install)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "..", "data", "config"), os.path.join(here, "..", "..", "config")]
    share = package_share_dir()   # colcon install: share/jethexa_dynamics/config
    if share is not None:
        candidates.append(os.path.join(share, "config"))
    for c in candidates:
        if os.path.isdir(c):
            return os.path.normpath(c)
    return os.path.normpath(candidates[0])

