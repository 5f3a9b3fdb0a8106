"""LeanExecutor: rclpy's single-threaded executor without its per-wake-up rebuild, for the robot's computer.

Why. rclpy's ``SingleThreadedExecutor`` (Humble to Kilted alike) rebuilds its wait set in Python at every
wake-up: it filters every timer, subscription and service of every node through the callback groups, enters
each handle's context, allocates a new rcl/rmw wait set, and wraps each ready callback in a ``Task`` whose
guard condition it triggers twice, which wakes it once more for nothing. Measured on the sim graph's composed
robot process (72 entities: 14 subscriptions, 18 timers, 38 services, 2 guard conditions; ~570 wake-ups/s):
~440 µs of CPU per wake-up here, about 0.25 CPU-s/s of the 0.74 the robot's nodes took, which is 1.3 Nano
cores at the 5x per-core slowdown (BENCHMARKS.md, ``benchmarks/bench_nano_budget.py``).

What this one does instead:

* it gathers the entities and enters their handles' contexts once, and again only after ``wake()`` (which
  rclpy's nodes call whenever they create or destroy an entity; ``add_node``/``remove_node`` too). Holding the
  contexts keeps a destroyed entity's rcl object alive until that rebuild, as rclpy's own executor does for
  the length of one wait;
* it keeps one ``_rclpy.WaitSet`` and refills it at each wait (``clear_entities`` + one ``add_*`` per entity,
  C calls);
* after a wait it runs every ready callback directly, in the order the nodes were added and, in a node,
  timers, then subscriptions, services, clients (a ``robot`` process adds servo_driver, imu and
  gait_controller before the predictor and damage_monitor: on a starved CPU the gait's timer runs first);
  one message per ready subscription per wait, as rclpy takes them. When a callback creates or destroys an
  entity, the rest of that wait's ready list is left for the next wait (a destroyed subscription never gets
  a message after its destruction).

Polled subscriptions. A subscription marked ``POLLED`` (``setattr(sub, POLLED, True)``; ``ThinNode.sub(...,
wake=False)``) is left out of the wait set: its messages never wake the executor; they are taken, all of them
(at most ``POLL_LIMIT`` per subscription), at every wake-up of its node (one of the node's own timers,
subscriptions, services or clients is ready), before that wake-up's ready callbacks; a wake-up at which no
node's entity is ready (the wait timed out in an idle process; the executor's guard condition, a QoS event:
rare) takes every node's. A node whose cycle is set by
a timer or by one sensor topic takes its other inputs this way, fresh at each cycle, for one wake-up per cycle
instead of one per message: on this machine a wake-up of a process costs ~50-100 µs of CPU before any Python
runs (rcl, the DDS listener's futex, the scheduler), about the cost of the work the message brings. A node
with polled subscriptions needs such a rhythm (every node has its diagnostics timer at least). In a process
of several nodes the other nodes' wake-ups do not take its messages: each take costs ~10 µs even when there is
none, and the model's process woke ~170 times a second for ~7 polled subscriptions. Under rclpy's own executors
a polled subscription is an ordinary one.

It covers what the robot's nodes and the demo use: subscriptions (message-only or message-and-info
callbacks), timers (including cancel and ``reset``), services, clients (their futures completed as rclpy does),
tasks (``create_task``, a future's done callbacks: one step per spin, as rclpy runs them), in one thread;
waitables (QoS event handlers, ...) go through rclpy's own handler. A node's own guard conditions, ``async def``
callbacks and timers that take a ``TimerInfo`` make it hand every wake-up to ``SingleThreadedExecutor`` itself,
unchanged (until the entity is gone), so such a node still works, at rclpy's cost.

Exceptions from a callback propagate out of ``spin_once`` as with rclpy's executor. Callback groups are not
consulted: one thread runs one callback at a time, which is what every group allows.

It relies on rclpy's ``_rclpy`` binding for the wait set and for taking messages, which rclpy's executor uses
in the same way from Humble (rclpy 3.3) to Kilted (rclpy 9): ``WaitSet(subs, guards, timers, clients,
services, events, context)``, ``clear_entities``, ``add_subscription/add_timer/add_service/add_guard_condition``,
``wait``, ``get_ready_entities``, ``take_message``, ``call_timer``, ``is_timer_ready``, ``service_take_request``.

Example::

    executor = LeanExecutor()
    executor.add_node(node)
    while rclpy.ok():
        executor.spin_once(timeout_sec=0.1)
"""
from __future__ import annotations

