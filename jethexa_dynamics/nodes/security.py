"""SROS2 policies of the launch graphs, generated from the graph spec so they cannot drift (no rclpy).

``policy/<graph>.policy.xml`` (sros2 policy format 0.2.0) gives each node of ``<graph>.launch.py`` an enclave
``/jethexa/<node>`` (launch argument ``enclave_root``) whose one profile allows exactly the topics and services the
node creates in some launch of that graph (``graph_spec.graph_endpoints``): its own topics and services, its
parameter services, ``/parameter_events``, ``/rosout`` and ``/diagnostics``. One more enclave,
``/jethexa/operator``, is for the people's tools on the robot (teleop, ``ros2 param``, ``ros2 service``,
``ros2 topic echo``): it may publish the graph's inputs that no node of the graph publishes (``cmd_vel``; on the
robot also ``mocap/pose``), call every service of the graph's nodes (their parameters among them) and subscribe
to every topic they publish -- never publish ``morphology``: only the damage_monitor's enclave may. A process
that hosts several of the robot's nodes (launch argument ``composed``, ``graph_spec.LAYOUTS``: ``robot_control``
and ``robot_model`` by default, ``robot`` with all five) has one enclave, ``/jethexa/<process>``, holding its
nodes' profiles: DDS security grants a participant, so there the process as a whole may do what any of its nodes
may (``robot_model`` publishes ``morphology``; what keeps other processes out); the node-level authority check
(``nodes.authority``) still tells its nodes apart.

``python -m jethexa_dynamics.nodes.security`` writes the files (``--check``: exit 1 if a written one differs);
``test/test_security_policy.py`` checks the checked-in files against this generator and the running nodes
against the graph spec. docs/security.md: keystore, enclaves, ``ROS_SECURITY_ENABLE=true``.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape, quoteattr

from jethexa_dynamics.nodes import graph_spec
from jethexa_dynamics.nodes.graph_spec import ENCLAVE_ROOT, Endpoint, enclave

#: the enclave (and profile node name) of the operator's tools
OPERATOR = "operator"
#: (element, rule attribute, item element) of a profile's groups, in the order they are written
GROUPS = (("topics", "publish", "topic"), ("topics", "subscribe", "topic"), ("services", "reply", "service"),
          ("services", "request", "service"))
_ENCLAVE = re.compile(r"^(/[A-Za-z_][A-Za-z0-9_]*)+$")


def fully_qualified(name: str, node: str, namespace: str = "/") -> str:
    """A policy name as sros2 expands it for a profile (``ns``, ``node``): ``/x`` stays, ``~/x`` -> ``<ns>/<node>/x``,
    ``x`` -> ``<ns>/x`` (sros2's policy/templates/dds/permissions.xsl)."""
    ns = namespace if namespace.endswith("/") else namespace + "/"
    if name.startswith("/"):
        return name
    if name.startswith("~"):
        return ns + node + name[1:]
    return ns + name


def namespace(graph: str) -> str:
    """The ROS namespace of ``graph``'s nodes (``/`` unless the graph spec gives one)."""
    return "/" + graph_spec.GRAPHS[graph].get("namespace", "").strip("/")


def operator_endpoints(graph: str) -> Tuple[Endpoint, ...]:
    """What the operator's tools may do on ``graph``: publish the inputs no node of the graph publishes, call every
    service the nodes serve, subscribe to every topic they publish; plus what a ``ros2`` command's own node creates
    on Humble (ros2cli starts it without parameter services)."""
    nodes = graph_spec.graph_endpoints(graph)
    ns = namespace(graph)
    seen: Dict[str, Dict[str, Endpoint]] = {"publish": {}, "subscribe": {}, "reply": {}, "request": {}}
    for node, eps in nodes.items():
        for e in eps:
            seen[e.kind].setdefault(fully_qualified(e.name, node, ns), e)

    def as_(kind, name, e):
        return Endpoint(kind, name, e.type, since=e.since)

    out = [Endpoint("publish", "/rosout", "rcl_interfaces/msg/Log"),
           Endpoint("publish", "/parameter_events", "rcl_interfaces/msg/ParameterEvent")]
    out += [as_("publish", t, e) for t, e in sorted(seen["subscribe"].items()) if t not in seen["publish"]]
    out += [as_("subscribe", t, e) for t, e in sorted(seen["publish"].items())]
    out += [as_("request", s, e) for s, e in sorted(seen["reply"].items())]
    return tuple(out)


def profiles(graph: str) -> Dict[str, Tuple[Endpoint, ...]]:
    """{node name: endpoints} of every node profile of ``graph``'s policy (the operator's last)."""
    out = dict(graph_spec.graph_endpoints(graph))
    out[OPERATOR] = operator_endpoints(graph)
    return out


def enclaves(graph: str) -> Dict[str, Tuple[str, ...]]:
    """{enclave name: the node profiles in it}: one enclave per node (each in a process of its own,
    ``composed:=false``), one per process of several robot nodes in any layout (``graph_spec.LAYOUTS``) with
    their profiles (an enclave is a process's: DDS security grants per participant), and the operator's."""
    nodes = list(profiles(graph))
    out = {n: (n,) for n in nodes if n != OPERATOR}
    for layout in graph_spec.LAYOUTS.values():
        for process, members in layout:
            present = tuple(n for n in members if n in nodes)
            if len(members) > 1 and present:
                out[process] = present
    out[OPERATOR] = (OPERATOR,)
    return out


def _groups(endpoints: Sequence[Endpoint]) -> List[Tuple[str, str, str, List[Endpoint]]]:
    out = []
    for element, rule, item in GROUPS:
        chosen: Dict[str, Endpoint] = {}
        for e in endpoints:
            if e.kind == rule:
                chosen.setdefault(e.name, e)
        if chosen:
            out.append((element, rule, item, [chosen[n] for n in sorted(chosen)]))
    return out


def policy_xml(graph: str, root: str = ENCLAVE_ROOT) -> str:
    """The sros2 policy (format 0.2.0) of ``<graph>.launch.py`` with its enclaves under ``root``."""
    if not _ENCLAVE.match(root):
        raise ValueError("enclave root %r is not an absolute enclave name (e.g. /jethexa)" % root)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             "<!-- SROS2 policy of %s.launch.py (package jethexa_dynamics): one enclave per node, each allowed exactly"
             % graph,
             "     the topics and services the node creates, and an enclave per process of several robot nodes",
             "     (launch argument composed) with the profiles of its nodes. Generated from",
             "     jethexa_dynamics/nodes/graph_spec.py by",
             "     `python -m jethexa_dynamics.nodes.security`; do not edit (test/test_security_policy.py checks it).",
             "     Keystore, enclaves and ROS_SECURITY_ENABLE: docs/security.md. -->",
             '<policy version="0.2.0">', "  <enclaves>"]
    endpoints = profiles(graph)
    for name, nodes in enclaves(graph).items():
        lines += ["    <enclave path=%s>" % quoteattr(enclave(name, root)), "      <profiles>"]
        for node in nodes:
            lines.append('        <profile ns=%s node=%s>' % (quoteattr("/" if node == OPERATOR else namespace(graph)),
                                                             quoteattr(node)))
            for element, rule, item, chosen in _groups(endpoints[node]):
                lines.append('          <%s %s="ALLOW">' % (element, rule))
                for e in chosen:
                    note = "  <!-- %s and later only -->" % e.since.title() if e.since else ""
                    lines.append("            <%s>%s</%s>%s" % (item, escape(e.name), item, note))
                lines.append("          </%s>" % element)
            lines.append("        </profile>")
        lines += ["      </profiles>", "    </enclave>"]
    lines += ["  </enclaves>", "</policy>", ""]
    return "\n".join(lines)


