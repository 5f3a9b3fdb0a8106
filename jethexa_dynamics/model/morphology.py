"""Morphologies: which links of which legs exist (paper 003, Definition 1), and their ``LEG:N`` text.

Light on purpose (numpy only): nodes that only name morphologies -- the servo driver's and the gait
controller's messages, the damage evidence -- load no model kernels for it.
"""
from __future__ import annotations

import numpy as np


def format_morphology(links_per_leg, leg_names, n_joints=3):
    """``healthy`` or the damaged legs as ``LEG:N`` (e.g. ``LM:0 RM:0``) for intact ``links_per_leg`` of legs
    ``leg_names`` with ``n_joints`` links each (one number, or one per leg)."""
    full = [n_joints] * len(leg_names) if np.ndim(n_joints) == 0 else list(n_joints)
    dmg = ["%s:%d" % (leg, k) for leg, k, n in zip(leg_names, links_per_leg, full) if int(k) < int(n)]
    return " ".join(dmg) if dmg else "healthy"


class Morphology:
    """Which links of which legs exist (paper Definition 1).

    ``links_per_leg[i]`` = number of intact links of leg i, counted from the hip: links
    ``links_per_leg[i]+1 ... n_i`` are gone, and a leg with 0 links is removed (𝔵̄_i = 0). This is exactly the
    set of *valid* morphologies of Algorithm 1 (a distal link cannot exist without its proximal ones).
    """

    __slots__ = ("leg_names", "n_joints", "links_per_leg", "_mask")

    def __init__(self, leg_names, n_joints, links_per_leg):
        self.leg_names = tuple(leg_names)
        self.n_joints = tuple(int(n) for n in n_joints)
        if len(links_per_leg) != len(self.leg_names):
            raise ValueError(f"morphology: expected {len(self.leg_names)} entries (one per leg "
                             f"{list(self.leg_names)}), got {len(links_per_leg)}")
        out = []
        for name, n, k in zip(self.leg_names, self.n_joints, links_per_leg):
            try:
                kf = float(k)
            except (TypeError, ValueError):
                raise ValueError(f"morphology: leg {name}: links must be an integer in [0, {n}], got {k!r}") from None
            if not kf.is_integer() or not 0 <= kf <= n:
                raise ValueError(f"morphology: leg {name}: links must be an integer in [0, {n}], got {k!r}")
            out.append(int(kf))
        self.links_per_leg = tuple(out)
        self._mask = None

    # -- constructors ------------------------------------------------------------------------------------
    @classmethod
    def healthy(cls, robot):
        r = robot.full
        return cls(r._all_leg_names, r._desc.n_joints, r._desc.n_joints)

    @classmethod
    def from_vector(cls, robot, links_per_leg):
        """From the number of intact links per leg (URDF leg order), e.g. ``[3, 3, 0, 3, 3, 1]``."""
        r = robot.full
        return cls(r._all_leg_names, r._desc.n_joints, list(links_per_leg))

    @classmethod
    def from_existence(cls, robot, link_existence):
        """From the paper's link morphology vector 𝔛 (eq. 22-24): one 0/1 entry per joint, leg-major.

        Raises ``ValueError`` naming the leg for a wrong length, a non-binary entry, or a distal link present
        while a proximal one is missing."""
        r = robot.full
        x = list(link_existence)
        total = int(r._desc.n_joints.sum())
        if len(x) != total:
            raise ValueError(f"morphology: link existence vector must have {total} entries, got {len(x)}")
        counts, k = [], 0
        for name, n in zip(r._all_leg_names, r._desc.n_joints):
            leg = x[k:k + n]
            k += n
            for j, e in enumerate(leg):
                if e not in (0, 1) and e not in (0.0, 1.0):
                    raise ValueError(f"morphology: leg {name}: link {j + 1} existence must be 0 or 1, got {e!r}")
            m = 0
            while m < n and leg[m] == 1:
                m += 1
            if any(e == 1 for e in leg[m:]):
                raise ValueError(f"morphology: leg {name}: link {leg.index(1, m) + 1} is present but link "
                                 f"{m + 1} closer to the body is missing ({leg})")
            counts.append(m)
        return cls(r._all_leg_names, r._desc.n_joints, counts)

    @classmethod
    def parse(cls, robot, spec):
        """The morphology of ``robot`` that ``spec`` names: the one parser behind every command, parameter
        and API that takes a morphology.

        Accepted: a ``Morphology`` (returned as is); ``None``, ``""``, ``healthy`` or ``none`` (all links); a
        scenario of :mod:`jethexa_dynamics.model.scenarios` (``damage1``, ``damage2``, aliases ``scenario1``,
        ``scenario2``); a list of ``LEG`` (leg removed) or ``LEG:N`` (N intact links from the hip), separated
        by commas or spaces, e.g. ``LM:1``, ``RR:0 LM:1``, ``RM,LM``; one link count per leg in URDF leg
        order, as text (``3,3,0,0,3,3``) or a sequence; a ``{leg: links}`` dict (unlisted legs intact).
        Raises ``ValueError`` naming the spec and the allowed values.
        """
        if isinstance(spec, Morphology):
            return spec
        r = robot.full
        legs, n_joints = list(r._all_leg_names), [int(n) for n in r._desc.n_joints]
        if spec is None:
            return cls.healthy(r)
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - set(legs))
            if unknown:
                raise ValueError(f"morphology: unknown legs {unknown}; legs are {legs}")
            return cls(legs, n_joints, [spec.get(leg, n) for leg, n in zip(legs, n_joints)])
        if not isinstance(spec, str):
            return cls(legs, n_joints, list(spec))
        from jethexa_dynamics.model.scenarios import canonical_scenario, scenario_links, scenario_names_text

        text = spec.strip()
        if text.lower() in ("", "none", "healthy"):
            return cls.healthy(r)
        if canonical_scenario(text) is not None:
            return cls.parse(r, scenario_links(text))
        items = [t for t in text.replace(",", " ").split() if t]
        if len(items) == len(legs) and all(t.isdigit() for t in items):
            if any(int(t) > n for t, n in zip(items, n_joints)):
                raise ValueError(f"damage spec {spec!r}: link counts must be in [0, {max(n_joints)}]")
            return cls(legs, n_joints, [int(t) for t in items])
        links = {}
        for item in items:
            leg, _, k = item.partition(":")
            if leg not in legs:
                raise ValueError(f"damage spec {spec!r}: unknown leg {leg!r}: expected legs {','.join(legs)} as "
                                 f"LEG or LEG:N, or a scenario (scenario must be one of {scenario_names_text()})")
            n = n_joints[legs.index(leg)]
            try:
                links[leg] = int(k) if k else 0
            except ValueError:
                raise ValueError(f"damage spec {spec!r}: {k!r} is not a link count") from None
            if not 0 <= links[leg] <= n:
                raise ValueError(f"damage spec {spec!r}: link count {links[leg]} for {leg} must be in [0, {n}]")
        return cls.parse(r, links)

    def spec(self):
        """``healthy`` or the damaged legs as ``LEG:N`` (e.g. ``LM:0 RM:0``): what :meth:`parse` reads back."""
        return format_morphology(self.links_per_leg, self.leg_names, self.n_joints)

    # -- edits --------------------------------------------------------------------------------------------
    def _index(self, leg):
        try:
            return self.leg_names.index(leg)
        except ValueError:
            raise ValueError(f"morphology: unknown leg {leg!r}; legs are {list(self.leg_names)}") from None

    def without_leg(self, leg):
        counts = list(self.links_per_leg)
        counts[self._index(leg)] = 0
        return Morphology(self.leg_names, self.n_joints, counts)

    def without_links(self, leg, first_lost):
        """Links ``first_lost``..end of ``leg`` are gone (1-based, as the paper counts links)."""
        i = self._index(leg)
        n = self.n_joints[i]
        if not isinstance(first_lost, (int, np.integer)) or not 1 <= first_lost <= n:
            raise ValueError(f"morphology: leg {leg}: first_lost must be an integer in [1, {n}], got {first_lost!r}")
        counts = list(self.links_per_leg)
        counts[i] = min(counts[i], int(first_lost) - 1)
        return Morphology(self.leg_names, self.n_joints, counts)

    # -- views --------------------------------------------------------------------------------------------
    @property
    def leg_existence(self):
        """𝔛̄ (eq. 25-26)."""
        return np.array([1 if k > 0 else 0 for k in self.links_per_leg], dtype=np.int64)

    @property
    def link_existence(self):
        """𝔛 (eq. 22-24), leg-major."""
        return np.concatenate([[1] * k + [0] * (n - k) for k, n in zip(self.links_per_leg, self.n_joints)]
                              ).astype(np.int64)

    @property
    def link_mask(self):
        """(n_legs, n_max) float64 0/1 mask for :mod:`.kernels`."""
        if self._mask is None:
            m = np.zeros((len(self.n_joints), max(self.n_joints)))
            for i, k in enumerate(self.links_per_leg):
                m[i, :k] = 1.0
            m.flags.writeable = False
            self._mask = m
        return self._mask

    @property
    def is_healthy(self):
        return self.links_per_leg == self.n_joints

    def __eq__(self, other):
        return isinstance(other, Morphology) and (self.leg_names, self.links_per_leg) == (
            other.leg_names, other.links_per_leg)

    def __hash__(self):
        return hash((self.leg_names, self.links_per_leg))

    def __repr__(self):
        return "Morphology(" + ", ".join(f"{n}={k}" for n, k in zip(self.leg_names, self.links_per_leg)) + ")"
