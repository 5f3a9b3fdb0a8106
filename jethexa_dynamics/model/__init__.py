"""The modular Boltzmann-Hamel model of legged robots (Farghdani et al., paper 003, Sec. III-V).

- :class:`LeggedRobot` -- structural matrices M, C, 𝒩, 𝒥 and forward dynamics for any floating-base robot
  with serial revolute legs, loaded from URDF; :class:`Morphology` -- the link/leg existence vectors 
  (``Morphology.parse`` reads every spec: ``LM:1``, ``RR:0 LM:1``, ``damage1``/``scenario1``, ...).
- :mod:`.se3` -- readable screw-theory functions; :mod:`.kernels` -- the compiled equations;
  :mod:`.integrators` -- time stepping on SE(3).
- :mod:`.scenarios` -- the paper's damage scenarios (Sec. VI-B) as morphologies: the one table.
- :mod:`.com` -- the whole-body centre of mass of the links that exist (compiled).
- :mod:`.morphology` -- :class:`Morphology` and ``format_morphology`` (numpy only).

The names load on first use (PEP 562): ``import jethexa_dynamics.model.se3`` or ``.morphology`` does not
compile or load the model's kernels (numba), which the servo driver's and the IMU's processes never need.
"""
import importlib

_NAMES = {"LeggedRobot": ".robot", "jethexa": ".robot", "Morphology": ".morphology",
          "format_morphology": ".morphology"}
__all__ = sorted(_NAMES)


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name], __name__), name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
