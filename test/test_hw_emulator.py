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
