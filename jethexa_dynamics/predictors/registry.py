"""The predictors by name: ``--predictor`` of ``jethexa-validate``, the predictor node's ``predictor``.

``make_predictor(name, model=None, horizon=None)`` builds one; ``predictor_names()`` lists them;
``PREDICTORS`` maps the second-opinion names to their classes.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional

from .base import Predictor
from .newton_euler import NewtonEulerPredictor
from .slip import SlipPredictor

PREDICTORS = {"slip": SlipPredictor, "newton_euler": NewtonEulerPredictor}


_FACTORIES: Dict[str, Callable] = {}


def register_predictor(name: str, factory: Callable) -> None:
    """Make ``factory(model=None, horizon=None) -> Predictor`` available as ``--predictor name``."""
    _FACTORIES[name] = factory


#: re-anchoring horizon when neither the user nor the predictor chooses one (the predictor node's default)
DEFAULT_HORIZON = 2.0


def _robot(model):
    """The ``LeggedRobot`` of a model parameters file (URDF), the robot itself (e.g. ``with_body``: a calibrated
    body), or the packaged JetHexa."""
    from jethexa_dynamics.model import LeggedRobot

    if isinstance(model, LeggedRobot):
        return model
    return LeggedRobot.jethexa() if model is None else LeggedRobot.from_urdf(str(model))


def _horizon(horizon):
    return DEFAULT_HORIZON if horizon is None else float(horizon)


def _boltzmann_hamel(model=None, horizon=None):
    from .boltzmann_hamel import BoltzmannHamelPredictor

    return BoltzmannHamelPredictor(robot=_robot(model), reanchor_horizon=_horizon(horizon))


def _second_opinion(name):
    """A ``PREDICTORS`` model: it speaks the replay protocol itself and re-anchors its planar pose on
    motion capture every horizon (keeping its support state)."""
    def factory(model=None, horizon=None):
        return PREDICTORS[name](_robot(model), reanchor_horizon=_horizon(horizon))
    return factory


_FACTORIES["boltzmann_hamel"] = _boltzmann_hamel
for _name in PREDICTORS:
    _FACTORIES[_name] = _second_opinion(_name)


def predictor_names() -> List[str]:
    return sorted(_FACTORIES)


def make_predictor(name: str, model=None, horizon: Optional[float] = None) -> Predictor:
    """The predictor called ``name`` with an optional model (a parameters file (URDF) or a ``LeggedRobot``) and
    re-anchoring horizon."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise ValueError("unknown predictor {!r}; available: {}".format(name, ", ".join(predictor_names()))) from None
    if horizon is not None and not horizon > 0:
        raise ValueError("re-anchoring horizon must be > 0 s, got {}".format(horizon))
    return factory(model=model, horizon=horizon)
