"""Protocol layer against the published bytes (reference anchors_hardware_ros.md §1.1, §1.5) and properties.

Oracles: the worked examples of the reference table; the checksum formula as written by another
implementation (maximkulkin's lewansoul-lx16a: 255 - ((id+len+cmd+sum(params)) % 256)); CRC-8/MAXIM's
published check value and Hiwonder's CRC table.
"""
import struct

import pytest
from hypothesis import given, settings, strategies as st

from jethexa_dynamics.hardware import protocol as P
from jethexa_dynamics.hardware import rrc as R
from jethexa_dynamics.hardware.errors import FrameError, ParameterError

PUBLISHED = [
    ("move ID1 to 500 in 1000 ms", lambda: P.move_time_write(1, 500, 1000), "55 55 01 07 01 F4 01 E8 03 16"),
    ("POS_READ request", lambda: P.read_request(1, P.Cmd.POS_READ), "55 55 01 03 1C DF"),
    ("VIN_READ request", lambda: P.read_request(1, P.Cmd.VIN_READ), "55 55 01 03 1B E0"),
    ("TEMP_READ request", lambda: P.read_request(1, P.Cmd.TEMP_READ), "55 55 01 03 1A E1"),
    ("unload", lambda: P.encode_command(1, P.Cmd.LOAD_OR_UNLOAD_WRITE, 0), "55 55 01 04 1F 00 DB"),
    ("load", lambda: P.encode_command(1, P.Cmd.LOAD_OR_UNLOAD_WRITE, 1), "55 55 01 04 1F 01 DA"),
    ("ID_READ broadcast", lambda: P.read_request(P.BROADCAST_ID, P.Cmd.ID_READ), "55 55 FE 03 0E F0"),
    ("offset adjust -10", lambda: P.encode_command(1, P.Cmd.ANGLE_OFFSET_ADJUST, -10), "55 55 01 04 11 F6 F3"),
    ("angle limit 0..1000", lambda: P.encode_command(1, P.Cmd.ANGLE_LIMIT_WRITE, 0, 1000),
     "55 55 01 07 14 00 00 E8 03 F8"),
]


def oracle_checksum(servo_id, length, cmd, params):
    return 255 - ((servo_id + length + cmd + sum(params)) % 256)