import inspect
from contextlib import ExitStack
from typing import Any, Callable, List, Optional, Tuple

from rclpy.executors import ExternalShutdownException, InvalidHandle, SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.subscription import Subscription
from rclpy.utilities import timeout_sec_to_nsec
from rclpy.waitable import NumberOfEntities

try:  # Iron and later: a timer callback may ask for a TimerInfo
    from rclpy.timer import TimerInfo
except ImportError:  # Humble
    TimerInfo = None

#: the callback type of a subscription whose callback takes only the message (Iron and later; Humble has only those)
_MESSAGE_ONLY = getattr(getattr(Subscription, "CallbackType", None), "MessageOnly", None)


#: attribute that marks a subscription as polled (see the module's docstring)
POLLED = "jethexa_polled"
#: most messages taken from one polled subscription at one wake-up (its QoS depth is at most this in practice)
POLL_LIMIT = 50


def _wants_timer_info(callback: Callable) -> bool:
    if TimerInfo is None or callback is None:
        return False
    try:
        return any(p.annotation is TimerInfo for p in inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):
        return False


def _entities_by_kind(node):
    """A node's entities by kind, in the order their ready callbacks run: timers, subscriptions, services, clients."""
    return tuple(node.timers), tuple(node.subscriptions), tuple(node.services), tuple(node.clients)


