"""The damage identifier's tuning: :class:`IdentifierConfig` (what a caller may set, each within its range) and
the fixed numbers of its scoring and decisions (module constants).

Units: seconds for times, radians for angles and residuals, probabilities in [0, 1]; residual mean squares are
kept in units of the residual floors (``sigma_rp``, ``sigma_yaw``). The meaning of each knob in context: the
module docstring of :mod:`jethexa_dynamics.damage.identification`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Tuple

__all__ = ["IdentifierConfig"]

# -- scoring -------------------------------------------------------------------------------------------------
#: Huber ρ's corner (in σ): a residual beyond it counts linearly, so single bad samples do not dominate a window
HUBER_C = 3.0
#: windows of mean square residual a hypothesis remembers (its recent misfit)
RECENT_WINDOWS = 3
#: rad: a residual counts at most this much in a misfit; also the whole residual of a model that failed (fell
#: over, diverged): far beyond any real residual, still finite
MAX_RESIDUAL = 1.0

#: the models' feet on the ground: (friction model, coefficient) of ``sim.contact.ContactModel``. A floor's Coulomb
#: friction, not the paper's viscous tangential damping, which let the models' stance feet creep when the robot
#: started walking from its stance on a floor of mu 0.4-1.0, and a hypothesis missing a leg fit that creep better:
#: false changes in the long soak (``benchmarks/bench_soak.py``)
MODEL_CONTACT = ("coulomb", 0.7)

# -- learning the confirmed model's residual level and the gyro bias -------------------------------------------
#: windows whose z-score is above this are not learnt into the residual level (a damage's residual is no model
#: error)
LEARN_Z = 3.0
#: the belief counts as settled while P(confirmed morphology) is at least this (or, if the prior is lower, the
#: prior less ``PROB_TOL``: a belief resting on its prior is settled)
SETTLED = 0.9
PROB_TOL = 1e-9
#: the gyro bias is learnt only from windows whose z-score is below this fraction of ``screen_z`` (quiet ones)
BIAS_Z_FRACTION = 0.75
#: gain of one window's yaw drift in the gyro-bias estimate (on top of the running average's 1/n)
BIAS_GAIN = 0.5
#: windows the running residual level averages over at most (its memory)
SCALE_MEMORY = 40
#: the ground tilt estimate's step per window, as a share of the best model's roll/pitch residual at the window's
#: end (divided, like the residual level, by the windows learnt from so far, at most ``SCALE_MEMORY``)
GROUND_GAIN = 1.0
#: rad: the models stand on level ground while the ground tilt estimate is below this (a dead band)
GROUND_DEADBAND = math.radians(1.0)
#: rad: the ground estimate moves by at most this per window (a first window far off moves it by no more)
GROUND_MAX_STEP = math.radians(5.0)
#: no decision while the ground estimate moved by more than GROUND_STABLE [rad] over its last GROUND_STEPS windows
GROUND_STABLE = math.radians(0.5)
GROUND_STEPS = 6
#: rad: the ground tilt estimate is bounded by this (10 deg: steeper than the gait walks on); an estimate at the
#: bound is no ground but an attitude gone wrong, and nothing is decided on it
MAX_GROUND_TILT = math.radians(10.0)

# -- bank episodes and decisions -------------------------------------------------------------------------------
#: an episode goes on while another hypothesis holds more than this many times its prior
LIVE_PRIOR_FACTOR = 2.0
#: ``unexplained`` clears once the confirmed model's mean square is below this fraction of the bound (hysteresis)
UNEXPLAINED_CLEAR = 0.5
#: inconclusive windows a row of confirmations survives (one window of weak signal)
INCONCLUSIVE_WINDOWS = 1
#: a row of confirmations breaks once P(confirmed morphology) is back to this
BACK_ON_CONFIRMED = 0.5
#: a leg's other link count whose share of the leg's probability is at least this is reported beside the chosen
#: one (``alternatives`` of a model event): the motion does not tell them apart (a 20 g coxa, a stump that
#: touches nothing), and the report says so with both probabilities instead of guessing silently
AMBIGUOUS_SHARE = 0.2

# -- inputs ----------------------------------------------------------------------------------------------------
#: an IMU orientation whose norm is not above this is no unit quaternion (a zero or garbage message)
MIN_QUAT_NORM = 0.5
#: rad: commands this far outside a joint's limits are still taken (rounding of the limits)
LIMIT_TOL = 1e-9
#: s: stamps this close count as the same time (window edges, samples)
TIME_TOL = 1e-9


def ranged(default, lo, hi):
    """A dataclass field whose value must be a finite number in [lo, hi] (checked by :func:`check_ranges`)."""
    return field(default=default, metadata={"range": (lo, hi)})


def check_ranges(config) -> None:
    """``ValueError`` naming the first :func:`ranged` field of dataclass ``config`` that is not a finite number
    (a bool is none) in its allowed range, and the range."""
    for f in fields(config):
        if "range" not in f.metadata:
            continue
        lo, hi = f.metadata["range"]
        val = getattr(config, f.name)
        if not (isinstance(val, (int, float)) and not isinstance(val, bool) and math.isfinite(val)
                and lo <= val <= hi):
            raise ValueError("%s=%r outside the allowed range [%g, %g]" % (f.name, val, lo, hi))


@dataclass(frozen=True)
class IdentifierConfig:
    """What a :class:`~jethexa_dynamics.damage.identification.DamageIdentifier` is tuned with. Every number is
    checked on construction (``ValueError`` naming the field and its allowed range)."""

    #: s between re-anchors of the models (one likelihood term per window), [0.2, 3]
    window: float = ranged(0.5, 0.2, 3.0)
    #: posterior probability P(leg changed) a swap needs, [0.5, 0.999]
    threshold: float = ranged(0.9, 0.5, 0.999)
    #: consecutive windows above ``threshold`` a swap needs, [1, 10]
    confirm: int = ranged(2, 1, 10)
    #: prior probability of "no change", [0.5, 0.999]
    stay_prior: float = ranged(0.95, 0.5, 0.999)
    #: per-window factor of the log-likelihood sum (1: no forgetting), [0, 1]
    forget: float = ranged(0.85, 0.0, 1.0)
    #: rad, residual floor of roll and pitch, [1e-4, 0.2]
    sigma_rp: float = ranged(math.radians(0.25), 1e-4, 0.2)
    #: rad, residual floor of the yaw change, [1e-4, 0.2]
    sigma_yaw: float = ranged(math.radians(0.25), 1e-4, 0.2)
    #: comparison points per window, [1, 50]
    samples: int = ranged(5, 1, 50)
    #: s, the models' integration step, [2e-4, 5e-3]
    dt: float = ranged(2e-3, 2e-4, 5e-3)
    #: pre-screen: only the confirmed model runs while its own residual is normal
    screen: bool = True
    #: z-score of the confirmed model's window residual that starts the whole bank, [0.5, 100]
    screen_z: float = ranged(1.2, 0.5, 100.0)
    #: s after a change without a further decision (the gait re-phases, the robot settles), [0, 10]
    quiet: float = ranged(2.0, 0.0, 10.0)
    #: how many times smaller the winner's recent mean square residual must be than the confirmed model's (an
    #: effect size: a real break gives ~100x), [1, 100]
    min_gain: float = ranged(3.0, 1.0, 100.0)
    #: rad, the largest recent RMS residual of a winner (it must explain the motion itself), [1e-3, pi/2]
    max_misfit: float = ranged(math.radians(2.0), 1e-3, math.pi / 2)
    #: rad, the confirmed model's recent RMS residual above which, with no hypothesis within ``max_misfit``, the
    #: motion is unexplained, [1e-3, pi/2]
    unexplained_misfit: float = ranged(math.radians(6.0), 1e-3, math.pi / 2)
    #: during a bank episode, hypotheses below this fraction of the most probable are no longer simulated (0:
    #: never), [0, 0.1]
    prune: float = ranged(1e-6, 0.0, 0.1)
    #: s an IMU or joint-state stream may be silent before it is a data gap, [0.02, 5]
    max_gap: float = ranged(0.2, 0.02, 5.0)
    #: s after the data resumes in which windows start unscored (a driver resuming jolts the body for most of a
    #: second), [0, 5]
    gap_settle: float = ranged(1.0, 0.0, 5.0)

    def __post_init__(self):
        check_ranges(self)

    @classmethod
    def allowed_range(cls, name: str) -> Tuple[float, float]:
        """(lo, hi) allowed for field ``name``."""
        return next(f.metadata["range"] for f in fields(cls) if f.name == name)
