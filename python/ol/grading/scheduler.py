"""The observer: runs tests against implementations, each pair in its own
confined processes, and records how each run ended.

    ol (this process, trusted)        never imports a student's code
     ├─ tests sandbox    (bwrap)      warm process for the tests' side (ol.grading.zygote)
     └─ impl sandbox     (bwrap)      warm process for the implementation's side

For one run the observer makes a socket pair, hands one end to a fresh
implementation run (it knows the variant) and the other to a fresh tests run
(it knows nothing but the suite), and waits.  The outcome is what it observes:
the tests run's exit status as its warm parent saw it, or the deadline that
this process measured passing first.  Nothing a run writes can name the job
it belongs to: the mapping from run to job lives here only.

Time: a run's time_limit is processor time, per process, enforced by the
kernel (RLIMIT_CPU), so a verdict does not depend on how loaded the machine
is; this process's own clock stops a run only at WALL_FACTOR times that (a
run that sleeps or blocks uses no processor).

What runs write is read by ol.grading.protocol alone: report lines and
collector frames, bounded, never raising.
"""

from __future__ import annotations

import math
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ol.grading import confine, protocol
from ol.grading.memory import MemoryBound
from ol.grading.protocol import FrameReader, RunRequest
from ol.grading.wire import PeerGone, WireError, read_available, recv_message, send_message

OL_PACKAGE = Path(__file__).resolve().parents[1]   # the `ol` package: all a sandbox sees of the kit's code
READY_TIMEOUT = 180.0    # seconds a warm process may take to import numpy, pytest and the rest
KILL_GRACE = 20.0        # seconds a killed run may take to be reported
WALL_FACTOR = 3.0        # a run is stopped by the clock at this many times its processor time limit


class EngineFault(Exception):
    """The grader's own machinery failed (a sandbox died or would not start):
    an internal fault, never a verdict."""


class SuiteBroke(Exception):
    """The shared mode's collected suite (the suite's own process) wrote into
    the grader's connection what is not a frame: the suite is rejected."""


@dataclass(frozen=True)
class Setup:
    """What a warm process is given once: its role, the files of its kit
    (path relative to the kit -> bytes) and the rest of its setup message."""

    role: str                       # "tests" or "impl"
    header: dict
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass
class Run:
    """One run: an anonymous request for the tests' side, the variant for the
    implementation's side, and the processor time each of its processes may
    take (seconds; the clock stops it at WALL_FACTOR times that)."""

    id: int
    tests: RunRequest | Callable[[], RunRequest]   # a callable is asked at start time (the order can change)
    impl: RunRequest
    time_limit: float
    wall_limit: float | None = None   # the clock's own deadline (default WALL_FACTOR x time_limit)

    @property
    def cpu_seconds(self) -> int:
        return max(1, math.ceil(self.time_limit))

    @property
    def deadline(self) -> float:
        return self.wall_limit if self.wall_limit is not None else WALL_FACTOR * self.time_limit


@dataclass
class Outcome:
    id: int
    exit: int | None = None          # the tests run's exit status; None if it ran out of time
    seconds: float = 0.0
    timed_out: bool = False
    report: list[dict] = field(default_factory=list)   # what the tests run said: information only
    impl_exit: int | None = None
    impl_report: list[dict] = field(default_factory=list)
    impl_stopped: bool = False       # the implementation run was ended on the observer's request
    fault: str | None = None         # the sandbox failed to confine or run it
    cpu_seconds: float | None = None         # processor time of the tests run, all its processes (None: unknown)
    impl_cpu_seconds: float | None = None    # the same for the implementation run


# ---- slots: one run user and one memory group each ----------------------------------------
#
# A check with w workers has slot_count(w) = 2w + 1 slots, numbered from 0 within its own
# block of run users (confine.UidBlock: no two checks on a machine share one): worker k's
# tests run takes 2k, its implementation run 2k + 1, and the shared mode's collector 2w.

SIDES_PER_RUN = 2   # a tests run and an implementation run


def tests_slot(worker: int) -> int:
    return SIDES_PER_RUN * worker


def impl_slot(worker: int) -> int:
    return SIDES_PER_RUN * worker + 1


def collector_slot(workers: int) -> int:
    return SIDES_PER_RUN * workers


