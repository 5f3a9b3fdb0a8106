"""The paper's damage scenarios (Farghdani et al. Sec. VI-B) as morphologies of our robot: the one table.

Paper leg numbers -> ours (docs/DEV_NOTES.md): 1=RF, 2=LF, 3=RM, 4=LM, 5=RR, 6=LR.

- ``healthy``: all 18 links.
- ``damage1`` (alias ``scenario1``): legs 3 and 4 removed = RM and LM (one leg of each tripod group);
  6 + 12 DoF, 4 feet.
- ``damage2`` (alias ``scenario2``): legs 4 and 5 lose links 2-3 = LM and RR keep only the coxa (both in
  tripod group 1 {RF, LM, RR}); 6 + 14 DoF, 4 feet (their feet are gone, so they have no contact).

Every command and parameter that takes a morphology spec (``Morphology.parse``) accepts these names.
"""
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
