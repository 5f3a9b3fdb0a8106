"""DDS security ready to switch on (issue 25): the SROS2 policies of the launch graphs and the run-time write paths.

``policy/<graph>.policy.xml`` is what ``nodes/security.py`` generates from the graph spec (so it cannot drift), has
the structure of sros2's policy schema (0.2.0), gives every node the launch file starts an enclave with exactly
the endpoints the spec lists for it (and nothing else), and the spec is what the nodes really create: they are
started and the ROS graph is asked. The launch files pass each node its enclave. Secure DDS itself cannot run
here (no sros2, no keystore); docs/security.md says what was and was not run.
"""
import os
import time
import re
import sys
import xml.etree.ElementTree as ET

import pytest

from jethexa_dynamics.nodes import graph_spec, params as node_params, security
from jethexa_dynamics.nodes.graph_spec import ENDPOINTS, GRAPHS, enclave
from jethexa_dynamics.nodes.security import fully_qualified

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def parse(graph, path=None):
    """{enclave path: (profile node, {(kind, name)})} of a policy file's one-node enclaves (the enclaves of
    processes of several robot nodes under ``parse.robot[path]`` = {node: rules}), checking it against sros2's policy.xsd
    (format 0.2.0) on the way: element names, nesting, required attributes, rule values, no empty lists."""
    tree = ET.parse(path or security.policy_file(graph))
    root = tree.getroot()
    assert root.tag == "policy" and root.attrib == {"version": "0.2.0"}
    assert [c.tag for c in root] == ["enclaves"]
    out = {}
    parse.robot = {}
    for enc in root.find("enclaves"):
        assert enc.tag == "enclave" and set(enc.attrib) == {"path"} and enc.get("path") not in out
        assert [c.tag for c in enc] == ["profiles"]
        profiles = enc.find("profiles")
        assert {c.tag for c in profiles} == {"profile"}
        found = {}
        for prof in profiles:
            ns = "/" if prof.get("node") == security.OPERATOR else security.namespace(graph)
            assert prof.get("ns") == ns and prof.get("node") and set(prof.attrib) == {"ns", "node"}
            assert prof.get("node") not in found
            rules = set()
            for group in prof:
                item = {"topics": "topic", "services": "service"}[group.tag]
                kinds = {"topics": ("publish", "subscribe"), "services": ("reply", "request")}[group.tag]
                assert set(group.attrib) <= set(kinds) and len(group.attrib) == 1
                (kind, value), = group.attrib.items()
                assert value == "ALLOW"
                names = [c.text for c in group]
                assert names and all(c.tag == item and c.text and not len(c) for c in group)
                assert len(set(names)) == len(names)
                rules |= {(kind, n) for n in names}
            found[prof.get("node")] = rules
        if len(found) == 1:
            (node, rules), = found.items()
            out[enc.get("path")] = (node, rules)
        else:                                              # a process of several robot nodes: their profiles
            parse.robot[enc.get("path")] = found
    return out


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_checked_in_policy_is_what_the_graph_spec_gives(graph):
    with open(security.policy_file(graph), encoding="utf-8") as f:
        assert f.read() == security.policy_xml(graph)
    assert os.path.dirname(security.policy_file(graph)) == os.path.normpath(os.path.join(ROOT, "policy"))


