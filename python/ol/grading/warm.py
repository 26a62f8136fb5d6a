"""The warm process inside a sandbox: set up once, then fork one run at a time.

    python -c 'from ol.grading.warm import main; main(CONTROL_FD)'

It is trusted: it never runs a student's code itself.  It receives a setup
message on its control socket (files, module sources, its role), imports
what every run needs, then forks runs on request (ol.grading.confine does
the confining) and reports how each ended:

    role "tests"  the run connects the proxy module to its channel (the other
                  end is an implementation run) and runs a test suite: the
                  student's, stopping at the first failure ("grade"), or any
                  suite with pytest's own report ("report");
    role "impl"   the run loads one variant of the module under test and
                  serves it on its channel (ol.grading.serve).

A run's verdict is its exit status, seen by this process's waitpid and
passed on as such; what the run writes to its report pipe (the tests it
collected, the one it is running, the failures) is information for the
student's report, never a verdict.  A run learns nothing of which job it is:
the tests' runs get the same request every time; only the implementation
runs know the variant, and they are in another sandbox.

Messages (ol.grading.wire; the run's channel, and its memory group's
cgroup.procs where there is one, travel as SCM_RIGHTS):
    -> {"op": "setup", ...}          <- {"event": "ready"} | {"event": "fault"}
    -> {"op": "run", "id": n, ...}   <- {"event": "done", "id": n, "exit": code, "stopped": bool,
       (protocol.RunRequest)             "report": [...], "cpu": seconds}
    -> {"op": "kill", "id": n}       (the run's "done" follows)
    -> {"op": "quit"}

The report lines a run writes are read by protocol.parse_report alone: a
run that writes anything at all there loses its own report lines, nothing
more.
"""

from __future__ import annotations

import dataclasses
import fcntl
import gc
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path

EXIT_PASSED, EXIT_FAILED, EXIT_COLLECT, EXIT_EMPTY = 0, 1, 3, 4
GRADING_MAX_EXAMPLES = 20   # per Hypothesis test, in every graded run
# Imported once in the tests' warm process, so that no run pays for them.
WARM_MODULES = ("numpy.random", "numpy.testing", "numpy.linalg", "hypothesis.strategies", "hypothesis.extra.numpy",
                "math", "cmath", "itertools", "functools", "fractions", "decimal", "random", "collections",
                "dataclasses", "typing", "inspect")
CHANNEL_FD, REPORT_FD = 3, 4


def main(control_fd: int) -> None:
    from ol.grading.wire import PeerGone, WireError, recv_message, send_message

    control = socket.socket(fileno=control_fd)
    try:
        header, buffers = recv_message(control)
        role = Role.for_setup(header, buffers)
        from ol.grading import syscalls

        syscalls.prepare()   # every run it forks loads a filter: built once, here
    except BaseException as error:  # the setup is ours: any failure is an internal fault
        _send_safely(control, {"event": "fault", "detail": f"setup failed: {_traceback(error)}"})
        os._exit(1)
    send_message(control, {"event": "ready", "pid": os.getpid()})
    try:
        Loop(control, role).serve()
    except (PeerGone, WireError, OSError):
        pass
    finally:
        os._exit(0)


def _traceback(error: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(error)[-6:])[-3000:]


def _send_safely(control, message) -> None:
    from ol.grading.wire import send_message

    try:
        send_message(control, message)
    except OSError:
        pass


# ---- the loop ----------------------------------------------------------------------------


class _Run:
    def __init__(self, run_id, guard: int, report_fd: int, fault_fd: int):
        self.id, self.guard, self.report_fd, self.fault_fd = run_id, guard, report_fd, fault_fd
        self.report = bytearray()
        self.fault = bytearray()
        self.stopped = False     # killed on the observer's request

    def buffer(self, name: str) -> bytearray:
        """Where what the run wrote on its pipe `name` ("report_fd", "fault_fd") is kept."""
        return self.report if name == "report_fd" else self.fault


