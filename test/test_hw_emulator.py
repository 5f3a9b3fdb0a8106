"""BusEmulator.set_positions: place servos at rest (rad or ticks), what position reads and the commanded
trajectory report; bad values are refused before any servo moves."""
import math

import pytest

from jethexa_dynamics.hardware.bus import DirectUartBus
from jethexa_dynamics.hardware.emulator import BusEmulator
from jethexa_dynamics.hardware.errors import JointLimitError, ParameterError


def test_set_positions_in_rad_and_ticks_reach_reads_and_commands():
    em = BusEmulator().start()
    try:
        spec = em.table.by_joint("femur_joint_RM")
        em.set_positions({"femur_joint_RM": 0.3, "coxa_joint_LF": -0.2})
        em.set_positions({5: 700}, unit="ticks")                                   # servo 5 = coxa_joint_LF
        assert em.commanded_position("femur_joint_RM") == pytest.approx(0.3, abs=0.005)   # tick resolution
        assert em.servo(5).target == em.servo(5).start == 700.0
        with DirectUartBus(em.port, reply_timeout=0.2) as bus:
            assert bus.read_position(spec.servo_id) == spec.to_ticks(0.3)             # at rest there, not moving
            assert bus.read_position(5) == 700
        # all values are checked before anything moves; the error names the servo and the range
        before = em.servo(5).target
        with pytest.raises(JointLimitError, match="femur_joint_RM"):
            em.set_positions({5: 0.0, "femur_joint_RM": 9.0})
        with pytest.raises(ParameterError, match=r"servo 5 \[ticks\].*0\.\.1000"):
            em.set_positions({5: math.nan}, unit="ticks")
        with pytest.raises(ParameterError, match="unit"):
            em.set_positions({5: 1.0}, unit="deg")
        with pytest.raises(ParameterError, match="joint"):
            em.set_positions({"knee_joint_XX": 0.0})
        assert em.servo(5).target == before
    finally:
        em.stop()


@pytest.mark.parametrize("bad", [10, 2e7, "fast", float("nan")])
def test_a_line_rate_outside_its_range_is_refused_with_its_name(bad):
    """``line_rate``: None, 'auto' or a rate in [1200, 10 000 000] baud; anything else is one clear error."""
    with pytest.raises(ParameterError, match=r"line_rate.*1200"):
        BusEmulator(line_rate=bad)
    assert BusEmulator(line_rate="auto").line_rate == 115200.0
    assert BusEmulator(transport="rrc", line_rate="auto").line_rate == 1e6
    assert BusEmulator().line_rate is None


def test_a_servos_commanded_trajectory_before_its_latest_move_is_the_move_that_ran_then():
    """A move cut short by the next keeps its own trajectory for the times before the next began: an emulator on
    the robot's line executes a write's frames ahead of the world brought up to them, which then asks for the
    past. Oracle: the piecewise-linear law by hand (500 -> 600 over 1 s from t=0, then at 0.5 s from 550 -> 400
    over 1 s)."""
    from jethexa_dynamics.hardware.servo_model import MOVE_HISTORY, EmulatedServo

    s = EmulatedServo(servo_id=1)
    s.place(500.0, 0.0)
    s.move(600, 1000, 0.0)
    s.move(400, 1000, 0.5)
    assert s.logical(0.25) == pytest.approx(525.0)          # the first move, not the second's start held
    assert s.logical(0.5) == pytest.approx(550.0)
    assert s.logical(0.75) == pytest.approx(512.5)
    assert s.logical(2.0) == pytest.approx(400.0)
    assert s.logical(-1.0) == pytest.approx(500.0)          # before any move: at rest where it was placed
    assert {0.0, 1.0, 0.5, 1.5} <= set(s.kinks())
    s.freeze(1.0)                                            # a stop holds where it was and keeps the past
    assert s.logical(1.5) == pytest.approx(475.0) and s.logical(0.75) == pytest.approx(512.5)
    s.place(700.0, 3.0)                                      # placed, not moved: no past
    assert s.logical(0.75) == 700.0 and s.kinks() == (3.0, 3.0)
    for k in range(2 * MOVE_HISTORY):                        # a bounded past: the oldest moves are let go
        s.move(500 + k, 10, 4.0 + 0.01 * k)
    assert len(s.history) == MOVE_HISTORY
