"""The paper's damage scenarios (Farghdani et al. Sec. VI-B) as morphologies of our robot.

Paper leg numbers -> ours (docs/DEV_NOTES.md): 1=RF, 2=LF, 3=RM, 4=LM, 5=RR, 6=LR.

- ``healthy``: all 18 links.
- ``damage1``: legs 3 and 4 removed = RM and LM (one leg of each tripod group); 6 + 12 DoF, 4 feet.
- ``damage2``: legs 4 and 5 lose links 2-3 = LM and RR keep only the coxa (both in tripod group 1
  {RF, LM, RR}); 6 + 14 DoF, 4 feet (their feet are gone, so they have no contact).
"""
from jethexa_dynamics.model import Morphology

PAPER_LEG = {1: "RF", 2: "LF", 3: "RM", 4: "LM", 5: "RR", 6: "LR"}

SCENARIOS = {
    "healthy": "all links present",
    "damage1": "paper legs 3 and 4 (RM, LM) removed",
    "damage2": "paper legs 4 and 5 (LM, RR) lose links 2-3 (keep the coxa)",
}


def scenario_morphology(robot, name):
    """Morphology of ``robot`` (healthy JetHexa) for a scenario name; ValueError for unknown names."""
    full = robot.full
    m = Morphology.healthy(full)
    if name == "healthy":
        return m
    if name == "damage1":
        return m.without_leg(PAPER_LEG[3]).without_leg(PAPER_LEG[4])
    if name == "damage2":
        return m.without_links(PAPER_LEG[4], 2).without_links(PAPER_LEG[5], 2)
    raise ValueError("scenario must be one of %s, got %r" % (", ".join(SCENARIOS), name))