def slot_count(workers: int) -> int:
    return collector_slot(workers) + 1


# ---- one warm process --------------------------------------------------------------------


class _Sandbox:
    """A process running ol.grading.zygote, in bwrap when confined."""

    def __init__(self, setup: Setup, mode: str, hidden: Path, limits: confine.Limits, runtime: str):
        self.setup, self.mode, self.runtime = setup, mode, runtime
        ours, theirs = socket.socketpair()
        boot = (f"import sys; sys.path.insert(0, {runtime!r}); "
                f"from ol.grading.zygote import main; main({theirs.fileno()})")
        command = [sys.executable, "-c", boot]
        env = dict(setup.header.get("env", {}), OL_ROLE=setup.role)   # names the sandbox in `ps`
        if mode == confine.CONFINED:
            command = confine.bwrap_command(OL_PACKAGE, hidden) + [a for k, v in env.items() for a in ("--setenv", k, v)] + command
            env = {}
        self.process = subprocess.Popen(command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        start_new_session=True, env=env or None)
        theirs.close()
        self.control = ours
        self.stderr = bytearray()
        os.set_blocking(self.process.stderr.fileno(), False)
        header = dict(setup.header, op="setup", role=setup.role, mode=mode, limits=dataclasses.asdict(limits),
                      kit=confine.KIT if mode == confine.CONFINED else None)
        names = list(setup.files)
        header["files"] = {name: index for index, name in enumerate(names)}
        self.header = header
        self.buffers = [setup.files[name] for name in names]

    def send_setup(self, kit: str) -> None:
        header = dict(self.header, kit=self.header["kit"] or kit)
        header["sys_path"] = [self.runtime, *header["sys_path"]]
        try:
            send_message(self.control, header, self.buffers)
        except OSError as error:
            raise EngineFault(self.died(f"it did not take its setup ({error})")) from None

    def receive(self) -> dict:
        try:
            header, _ = recv_message(self.control)
        except (PeerGone, WireError, OSError) as error:
            raise EngineFault(self.died(f"its control connection failed ({error})")) from None
        return header

    def died(self, what: str) -> str:
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        self.drain_stderr()
        status = confine.describe_exit(self.process.poll())
        log = bytes(self.stderr).decode(errors="replace").strip()[-3000:]
        return f"the {self.setup.role} sandbox failed: {what} ({status})" + (f"; it said:\n{log}" if log else "")

    def drain_stderr(self) -> None:
        try:
            fd = self.process.stderr.fileno()
        except ValueError:   # closed already
            return
        read_available(fd, self.stderr)

    def start_run(self, run_id: int, request: RunRequest, channel: socket.socket, user: int,
                  memory_fd: int = -1) -> None:
        """Ask for one run as `user`, on `channel`, in the memory group whose
        cgroup.procs is memory_fd (-1: none)."""
        fds = [channel.fileno()] + ([memory_fd] if memory_fd >= 0 else [])
        request = dataclasses.replace(request, user=user)
        send_message(self.control, request.header(run_id, fds=len(fds)))
        socket.send_fds(self.control, [b"F"], fds)

    def kill_run(self, run_id: int) -> None:
        try:
            send_message(self.control, {"op": "kill", "id": run_id})
        except OSError:
            pass

    def close(self) -> None:
        try:
            send_message(self.control, {"op": "quit"})
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        stop_process(self.process)
        self.control.close()
        if self.process.stderr is not None:
            self.process.stderr.close()


SCRATCH_PREFIX = "ol-sandbox-"


def make_scratch(mode: str = confine.UNCONFINED) -> str:
    """A private host folder for the sandboxes' files outside the namespace
    mode, marked with our pid; folders left by an `ol` that was killed are
    removed first.  Confined by uid, the runs (other users) must reach their
    kits in it: it is then made in /tmp (TMPDIR may lie in a private
    folder), traversable but not listable (0711)."""
    import tempfile

    base = Path(tempfile.gettempdir() if mode != confine.BY_UID or _traversable(tempfile.gettempdir()) else "/tmp")
    for old in base.glob(SCRATCH_PREFIX + "*"):
        try:
            owner = int((old / "owner").read_text())
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(old, ignore_errors=True)
        except (OSError, ValueError):
            continue
    folder = tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=base)
    Path(folder, "owner").write_text(str(os.getpid()))
    if mode == confine.BY_UID:
        os.chmod(folder, 0o711)
    return folder


