"""Random legged robots as URDF text, for oracle tests (Pinocchio builds the same URDF independently).

A robot has one floating main body and ``len(joints_per_leg)`` serial legs of revolute joints with random
axes, joint placements (xyz + rpy), link CoM offsets and rotated inertias, plus fixed frames (a massless
foot at each tip and a massive fixed "sensor" on some links, which must be merged into its parent).
``keep`` physically removes links: ``keep[i] = k`` keeps the first k links of leg i (0 = leg removed), so
the same random parameters describe the healthy robot and the damaged one.
"""
import numpy as np


def _inertia(rng, mass):
    # principal moments of a random box (always physically valid), in a random orientation (rpy)
    a, b, c = rng.uniform(0.01, 0.12, size=3)
    I = mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    return I


def _f(x):
    return " ".join("%.17g" % v for v in np.atleast_1d(x))


def random_robot_params(rng, n_legs=None, joints_per_leg=None):
    if n_legs is None:
        n_legs = int(rng.integers(2, 13))
    if joints_per_leg is None:
        joints_per_leg = [int(rng.integers(1, 5)) for _ in range(n_legs)]
    body = dict(mass=rng.uniform(0.5, 3.0), com=rng.uniform(-0.03, 0.03, 3), rpy=rng.uniform(-np.pi, np.pi, 3))
    body["I"] = _inertia(rng, body["mass"])
    legs = []
    for i, n in enumerate(joints_per_leg):
        links = []
        for k in range(n):
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            m = rng.uniform(0.02, 0.3)
            links.append(dict(
                xyz=rng.uniform(-0.15, 0.15, 3), rpy=rng.uniform(-np.pi, np.pi, 3), axis=axis,
                mass=m, com=rng.uniform(-0.05, 0.05, 3), com_rpy=rng.uniform(-np.pi, np.pi, 3),
                I=_inertia(rng, m), sensor=bool(rng.random() < 0.3), sensor_mass=rng.uniform(0.005, 0.05),
                sensor_xyz=rng.uniform(-0.03, 0.03, 3)))
        legs.append(dict(links=links, foot_xyz=rng.uniform(-0.1, 0.1, 3)))
    return dict(body=body, legs=legs)


def urdf_from_params(P, keep=None):
    out = ['<?xml version="1.0"?>', '<robot name="random_legged">']

    def link(name, mass, com, rpy, I):
        out.append(f'<link name="{name}"><inertial><origin xyz="{_f(com)}" rpy="{_f(rpy)}"/>'
                   f'<mass value="{mass:.17g}"/><inertia ixx="{I[0]:.17g}" ixy="0" ixz="0" iyy="{I[1]:.17g}" '
                   f'iyz="0" izz="{I[2]:.17g}"/></inertial></link>')

    b = P["body"]
    link("body", b["mass"], b["com"], b["rpy"], b["I"])
    for i, leg in enumerate(P["legs"]):
        n_keep = len(leg["links"]) if keep is None else keep[i]
        parent = "body"
        for k, L in enumerate(leg["links"][:n_keep]):
            name = f"l{k}_L{i}"
            out.append(f'<joint name="j{k}_L{i}" type="revolute"><parent link="{parent}"/><child link="{name}"/>'
                       f'<origin xyz="{_f(L["xyz"])}" rpy="{_f(L["rpy"])}"/><axis xyz="{_f(L["axis"])}"/>'
                       f'<limit lower="-3" upper="3" effort="10" velocity="10"/></joint>')
            link(name, L["mass"], L["com"], L["com_rpy"], L["I"])
            if L["sensor"]:
                out.append(f'<joint name="s{k}_L{i}" type="fixed"><parent link="{name}"/><child link="s{k}_L{i}_link"/>'
                           f'<origin xyz="{_f(L["sensor_xyz"])}" rpy="0.3 0.2 0.1"/></joint>')
                link(f"s{k}_L{i}_link", L["sensor_mass"], np.zeros(3), np.zeros(3), [1e-6, 2e-6, 3e-6])
            parent = name
        if n_keep == len(leg["links"]) and n_keep > 0:
            out.append(f'<joint name="foot_joint_L{i}" type="fixed"><parent link="{parent}"/>'
                       f'<child link="foot_L{i}"/><origin xyz="{_f(leg["foot_xyz"])}" rpy="0 0 0"/></joint>')
            out.append(f'<link name="foot_L{i}"/>')
    out.append("</robot>")
    return "\n".join(out)


def random_robot_urdf(seed, **kw):
    rng = np.random.default_rng(seed)
    return urdf_from_params(random_robot_params(rng, **kw))


def urdf_without_links(urdf_path, leg_names, counts, names=("coxa", "femur", "tibia")):
    """The URDF text of ``urdf_path`` with links physically removed: leg ``leg_names[i]`` keeps its first
    ``counts[i]`` links (JetHexa naming ``<link>_<leg>``, ``foot_<leg>``); the removed links' joints go too."""
    import xml.etree.ElementTree as ET
    root = ET.parse(urdf_path).getroot()
    lost = set()
    for leg, k in zip(leg_names, counts):
        lost |= {f"{name}_{leg}" for name in names[k:]}
        if k < len(names):
            lost.add(f"foot_{leg}")
    for el in list(root):
        if (el.tag == "link" and el.get("name") in lost) or (el.tag == "joint" and el.find("child").get("link") in lost):
            root.remove(el)
    return ET.tostring(root, encoding="unicode")