def policy_dir() -> str:
    """``policy/`` of the source tree (the files are installed to share/jethexa_dynamics/policy)."""
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "policy"))


def policy_file(graph: str, directory: Optional[str] = None) -> str:
    return os.path.join(directory or policy_dir(), graph + ".policy.xml")


def build_parser():
    from jethexa_dynamics import cli_args

    def root(text: str) -> str:
        if not _ENCLAVE.match(text):
            raise argparse.ArgumentTypeError(
                "%r is not an absolute enclave name (allowed: /name[/name...], letters, digits and _)" % text)
        return text

    p = cli_args.ArgumentParser(prog="python -m jethexa_dynamics.nodes.security",
                                description="Write the SROS2 policies of the launch graphs (policy/<graph>.policy.xml)"
                                            " from the graph spec.")
    p.add_argument("--out", type=cli_args.output_dir, default=None,
                   help="directory to write to (default: policy/ of the source tree)")
    p.add_argument("--enclave-root", type=root, default=ENCLAVE_ROOT,
                   help="enclave of node N is ROOT/N (default %(default)s; launch argument enclave_root)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file differs from the spec")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    differ = []
    for graph in sorted(graph_spec.GRAPHS):
        path, text = policy_file(graph, args.out), policy_xml(graph, args.enclave_root)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if args.check:
            if old != text:
                differ.append(path)
            continue
        if args.out:
            os.makedirs(args.out, exist_ok=True)
        if old != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        print("%s %s" % ("unchanged" if old == text else "wrote", path))
    for path in differ:
        print("%s differs from the graph spec (regenerate: python -m jethexa_dynamics.nodes.security)" % path)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
