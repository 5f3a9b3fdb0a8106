"""The paper's damage scenarios (Farghdani et al. Sec. VI-B) as morphologies of our robot: the one table.

Paper leg numbers -> ours (docs/development.md): 1=RF, 2=LF, 3=RM, 4=LM, 5=RR, 6=LR.

- ``healthy``: all 18 links.
- ``damage1`` (alias ``scenario1``): legs 3 and 4 removed = RM and LM (one leg of each tripod group);
  6 + 12 DoF, 4 feet.
- ``damage2`` (alias ``scenario2``): legs 4 and 5 lose links 2-3 = LM and RR keep only the coxa (both in
  tripod group 1 {RF, LM, RR}); 6 + 14 DoF, 4 feet (their feet are gone, so they have no contact).

Every command and parameter that takes a morphology spec (``Morphology.parse``) accepts these names.

The sets of morphologies the package reasons about are built here too: :func:`single_leg_losses` (the damage
identifier's hypotheses, the recovery acceptance cases, the gait plans prepared ahead) and
:func:`scenario_vectors` (the table as links-per-leg vectors).
"""
from typing import List, Optional, Sequence, Tuple

PAPER_LEG = {1: "RF", 2: "LF", 3: "RM", 4: "LM", 5: "RR", 6: "LR"}

#: scenario -> ({our leg: intact links} of the damaged legs (unlisted legs intact), description)
SCENARIOS = {
    "healthy": ({}, "all links present"),
    "damage1": ({PAPER_LEG[3]: 0, PAPER_LEG[4]: 0}, "RM, LM removed (paper legs 3, 4)"),
    "damage2": ({PAPER_LEG[4]: 1, PAPER_LEG[5]: 1}, "LM, RR keep only the coxa (paper legs 4, 5)"),
}
ALIASES = {"scenario1": "damage1", "scenario2": "damage2"}


def scenario_names_text():
    """``healthy, damage1, damage2 (aliases scenario1, scenario2)`` for error messages and help."""
    return "%s (aliases %s)" % (", ".join(SCENARIOS), ", ".join(ALIASES))


def canonical_scenario(name):
    """The table's name for ``name`` (case-insensitive, aliases resolved), or None if it is no scenario."""
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    return key if key in SCENARIOS else None


def scenario_links(name):
    """{leg: intact links} of the damaged legs of a scenario; ValueError for unknown names."""
    key = canonical_scenario(name)
    if key is None:
        raise ValueError("scenario must be one of %s, got %r" % (scenario_names_text(), name))
    return dict(SCENARIOS[key][0])


def scenario_morphology(robot, name):
    """``Morphology`` of ``robot`` (healthy JetHexa) for a scenario name; ValueError for unknown names."""
    from jethexa_dynamics.model import Morphology

    return Morphology.parse(robot, scenario_links(name))


def scenario_vectors(leg_names: Sequence[str], n_joints: Sequence[int]) -> List[Tuple[str, List[int]]]:
    """(name, links per leg) of every damage scenario of the table, for legs ``leg_names`` with ``n_joints``."""
    return [(name, [int(lost.get(leg, n)) for leg, n in zip(leg_names, n_joints)])
            for name, (lost, _) in SCENARIOS.items() if lost]


def single_leg_losses(links_per_leg: Sequence[int], max_links: Optional[Sequence[int]] = None,
                      revisable: Sequence[bool] = ()) -> List[Tuple[int, ...]]:
    """Every morphology one leg short of ``links_per_leg``: leg i keeps k_i - 1, ..., 0 links (most kept first),
    leg by leg. On the legs flagged ``revisable`` (a damage the model identified, whose link count may be off by
    one) every other count below ``max_links[i]`` (default 3 per leg) instead.

    >>> single_leg_losses([3, 1])
    [(2, 1), (1, 1), (0, 1), (3, 0)]
    >>> single_leg_losses([3, 1], revisable=[False, True])
    [(2, 1), (1, 1), (0, 1), (3, 2), (3, 0)]
    """
    base = tuple(int(k) for k in links_per_leg)
    top = [3] * len(base) if max_links is None else [int(m) for m in max_links]
    rev = list(revisable) + [False] * (len(base) - len(revisable))
    out = []
    for i, k in enumerate(base):
        counts = [c for c in range(top[i] - 1, -1, -1) if c != k] if rev[i] else range(k - 1, -1, -1)
        out += [base[:i] + (c,) + base[i + 1:] for c in counts]
    return out
