"""The CPU quota that stands for the Jetson Nano in ``bench_nano_budget.py``: a writable cgroup controller (v1
``cpu.cfs_quota_us`` or v2 ``cpu.max``), a group with a quota and a weight, the groups of one run, and the kernel's
CFS bandwidth slice during the runs."""
import contextlib
import os
import sys
import time

PERIOD_US = 10000           # CFS period of the quota group (10 ms)


def _mounts():
    with open("/proc/mounts") as f:
        return [line.split()[:4] for line in f]


def _probe_dir(parent):
    """Create and remove a child cgroup under ``parent``: '' if that works, else why not."""
    probe = os.path.join(parent, "jethexa_probe_%d" % os.getpid())
    try:
        os.mkdir(probe)
        os.rmdir(probe)
        return ""
    except OSError as exc:
        return "%s: %s" % (parent, exc.strerror or exc)


def find_cgroup(which="auto"):
    """(kind 'v1'/'v2' or None, mount point, note): the first writable CPU controller (``which``: auto, v1, v2,
    none). The note says what was found and why a controller was not used."""
    notes = []
    if which == "none":
        return None, "", "quota runs disabled (--cgroup none)"
    if which in ("auto", "v1"):
        for dev, mnt, fstype, opts in _mounts():
            if fstype == "cgroup" and "cpu" in opts.split(","):
                why = _probe_dir(mnt) or ("" if os.path.exists(os.path.join(mnt, "cpu.cfs_quota_us"))
                                          else "%s has no cpu.cfs_quota_us" % mnt)
                if not why:
                    return "v1", mnt, "cgroup v1 cpu controller at %s (cpu.cfs_quota_us / cpu.cfs_period_us)" % mnt
                notes.append("v1: " + why)
        if not notes:
            notes.append("v1: no cpu controller mounted")
    if which in ("auto", "v2"):
        for dev, mnt, fstype, opts in _mounts():
            if fstype == "cgroup2":
                try:
                    with open(os.path.join(mnt, "cgroup.controllers")) as f:
                        controllers = f.read().split()
                except OSError:
                    controllers = []
                if "cpu" not in controllers:
                    notes.append("v2 at %s: no cpu controller (controllers: %s)" % (mnt, " ".join(controllers) or
                                                                                  "none"))
                    continue
                why = _probe_dir(mnt)
                if not why:
                    return "v2", mnt, "cgroup v2 at %s (cpu.max)" % mnt
                notes.append("v2: " + why)
    return None, "", "no writable CPU cgroup (%s): CPU only, the quota runs are left out" % "; ".join(notes)


class CpuGroup:
    """A CPU cgroup ``jethexa_nano_budget_<pid>_<name>`` under the controller's root: a quota of ``cores`` cores per
    ``PERIOD_US`` (None: no quota) and the weight ``shares`` (v1 cpu.shares, default 1024 a process; v2 cpu.weight
    = shares / 1024 * 100; None: the default). ``add(pid)`` moves a process (all its threads, and every thread it
    starts later); ``close()`` moves them back to the root group and removes the group."""

    def __init__(self, kind, mount, name, cores=None, shares=None):
        self.kind, self.mount, self.cores = kind, mount, cores
        self.path = os.path.join(mount, "jethexa_nano_budget_%d_%s" % (os.getpid(), name))
        self.quota_us = int(round(cores * PERIOD_US)) if cores is not None else None
        os.mkdir(self.path)
        try:
            if kind == "v1":
                if cores is not None:
                    self._write("cpu.cfs_period_us", PERIOD_US)
                    self._write("cpu.cfs_quota_us", self.quota_us)
                if shares:
                    self._write("cpu.shares", int(shares))
            else:
                try:
                    with open(os.path.join(mount, "cgroup.subtree_control")) as f:
                        enabled = f.read().split()
                    if "cpu" not in enabled:
                        self._write_at(os.path.join(mount, "cgroup.subtree_control"), "+cpu")
                except OSError:
                    pass
                if cores is not None:
                    self._write("cpu.max", "%d %d" % (self.quota_us, PERIOD_US))
                if shares:
                    self._write("cpu.weight", max(1, min(10000, int(round(shares / 1024.0 * 100)))))
        except BaseException:
            self.close()
            raise

    def _write_at(self, path, value):
        with open(path, "w") as f:
            f.write("%s\n" % value)

    def _write(self, name, value):
        self._write_at(os.path.join(self.path, name), value)

    def add(self, pid):
        self._write("cgroup.procs", pid)

    def stats(self):
        """{nr_periods, nr_throttled, throttled_s} from cpu.stat."""
        out = {}
        try:
            with open(os.path.join(self.path, "cpu.stat")) as f:
                for line in f:
                    k, v = line.split()[:2]
                    out[k] = int(v)
        except OSError:
            return {}
        thr = out.get("throttled_time", 0) / 1e9 if self.kind == "v1" else out.get("throttled_usec", 0) / 1e6
        return {"nr_periods": out.get("nr_periods", 0), "nr_throttled": out.get("nr_throttled", 0), "throttled_s": thr}

    def close(self):
        """Every process back to the root group, then the group removed (idempotent)."""
        if not os.path.isdir(self.path):
            return
        for _ in range(20):
            try:
                with open(os.path.join(self.path, "cgroup.procs")) as f:
                    pids = [p for p in f.read().split() if p]
            except OSError:
                pids = []
            for p in pids:
                try:
                    self._write_at(os.path.join(self.mount, "cgroup.procs"), p)
                except OSError:
                    pass        # ended meanwhile
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)
        print("warning: could not remove the cgroup %s" % self.path, file=sys.stderr)


