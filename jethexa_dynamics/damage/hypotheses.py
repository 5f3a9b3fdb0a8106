"""The damage identifier's hypotheses and how a window scores them (no rclpy).

A hypothesis is a morphology (links per leg, 3 = healthy) with its own model (a simulation ``Engine``), its
accumulated log-likelihood and its recent misfit. A window's residuals e (rad: roll, pitch, yaw change; one row
per comparison point) score each hypothesis with a Huber ρ(e/σ); σ is the residual floors widened by the
confirmed model's learnt residual level and by the best hypothesis' misfit in the window. The belief is the
posterior of those log-likelihoods under a prior that favours "no change" (the first hypothesis, the confirmed
morphology). Misfits are mean squares in units of the floors.
"""
from __future__ import annotations

from collections import deque
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from jethexa_dynamics.model import Morphology
from jethexa_dynamics.model.scenarios import single_leg_losses

from .identifier_config import HUBER_C, MAX_RESIDUAL, RECENT_WINDOWS

__all__ = ["Hypothesis", "huber", "leg_probabilities", "other_prior", "posterior", "score_window",
           "single_leg_hypotheses"]


def single_leg_hypotheses(links_per_leg: Sequence[int], revisable: Sequence[bool] = (),
                          max_links: Optional[Sequence[int]] = None) -> List[Tuple[int, ...]]:
    """The current morphology first, then ``model.scenarios.single_leg_losses`` of it (on the ``revisable``
    legs every other link count)."""
    return [tuple(int(k) for k in links_per_leg)] + single_leg_losses(links_per_leg, max_links, revisable)


def huber(z, c=HUBER_C):
    """Huber ρ of the normalised residuals ``z``: quadratic within ``c``, linear beyond."""
    a = np.abs(z)
    return np.where(a < c, 0.5 * z * z, c * a - 0.5 * c * c)


class Hypothesis:
    """One hypothesis: its links per leg, its model (an Engine) and its accumulated log-likelihood."""

    __slots__ = ("links", "engine", "ll", "active", "yaw0", "mse", "pruned")

    def __init__(self, links, engine):
        self.links, self.engine, self.ll, self.active, self.yaw0 = links, engine, 0.0, False, 0.0
        self.mse = deque(maxlen=RECENT_WINDOWS)   # mean square residuals (units of the floors) of the last windows
        self.pruned = False           # ruled out in this bank episode: not simulated, its belief frozen

    def restart(self, snap, robot) -> None:
        """Start again from the engine snapshot ``snap`` with this hypothesis' morphology of ``robot``: no
        evidence yet, simulated from the next window on."""
        self.engine.restore(snap)
        self.engine.set_morphology(Morphology.from_vector(robot, list(self.links)))
        self.engine.events = []
        self.ll = 0.0
        self.mse.clear()
        self.active = True
        self.pruned = False

    def recent_misfit(self) -> float:
        """Mean square residual of the recent windows (units of the floors); 0 before any."""
        return float(np.mean(self.mse)) if self.mse else 0.0


def other_prior(n: int, stay_prior: float) -> float:
    """Prior probability of each of the ``n - 1`` hypotheses other than the confirmed one."""
    return (1.0 - stay_prior) / max(n - 1, 1)


def posterior(hyps: Sequence[Hypothesis], stay_prior: float) -> np.ndarray:
    """Posterior over ``hyps`` (the first is the confirmed morphology, prior ``stay_prior``); inactive ones count
    as equal to the confirmed one (no evidence against it)."""
    n = len(hyps)
    prior = np.full(n, other_prior(n, stay_prior))
    prior[0] = stay_prior if n > 1 else 1.0
    ll = np.array([h.ll if h.active else hyps[0].ll for h in hyps])
    a = np.log(prior) + ll - ll.max()
    p = np.exp(a - a.max())
    return p / p.sum()


def leg_probabilities(hyps: Sequence[Hypothesis], probs: np.ndarray, n_legs: int) -> np.ndarray:
    """P(leg i changed) = the summed probability of the hypotheses that differ from the confirmed one (the first)
    on leg i (all of them are single-leg changes)."""
    base = hyps[0].links
    out = np.zeros(n_legs)
    for h, p in zip(hyps[1:], probs[1:]):
        out[next(i for i, (a, b) in enumerate(zip(h.links, base)) if a != b)] += p
    return out


def link_shares(hyps: Sequence[Hypothesis], probs: np.ndarray, leg: int) -> Dict[int, float]:
    """{link count of ``leg``: its share of the summed probability of the hypotheses that change ``leg``} (the
    confirmed one first, as in :func:`leg_probabilities`); empty when none has any probability."""
    base = hyps[0].links
    out: Dict[int, float] = {}
    for h, p in zip(hyps[1:], probs[1:]):
        if h.links[leg] != base[leg]:
            out[h.links[leg]] = out.get(h.links[leg], 0.0) + float(p)
    total = sum(out.values())
    return {k: v / total for k, v in out.items()} if total > 0 else out


def score_window(hyps: Sequence[Hypothesis], errs: Sequence[Optional[np.ndarray]], sigma_floor: np.ndarray,
                 scale2: np.ndarray, forget: float, huber_c: float = HUBER_C) -> None:
    """Add one window's evidence to each hypothesis with residuals ``errs[k]`` ((n, 3) rad; None: not simulated
    this window, its belief frozen): the forgetting log-likelihood sum and its recent misfit. ``scale2``: the
    confirmed model's learnt mean square residual per channel (rad^2)."""
    sigma2 = scale2
    if len(errs) > 1:
        # the best hypothesis' misfit counts as noise too: a mismatch common to every model (timing, an
        # unmodelled gait transient, the IMU filter) widens σ instead of favouring a wrong hypothesis
        best = np.min([np.mean(np.minimum(err, MAX_RESIDUAL) ** 2, axis=0) for err in errs if err is not None],
                      axis=0)
        sigma2 = np.maximum(scale2, best)
    sigma = np.sqrt(sigma_floor ** 2 + sigma2)
    for h, err in zip(hyps, errs):
        if err is None:
            continue
        h.ll = forget * h.ll - float(np.sum(huber(err / sigma, huber_c)))
        h.mse.append(float(np.mean((np.minimum(np.abs(err), MAX_RESIDUAL) / sigma_floor) ** 2)))