class Loop:
    """Forks runs on request and reports each one's exit status when it ends."""

    def __init__(self, control: socket.socket, role: Role):
        self.control, self.role = control, role
        self.runs: dict[int, _Run] = {}      # guard pid -> run
        wake_read, self.wake_write = os.pipe()
        self.wake_read = wake_read
        for fd in (wake_read, self.wake_write):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        signal.set_wakeup_fd(self.wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def serve(self) -> None:
        while True:
            readable = [self.control, self.wake_read] + [fd for r in self.runs.values() for fd in (r.report_fd, r.fault_fd) if fd >= 0]
            ready, _, _ = select.select(readable, [], [], 1.0)
            for fd in ready:
                if fd is self.control:
                    header, buffers = recv_message_with_fds(self.control)
                    if header.get("op") == "quit":
                        self.kill_all()
                        return
                    self.command(header, buffers)
                elif fd == self.wake_read:
                    try:
                        os.read(self.wake_read, 4096)
                    except BlockingIOError:
                        pass
                else:
                    self.drain(fd)
            self.reap()

    def command(self, header: dict, fds: list[int]) -> None:
        op = header.get("op")
        if op == "run":
            self.start(header, fds)
        elif op == "kill":
            for run in self.runs.values():
                if run.id == header.get("id"):
                    run.stopped = True
                    _kill(run.guard)
        else:
            for fd in fds:
                os.close(fd)

    def start(self, header: dict, fds: list[int]) -> None:
        from ol.grading import confine
        from ol.grading.protocol import RunRequest

        request = RunRequest.from_header(header)
        channel = fds[0] if fds else -1
        memory = fds[1] if len(fds) > 1 else -1
        report_read, report_write = os.pipe()
        fault_read, fault_write = os.pipe()
        keep = {report_write: REPORT_FD}
        if channel >= 0:
            keep[channel] = CHANNEL_FD
        body = lambda moved: self.role.run_reporting(request)  # noqa: E731
        limits = self.role.limits_for(request)
        if request.trusted:  # a variant of the course's own module: no need to confine it
            guard = confine.run_plain(body, limits=limits, keep_fds=keep, memory_fd=memory)
        else:
            guard = confine.run_confined(
                body, mode=self.role.mode, user=request.user, limits=limits, keep_fds=keep, fault_fd=fault_write,
                scratch=self.role.scratch, dumpable=request.mode == "collect", memory_fd=memory,
                readable=self.role.readable,
            )
        for fd in (report_write, fault_write, *fds):
            os.close(fd)
        for fd in (report_read, fault_read):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        self.runs[guard] = _Run(header.get("id"), guard, report_read, fault_read)

    def drain(self, fd: int) -> None:
        """One chunk of a run's pipe, kept up to the protocol's bound; closed
        once its writer has."""
        from ol.grading.wire import read_available

        for run in self.runs.values():
            for name in ("report_fd", "fault_fd"):
                if getattr(run, name) == fd:
                    if read_available(fd, run.buffer(name), most=1):
                        os.close(fd)
                        setattr(run, name, -1)
                    return

    def reap(self) -> None:
        from ol.grading.confine import exit_code
        from ol.grading.protocol import MAX_REPORT_BYTES
        from ol.grading.wire import READ_CHUNK, read_available

        while self.runs:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            run = self.runs.pop(pid, None)
            if run is None:
                continue
            for name in ("report_fd", "fault_fd"):  # what is there now; a grandchild may hold the pipe
                fd = getattr(run, name)
                if fd >= 0:                          # reads enough to fill the bound, no more
                    read_available(fd, run.buffer(name), most=MAX_REPORT_BYTES // READ_CHUNK + 1)
                    os.close(fd)
            self.done(run, exit_code(status), usage.ru_utime + usage.ru_stime)

    def done(self, run: _Run, code: int, cpu: float) -> None:
        """The run's "done": its exit status, its processor time (the guard
        and everything it waited for: the whole run), its report lines."""
        from ol.grading.protocol import parse_report
        from ol.grading.wire import send_message

        message = {"event": "done", "id": run.id, "exit": code, "stopped": run.stopped,
                   "report": parse_report(run.report), "cpu": round(cpu, 4)}
        if run.fault:
            message["fault"] = run.fault.decode(errors="replace")[-4000:]
        send_message(self.control, message)

    def kill_all(self) -> None:
        for guard in list(self.runs):
            _kill(guard)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def recv_message_with_fds(sock: socket.socket) -> tuple[dict, list]:
    """A control message; a "run" is preceded by one byte carrying its channel fd."""
    from ol.grading.wire import recv_message

    header, buffers = recv_message(sock)
    if header.get("fds"):
        _, fds, _, _ = socket.recv_fds(sock, 1, int(header["fds"]))
        return header, list(fds)
    return header, []


# ---- what a run does, by role ------------------------------------------------------------


class Role:
    """Set up once from the setup message; run() is called in each run."""

    def __init__(self, setup: dict, files: dict[str, bytes]):
        from ol.grading.confine import Limits

        self.setup = setup
        self.mode = setup["mode"]
        self.kit = Path(setup["kit"])
        self.scratch = None if self.mode == "confined" else self.kit / ".runs"  # the runs' own /tmp, outside
        self.limits = Limits(**setup.get("limits", {}))
        self.readable = (str(self.kit), setup["sys_path"][0])   # confined by uid: the kit and `ol` (Landlock)
        sys.path[:] = setup["sys_path"]
        os.environ.clear()
        os.environ.update(setup["env"])
        sys.dont_write_bytecode = True
        _write_kit(self.kit, files)
        from ol.overlay import Source, install_overlay

        install_overlay({name: Source.from_text(text["source"], text["origin"]) for name, text in setup["modules"].items()})

    def limits_for(self, request) -> Limits:
        """The role's limits, with the run's processor time."""
        if request.cpu_seconds > 0:
            return dataclasses.replace(self.limits, cpu_seconds=request.cpu_seconds)
        return self.limits

    def run_reporting(self, request) -> int:
        """run(request); an exception of ours (not of the code under test,
        which run() handles) is written to the report and exits
        confine.RUN_FAULT."""
        from ol.grading.confine import RUN_FAULT

        try:
            return self.run(request)
        except BaseException as error:
            _Report(REPORT_FD).send(internal=_traceback(error))
            return RUN_FAULT

    @staticmethod
    def for_setup(header: dict, buffers: list) -> Role:
        files = {path: bytes(buffers[index]) for path, index in header.get("files", {}).items()}
        return {"tests": TestsRole, "impl": ImplRole}[header["role"]](header, files)


def _write_kit(kit: Path, files: dict[str, bytes]) -> None:
    """The run's files, readable by the runs' users, dated the epoch (a
    file's age must not tell a run how far the check has gone)."""
    kit.mkdir(parents=True, exist_ok=True)
    os.chmod(kit, 0o755)
    for relative, data in files.items():
        path = kit / relative
        if ".." in Path(relative).parts or Path(relative).is_absolute():
            raise ValueError(f"kit path {relative!r} leaves the kit")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, 0o644)
    for path in [kit, *kit.rglob("*")]:
        if path.is_dir():
            os.chmod(path, 0o755)
        os.utime(path, (0, 0))


class TestsRole(Role):
    """Runs test suites against the proxy of the module under test."""

    def __init__(self, setup: dict, files: dict[str, bytes]):
        super().__init__(setup, files)
        import importlib

        import _pytest.main  # noqa: F401  (imported once here, shared by every run)
        import _pytest.runner  # noqa: F401
        import numpy  # noqa: F401
        from ol.grading import proxy

        target = setup["proxy"]["module"]
        package = target.rpartition(".")[0]
        if package:
            importlib.import_module(package)
        module = proxy.build_proxy_module(target, setup["proxy"]["contract"], setup["proxy"]["origin"])
        sys.modules[target] = module
        if package:
            setattr(sys.modules[package], target.rpartition(".")[2], module)
        for name in setup.get("preload", []):
            importlib.import_module(name)
        for name in WARM_MODULES:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        _hypothesis_profile()
        self.config = _pytest_config(self.kit, setup.get("pytest_args", []))
        self.session = _pytest_session(self.config)
        _precompile(self.config, [self.kit / folder for folder in setup["suites"].values()])
        _warm_hypothesis()
        gc.collect()
        gc.freeze()

    def run(self, request) -> int:
        from ol.grading import proxy

        folder = self.kit / self.setup["suites"][request.suite]
        channel = socket.socket(fileno=CHANNEL_FD)
        if request.mode == "report":
            proxy.connect(channel)
            return _run_report(folder, _Report(REPORT_FD), request.pytest_args, self.setup.get("pytest_args", []))
        if request.mode == "collect":   # the local check: collect once, serve many runs
            from ol.grading.collector import serve_collected

            def collect():
                collected = _collect(self.session, folder, _Report(REPORT_FD))
                if proxy.called_unconnected:   # module-level calls need a variant: collect in every run
                    return EXIT_COLLECT, {"problem": "isolate"}
                return collected

            def run_items(items, order, run_all):
                proxy.connect(socket.socket(fileno=CHANNEL_FD))
                ranked = [items[i] for i in order if 0 <= i < len(items)]
                rest = [item for item in items if item not in ranked]
                return _run_items(ranked + rest, run_all, _Report(REPORT_FD))

            return serve_collected(channel.detach(), collect, run_items, self.limits)
        report = _Report(REPORT_FD)
        proxy.connect(channel)   # a call at import time reaches this run's own variant
        collected = _collect(self.session, folder, report)
        if isinstance(collected[0], int):
            report.send(**collected[1])
            return collected[0]
        items, ids = collected
        if request.list_tests:
            report.send(collected=ids)
        rank = {test: n for n, test in enumerate(request.order)}
        items.sort(key=lambda item: rank.get(item.nodeid, len(rank)))
        return _run_items(items, request.all_tests, report)


class ImplRole(Role):
    """Serves one variant of the module under test per run."""

    def __init__(self, setup: dict, files: dict[str, bytes]):
        super().__init__(setup, files)
        import importlib

        import numpy  # noqa: F401  (imported once here, shared by every run)
        from ol.grading import serve  # noqa: F401

        self.target = setup["target"]
        for name in setup.get("preload", []):
            importlib.import_module(name)
        gc.collect()
        gc.freeze()

    def run(self, request) -> int:
        import importlib

        from ol.grading.serve import serve
        from ol.overlay import Source, install_overlay

        channel = socket.socket(fileno=CHANNEL_FD)
        overrides = dict(request.modules)
        if overrides:  # the student's own needs: every tinyllm module is imported afresh
            for name in [n for n in sys.modules if n == "tinyllm" or n.startswith("tinyllm.")]:
                del sys.modules[name]
            install_overlay({name: Source.from_text(t["source"], t["origin"]) for name, t in {
                **self.setup["modules"], **overrides}.items()})
        source = request.source
        if source is not None:
            install_overlay({self.target: Source.from_text(source["source"], source["origin"])})
        try:
            module = importlib.import_module(self.target)
        except BaseException as error:  # the code under test does not import: every call says why
            module = _Broken(self.target, error, request.tracebacks)
        serve(channel, module, tracebacks=request.tracebacks)
        return 0


class _Broken:
    """Stands for a module that raised while importing: every use raises that."""

    def __init__(self, name, error, tracebacks):
        self.__name__, self.error, self.tracebacks = name, error, tracebacks

    def __getattr__(self, name):
        raise ImportError(f"the code under test ({self.__name__}) failed to import: "
                          f"{type(self.error).__name__}: {self.error}") from self.error


# ---- running a suite ---------------------------------------------------------------------


class _Report:
    """JSON lines to the warm process: information for the student's report."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, **message) -> None:
        from ol.grading.protocol import report_line

        data = report_line(**message)
        try:
            while data:
                data = data[os.write(self.fd, data):]
        except OSError:
            pass


def _collect(session, folder: Path, report: _Report) -> tuple:
    """The suite's tests: (items, their ids), or (exit code, {"problem": ...}):
    EXIT_COLLECT when it does not collect, EXIT_EMPTY when it holds no test."""
    config = session.config
    errors: list[str] = []

    class Collection:
        def pytest_collectreport(self, report):
            if report.failed:
                errors.append(f"{report.nodeid or report.fspath}: {report.longreprtext.strip()[-2000:]}")

    config.pluginmanager.register(Collection(), "ol-collection")
    try:
        items = session.perform_collect([str(folder)])
    except BaseException as error:  # noqa: BLE001 (collection runs the suite's code)
        errors.append(f"{type(error).__name__}: {error}")
        items = []
    finally:
        config.pluginmanager.unregister(name="ol-collection")
    if errors:
        return EXIT_COLLECT, {"problem": "collect", "detail": "\n".join(errors)[-6000:]}
    if not items:
        return EXIT_EMPTY, {"problem": "empty"}
    return items, [str(item.nodeid) for item in items]


def _run_items(items: list, run_all: bool, report: _Report) -> int:
    """Run the tests in this order; stop at the first failure unless run_all.
    Exit 0 all passed, 1 a test failed."""
    from _pytest.runner import runtestprotocol

    failed = []
    for index, item in enumerate(items):
        report.send(running=item.nodeid, at=time.monotonic())
        following = items[index + 1] if index + 1 < len(items) else None
        try:
            item_failed = any(r.failed for r in runtestprotocol(item, nextitem=following, log=False))
        except BaseException:  # pytest.exit() or worse: the suite stops here
            item_failed, following = True, None
        if item_failed:
            failed.append(item.nodeid)
            report.send(failed=item.nodeid)
            if not run_all or following is None:
                break
    report.send(ended=time.monotonic())
    return EXIT_FAILED if failed else EXIT_PASSED


def _run_report(folder: Path, report: _Report, extra: list[str], base: list[str]) -> int:
    """pytest's own run with its terminal report (short tracebacks), and every
    test's outcome; the exit code is pytest's."""
    import pytest

    outcomes: dict[str, str] = {}
    failures: dict[str, str] = {}   # node id -> what pytest's short test summary says of its first failure

    class Outcomes:
        def pytest_runtest_logreport(self, report):
            if report.when == "call" or report.outcome != "passed":
                if report.outcome != "passed" or report.nodeid not in outcomes:
                    outcomes[report.nodeid] = "error" if report.when != "call" and report.failed else report.outcome
            if report.failed and report.nodeid not in failures:
                crash = getattr(report.longrepr, "reprcrash", None)
                failures[report.nodeid] = str(getattr(crash, "message", None) or report.longrepr)[:2000]

        def pytest_collectreport(self, report):
            if report.failed:
                outcomes[report.nodeid or "collection"] = "error"

    output = Path(os.environ.get("TMPDIR", "/tmp")) / "pytest-report.txt"
    with open(output, "w") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        code = pytest.main([str(folder), "--tb=short", "-rfE", "--color=no", "-p", "no:cacheprovider",
                            *base, *extra], plugins=[Outcomes()])
        sys.stdout.flush()
    report.send(outcomes=outcomes, failures=failures, output=output.read_text(errors="replace")[-60000:])
    return int(code)


# ---- warm-up -------------------------------------------------------------------------------


def _hypothesis_profile() -> None:
    """Deterministic, database-free Hypothesis with no shrinking: the same
    examples for every variant, and a failing example stops at once.  Every
    test gets at most GRADING_MAX_EXAMPLES examples, whatever its own
    settings ask: a suite heavy in Hypothesis grades about as fast as a
    plain one of the same strength."""
    try:
        from hypothesis import Phase, settings
    except ImportError:
        return
    settings.register_profile("ol-check", derandomize=True, database=None, deadline=None, print_blob=False,
                              phases=(Phase.explicit, Phase.generate), max_examples=GRADING_MAX_EXAMPLES)
    settings.load_profile("ol-check")
    own_init = settings.__init__

    def capped(self, parent=None, **kwargs):
        if "max_examples" in kwargs:
            kwargs["max_examples"] = min(kwargs["max_examples"], GRADING_MAX_EXAMPLES)
        own_init(self, parent, **kwargs)

    settings.__init__ = capped


def _warm_hypothesis() -> None:
    """Hypothesis scans every loaded module for constants the first time it
    generates data; doing it here spares each run the scan."""
    try:
        from hypothesis.internal.conjecture.providers import _get_local_constants
    except ImportError:
        return
    _get_local_constants()


def _pytest_config(kit: Path, args: list[str]):
    """pytest configured once (plugins loaded, options parsed) on an empty
    folder; each run collects its suite with it."""
    from _pytest.config import _prepareconfig

    empty = kit / ".empty"
    empty.mkdir(exist_ok=True)
    config = _prepareconfig([str(empty), "-p", "no:terminal", *args])
    config.option.tbstyle = "no"   # a verdict needs no traceback: formatting one costs more than most tests
    config._do_configure()
    return config


def _pytest_session(config):
    """The session every run collects into, started here (no test code has
    run yet: only pytest's and its plugins' own session start)."""
    from _pytest.main import Session

    session = Session.from_config(config)
    config.hook.pytest_sessionstart(session=session)
    return session


def _precompile(config, folders: list[Path]) -> None:
    """pytest rewrites the asserts of test files as it imports them; doing it
    here (it reads and compiles, runs nothing) spares each run the work.  The
    compiled code lives on in the patched _read_pyc's closure."""
    from _pytest.assertion import rewrite

    compiled = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            try:
                compiled[str(path)] = rewrite._rewrite_test(path, config)[1]
            except (SyntaxError, ValueError, OSError):
                continue  # the run reports it when it imports the file
    original = rewrite._read_pyc

    def read_pyc(source, pyc, trace=lambda message: None):
        return compiled.get(str(source)) or original(source, pyc, trace)

    rewrite._read_pyc = read_pyc