class Groups:
    """The groups of one run: ``robot`` (the robot's process or its five node processes; the quota, if any) and
    ``world`` (robot_emulator and this process; no quota), both with the weight ``shares`` (None: as the machine
    comes, no groups at all unless there is a quota). ``kind`` None: no cgroup available, nothing is done.

    ``per_process``: the quota is each robot process's own, one group per process (``add`` makes it): one Nano
    core for the process's GIL-bound Python, where the group quota stands for the Nano's cores together.
    ``credit`` (cores) is added to the quota of the group that holds the emulated MPU6050 (the robot's group, or
    per process the imu's); per process, ``native`` ({process name: cores}) too: the CPU its native threads took
    unconstrained, which a Nano runs on its other cores (they never wait for the interpreter lock)."""

    def __init__(self, cgroup, quota, shares, per_process=False, credit=0.0, native=None):
        kind, mount = cgroup
        self.cgroup, self.shares, self.per_process, self.credit = cgroup, shares, per_process, credit
        self.native = dict(native or {})
        self.quota = quota
        if quota is not None and not per_process:
            quota = quota + credit
        self.robot = self.world = None
        self.own = []             # per_process: the groups of the robot's processes
        if kind is None or (quota is None and not shares):
            return
        try:
            self.robot = CpuGroup(kind, mount, "robot", None if per_process else quota, shares)
            if shares:
                self.world = CpuGroup(kind, mount, "world", None, shares)
                self.world.add(os.getpid())
        except BaseException:
            self.close()
            raise

    @property
    def quota_us(self):
        """The quota (µs per period) of the robot's group, or per process that of one without the imu."""
        if self.quota is None:
            return None
        return int(round((self.quota + (0.0 if self.per_process else self.credit)) * PERIOD_US))

    def add(self, robot, pid, imu=False, name=""):
        """Move ``pid`` into the robot's group (``robot`` true; per process: a group of its own, ``imu``: it hosts
        the emulated MPU6050, ``name``: its key in ``native``) or the world's."""
        if robot and self.per_process and self.robot is not None:
            g = CpuGroup(*self.cgroup, "robot_%d" % pid, self.quota + (self.credit if imu else 0.0)
                         + self.native.get(name, 0.0), self.shares)
            self.own.append(g)
            g.add(pid)
            return
        group = self.robot if robot else self.world
        if group is not None:
            group.add(pid)

    def stats(self):
        """{nr_periods, nr_throttled, throttled_s} of the robot's quota group(s), summed."""
        groups = self.own if self.per_process else [self.robot] if self.robot is not None and \
            self.robot.cores is not None else []
        out = {}
        for g in groups:
            for k, v in g.stats().items():
                out[k] = out.get(k, 0) + v
        return out

    def close(self):
        for g in self.own + [self.robot, self.world]:
            if g is not None:
                g.close()


SLICE_FILE = "/proc/sys/kernel/sched_cfs_bandwidth_slice_us"


@contextlib.contextmanager
def cfs_slice(us):
    """The kernel's CFS bandwidth slice set to ``us`` µs for the quota runs, restored after; yields a note. A CPU
    draws its quota from the group's pool in slices (5000 µs by default): with 4.5 ms of quota per 10 ms period,
    the first of two robot processes to run takes the whole period's quota and the other waits for the next one,
    which no Nano does (its cores run the processes side by side, each slower). 1000 µs shares the quota at a 1 ms
    grain. ``us`` 0, or not writable: left as it is."""
    try:
        with open(SLICE_FILE) as f:
            old = int(f.read())
    except (OSError, ValueError):
        yield "CFS bandwidth slice: %s not readable, left as it is" % SLICE_FILE
        return
    if not us or us == old:
        yield "CFS bandwidth slice %d µs (the machine's)" % old
        return
    try:
        with open(SLICE_FILE, "w") as f:
            f.write(str(int(us)))
    except OSError as exc:
        yield "CFS bandwidth slice %d µs (the machine's; %d not writable: %s)" % (old, us, exc.strerror)
        return
    try:
        yield ("CFS bandwidth slice %d µs during the runs (the machine's %d µs restored after): a CPU draws the "
               "group's quota in slices of this size, so two processes share it at that grain" % (us, old))
    finally:
        with open(SLICE_FILE, "w") as f:
            f.write(str(old))
