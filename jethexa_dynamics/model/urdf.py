"""A small URDF reader (no urdfdom): links with inertials, joints with origins, axes and limits.

Meshes, visuals and collisions are ignored. Errors name the element and attribute at fault.
"""
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
from transforms3d.euler import euler2mat


@dataclass
class Inertial:
    """Mass (kg), CoM origin (m, rad rpy) in the link frame, inertia tensor (kg m^2) about the CoM in the
    CoM frame's axes."""
    mass: float
    origin_xyz: np.ndarray
    origin_rpy: np.ndarray
    inertia: np.ndarray  # 3x3


@dataclass
class Link:
    name: str
    inertial: Optional[Inertial] = None


@dataclass
class Joint:
    name: str
    type: str
    parent: str
    child: str
    origin_xyz: np.ndarray = field(default_factory=lambda: np.zeros(3))
    origin_rpy: np.ndarray = field(default_factory=lambda: np.zeros(3))
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    lower: float = -math.inf
    upper: float = math.inf
    effort: float = math.inf
    velocity: float = math.inf


@dataclass
class UrdfModel:
    name: str
    links: Dict[str, Link]
    joints: List[Joint]

    def joint(self, name):
        for j in self.joints:
            if j.name == name:
                return j
        raise KeyError(name)


def origin_to_matrix(xyz, rpy):
    """4x4 transform of a URDF ``<origin xyz rpy>`` (rpy = fixed-axis roll, pitch, yaw: R = Rz Ry Rx)."""
    g = np.eye(4)
    g[:3, :3] = euler2mat(rpy[0], rpy[1], rpy[2], "sxyz")
    g[:3, 3] = xyz
    return g


def _float_list(text, n, what):
    try:
        vals = [float(t) for t in text.split()]
    except ValueError:
        raise ValueError(f"{what}: expected {n} numbers, got {text!r}") from None
    if len(vals) != n or not all(map(math.isfinite, vals)):
        raise ValueError(f"{what}: expected {n} finite numbers, got {text!r}")
    return vals


def _floats(text, n, what):
    return np.array(_float_list(text, n, what))


def _origin(el, what):
    o = el.find("origin")
    if o is None:
        return np.zeros(3), np.zeros(3)
    return (_floats(o.get("xyz", "0 0 0"), 3, what + " origin xyz"),
            _floats(o.get("rpy", "0 0 0"), 3, what + " origin rpy"))


def _attr_float(el, name, default, what):
    text = el.get(name)
    if text is None:
        return default
    return _float_list(text, 1, f"{what} {name}")[0]


def parse_urdf_string(text):
    """Parse URDF XML text into a :class:`UrdfModel`."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ValueError(f"URDF is not well-formed XML: {e}") from None
    if root.tag != "robot":
        raise ValueError(f"URDF root element must be <robot>, got <{root.tag}>")
    links = {}
    for el in root.findall("link"):
        name = el.get("name")
        if not name:
            raise ValueError("URDF <link> without a name")
        inertial = None
        ie = el.find("inertial")
        if ie is not None:
            what = f"link {name!r} inertial"
            m_el = ie.find("mass")
            mass = _attr_float(m_el, "value", 0.0, what + " mass") if m_el is not None else 0.0
            if mass < 0:
                raise ValueError(f"{what}: mass must be >= 0, got {mass}")
            xyz, rpy = _origin(ie, what)
            I = np.zeros((3, 3))
            i_el = ie.find("inertia")
            if i_el is not None:
                g = {k: _attr_float(i_el, k, 0.0, what + " inertia") for k in
                     ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
                I = np.array([[g["ixx"], g["ixy"], g["ixz"]],
                              [g["ixy"], g["iyy"], g["iyz"]],
                              [g["ixz"], g["iyz"], g["izz"]]])
            inertial = Inertial(mass, xyz, rpy, I)
        links[name] = Link(name, inertial)
    joints = []
    for el in root.findall("joint"):
        name = el.get("name")
        jtype = el.get("type")
        what = f"joint {name!r}"
        p, c = el.find("parent"), el.find("child")
        if not name or jtype is None or p is None or c is None:
            raise ValueError(f"URDF {what} needs name, type, <parent> and <child>")
        j = Joint(name, jtype, p.get("link"), c.get("link"))
        for ln in (j.parent, j.child):
            if ln not in links:
                raise ValueError(f"{what} refers to unknown link {ln!r}")
        j.origin_xyz, j.origin_rpy = _origin(el, what)
        a = el.find("axis")
        if a is not None:
            j.axis = _floats(a.get("xyz", "1 0 0"), 3, what + " axis")
        lim = el.find("limit")
        if lim is not None:
            j.lower = _attr_float(lim, "lower", j.lower, what + " limit")
            j.upper = _attr_float(lim, "upper", j.upper, what + " limit")
            j.effort = _attr_float(lim, "effort", j.effort, what + " limit")
            j.velocity = _attr_float(lim, "velocity", j.velocity, what + " limit")
        joints.append(j)
    return UrdfModel(root.get("name", ""), links, joints)


def parse_urdf(path):
    """Parse a URDF file. Raises ``ValueError`` naming the element at fault, ``FileNotFoundError``."""
    with open(path, "r", encoding="utf-8") as f:
        return parse_urdf_string(f.read())
