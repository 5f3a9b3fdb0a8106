"""From a URDF tree to the paper's per-leg modules (Sec. III-B, IV-A).

The robot is one floating main body ``b`` with N serial legs. Fixed joints are merged into their parent
body. For each leg i and link j the description holds, all in the main-body frame X_b at zero joint angles:

- ``xi[i, j]``      the constant joint twist xi_ij = [-w x q; w] (paper: "observed in the main-body frame at
                     the initial configuration"), used in the product of exponentials (eq. 12);
- ``mass[i, j]``, ``com0[i, j]``, ``Ic0[i, j]``  the link's mass, CoM position and rotational inertia about
                     the CoM (axes of X_b), i.e. the generalized mass I_ij of eq. 8 seen from X_b at theta = 0;
- ``tip0[i]``       the home pose g_{b,it}(0) of the leg's tip frame.

Legs are padded to ``n_max`` joints; ``n_joints[i]`` tells the real count.
"""
from dataclasses import dataclass
from typing import List

import numpy as np

from .se3 import cross3
from .urdf import origin_to_matrix

MOVABLE = ("revolute", "continuous")
# identities only read (operands of products): one array each instead of ~90 np.eye calls per describe
_EYE3, _EYE4 = np.eye(3), np.eye(4)
_EYE3.flags.writeable = _EYE4.flags.writeable = False


@dataclass
class LegDescription:
    name: str
    joint_names: List[str]
    link_names: List[str]     # the child link of each joint (after merging fixed children into it)
    tip_frame: str
    hip_pose: np.ndarray      # 4x4 pose of the first joint frame in X_b at zero


@dataclass
class RobotDescription:
    root_link: str
    legs: List[LegDescription]
    body_mass: float
    body_com: np.ndarray      # (3,) in X_b
    body_Ic: np.ndarray       # (3,3) about the CoM, X_b axes
    n_joints: np.ndarray      # (L,) int64
    xi: np.ndarray            # (L, n_max, 6)
    mass: np.ndarray          # (L, n_max)
    com0: np.ndarray          # (L, n_max, 3)
    Ic0: np.ndarray           # (L, n_max, 3, 3)
    tip0: np.ndarray          # (L, 4, 4)
    lower: np.ndarray         # (n_joints_total,) joint limits etc. in leg-major order
    upper: np.ndarray
    effort: np.ndarray
    velocity: np.ndarray


def _leg_name(joint_names, fallback):
    """Common ``_SUFFIX`` of the leg's joint names (``coxa_joint_LF`` -> ``LF``), else the first joint."""
    suffixes = {n.rsplit("_", 1)[-1] for n in joint_names if "_" in n}
    if len(suffixes) == 1 and all("_" in n for n in joint_names):
        return suffixes.pop()
    return fallback


def _inertia_in(inertial, T_body_link):
    """(mass, com, Ic) of a URDF inertial expressed in a body frame, given the link's pose in that body."""
    if inertial is None or inertial.mass == 0.0 and not inertial.inertia.any():
        return 0.0, np.zeros(3), np.zeros((3, 3))
    T = T_body_link @ origin_to_matrix(inertial.origin_xyz, inertial.origin_rpy)
    R = T[:3, :3]
    return inertial.mass, T[:3, 3].copy(), R @ inertial.inertia @ R.T


def _combine(parts):
    """Combine (mass, com, Ic) tuples into one rigid body (parallel-axis theorem)."""
    m = sum(p[0] for p in parts)
    if m == 0.0:
        return 0.0, np.zeros(3), sum((p[2] for p in parts), np.zeros((3, 3)))
    c = sum(p[0] * p[1] for p in parts) / m
    Ic = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = ci - c
        Ic += Ii + mi * (d @ d * _EYE3 - np.outer(d, d))
    return m, c, 0.5 * (Ic + Ic.T)   # exactly symmetric, so M is too


def _tree(model):
    """({parent link: [child joints]}, root link) of the URDF, checked: supported joint types, one parent per
    link, one root (ValueError naming the joint/link)."""
    children = {}
    child_links = set()
    for j in model.joints:
        if j.type not in MOVABLE + ("fixed",):
            raise ValueError(f"joint {j.name!r} has type {j.type!r}; supported: revolute, continuous, fixed")
        if j.child in child_links:
            raise ValueError(f"link {j.child!r} is the child of more than one joint")
        child_links.add(j.child)
        children.setdefault(j.parent, []).append(j)
    roots = [n for n in model.links if n not in child_links]
    if len(roots) != 1:
        raise ValueError(f"URDF must have exactly one root link (the floating main body), found {roots}")
    return children, roots[0]