@pytest.mark.parametrize("what,make,expected", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_published_frames_encode_byte_for_byte(what, make, expected):
    assert make() == bytes.fromhex(expected)


def test_published_pos_read_reply_decodes():
    events = P.FrameParser().feed(bytes.fromhex("55 55 01 05 1C F4 01 E8"))
    assert events == [P.Frame(1, P.Cmd.POS_READ, b"\xf4\x01")]
    assert P.decode_params(events[0].cmd, events[0].params) == (500,)


def test_published_frames_decode_back():
    for _, make, expected in PUBLISHED:
        (fr,) = P.FrameParser().feed(bytes.fromhex(expected))
        assert fr.encode() == bytes.fromhex(expected)


def test_command_numbers_match_reference_table():
    expected = {"MOVE_TIME_WRITE": 1, "MOVE_TIME_READ": 2, "MOVE_TIME_WAIT_WRITE": 7, "MOVE_TIME_WAIT_READ": 8,
                "MOVE_START": 11, "MOVE_STOP": 12, "ID_WRITE": 13, "ID_READ": 14, "ANGLE_OFFSET_ADJUST": 17,
                "ANGLE_OFFSET_WRITE": 18, "ANGLE_OFFSET_READ": 19, "ANGLE_LIMIT_WRITE": 20, "ANGLE_LIMIT_READ": 21,
                "VIN_LIMIT_WRITE": 22, "VIN_LIMIT_READ": 23, "TEMP_MAX_LIMIT_WRITE": 24, "TEMP_MAX_LIMIT_READ": 25,
                "TEMP_READ": 26, "VIN_READ": 27, "POS_READ": 28, "OR_MOTOR_MODE_WRITE": 29,
                "OR_MOTOR_MODE_READ": 30, "LOAD_OR_UNLOAD_WRITE": 31, "LOAD_OR_UNLOAD_READ": 32,
                "LED_CTRL_WRITE": 33, "LED_CTRL_READ": 34, "LED_ERROR_WRITE": 35, "LED_ERROR_READ": 36}
    assert {c.name: c.value for c in P.Cmd} == expected
    # LEN column of the reference: writes with 2 u16 -> 7, 1 byte -> 4, none -> 3; reads -> 3
    lens = {1: 7, 7: 7, 11: 3, 12: 3, 13: 4, 17: 4, 18: 3, 20: 7, 22: 7, 24: 4, 29: 7, 31: 4, 33: 4, 35: 4}
    for cmd, ln in lens.items():
        spec = P.COMMANDS[P.Cmd(cmd)]
        assert 3 + struct.calcsize(spec.fmt or "<") == ln, spec.cmd.name
    replies = {2: 7, 8: 7, 14: 4, 19: 4, 21: 7, 23: 7, 25: 4, 26: 4, 27: 5, 28: 5, 30: 7, 32: 4, 34: 4, 36: 4}
    for cmd, ln in replies.items():
        assert 3 + struct.calcsize(P.COMMANDS[P.Cmd(cmd)].reply_fmt) == ln, cmd


def test_every_write_command_encodes_with_oracle_checksum():
    samples = {1: (1000, 30000), 7: (0, 0), 13: (253,), 17: (125,), 20: (10, 990), 22: (4500, 14500),
               24: (100,), 29: (1, 0, -1000), 31: (1,), 33: (0,), 35: (7,)}
    for cmd, vals in samples.items():
        spec = P.COMMANDS[P.Cmd(cmd)]
        fr = P.encode_command(7, cmd, *vals)
        params = struct.pack(spec.fmt, *vals)
        assert fr == bytes([0x55, 0x55, 7, len(params) + 3, cmd]) + params + bytes(
            [oracle_checksum(7, len(params) + 3, cmd, params)])


@pytest.mark.parametrize("cmd,vals,field", [
    (P.Cmd.MOVE_TIME_WRITE, (1001, 0), "position"), (P.Cmd.MOVE_TIME_WRITE, (0, 30001), "time_ms"),
    (P.Cmd.MOVE_TIME_WRITE, (-1, 0), "position"), (P.Cmd.ANGLE_OFFSET_ADJUST, (126,), "offset"),
    (P.Cmd.ANGLE_OFFSET_ADJUST, (-126,), "offset"), (P.Cmd.TEMP_MAX_LIMIT_WRITE, (49,), "max_temp_c"),
    (P.Cmd.VIN_LIMIT_WRITE, (4000, 12000), "min_mv"), (P.Cmd.ANGLE_LIMIT_WRITE, (600, 500), "min < max"),
    (P.Cmd.ID_WRITE, (254,), "new_id"), (P.Cmd.OR_MOTOR_MODE_WRITE, (1, 0, 1001), "speed"),
    (P.Cmd.LOAD_OR_UNLOAD_WRITE, (2,), "load"), (P.Cmd.MOVE_TIME_WRITE, (500.0, 10), "position"),
])
def test_out_of_range_parameters_name_field_and_range(cmd, vals, field):
    with pytest.raises(ParameterError) as ei:
        P.encode_command(1, cmd, *vals)
    assert field in str(ei.value) and cmd.name in str(ei.value)


def test_bad_servo_id_rejected():
    with pytest.raises(ParameterError, match="servo_id"):
        P.move_time_write(255, 500, 0)


def test_reply_with_wrong_length_is_a_frame_error():
    with pytest.raises(FrameError, match="expected 2"):
        P.decode_params(P.Cmd.POS_READ, b"\x01", servo_id=3)


def test_parser_reports_bad_checksum_with_servo_and_resyncs():
    good = bytes.fromhex("55 55 01 05 1C F4 01 E8")
    bad = bytearray(P.encode_frame(9, P.Cmd.VIN_READ, b"\x10\x27"))
    bad[-1] ^= 0xFF
    p = P.FrameParser()
    events = p.feed(b"\x00\x13" + bytes(bad) + b"\x55" + good)
    assert isinstance(events[0], P.BadFrame) and events[0].servo_id == 9 and events[0].cmd == P.Cmd.VIN_READ
    assert events[-1] == P.Frame(1, 28, b"\xf4\x01")
    assert p.checksum_errors == 1


def test_parser_false_header_does_not_swallow_real_frame():
    # "55 55 03 07" looks like the start of a 10-byte frame; the real reply is inside those 10 bytes
    good = bytes.fromhex("55 55 01 05 1C F4 01 E8")
    p = P.FrameParser()
    assert p.feed(b"\x55\x55\x03\x07" + good[:4]) == []
    events = p.feed(good[4:])
    assert isinstance(events[0], P.BadFrame) and events[0].servo_id == 3  # the false header fails its checksum
    assert events[1:] == [P.Frame(1, 28, b"\xf4\x01")]


def test_parser_keeps_partial_frame_until_complete():
    fr = P.move_time_write(3, 250, 20)
    p = P.FrameParser()
    for i in range(len(fr) - 1):
        assert p.feed(fr[i:i + 1]) == []
    assert p.pending == len(fr) - 1
    assert p.feed(fr[-1:]) == [P.Frame(3, 1, struct.pack("<HH", 250, 20))]
    assert p.pending == 0


def test_parser_servo_id_0x55_is_a_valid_frame():
    fr = P.read_request(0x55, P.Cmd.POS_READ)
    assert P.FrameParser().feed(b"\x55" + fr) == [P.Frame(0x55, 28, b"")]


frames_st = st.builds(
    lambda sid, cmd, params: P.encode_frame(sid, cmd, params),
    st.integers(0, 254), st.sampled_from(list(P.Cmd)), st.binary(max_size=4))


@settings(max_examples=300, deadline=None)
@given(st.lists(frames_st, max_size=8))
def test_roundtrip_any_frames_in_any_chunking(frames):
    stream = b"".join(frames)
    whole = P.FrameParser().feed(stream)
    assert [f.encode() for f in whole] == frames
    p = P.FrameParser()
    chunked = []
    for i in range(0, len(stream), 3):
        chunked += p.feed(stream[i:i + 3])
    assert chunked == whole


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64).filter(lambda b: 0x55 not in b), frames_st, st.binary(max_size=64))
def test_frame_found_after_any_garbage(prefix, frame, suffix):
    events = P.FrameParser().feed(prefix + frame + suffix)
    goods = [e for e in events if isinstance(e, P.Frame)]
    assert goods and goods[0].encode() == frame


