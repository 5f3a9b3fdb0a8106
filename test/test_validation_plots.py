"""Validation plots, checked on the matplotlib artists: morphology labels name the legs the way the demo
prints them, and every predictor's line differs from the others by line style and marker, not only colour."""
import numpy as np
from matplotlib.text import Annotation

from jethexa_dynamics.model import format_morphology
from jethexa_dynamics.validation import plots
from jethexa_dynamics.validation.metrics import Segment
from jethexa_dynamics.validation.replay import ReplayResult
from jethexa_dynamics.validation.report import morphology_text
from jethexa_dynamics.model import jethexa


def _result(name, n=200):
    t = np.linspace(0.0, 4.0, n)
    q = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    p = np.zeros((n, 3))
    return ReplayResult(predictor=name, horizon=2.0, t_orient=t, q_pred=q, q_meas=q, p_pred_orient=p, t_pos=t,
                        p_pred=p, p_meas=p, anchors=np.array([2.0]), n_messages=n, wall_time=1.0, duration=4.0)


def test_morphology_labels_name_the_legs_like_the_demo():
    segs = [Segment(0, 0.0, 1.0, (3,) * 6), Segment(1, 1.0, 2.5, (3, 3, 3, 3, 2, 3)),
            Segment(2, 2.5, 4.0, (3, 1, 3, 3, 0, 3))]
    figs = plots.figures([_result("boltzmann_hamel")], segs)
    texts = [a.get_text() for a in figs["orientation"].axes[0].texts if isinstance(a, Annotation)]
    assert texts == ["morphology RM:2", "morphology LM:1 RM:0"]
    # one formatter: the demo's (format_morphology), also in the report table
    assert morphology_text((3, 3, 3, 3, 2, 3)) == format_morphology((3, 3, 3, 3, 2, 3), jethexa().leg_names) == "RM:2"
    assert morphology_text(None) == "unknown" and morphology_text((3,) * 6) == "healthy"


def test_compare_all_lines_differ_by_style_and_marker():
    names = ["boltzmann_hamel", "newton_euler", "slip", "other"]  # the registry holds three
    figs = plots.figures([_result(n) for n in names], [Segment(0, 0.0, 4.0, None)])
    for fig in figs.values():
        for ax in fig.axes:
            lines = [ln for ln in ax.get_lines() if ln.get_label() and not ln.get_label().startswith("_")
                     and "measured" not in ln.get_label() and "ground truth" not in ln.get_label()]
            assert len(lines) == len(names)
            for attr in ("get_color", "get_linestyle", "get_marker"):
                values = [getattr(ln, attr)() for ln in lines]
                assert len(set(values)) == len(values), (attr, values)
            # markers are drawn (not every point, not none) and not on the same samples for two predictors
            starts = [ln.get_markevery()[0] for ln in lines]
            assert all(0 < ln.get_markevery()[1] < 200 for ln in lines) and len(set(starts)) == len(starts)