def _traversable(folder: str) -> bool:
    """Whether every folder from / down to `folder` lets other users through."""
    path = Path(folder).resolve()
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def runtime_copy(scratch: str) -> str:
    """A copy of the `ol` package that the runs' users can read (confined by
    uid the kit's own copy may lie in a private folder); the folder to put
    on sys.path."""
    runtime = Path(scratch, "runtime")
    shutil.copytree(OL_PACKAGE, runtime / "ol", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [runtime, *runtime.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return str(runtime)


def stop_process(process: subprocess.Popen) -> None:
    """SIGKILL a process started with start_new_session and all its group;
    bwrap takes its whole sandbox with it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.kill()
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


# ---- the engine ------------------------------------------------------------------------


class Engine:
    """Runs Runs, `workers` at a time, each in fresh confined processes.

        with Engine(tests_setup, impl_setup, mode=confine.CONFINED) as engine:
            outcomes = engine.run([Run(0, {...}, {...}, 30.0), ...])
    """

    def __init__(self, tests: Setup | None, impl: Setup, *, mode: str, hidden: Path, workers: int = 2,
                 sharing: str = "isolated", course: Setup | None = None, limits: confine.Limits | None = None):
        if mode not in confine.MODES:
            raise ValueError(f"mode must be one of {', '.join(confine.MODES)}; got {mode!r}")
        if sharing not in ("isolated", "shared") or (sharing == "shared" and mode != confine.CONFINED):
            raise ValueError(f"sharing must be 'isolated', or 'shared' confined; got {sharing!r} ({mode})")
        self.sharing = sharing
        self.link: _CollectorLink | None = None
        # tests: the student's suites; course: the course tests (their own sandbox, since it may
        # hold what a student's suite must never see: the reference, for diagnosing failures)
        self.setups = {role: setup for role, setup in (("tests", tests), ("impl", impl), ("course", course)) if setup}
        self.mode, self.workers = mode, max(1, workers)
        self.hidden = Path(hidden)   # the repository: never visible in a sandbox
        self.kit = None              # outside the namespace mode: a private folder of the host for the kits
        self.sandboxes: dict[str, _Sandbox] = {}
        self.wanted_limits = limits or confine.Limits()
        self.limits = self.wanted_limits
        self.users: confine.UidBlock | None = None
        self.memory: MemoryBound | None = None
        self.runtime = confine.RUNTIME if mode == confine.CONFINED else str(OL_PACKAGE.parent)


    def user(self, index: int) -> int:
        return self.users.uid(index)

    def memory_fd(self, index: int) -> int:
        return self.memory.join_fd(index) if self.memory is not None else -1

    def memory_bound(self) -> str:
        """Which memory bound is in force (ol.grading.memory)."""
        return self.memory.describe() if self.memory is not None else ""

    def __enter__(self) -> Engine:
        try:
            self.users = confine.UidBlock(slot_count(self.workers))
            self.memory = MemoryBound.make(slot_count(self.workers), self.wanted_limits.memory,
                                           per_user=os.geteuid() == 0 and self.mode != confine.UNCONFINED)
            self.limits = self.memory.limits(self.wanted_limits)
            if self.mode != confine.CONFINED:
                self.kit = make_scratch(self.mode)
                if self.mode == confine.BY_UID:
                    self.runtime = runtime_copy(self.kit)
            for role, setup in self.setups.items():
                self.sandboxes[role] = _Sandbox(setup, self.mode, self.hidden, self.limits, self.runtime)
            for role, sandbox in self.sandboxes.items():
                sandbox.send_setup(self._kit_for(role))
            for sandbox in self.sandboxes.values():
                self._await_ready(sandbox)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None
        for sandbox in self.sandboxes.values():
            sandbox.close()
        self.sandboxes.clear()
        if self.kit is not None:
            shutil.rmtree(self.kit, ignore_errors=True)
            self.kit = None
        if self.memory is not None:
            self.memory.close()
        if self.users is not None:
            self.users.close()

    def _kit_for(self, role: str) -> str:
        return os.path.join(self.kit, role) if self.kit else ""

    def _await_ready(self, sandbox: _Sandbox) -> None:
        ready, _, _ = select.select([sandbox.control], [], [], READY_TIMEOUT)
        if not ready:
            raise EngineFault(sandbox.died(f"it was not ready after {READY_TIMEOUT:.0f} s"))
        message = sandbox.receive()
        if message.get("event") != "ready":
            raise EngineFault(sandbox.died(message.get("detail", "its setup failed")))

    # ---- running -----------------------------------------------------------------------

    def run(self, runs: list[Run], on_done: Callable[[Run, Outcome], None] | None = None) -> dict[int, Outcome]:
        """Every run's outcome, by id.  Raises EngineFault if a sandbox fails."""
        pending = list(runs)
        active: dict[int, _Active] = {}
        free_slots = list(range(self.workers))
        outcomes: dict[int, Outcome] = {}
        impl = self.sandboxes["impl"]
        while pending or active:
            while pending and free_slots:
                run = pending.pop(0)
                slot = free_slots.pop(0)
                active[run.id] = self._start(run, slot, impl)
            now = time.monotonic()
            wait = min(a.wake_at() for a in active.values()) - now
            watched = [stream for sandbox in self.sandboxes.values() for stream in (sandbox.control, sandbox.process.stderr)]
            if self.link is not None:
                watched += self.link.watched()
            ready, _, _ = select.select(watched, [], [], max(0.0, wait))
            for sandbox in self.sandboxes.values():
                if sandbox.process.stderr in ready:
                    sandbox.drain_stderr()
                if sandbox.control in ready:
                    message = sandbox.receive()
                    if self.link is not None and message.get("id") == self.link.run_id and sandbox is not impl:
                        if self.link.problem is None:   # it ended while it still had runs to serve
                            raise EngineFault(self.link.ended(message))
                        continue
                    if message.get("event") == "done" and message.get("id") in active:
                        self._done(active[message["id"]], sandbox is not impl, message, impl)
            if self.link is not None:
                for message in self.link.read([r for r in ready if r in self.link.watched()]):
                    if message["id"] in active:
                        self._done(active[message["id"]], True, message, impl)
            now = time.monotonic()
            for run_id, item in list(active.items()):
                if item.finished():
                    del active[run_id]
                    free_slots.append(item.slot)
                    outcomes[run_id] = item.outcome
                    if item.outcome.fault:
                        raise EngineFault(f"a run could not be confined: {item.outcome.fault}")
                    if on_done is not None:
                        on_done(item.run, item.outcome)
                elif item.overdue(now):
                    item.expire(item.tests_side, impl)
                elif item.lost(now):
                    tests = item.tests_side if isinstance(item.tests_side, _Sandbox) else self.sandboxes["tests"]
                    raise EngineFault(tests.died(f"run {run_id} was killed but never reported")
                                      if item.outcome.exit is None else impl.died(f"run {run_id}'s implementation never ended"))
        return outcomes

    @staticmethod
    def _done(item: _Active, from_tests: bool, message: dict, impl: _Sandbox) -> None:
        item.done(from_tests, message)
        if from_tests and not item.impl_done and not item.impl_kill_sent:
            item.impl_kill_sent = True   # nothing will call it any more
            impl.kill_run(item.run.id)

    def _start(self, run: Run, slot: int, impl: _Sandbox) -> _Active:
        request = run.tests() if callable(run.tests) else run.tests
        request = dataclasses.replace(request, cpu_seconds=run.cpu_seconds)
        tests = self.sandboxes["course" if request.suite == "course" and "course" in self.sandboxes else "tests"]
        ours, theirs = socket.socketpair()
        side = tests
        try:
            impl.start_run(run.id, dataclasses.replace(run.impl, cpu_seconds=run.cpu_seconds), ours,
                           self.user(impl_slot(slot)), self.memory_fd(impl_slot(slot)))
            if self.sharing == "shared" and request.mode == "grade":
                side = self._collector(tests, run.time_limit)
                if side.problem == {"problem": "isolate"}:
                    # the suite calls the code under test while it is imported: that needs a
                    # variant at collection, so from now on it is collected in every run
                    self.sharing, side = "isolated", tests
                elif side.problem is not None:   # the suite does not collect: every run says so
                    item = _Active(run, slot, side)
                    self._done(item, True, {"exit": side.problem_exit, "report": [side.problem]}, impl)
                    return item
            side.start_run(run.id, request, theirs, self.user(tests_slot(slot)), self.memory_fd(tests_slot(slot)))
        finally:
            ours.close()
            theirs.close()
        return _Active(run, slot, side)

    def _collector(self, tests: _Sandbox, time_limit: float) -> _CollectorLink:
        """The local check's collected suite, started on first use."""
        if self.link is None:
            index = collector_slot(self.workers)
            self.link = _CollectorLink(tests, self.user(index), self.memory_fd(index), time_limit)
        return self.link


class _CollectorLink:
    """The local check's collected suite (ol.grading.collector), seen from here.

    It is started once, as a run of the tests' sandbox; each graded run is
    then one frame to it, carrying the run's channel, a report socket whose
    other end stays here, and the run's memory group.  It is the suite's own
    process: what it says about a run is the suite's claim, blind to which
    variant the run served (README.md: what the local check guarantees), and
    its frames are read by protocol.FrameReader, which never raises."""

    RUN_ID = -1

    def __init__(self, tests: _Sandbox, user: int, memory_fd: int, time_limit: float):
        ours, theirs = socket.socketpair()
        tests.start_run(self.RUN_ID, RunRequest(suite="student", mode="collect"), theirs, user, memory_fd)
        theirs.close()
        self.run_id, self.control = self.RUN_ID, ours
        self.frames = FrameReader()
        self.reports: dict[int, tuple[socket.socket, bytearray, int]] = {}   # run id -> report socket, data, memory fd
        self.collected: list[str] = []
        self.listed: set[int] = set()     # runs whose report should name the collected tests
        self.problem: dict | None = None
        self.problem_exit = 0
        self._await_collection(time_limit * WALL_FACTOR, tests)

    def _await_collection(self, seconds: float, tests: _Sandbox) -> None:
        deadline = time.monotonic() + seconds
        while True:
            ready, _, _ = select.select([self.control, tests.control], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                self.problem, self.problem_exit = {"problem": "collect", "detail": (
                    f"collecting your tests took longer than {seconds:.0f} s: look for a loop or a long "
                    "computation at module level (outside any test function)")}, 3
                return
            if tests.control in ready:
                message = tests.receive()
                if message.get("id") == self.RUN_ID and self.problem is None and not self._pending_frame():
                    raise EngineFault(self.ended(message))
            if self.control in ready:
                for frame in self._frames():
                    if frame.kind == protocol.FRAME_DONE:
                        continue   # written by the suite while it was being collected: no run exists yet
                    if frame.kind == protocol.FRAME_COLLECTED:
                        self.collected = protocol.collected_ids(frame)
                        return
                    kind, detail = protocol.problem(frame)
                    if kind == "isolate":
                        self.problem, self.problem_exit = {"problem": "isolate"}, 3
                    elif kind == "empty":
                        self.problem, self.problem_exit = {"problem": "empty"}, 4
                    else:   # a collection error, or threads left running by it
                        self.problem, self.problem_exit = {"problem": "collect", "detail": detail or kind}, 3
                    return
                if self.frames.broken:
                    self.problem, self.problem_exit = {"problem": "collect", "detail": (
                        "your tests wrote into the grader's own connection while being collected")}, 3
                    return

    def _frames(self) -> list[protocol.Frame]:
        try:
            chunk = self.control.recv(protocol.MAX_REPORT_BYTES)
        except OSError:
            chunk = b""
        if not chunk:
            raise EngineFault("the process holding your collected tests closed its connection")
        return self.frames.feed(chunk)

    def start_run(self, run_id: int, request: RunRequest, channel: socket.socket, user: int,
                  memory_fd: int = -1) -> None:
        index = {test: n for n, test in enumerate(self.collected)}
        order = [index[t] for t in request.order if t in index]
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        fds = [channel.fileno(), theirs.fileno()] + ([memory_fd] if memory_fd >= 0 else [])
        frame = protocol.run_frame(run_id, request.all_tests, len(fds), request.cpu_seconds, order)
        socket.send_fds(self.control, [frame], fds)
        theirs.close()
        self.reports[run_id] = (ours, bytearray(), memory_fd)
        if request.list_tests:
            self.listed.add(run_id)

    def kill_run(self, run_id: int) -> None:
        try:
            self.control.sendall(protocol.kill_frame(run_id))
        except OSError:
            pass

    def _pending_frame(self) -> bool:
        """Its last frame may still be in the socket when its process has ended."""
        ready, _, _ = select.select([self.control], [], [], 0)
        return bool(ready)

    def watched(self) -> list:
        if self.problem is not None:   # the suite did not collect: nothing more comes from it
            return []
        return [self.control] + [sock for sock, _, _ in self.reports.values()]

    def read(self, ready: list) -> list[dict]:
        """"done" messages for the runs that ended, with their reports.
        Raises SuiteBroke if the collector writes what is not a frame."""
        for run_id, (sock, data, _) in self.reports.items():
            if sock in ready:
                read_available(sock, data)
        if self.control not in ready:
            return []
        try:
            chunk = self.control.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            raise EngineFault("the process holding your collected tests ended during grading")
        messages = []
        for frame in self.frames.feed(chunk):
            if frame.kind != protocol.FRAME_DONE or frame.run_id not in self.reports:
                continue   # not a run in flight
            sock, data, _ = self.reports.pop(frame.run_id)
            read_available(sock, data)
            sock.close()
            report = protocol.parse_report(data)
            if frame.run_id in self.listed:
                self.listed.discard(frame.run_id)
                report.insert(0, {"collected": list(self.collected)})
            messages.append({"event": "done", "id": frame.run_id, "exit": frame.exit, "report": report,
                             "cpu": frame.cpu_ms / 1000})
        if self.frames.broken:
            raise SuiteBroke(f"the process holding your collected tests wrote {self.frames.broken}")
        return messages

    def ended(self, message: dict) -> str:
        return (f"the process holding your collected tests ended ({confine.describe_exit(message.get('exit'))})"
                + (f": {message['fault']}" if message.get("fault") else "")
                + (f": {_lines_text(message.get('report', []))}" if message.get("report") else ""))

    def close(self) -> None:
        for sock, _, _ in self.reports.values():
            sock.close()
        self.control.close()


def _lines_text(lines: list) -> str:
    return "; ".join(str(line)[:500] for line in lines)[:2000]


class _Active:
    """One run in flight on the warm processes: both sides' reports, the deadline."""

    def __init__(self, run: Run, slot: int, tests_side):
        self.run, self.slot, self.tests_side = run, slot, tests_side
        self.started = time.monotonic()
        self.deadline = self.started + run.deadline
        self.outcome = Outcome(run.id)
        self.tests_done = self.impl_done = self.impl_kill_sent = False
        self.killed_at: float | None = None

    def wake_at(self) -> float:
        return self.killed_at + KILL_GRACE if self.killed_at is not None else self.deadline

    def done(self, from_tests: bool, message: dict) -> None:
        if message.get("fault"):
            self.outcome.fault = message["fault"]
        if from_tests:
            self.tests_done = True
            if not self.outcome.timed_out:
                self.outcome.exit = int(message["exit"])
                self.outcome.seconds = time.monotonic() - self.started
            self.outcome.report = list(message.get("report", []))
            self.outcome.cpu_seconds = message.get("cpu")
        else:
            self.impl_done = True
            self.outcome.impl_exit = int(message["exit"])
            self.outcome.impl_stopped = bool(message.get("stopped"))
            self.outcome.impl_report = list(message.get("report", []))
            self.outcome.impl_cpu_seconds = message.get("cpu")

    def finished(self) -> bool:
        return self.tests_done and self.impl_done

    def overdue(self, now: float) -> bool:
        return self.killed_at is None and not self.tests_done and now > self.deadline

    def lost(self, now: float) -> bool:
        return self.killed_at is not None and now > self.killed_at + KILL_GRACE

    def expire(self, tests, impl: _Sandbox) -> None:
        """The deadline passed: the run timed out, whatever it reports later."""
        self.outcome.timed_out = True
        self.outcome.exit = None
        self.outcome.seconds = time.monotonic() - self.started
        self.killed_at = time.monotonic()
        self.impl_kill_sent = True
        tests.kill_run(self.run.id)
        impl.kill_run(self.run.id)

