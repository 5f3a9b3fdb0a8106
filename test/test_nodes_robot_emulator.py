"""robot_emulator alone over real DDS: recording its run to a sqlite3 bag (parameter ``record_storage``)."""
import os

import pytest
import yaml

pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402

from jethexa_dynamics.nodes.graph import Graph, wait_for  # noqa: E402
from jethexa_dynamics.nodes.robot_emulator import RobotEmulator  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(180)]


def test_record_storage_sqlite3_writes_a_bag_that_reads_back(tmp_path):
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    bag = tmp_path / "emulated"
    g = Graph()
    try:
        emu = g.add(RobotEmulator, {"port_link": str(tmp_path / "bus"), "record": str(bag),
                                    "record_storage": "sqlite3"})
        g.start()
        assert wait_for(lambda: emu.recorder.counts.get("/mocap/pose", 0) >= 10, 60.0), emu.recorder.counts
        # read-only: cannot be changed while recording
        assert not emu.set_parameters([Parameter("record_storage", value="mcap")])[0].successful
    finally:
        g.close()
    assert sorted(p.suffix for p in bag.iterdir() if p.suffix in (".db3", ".mcap")) == [".db3"]
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["storage_identifier"] == "sqlite3"
    store = get_typestore(Stores.ROS2_HUMBLE)
    with Reader(bag) as reader:
        conns = [c for c in reader.connections if c.topic == "/mocap/pose"]
        assert conns and conns[0].msgtype == "geometry_msgs/msg/PoseStamped"
        poses = [store.deserialize_cdr(raw, c.msgtype) for c, _, raw in reader.messages(connections=conns)]
    assert len(poses) >= 10
    assert {p.header.frame_id for p in poses} == {"world"}
    assert 0.05 < poses[-1].pose.position.z < 0.2                    # the emulated robot stands
    assert not os.path.lexists(tmp_path / "bus")                       # pty link removed on close


def test_record_storage_choices_are_the_writer_storages():
    from jethexa_dynamics.nodes import params as node_params
    from jethexa_dynamics.nodes.param_spec import ParamError
    from jethexa_dynamics.validation.bag_io import STORAGES

    spec = node_params.ROBOT_EMULATOR["record_storage"]
    assert set(spec.choices) == set(STORAGES) and spec.read_only
    with pytest.raises(ParamError, match=r"'record_storage'.*mcap, sqlite3"):
        spec.validate("rosbag1")