@settings(max_examples=500, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=10))
def test_no_byte_stream_crashes_the_parser(chunks):
    p = P.FrameParser()
    stream = b"".join(chunks)
    for c in chunks:
        for ev in p.feed(c):
            if isinstance(ev, P.Frame):
                assert ev.encode() in stream  # every accepted frame really is in the input, checksum valid
            else:
                assert isinstance(ev, P.BadFrame) and ev.raw in stream
    assert p.pending <= P.MAX_LEN + 3


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([c for c in P.Cmd if P.COMMANDS[c].fmt]), st.data())
def test_encode_decode_roundtrip_of_write_commands(cmd, data):
    spec = P.COMMANDS[cmd]
    vals = [data.draw(st.integers(lo, hi)) for _, lo, hi in spec.fields]
    if cmd in (P.Cmd.ANGLE_LIMIT_WRITE, P.Cmd.VIN_LIMIT_WRITE) and vals[0] >= vals[1]:
        with pytest.raises(ParameterError):
            P.encode_command(2, cmd, *vals)
        return
    (fr,) = P.FrameParser().feed(P.encode_command(2, cmd, *vals))
    assert struct.unpack(spec.fmt, fr.params) == tuple(vals) and fr.cmd == cmd and fr.servo_id == 2


# -- RRC board ----------------------------------------------------------------------------------------------
def test_crc8_check_value_and_hiwonder_table():
    assert R.crc8(b"123456789") == 0xA1  # CRC-8/MAXIM catalogue check value
    assert R._CRC8_TABLE[:8] == (0, 94, 188, 226, 97, 63, 221, 131)  # first row of Hiwonder's SDK table
    assert R._CRC8_TABLE[-4:] == (215, 137, 107, 53)


def test_rrc_group_move_bytes():
    pkt = R.bus_move([(1, 500), (2, 0)], 1000)
    data = bytes([0x01, 0xE8, 0x03, 2, 1, 0xF4, 0x01, 2, 0x00, 0x00])
    assert pkt[:4] == bytes([0xAA, 0x55, 5, len(data)]) and pkt[4:-1] == data
    assert pkt[-1] == R.crc8(bytes([5, len(data)]) + data)
    assert R.PacketParser().feed(pkt) == [R.Packet(5, data)]


def test_rrc_parameter_errors():
    with pytest.raises(ParameterError, match="servo 3 position"):
        R.bus_move([(3, 1001)], 10)
    with pytest.raises(ParameterError, match="time_ms"):
        R.bus_move([(3, 100)], 40000)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=10))
def test_no_byte_stream_crashes_the_rrc_parser(chunks):
    p = R.PacketParser()
    for c in chunks:
        for ev in p.feed(c):
            assert isinstance(ev, (R.Packet, R.BadPacket))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=30).filter(lambda b: 0xAA not in b), st.integers(0, 11), st.binary(max_size=60))
def test_rrc_roundtrip_after_garbage(prefix, func, data):
    pkt = R.encode_packet(func, data)
    events = R.PacketParser().feed(prefix + pkt)
    assert R.Packet(func, data) in events
