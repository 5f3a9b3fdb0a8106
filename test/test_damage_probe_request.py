"""The active probe's request between the damage monitor and the gait controller (``damage.probe_request``):
what goes out is what comes back, and every malformed, stale or far-future request is refused naming the key."""
import math

import numpy as np
import pytest

from jethexa_dynamics.damage.active_probe import ProbeConfig
from jethexa_dynamics.damage.probe import LinkProbe, ProbeSpec
from jethexa_dynamics.damage.probe_request import MAX_LEAD, ProbeRequest

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
STANCE = (0.0, 0.45, -1.9)


def _values(**over):
    req = ProbeRequest("probe", 3, "LM", 1000.25, ProbeSpec(), STANCE)
    values = dict(req.to_values())
    values.update(over)
    return {k: v for k, v in values.items() if v is not None}


def test_a_request_survives_the_round_trip_and_moves_the_leg_as_the_monitor_scores_it():
    req = ProbeRequest("probe", 3, "LM", 1700000000.123456, ProbeSpec(coxa_hz=4.0), STANCE)
    back = ProbeRequest.from_values(dict(req.to_values()), LEGS)
    assert back == req                                   # the ROS time of day kept to the microsecond
    assert back.t_end == pytest.approx(req.t_start + 2.0)
    # the receiver's LinkProbe with the spec sent gives the targets the sender's scores against
    mine, theirs = LinkProbe(leg="LM", spec=req.spec), LinkProbe(leg="LM", spec=back.spec)
    for tau in np.linspace(0.0, 2.0, 17):
        assert np.allclose(mine.targets(STANCE, tau), theirs.targets(back.stance, tau))
    cancel = ProbeRequest("cancel", 3, "LM")
    assert ProbeRequest.from_values(dict(cancel.to_values()), LEGS) == cancel
    assert dict(cancel.to_values()).keys() == {"action", "id", "leg"}


@pytest.mark.parametrize("over, words", [
    ({"action": "walk"}, ["action='walk'", "probe, cancel"]),
    ({"action": None}, ["no 'action'"]),
    ({"id": "0"}, ["id='0'", "positive"]),
    ({"id": "x"}, ["id='x'"]),
    ({"leg": "XX"}, ["leg='XX'", "LF"]),
    ({"t_start": "soon"}, ["t_start='soon'", "not a number"]),
    ({"t_start": "nan"}, ["t_start='nan'", "not finite"]),
    ({"duration": None}, ["no 'duration'"]),
    ({"duration": "100"}, ["duration=100", "[0.5, 30]"]),
    ({"coxa_hz": "-1"}, ["coxa_hz=-1", "[0.1, 10]"]),
    ({"femur_amp": "inf"}, ["femur_amp='inf'", "not finite"]),
    ({"stance": "0,1"}, ["stance='0,1'", "3 finite angles"]),
    ({"stance": "0,1,a"}, ["stance='0,1,a'", "3 angles"]),
    ({"stance": "0,1,9"}, ["stance='0,1,9'", "pi"]),
])
def test_a_malformed_request_is_refused_naming_the_key(over, words):
    with pytest.raises(ValueError) as err:
        ProbeRequest.from_values(_values(**over), LEGS)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_a_stale_or_far_future_request_is_refused_and_one_on_time_is_taken():
    req = ProbeRequest.from_values(_values(), LEGS)
    req.check_time(1000.0)                       # 0.25 s ahead: the stand before the probe
    req.check_time(1001.0)                       # under way: the rest of it runs
    with pytest.raises(ValueError, match="stale, its probe ended 0.75 s ago"):
        req.check_time(1003.0)
    with pytest.raises(ValueError, match="starts 11.5 s ahead"):
        req.check_time(1000.25 - MAX_LEAD - 1.5)
    ProbeRequest("cancel", 1, "LM").check_time(1e9)      # a cancel has no time


def test_a_probe_faster_than_the_joints_is_refused_by_the_receivers_link_probe():
    """A spec within ProbeSpec's ranges but over the URDF's joint rates (what the gait controller checks with
    its own LinkProbe before it moves anything)."""
    req = ProbeRequest.from_values(_values(coxa_hz="9", coxa_amp="0.5"), LEGS)
    with pytest.raises(ValueError, match="coxa_amp: the probe reaches"):
        LinkProbe(leg=req.leg, spec=req.spec)


def test_the_probe_lag_setting_is_checked_and_a_lagged_gyro_still_names_the_count():
    """``ProbeConfig.max_lag`` is range-checked; ``LinkProbe.likelihoods`` with ``max_lag`` finds the count of a
    gyro series that lags the schedule by 20 ms, which the unshifted score does worse on."""
    with pytest.raises(ValueError, match=r"max_lag=0.5 outside the allowed range \[0, 0.1\]"):
        ProbeConfig(max_lag=0.5)
    probe = LinkProbe(leg="LM")
    truth = probe.predicted(1)
    lagged = np.vstack([np.repeat(truth[:1], 2, axis=0), truth[:-2]])          # 2 samples (20 ms) late
    rng = np.random.default_rng(0)
    noisy = lagged + rng.normal(0.0, probe.gyro_noise, lagged.shape)
    p = probe.likelihoods(noisy, counts=(0, 1, 2), max_lag=3)
    assert max(p, key=p.get) == 1 and p[1] > 0.9, p
    p0 = probe.likelihoods(noisy, counts=(0, 1, 2))
    assert p0[1] < p[1] or math.isclose(p0[1], 1.0), (p0, p)
    with pytest.raises(ValueError, match="max_lag"):
        probe.likelihoods(noisy, max_lag=-1)