def test_check_finds_a_drifted_policy_and_bad_options_exit_2(tmp_path, capsys):
    assert security.main(["--check"]) == 0
    assert security.main(["--out", str(tmp_path)]) == 0
    path = tmp_path / "sim.policy.xml"
    text = path.read_text()
    path.write_text(text.replace("<topic>cmd_vel</topic>\n", "", 1))      # a hand edit: drift
    capsys.readouterr()
    assert security.main(["--out", str(tmp_path), "--check"]) == 1
    assert "sim.policy.xml differs from the graph spec" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        security.main(["--enclave-root", "jethexa"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --enclave-root" in err and err.count("\n") == 1
    assert set(parse("sim", _write(tmp_path / "r", "/robot7"))) | set(parse.robot) == {
        "/robot7/" + n for n in security.enclaves("sim")}


def _write(directory, root):
    assert security.main(["--out", str(directory), "--enclave-root", root]) == 0
    return str(directory / "sim.policy.xml")


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_every_node_has_its_enclave_with_exactly_its_endpoints(graph):
    policy = parse(graph)
    launched = [e.name for e in GRAPHS[graph]["nodes"]] + (
        [graph_spec.ROBOT_STATE_PUBLISHER.name] if GRAPHS[graph].get("robot_state_publisher", True) else [])
    assert set(policy) == {enclave(n) for n in launched + [security.OPERATOR]}
    for node, eps in graph_spec.graph_endpoints(graph).items():
        assert policy[enclave(node)] == (node, {(e.kind, e.name) for e in eps}), node
    # each process of several robot nodes (graph_spec.LAYOUTS): one enclave with exactly its nodes' profiles
    assert parse.robot == {enclave(label): {n: policy[enclave(n)][1] for n in members if n in launched}
                           for layout in graph_spec.LAYOUTS.values() for label, members in layout
                           if len(members) > 1 and set(members) & set(launched)}
    assert set(parse.robot) == ({enclave("robot"), enclave("robot_model")} if graph == "companion" else
                                {enclave("robot"), enclave("robot_control"), enclave("robot_model")})
    # the enclave of a node is where the launch file puts it: <enclave_root default>/<node name>
    arg = next(a for a in GRAPHS[graph]["arguments"] if a.name == "enclave_root")
    assert arg.default == graph_spec.ENCLAVE_ROOT and arg.targets == ()


@pytest.mark.parametrize("graph", sorted(g for g in GRAPHS if not GRAPHS[g].get("namespace")))
def test_only_the_damage_monitor_may_publish_morphology_and_the_operator_what_no_node_publishes(graph):
    published = {}
    for path, (node, rules) in parse(graph).items():
        for kind, name in rules:
            if kind == "publish":
                published.setdefault(fully_qualified(name, node), set()).add(node)
    # the enclaves of processes of several robot nodes: morphology from a damage_monitor profile only
    for path, profiles in parse.robot.items():
        assert [n for n, rules in profiles.items() if ("publish", "morphology") in rules] == (
            ["damage_monitor"] if "damage_monitor" in profiles else []), path
    assert published["/morphology"] == {"damage_monitor"}
    assert published["/cmd_vel"] == {security.OPERATOR}
    assert published["/joint_commands"] == {"gait_controller"}
    assert published.get("/mocap/pose") == ({"robot_emulator"} if graph == "sim" else {security.OPERATOR})
    node, rules = parse(graph)[enclave(security.OPERATOR)]
    # the operator calls every service of every node (parameters: the run-time write paths) and serves none
    for n in [e.name for e in GRAPHS[graph]["nodes"]]:
        assert ("request", "/%s/set_parameters" % n) in rules
    assert not [r for r in rules if r[0] == "reply"]


def test_the_companion_policy_lives_in_its_namespace_and_reads_only_the_stock_topics():
    """companion.launch.py: its nodes' names under /companion; stock_adapter alone publishes its joint_commands and
    imu/data; the stock topics are read, never written, by any node of the graph."""
    published, subscribed = {}, {}
    for path, (node, rules) in parse("companion").items():
        ns = "/" if node == security.OPERATOR else "/companion"
        for kind, name in rules:
            if kind in ("publish", "subscribe"):
                (published if kind == "publish" else subscribed).setdefault(
                    fully_qualified(name, node, ns), set()).add(node)
    assert published["/companion/morphology"] == {"damage_monitor"}
    assert published["/companion/joint_commands"] == {"stock_adapter"}
    assert published["/companion/imu/data"] == {"stock_adapter"}
    assert subscribed["/controller_manager/joint_states"] == {"stock_adapter"}
    assert subscribed["/imu"] == {"stock_adapter"}
    nodes = {"stock_adapter", "predictor", "damage_monitor"}
    assert not nodes & (published.get("/controller_manager/joint_states", set()) | published.get("/imu", set())
                        | published.get("/joint_commands", set()) | published.get("/joint_states", set()))


def test_conditional_endpoints_hang_on_read_only_parameters():
    """A node's endpoints are fixed at start-up: a run-time parameter change cannot leave the policy behind."""
    conds = [(exe, e.when.param) for exe, eps in ENDPOINTS.items() for e in eps if e.when is not None]
    assert conds and all(node_params.ALL[exe][param].read_only for exe, param in conds)


@pytest.mark.parametrize("composed", ["split", "true", "false"])
def test_launch_description_gives_every_process_its_enclave(monkeypatch, composed):
    """launch_description with stand-ins for launch / launch_ros (not installable here): every process, the
    robot_state_publisher included, gets ``--enclave <enclave_root>/<name>`` -- a process of several robot nodes
    ``<enclave_root>/<its group>`` (robot_control, robot_model; robot) -- and every enclave the launch uses is in
    the policy."""
    import launch_stub

    launch_stub.install(monkeypatch)
    monkeypatch.setattr(graph_spec, "missing_device", lambda kit, exists=None: None)    # the robot's devices
    for graph in GRAPHS:
        for root in (graph_spec.ENCLAVE_ROOT, "/robot7"):
            values = {"composed": composed, "enclave_root": root}
            _, actions = launch_stub.evaluate(graph_spec.launch_description(graph), values)
            nodes = [a for a in actions if type(a).__name__ == "Node"]
            launched = graph_spec.processes(graph, values)
            rsp = ["robot_state_publisher"] if GRAPHS[graph].get("robot_state_publisher", True) else []
            assert [n.kwargs["name"] or n.kwargs["executable"] for n in nodes] == [
                p.name or p.executable for p in launched] + rsp
            names = [p.label for p in launched] + rsp
            present = {e.name for e, _ in graph_spec.node_parameters(graph, values)}     # the kit's nodes
            layout = [tuple(x for x in m if x in present) for _, m in graph_spec.LAYOUTS[composed]]
            assert [m for m in layout if m] == [p.arguments or (p.name,) for p in launched
                                                if p.name not in ("robot_emulator", "stock_adapter")]
            for n, name in zip(nodes, names):
                flag, value = n.kwargs["ros_arguments"]
                assert flag == "--enclave"
                rendered = value if isinstance(value, str) else "".join(
                    values[p.args[0]] if type(p).__name__ == "LaunchConfiguration" else p for p in value)
                assert rendered == root + "/" + name
                assert name in security.enclaves(graph)


def test_docs_list_every_run_time_parameter_with_who_sets_it():
    """docs/security.md: every parameter that can change at run time (not read-only), with who is expected to set
    it -- the write paths besides the topics."""
    text = open(os.path.join(ROOT, "docs", "security.md"), encoding="utf-8").read()
    table = text[text.index("Run-time write paths\n"):]
    rows = set(re.findall(r"^\| `(\w+)` \| `(\w+)` \|[^|\n]*\w[^|\n]*\|[^|\n]*\w[^|\n]*\|$", table, re.M))
    runtime = {(node, s.name) for node, ps in node_params.ALL.items() for s in ps if not s.read_only}
    assert rows == runtime, (sorted(runtime - rows), sorted(rows - runtime))


def bad_value(spec):
    """A value outside the spec's range (None: any value of the type is allowed by the spec)."""
    if spec.kind == "bool":
        return "yes"
    if spec.kind in ("int", "double"):
        return (spec.hi + 1) if spec.hi is not None else (spec.lo - 1 if spec.lo is not None else None)
    if spec.kind == "int_array":
        return [int(spec.hi) + 1] * (spec.length if isinstance(spec.length, int) else 1)
    if spec.kind == "double_array" and spec.hi is not None:
        return [spec.hi + 1.0] * (spec.length if isinstance(spec.length, int) else 1)
    if spec.choices:
        return "no-such-choice"
    return {"damage": "LM:7", "breaks": "XX:1"}.get(spec.name)


# ---------------------------------------------------------------------------------------------- running nodes
rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402

from jethexa_dynamics.nodes.graph import Graph, add_launch_graph  # noqa: E402

KINDS = (("publish", "get_publisher_names_and_types_by_node"), ("subscribe", "get_subscriber_names_and_types_by_node"),
         ("reply", "get_service_names_and_types_by_node"), ("request", "get_client_names_and_types_by_node"))


def created(probe, name, namespace="/"):
    """{(kind, fully qualified name, type)} of what node ``name`` created, as the ROS graph has it."""
    return {(kind, n, t) for kind, method in KINDS for n, types_ in getattr(probe, method)(name, namespace)
            for t in types_}


def _rclpy_has(since):
    if since == "iron":       # the type-description service came with Iron
        import importlib.util

        return importlib.util.find_spec("rclpy.type_description_service") is not None
    return True


def qos_created(probe, name):
    """{(kind, topic): (reliability, durability)} of node ``name``'s publishers and subscriptions, as the ROS graph
    has them (the ROS client library's own /rosout and /parameter_events left out; the graph does not carry a
    subscription's depth: test_the_qos_profiles_are_the_nodes_own checks those)."""
    out = {}
    for kind, method in (("publish", "get_publishers_info_by_topic"), ("subscribe", "get_subscriptions_info_by_topic")):
        for topic, _ in probe.get_topic_names_and_types():
            if topic in ("/rosout", "/parameter_events"):
                continue
            for info in getattr(probe, method)(topic):
                if info.node_name == name and info.node_namespace == "/":
                    q = info.qos_profile
                    out[(kind, topic)] = (q.reliability.name.lower(), q.durability.name.lower())
    return out


def qos_of_spec(entry, values):
    """The same, as graph_spec's endpoints give it (``Endpoint.qos``, ``graph_spec.QOS``)."""
    out = {}
    for e in graph_spec.node_endpoints(entry.executable, values):
        if e.kind in ("publish", "subscribe") and e.name not in ("/rosout", "/parameter_events"):
            q = graph_spec.QOS[e.qos]
            out[(e.kind, fully_qualified(e.name, entry.name))] = (q.reliability, q.durability)
    return out


def test_the_qos_profiles_are_the_nodes_own():
    """graph_spec.QOS, what the node reference pages print, is what the nodes create their endpoints with."""
    from jethexa_dynamics.nodes import _common, bag_recorder

    made = {"sensor": _common.SENSOR_QOS, "polled_sensor": _common.POLLED_SENSOR_QOS,
            "reliable": _common.RELIABLE_QOS, "latched": _common.LATCHED_QOS,
            "recorder": bag_recorder.STREAM_QOS, "recorder_latched": bag_recorder.LATCHED_QOS}
    assert set(made) == set(graph_spec.QOS)
    for name, q in made.items():
        spec = graph_spec.QOS[name]
        assert (q.reliability.name.lower(), q.durability.name.lower(), q.depth) == (
            spec.reliability, spec.durability, spec.depth), name
    assert bag_recorder.DEFAULT_LATCHED == ("morphology",)


@pytest.fixture(scope="module", params=["bringup", "sim"])
def running(request, tmp_path_factory):
    """The nodes of a launch graph, started in one process: bringup as launched by default (no servo bus, no
    IMU chip here: the nodes wait for them), sim with recovery on and recording (the conditional endpoints)."""
    graph = request.param
    args = {} if graph == "bringup" else {"recovery": "true", "port_link": "/tmp/jethexa_policy_bus_%d" % os.getpid(),
                                          "record": str(tmp_path_factory.mktemp("rec") / "bag")}
    g = Graph()
    try:
        nodes = add_launch_graph(g, graph, args)
        yield graph, graph_spec.node_parameters(graph, args), nodes, g
    finally:
        g.close()


@pytest.mark.ros
@pytest.mark.timeout(300)
def test_running_nodes_create_exactly_the_spec_endpoints_and_the_policy_covers_them(running):
    graph, params, nodes, _ = running
    policy = parse(graph)
    probe = next(iter(nodes.values()))
    for entry, values in params:
        actual = created(probe, entry.name)
        spec = {(e.kind, fully_qualified(e.name, entry.name), e.type)
                for e in graph_spec.node_endpoints(entry.executable, values) if _rclpy_has(e.since)}
        assert actual == spec, (entry.name, sorted(actual - spec), sorted(spec - actual))
        assert qos_created(probe, entry.name) == qos_of_spec(entry, values), entry.name
        node, rules = policy[enclave(entry.name)]
        allowed = {(kind, fully_qualified(name, node)) for kind, name in rules}
        assert {(kind, n) for kind, n, _ in actual} <= allowed, entry.name


@pytest.mark.ros
@pytest.mark.timeout(300)
def test_run_time_parameters_refuse_out_of_range_values(running):
    """Every parameter that can change at run time, given a value outside its range through the node's parameter
    service path (set_parameters): refused, the node keeps its value. The authority parameters are read-only."""
    _, params, nodes, _ = running
    tried = 0
    for entry, _ in params:
        node = nodes[entry.name]
        for spec in node_params.ALL[entry.executable]:
            bad = None if spec.read_only else bad_value(spec)
            if spec.name.startswith("morphology_"):
                assert spec.read_only
                bad = "/intruder"
            if bad is None:
                continue
            before = node.p[spec.name]
            res = node.set_parameters([Parameter(spec.name, value=bad)])[0]
            assert not res.successful, (entry.name, spec.name, bad)
            assert node.p[spec.name] == before and node.get_parameter(spec.name).value == before
            tried += 1
    assert tried > 20


@pytest.mark.ros
@pytest.mark.timeout(300)
def test_every_diagnostics_key_a_running_node_publishes_is_declared(running):
    """What the nodes publish on /diagnostics, spinning (the sim graph walking), against nodes/diagnostics.py, what
    the node reference pages print: every status and every key is declared there."""
    from diagnostic_msgs.msg import DiagnosticArray

    from jethexa_dynamics.nodes import diagnostics
    from jethexa_dynamics.nodes.graph import Watcher, wait_for

    graph, params, nodes, g = running
    executables = {entry.name: entry.executable for entry, _ in params}
    seen = {}

    def take(msg):
        for st in msg.status:
            seen.setdefault(st.name, set()).update(kv.key for kv in st.values)

    watcher = g.add(Watcher, name="diagnostics_watcher")
    watcher.watch(DiagnosticArray, "/diagnostics", accept=take)
    g.start()
    watcher.drive(0.05)
    expected = set(executables)
    wait_for(lambda: {n.split(": ")[0] for n in seen} >= expected
             and (graph != "sim" or any(": servo " in n for n in seen)), 120)
    time.sleep(3.0)                       # a few more reports: the walk under way
    undeclared = []
    for name, keys in sorted(seen.items()):
        node, _, what = name.partition(": ")
        if node not in executables:
            continue
        statuses = [s for s in diagnostics.KEYS[executables[node]] if diagnostics.pattern(s.name).fullmatch(what)]
        if not statuses:
            undeclared.append(name)
            continue
        undeclared += ["%s: %s" % (name, k) for k in sorted(keys) if not statuses[0].match(k)]
    assert not undeclared, ("published on /diagnostics but not declared in jethexa_dynamics/nodes/diagnostics.py "
                            "(KEYS; then python -m jethexa_dynamics.nodes.reference): %s" % undeclared)
    assert {n.split(": ")[0] for n in seen} >= expected, sorted(seen)