def _walk_legs(model, children, root):
    """Walk the tree from the root: ({"root" or (leg, k): [(mass, com, Ic) of each link merged into that body,
    in its frame]}, [per leg {"joints", "links", "leaves", "T" (joint poses in X_b), "xi"}]). Each movable
    joint below the root starts a leg; fixed joints merge their child into the parent body."""
    # Each entry: (link name, body index (-1 = main body, else (leg, joint)), T_body_link).
    body_parts = {"root": []}
    legs = []              # list of dicts
    stack = [(root, None, _EYE4, _EYE4)]  # link, (leg, k) or None, T_X_b_body0, T_body_link
    while stack:
        link, body, T_b_body, T_body_link = stack.pop()
        key = "root" if body is None else body
        body_parts.setdefault(key, []).append(_inertia_in(model.links[link].inertial, T_body_link))
        movable_children = [j for j in children.get(link, []) if j.type in MOVABLE]
        if body is not None and len(movable_children) > 1:
            raise ValueError(f"link {link!r} has {len(movable_children)} movable child joints "
                             f"({[j.name for j in movable_children]}); legs must be serial chains")
        for j in children.get(link, []):
            T_link_joint = origin_to_matrix(j.origin_xyz, j.origin_rpy)
            if j.type == "fixed":
                stack.append((j.child, body, T_b_body, T_body_link @ T_link_joint))
                if body is not None and not children.get(j.child):
                    legs[body[0]]["leaves"].append((j.child, body[1], T_body_link @ T_link_joint))
                continue
            n = np.linalg.norm(j.axis)
            if n < 1e-12:
                raise ValueError(f"joint {j.name!r} has a zero axis")
            T_b_joint = T_b_body @ T_body_link @ T_link_joint
            w = T_b_joint[:3, :3] @ (j.axis / n)
            q = T_b_joint[:3, 3]
            xi = np.concatenate([np.negative(cross3(w.tolist(), q.tolist())), w])
            if body is None:
                legs.append({"joints": [], "links": [], "leaves": [], "T": []})
                leg_idx, k = len(legs) - 1, 0
            else:
                leg_idx, k = body[0], body[1] + 1
            leg = legs[leg_idx]
            leg["joints"].append(j)
            leg["links"].append(j.child)
            leg["T"].append(T_b_joint)
            leg.setdefault("xi", []).append(xi)
            stack.append((j.child, (leg_idx, k), T_b_joint, _EYE4))
    if not legs:
        raise ValueError(f"URDF has no movable joint below the root link {root!r}")
    return body_parts, legs


def _tip(lg):
    """(tip frame name, its home pose in X_b) of a walked leg: its last link's leaf frame (one with "foot" or
    "tip" in its name if several), else the last link itself."""
    last = len(lg["joints"]) - 1
    leaves = [lv for lv in lg["leaves"] if lv[1] == last]
    if len(leaves) > 1:
        named = [lv for lv in leaves if "foot" in lv[0] or "tip" in lv[0]]
        leaves = named[:1] if named else leaves[:1]
    if leaves:
        return leaves[0][0], lg["T"][last] @ leaves[0][2]
    return lg["links"][last], lg["T"][last]


def describe(model):
    """Build a :class:`RobotDescription` from a :class:`~.urdf.UrdfModel`.

    Raises ``ValueError`` naming the joint/link when the URDF is not one floating root body with serial
    chains of revolute joints.
    """
    children, root = _tree(model)
    body_parts, legs = _walk_legs(model, children, root)
    L = len(legs)
    n_max = max(len(lg["joints"]) for lg in legs)
    n_joints = np.array([len(lg["joints"]) for lg in legs], dtype=np.int64)
    xi = np.zeros((L, n_max, 6))
    mass = np.zeros((L, n_max))
    com0 = np.zeros((L, n_max, 3))
    Ic0 = np.zeros((L, n_max, 3, 3))
    tip0 = np.zeros((L, 4, 4))
    leg_descs = []
    names_seen = set()
    for i, lg in enumerate(legs):
        for k in range(len(lg["joints"])):
            xi[i, k] = lg["xi"][k]
            m, c, Ic = _combine(body_parts.get((i, k), []))
            T = lg["T"][k]
            mass[i, k] = m
            com0[i, k] = T[:3, :3] @ c + T[:3, 3]
            Ic0[i, k] = T[:3, :3] @ Ic @ T[:3, :3].T
            Ic0[i, k] = 0.5 * (Ic0[i, k] + Ic0[i, k].T)
        tip_name, tip0[i] = _tip(lg)
        jn = [j.name for j in lg["joints"]]
        name = _leg_name(jn, jn[0])
        if name in names_seen:
            name = jn[0]
        names_seen.add(name)
        leg_descs.append(LegDescription(name, jn, list(lg["links"]), tip_name, lg["T"][0].copy()))
    mb, cb, Ib = _combine(body_parts["root"])
    all_joints = [j for lg in legs for j in lg["joints"]]
    return RobotDescription(
        root_link=root, legs=leg_descs, body_mass=mb, body_com=cb, body_Ic=Ib,
        n_joints=n_joints, xi=xi, mass=mass, com0=com0, Ic0=Ic0, tip0=tip0,
        lower=np.array([j.lower for j in all_joints]), upper=np.array([j.upper for j in all_joints]),
        effort=np.array([j.effort for j in all_joints]), velocity=np.array([j.velocity for j in all_joints]))
