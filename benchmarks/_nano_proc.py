"""What the kernel says about a process and the machine, for ``bench_nano_budget.py``: a process's threads by kind
(CPU, run-queue wait, times scheduled in), its memory, the machine's load, and what one bare wake-up costs here."""
import os
import threading
import time

from _machine import CLK

THREAD_KINDS = ("main", "python", "native")


def wake_cost(seconds: float = 2.0) -> float:
    """CPU [s] one sleep/wake-up costs this thread in a bare 100 Hz ``time.sleep`` loop (schedstat's run time):
    the floor under every timer tick and every message a process wakes up for; on a virtual machine it holds
    the hypervisor's exit and entry as well, which a Jetson Nano, running on its own hardware, does not pay."""
    path = "/proc/self/task/%d/schedstat" % threading.get_native_id()

    def run_s():
        with open(path) as f:
            return int(f.read().split()[0]) / 1e9

    n, r0 = int(seconds * 100), run_s()
    for _ in range(n):
        time.sleep(0.01)
    return (run_s() - r0) / n


def proc_threads(pid):
    """{tid: (kind, CPU s, run-queue wait s, times scheduled in)} of the live threads of ``pid``: kind ``main`` (the
    first thread: the
    executor and every callback), ``python`` (threads named like the process: Python's threading, the nodes'
    workers), ``native`` (threads that name themselves: the DDS/rmw threads, ``dds.*`` in Fast DDS). CPU =
    utime + stime, wait = schedstat run_delay, scheduled in = schedstat's timeslice count (each wake-up and each
    return after a preemption)."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
        with open("/proc/%d/comm" % pid) as f:
            own = f.read().strip()
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                head, tail = f.read().rsplit(")", 1)
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                sched = f.read().split()
            wait, slices = int(sched[1]) / 1e9, int(sched[2])
        except (OSError, IndexError, ValueError):
            continue
        fields = tail.split()
        kind = "main" if int(tid) == pid else "python" if head.split("(", 1)[1] == own else "native"
        out[int(tid)] = (kind, (int(fields[11]) + int(fields[12])) / CLK, wait, slices)
    return out


def thread_delta(a, b, dt):
    """{kind: CPU-s/s} of a process's threads between two ``proc_threads`` snapshots ``dt`` s apart, and the
    run-queue wait of all of them ('wait', s/s) and how often they were scheduled in ('wakes', 1/s); a thread
    started in between counts from 0."""
    out = dict.fromkeys(THREAD_KINDS + ("wait", "wakes"), 0.0)
    for tid, (kind, cpu, wait, slices) in b.items():
        _, cpu0, wait0, slices0 = a.get(tid, (kind, 0.0, 0.0, 0))
        out[kind] += (cpu - cpu0) / dt
        out["wait"] += (wait - wait0) / dt
        out["wakes"] += (slices - slices0) / dt
    return out


def proc_memory(pid):
    """{rss, hwm, pss, file} of ``pid`` in MB (VmRSS, VmHWM, RssFile: its file-backed part, from status; Pss from
    smaps_rollup), NaN if unreadable."""
    out = {"rss": float("nan"), "hwm": float("nan"), "pss": float("nan"), "file": float("nan")}
    keys = {"VmRSS": "rss", "VmHWM": "hwm", "RssFile": "file"}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                name = line.split(":", 1)[0]
                if name in keys:
                    out[keys[name]] = int(line.split()[1]) / 1024.0
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    out["pss"] = int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return out


def load_text():
    """'load average 1.23 0.98 0.70 (1/5/15 min), CPU pressure 12 % (avg60)' of the machine now (the pressure: the
    share of time some runnable task waited for a CPU, /proc/pressure/cpu, where the kernel has it)."""
    a, b, c = os.getloadavg()
    text = "load average %.2f %.2f %.2f (1/5/15 min)" % (a, b, c)
    try:
        with open("/proc/pressure/cpu") as f:
            some = dict(kv.split("=") for kv in f.readline().split()[1:])
        text += ", CPU pressure %.0f %% (avg60)" % float(some["avg60"])
    except (OSError, KeyError, ValueError):
        pass
    return text