class LeanExecutor(SingleThreadedExecutor):
    """A single-threaded rclpy executor that builds its wait set once per change of the nodes' entities.

    Attributes (counters since construction, for benchmarks and tests): ``waits`` (waits on the lean path),
    ``calls`` (callbacks it ran itself), ``rebuilds``, ``delegated`` (wake-ups handed to rclpy's executor),
    ``drains`` (wake-ups that took the polled subscriptions' messages). ``received_ns``: while a subscription's
    callback runs, when rmw received its message (``ThinNode.arrival_time``).
    """

    def __init__(self, *, context=None) -> None:
        super().__init__(context=context)
        self._ordered: List[Any] = []          # nodes in the order they were added (rclpy keeps a set)
        self._stale = True
        self._held = ExitStack()
        self._wait_set = None
        self._lean = False
        self._waitables: List[Tuple[Any, Any]] = []     # (waitable, node)
        self._guards: List[Any] = []                 # handles of the executor's own guard conditions
        self._adds: List[Tuple[Callable, Any]] = []  # (wait set's add_*, handle) of every entity, in order
        self._order: dict = {}                       # handle pointer -> (node rank, kind, sequence, entity)
        self._polled: List[Tuple[int, Any]] = []     # (node rank, subscription) marked ``POLLED``, nodes' order
        self.waits = self.calls = self.rebuilds = self.delegated = self.drains = 0
        #: while a subscription's callback runs: when rmw received its message (ns, system clock; 0 unknown)
        self.received_ns = 0

    # ------------------------------------------------------------------ node and entity changes
    def add_node(self, node) -> bool:
        added = super().add_node(node)
        if added:
            self._ordered.append(node)
            self._stale = True
        return added

    def remove_node(self, node) -> None:
        super().remove_node(node)
        if node in self._ordered:
            self._ordered.remove(node)
        self._stale = True

    def wake(self) -> None:
        """rclpy's nodes call this whenever they create or destroy an entity: rebuild before the next wait."""
        self._stale = True
        super().wake()

    def shutdown(self, timeout_sec: Optional[float] = None) -> bool:
        done = super().shutdown(timeout_sec)
        self._release()
        self._ordered = []
        return done

    def _release(self) -> None:
        self._held.close()
        self._held = ExitStack()
        self._wait_set = None

    def _rebuild(self) -> None:
        self._release()
        self._stale = False
        self.rebuilds += 1
        nodes = [n for n in self._ordered if n in self._nodes]
        self._lean = not any(self._needs_rclpy(node) for node in nodes)
        if not self._lean:
            return
        held = self._held
        # (node rank, kind, handle, entity) of every entity, in the order its callback runs after a wait: by node
        # (added order), then timers, subscriptions, services, clients
        entries, polled = [], []
        for rank, node in enumerate(nodes):
            for kind, entities in enumerate(_entities_by_kind(node)):
                for ent in entities:
                    try:
                        held.enter_context(ent.handle)
                    except InvalidHandle:
                        continue            # destroyed before this rebuild
                    if kind == 1 and getattr(ent, POLLED, False):
                        polled.append((rank, ent))      # taken at its node's wake-ups, never in the wait set
                    else:
                        entries.append((rank, kind, ent.handle, ent))
        self._polled = polled
        self._guards = [g.handle for g in (self._guard, self._sigint_gc) if g is not None]
        for handle in self._guards:
            held.enter_context(handle)
        # waitables (a publisher's or subscription's QoS event handlers, ...) add their own entities at each wait
        self._waitables = []
        extra = NumberOfEntities()
        for node in nodes:
            for wt in node.waitables:
                try:
                    held.enter_context(wt)
                except InvalidHandle:
                    continue
                self._waitables.append((wt, node))
                extra += wt.get_num_entities()
        held.enter_context(self._context.handle)
        n = [sum(1 for e in entries if e[1] == kind) for kind in range(4)]   # timers, subs, services, clients
        ws = self._wait_set = _rclpy.WaitSet(
            n[1] + extra.num_subscriptions, len(self._guards) + extra.num_guard_conditions,
            n[0] + extra.num_timers, n[3] + extra.num_clients, n[2] + extra.num_services, extra.num_events,
            self._context.handle)
        add = (ws.add_timer, ws.add_subscription, ws.add_service, ws.add_client)
        self._adds = ([(add[kind], handle) for _, kind, handle, _ in entries]
                      + [(ws.add_guard_condition, h) for h in self._guards])
        self._order = {handle.pointer: (rank, kind, i, ent) for i, (rank, kind, handle, ent) in enumerate(entries)}

    @staticmethod
    def _needs_rclpy(node) -> bool:
        """A node's own guard conditions, an ``async def`` callback or a timer that takes a TimerInfo: rclpy's
        executor runs those."""
        timers, subs, services, _ = _entities_by_kind(node)
        return (any(True for _ in node.guards)
                or any(inspect.iscoroutinefunction(e.callback) for e in (*timers, *subs, *services))
                or any(_wants_timer_info(t.callback) for t in timers))

    # ------------------------------------------------------------------ spinning
    def _spin_once_impl(self, timeout_sec=None, wait_condition: Callable[[], bool] = lambda: False) -> None:
        if self._is_shutdown:
            return
        if self._stale:
            self._rebuild()
        if not self._lean:
            self.delegated += 1
            return super()._spin_once_impl(timeout_sec, wait_condition)
        if self._tasks:               # create_task, a future's done callbacks: one step each, as rclpy does
            self._run_tasks()
        if wait_condition():
            return
        ws = self._wait_set
        ws.clear_entities()
        for add, handle in self._adds:
            add(handle)
        for wt, _ in self._waitables:
            wt.add_to_wait_set(ws)
        # Iron and later pass spin_until_future_complete's remaining time as a TimeoutObject
        ws.wait(timeout_sec_to_nsec(getattr(timeout_sec, "timeout", timeout_sec)))
        self.waits += 1
        if self._is_shutdown:
            return
        if not self._context.ok():
            raise ExternalShutdownException()
        if self._waitables:
            self._run_waitables(ws)
        ready = (ws.get_ready_entities("timer") + ws.get_ready_entities("subscription")
                 + ws.get_ready_entities("service") + ws.get_ready_entities("client"))
        order = self._order
        due = sorted(order[p] for p in ready if p in order)
        if self._polled:      # the woken nodes' polled messages; none woken (a time-out, ...): every node's
            self._drain_polled({rank for rank, _, _, _ in due} if due else None)
        for _, kind, _, ent in due:
            if self._stale:
                break                 # a callback created or destroyed an entity: the rest waits for the rebuild
            if kind == 0:
                self._run_timer(ent)
            elif kind == 1:
                self._run_subscription(ent)
            elif kind == 2:
                self._run_service(ent)
            else:
                self._run_client(ent)

    def _run_waitables(self, ws) -> None:
        # rclpy's own handler (a Task over the waitable's async execute): rare events, rclpy's semantics kept
        for wt, node in self._waitables:
            if wt.is_ready(ws) and wt.callback_group.can_execute(wt):
                handler = self._make_handler(wt, node, self._take_waitable)
                handler()
                if handler.exception() is not None:
                    raise handler.exception()
        self._forget_done_tasks()

    def _run_tasks(self) -> None:
        with self._tasks_lock:
            tasks = list(self._tasks)
        for task, _, _ in tasks:
            if not task.executing() and not task.done():
                task()
        self._forget_done_tasks()

    def _forget_done_tasks(self) -> None:
        with self._tasks_lock:
            self._tasks = [t for t in self._tasks if not t[0].done()]

    def _run_timer(self, tmr) -> None:
        handle = tmr.handle
        if not handle.is_timer_ready():   # cancelled while ready (rcl reports cancelled timers as ready)
            return
        handle.call_timer()
        if tmr.callback is not None:
            self.calls += 1
            tmr.callback()

    def _drain_polled(self, ranks) -> None:
        """Every message waiting on the polled subscriptions of the nodes ranked ``ranks`` (those woken; None: every
        node's), oldest first per subscription (at most ``POLL_LIMIT`` each, so a flood cannot hold the wake-up),
        before this wake-up's ready callbacks."""
        self.drains += 1
        for rank, sub in self._polled:
            if ranks is not None and rank not in ranks:
                continue
            for _ in range(POLL_LIMIT):
                if self._stale or not self._run_subscription(sub):
                    break

    def _run_subscription(self, sub) -> bool:
        taken = sub.handle.take_message(sub.msg_type, sub.raw)
        if taken is None:
            return False
        self.calls += 1
        info = taken[1]
        self.received_ns = info.get("received_timestamp", 0) if isinstance(info, dict) else 0
        try:
            if getattr(sub, "_callback_type", _MESSAGE_ONLY) is _MESSAGE_ONLY:
                sub.callback(taken[0])
            else:
                sub.callback(*taken)
        finally:
            self.received_ns = 0
        return True

    def _run_client(self, cli) -> None:
        header, response = cli.handle.take_response(cli.srv_type.Response)
        if header is None:
            return
        seq = header.request_id.sequence_number
        pending = getattr(cli, "get_pending_request", None)   # Iron and later; Humble keeps a dict
        try:
            future = pending(seq) if pending is not None else cli._pending_requests[seq]
        except KeyError:
            return                    # the request was cancelled
        self.calls += 1
        future._set_executor(self)
        future.set_result(response)

    def _run_service(self, srv) -> None:
        request, header = srv.handle.service_take_request(srv.srv_type.Request)
        if header is None:
            return
        self.calls += 1
        srv.send_response(srv.callback(request, srv.srv_type.Response()), header)
