"""The calibrated body: a ROS 2 parameters file with the main body's mass and CoM offset.

``jethexa-calibrate BAG`` writes it (the estimate of ``damage.body_load``); the predictor node reads it as its
parameters (``--params-file``, or the launch files' ``params_file``: ``body_mass``, ``body_com_offset``) and
``jethexa-validate --params FILE`` replays a bag on it::

    # jethexa-calibrate: ...
    /**:
      ros__parameters:
        body_mass: 1.6912                        # kg; 0 = the URDF's
        body_com_offset: [0.0102, -0.0005, 0.0]  # m, base_link, from the URDF's body CoM

``/**`` applies it to every node of the graph; the nodes that do not declare these parameters ignore them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, Tuple

import numpy as np

#: kg: the masses a body parameter may have (0 = the URDF's)
MASS_RANGE = (0.1, 20.0)
#: m: the largest CoM offset from the URDF's, per axis
MAX_COM_OFFSET = 0.1


@dataclass(frozen=True)
class BodyParams:
    """The main body's mass [kg] (0: the URDF's) and its CoM's offset from the URDF's [m, base_link]."""
    mass: float = 0.0
    com_offset: Tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self):
        check(self.mass, self.com_offset)

    @property
    def is_urdf(self) -> bool:
        return self.mass == 0.0 and not any(self.com_offset)

    def robot(self, base):
        """``base`` (a ``LeggedRobot``) with this body (``LeggedRobot.with_body``); ``base`` itself if unchanged."""
        if self.is_urdf:
            return base
        d = base.description
        return base.with_body(self.mass or d.body_mass, np.asarray(d.body_com, dtype=float) + self.com_offset)


def check(mass, com_offset, where: str = "") -> None:
    """ValueError naming the field and its allowed range."""
    lo, hi = MASS_RANGE
    if isinstance(mass, bool) or not isinstance(mass, (int, float)) or not (
            mass == 0.0 or (math.isfinite(mass) and lo <= mass <= hi)):
        raise ValueError("%sbody_mass=%r: 0 (the URDF's) or a mass in [%g, %g] kg" % (where, mass, lo, hi))
    off = list(com_offset) if isinstance(com_offset, (list, tuple, np.ndarray)) else None
    if off is None or len(off) != 3 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) <= MAX_COM_OFFSET
            for v in off):
        raise ValueError("%sbody_com_offset=%r: three lengths within +-%g m" % (where, com_offset, MAX_COM_OFFSET))


def set_body(robot, base, mass: float, com) -> None:
    """Give ``robot`` the main body ``mass`` [kg] with its CoM at ``com`` [m, base_link], in place, as
    ``base.with_body(mass, com)`` builds it (the inertia about the CoM scaled from ``base``'s by the mass): an engine
    (a predictor's) on ``robot`` takes the new body from its next step with its state kept (a body estimate that
    moves). ``robot`` must hold kernel data of its own (a ``with_body`` copy; the bundled robot is shared);
    ``robot.description`` keeps the body it was built with. ValueError, nothing changed, for a body outside
    ``check``'s ranges (``com`` as an offset from ``base``'s)."""
    from . import kernels
    from .robot import scaled_body_inertia

    d = base.description
    c = np.asarray(com, dtype=float).reshape(-1)
    check(float(mass), tuple(float(v) for v in c - np.asarray(d.body_com, dtype=float)) if c.shape == (3,)
          else com)
    if mass == 0.0:
        raise ValueError("body_mass=0.0: a mass in [%g, %g] kg (here 0 is no body)" % MASS_RANGE)
    if robot.kernel_data is base.kernel_data:
        raise ValueError("set_body: the robot shares its kernel data with the base (build it with with_body)")
    data = robot.kernel_data
    data[kernels.D_BODY_MASS][0] = mass
    data[kernels.D_BODY_COM][...] = c.reshape(data[kernels.D_BODY_COM].shape)
    data[kernels.D_BODY_IC][...] = scaled_body_inertia(d, mass).reshape(data[kernels.D_BODY_IC].shape)


def body_of(robot) -> Tuple[float, np.ndarray]:
    """The main body ``robot``'s kernels use now: (mass [kg], CoM [m, base_link])."""
    from . import kernels

    data = robot.kernel_data
    return float(data[kernels.D_BODY_MASS][0]), np.asarray(data[kernels.D_BODY_COM], dtype=float).reshape(3).copy()


def write(path, params: BodyParams, comment: Sequence[str] = (), extra: Sequence[Tuple[str, object]] = ()) -> Path:
    """Write ``params`` as a ROS 2 parameters file (for every node, ``/**``); ``comment`` lines go on top;
    ``extra`` (name, number or word) parameters go beside them (e.g. damage_monitor's servo law)."""
    path = Path(path)
    lines = ["# " + c for c in comment]
    # fixed-point: every value a YAML float (YAML 1.1 reads 2e-05 as a string) and one type per list (rcl's rule)
    lines += ["/**:", "  ros__parameters:", "    body_mass: %.6f" % params.mass,
              "    body_com_offset: [%s]" % ", ".join("%.6f" % float(v) for v in params.com_offset)]
    lines += ["    %s: %s" % (k, v if isinstance(v, str) else "%.6f" % float(v)) for k, v in extra]
    lines.append("")
    path.write_text("\n".join(lines))
    return path


def read(path) -> BodyParams:
    """The body parameters of a ROS 2 parameters file (the ``/**`` section, or the predictor's); ValueError
    naming the file and the field when it holds none or bad ones."""
    import yaml

    where = "%s: " % path
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError("%scannot read a parameters file (%s)" % (where, exc)) from None
    found = {}
    for node in ("/**", "predictor", "/predictor"):
        section = doc.get(node) if isinstance(doc, dict) else None
        values = section.get("ros__parameters") if isinstance(section, dict) else None
        if isinstance(values, dict):
            found.update({k: values[k] for k in ("body_mass", "body_com_offset") if k in values})
    if not found:
        raise ValueError("%sno body_mass or body_com_offset under /**: or predictor: ros__parameters" % where)
    mass, off = found.get("body_mass", 0.0), found.get("body_com_offset", [0.0, 0.0, 0.0])
    check(mass, off, where)
    return BodyParams(float(mass), tuple(float(v) for v in off))
