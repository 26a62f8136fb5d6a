"""Run a student's test suite against many variants of one module, isolated.

    the `ol` process           never imports the student's tests; reads events
     └─ collector (fork)       repository fenced off; tinyllm modules served from
         │                     memory; pytest collects the suite ONCE, then the
         │                     plugin runs jobs instead of the tests
         ├─ worker (fork)      one per job: graft the variant onto the loaded
         ├─ worker (fork)      module (ol.grading.transplant), run the test items,
         └─ ...                send the verdict down a pipe, exit

A job is a variant of the target module's source: the reference, a correct
alternate, a pitfall or a generated mutant.  Jobs come in stages; a stage
starts when the previous one has finished, and the run stops after a stage in
which some job did not pass if that stage says so (the reference and the
alternates must pass before mutants are worth running).

Every run, whatever the variant, sees the same environment, the same module
objects and attributes, the same file names: only behaviour differs.  Time
limits are enforced from outside (the collector kills a worker past its
deadline); a worker that dies without a verdict (os._exit, a crash) counts as
having failed.  The fence is an audit hook: any attempt to open, list,
create, remove or rename a path inside the repository raises PermissionError,
and no test can start a subprocess.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ol.grading.transplant import TransplantError, transplant
from ol.overlay import Source, install_overlay

PASSED, FAILED, TIMEOUT, CRASHED, ERROR = "passed", "failed", "timeout", "crashed", "error"
MAX_REPORTED_FAILURES = 50


@dataclass(frozen=True)
class Suite:
    """A student's tests and the modules they run against."""

    tests: Path                 # the test folder: a private copy inside `workdir`
    workdir: Path               # where runs happen (holds pytest.ini; its own rootdir)
    modules: dict[str, str]     # dotted module name -> source text (every tinyllm module)
    origins: dict[str, str]     # dotted module name -> the file name shown for it
    target: str                 # the module whose variants are graded, e.g. "tinyllm.modern.rope"
    fenced: Path                # the repository: no test may touch it


@dataclass(frozen=True)
class Job:
    key: str                    # "reference", "alternate:1", "pitfall:s01", a mutant id
    source: str | None = None   # the target's variant text; None runs the reference


@dataclass(frozen=True)
class Stage:
    jobs: tuple[Job, ...]
    run_all_tests: bool = False     # report every failing test, not just the first
    stop_unless_all_pass: bool = False
    time_limit: float | None = None  # None: scaled from the reference's run time


@dataclass(frozen=True)
class Verdict:
    key: str
    status: str                     # passed, failed, timeout, crashed or error
    failed: tuple[str, ...] = ()    # node ids of failing tests (the first, or all)
    seconds: float = 0.0
    detail: str = ""

    @property
    def killed(self) -> bool:
        """A variant is killed when the suite fails, hangs or crashes on it."""
        return self.status in (FAILED, TIMEOUT, CRASHED)


class SuiteProblem(Exception):
    """The suite could not be run at all: it does not collect, collects no
    tests, or hangs while collecting.  The message says which and why."""


@dataclass
class RunResult:
    collected: tuple[str, ...] = ()
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    stopped_after_stage: int | None = None


# ---- the fence ------------------------------------------------------------------

_WRITE_EVENTS = {
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link",
    "os.symlink", "os.truncate", "os.utime", "os.listdir", "os.scandir", "shutil.rmtree",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move",
    "shutil.chown", "os.chdir",
}
_PROCESS_EVENTS = {"os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn"}


def install_fence(repository: Path) -> None:
    """From now on, in this process and its forks, no path inside `repository`
    can be opened, listed or changed, and no program can be started.
    (Audit hooks cannot be removed: call this only in a forked child.)"""
    root = os.path.realpath(repository)

    def blocked(path) -> bool:
        if isinstance(path, int) or path is None:
            return False
        try:
            return _within(os.path.realpath(os.fsdecode(path)), root)
        except (TypeError, ValueError):
            return False

    def hook(event: str, args: tuple) -> None:
        if event == "open" or event in _WRITE_EVENTS:
            paths = [a for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))]
            for path in paths:
                if blocked(path):
                    raise PermissionError(
                        f"ol check: tests may not touch the repository ({os.fsdecode(path)}); "
                        "test what the code returns, using tmp_path for any file you need"
                    )
        elif event in _PROCESS_EVENTS:
            raise PermissionError("ol check: tests may not start other programs")

    sys.addaudithook(hook)


def _scope(key: str) -> str:
    """The function a job's variant changes: "apply_rope" for the mutant id
    "apply_rope:3f2a1b9c04"; the job kind ("pitfall", "alternate") otherwise."""
    return key.split(":", 1)[0]


def _within(path: str, root: str) -> bool:
    """path is root or lies under it (both resolved)."""
    return path == root or path.startswith(root + os.sep)


# ---- plumbing shared by collector and workers ------------------------------------------


def _send(fd: int, message: dict) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _silence() -> None:
    """Point stdin, stdout and stderr at /dev/null (tests may print)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def _prepare_child(suite: Suite, target_source: str | None = None) -> None:
    """What every forked child does before it imports or runs a test."""
    _silence()
    os.chdir(suite.workdir)
    fenced = os.path.realpath(suite.fenced)
    sys.path[:] = [p for p in sys.path if not _within(os.path.realpath(p or "."), fenced)]
    sys.path_importer_cache.clear()
    modules = dict(suite.modules)
    if target_source is not None:
        modules[suite.target] = target_source
    install_overlay({name: Source.from_text(text, suite.origins[name]) for name, text in modules.items()})
    _hypothesis_profile()
    install_fence(suite.fenced)


def _hypothesis_profile() -> None:
    """Deterministic, database-free Hypothesis with no shrinking: the same
    examples for every variant, and a failing example stops at once."""
    try:
        from hypothesis import Phase, settings
    except ImportError:
        return
    settings.register_profile(
        "ol-check", derandomize=True, database=None, deadline=None, print_blob=False,
        phases=(Phase.explicit, Phase.generate),
    )
    settings.load_profile("ol-check")


def _pytest_args(suite: Suite, extra: Sequence[str] = ()) -> list[str]:
    return [str(suite.tests), "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--tb=no",
            "-o", "console_output_style=classic", "-W", "ignore::pytest.PytestAssertRewriteWarning", *extra]


# ---- the collector and its workers -------------------------------------------------


class _Collector:
    """pytest plugin: after collection, run the stages' jobs in forked workers."""

    def __init__(self, suite: Suite, stages: Sequence[Stage], out: int, workers: int, fallback_limit: float):
        self.suite, self.stages, self.out = suite, stages, out
        self.workers, self.fallback_limit = max(1, workers), fallback_limit
        self.collect_errors: list[str] = []
        self.reference_seconds: float | None = None
        self.kills: dict[str, dict[str, int]] = {}   # scope -> test node id -> variants it was first to fail

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.collect_errors.append(f"{report.nodeid or report.fspath}: {report.longreprtext.strip()[-2000:]}")

    def pytest_runtestloop(self, session) -> bool:
        items = list(session.items)
        if self.collect_errors:
            _send(self.out, {"event": "problem", "reason": "collect", "detail": "\n".join(self.collect_errors)})
            return True
        if not items:
            _send(self.out, {"event": "problem", "reason": "empty", "detail": "pytest collected no tests"})
            return True
        _send(self.out, {"event": "collected", "tests": [item.nodeid for item in items]})
        gc.freeze()  # forked workers then share the collected suite's pages instead of copying them
        for number, stage in enumerate(self.stages):
            verdicts = self._run_stage(stage, items)
            if number == 0 and verdicts:
                self.reference_seconds = max(v.seconds for v in verdicts)
            if stage.stop_unless_all_pass and any(v.status != PASSED for v in verdicts):
                _send(self.out, {"event": "stopped", "stage": number})
                return True
        return True

    def _ordered(self, items, stage: Stage, job: Job) -> list:
        """Tests that caught the most variants so far run first: those that
        caught variants of the same function before all others (mutants of one
        function are mostly caught by the same few tests), then by all kills.
        A stable sort keeps file order otherwise; runs that report every
        failure keep it entirely."""
        if stage.run_all_tests or not self.kills:
            return items
        here, everywhere = self.kills.get(_scope(job.key), {}), self.kills.get("", {})
        return sorted(items, key=lambda item: (-here.get(item.nodeid, 0), -everywhere.get(item.nodeid, 0)))

    def _count_kill(self, verdict: Verdict) -> None:
        for scope in ("", _scope(verdict.key)):
            counts = self.kills.setdefault(scope, {})
            counts[verdict.failed[0]] = counts.get(verdict.failed[0], 0) + 1

    def _limit(self, stage: Stage) -> float:
        if stage.time_limit is not None:
            return stage.time_limit
        if self.reference_seconds is None:
            return self.fallback_limit
        return min(self.fallback_limit, 2.0 + 10.0 * self.reference_seconds)

    def _run_stage(self, stage: Stage, items) -> list[Verdict]:
        limit = self._limit(stage)
        pending = list(stage.jobs)
        running: dict[int, _Watch] = {}   # read fd -> one worker
        verdicts: list[Verdict] = []

        def done(verdict: Verdict) -> None:
            verdicts.append(verdict)
            if verdict.killed and verdict.failed:
                self._count_kill(verdict)
            _send(self.out, {"event": "verdict", **verdict.__dict__})

        while pending or running:
            while pending and len(running) < self.workers:
                job = pending.pop(0)
                read_fd, write_fd = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(read_fd)
                    _worker(self.suite, job, self._ordered(items, stage, job), write_fd, stage.run_all_tests)
                os.close(write_fd)
                running[read_fd] = _Watch(job.key, pid, read_fd, limit)
            wait = max(0.0, min(w.deadline for w in running.values()) - time.monotonic())
            ready, _, _ = select.select(list(running), [], [], wait)
            for fd in ready:
                if not running[fd].read():
                    done(running.pop(fd).finish())
            for fd, watch in list(running.items()):
                if time.monotonic() > watch.deadline:
                    done(running.pop(fd).kill())
        return verdicts


class _Watch:
    """One forked worker seen from its parent: its pipe, its deadline, and what
    it said (the test it is running, then its verdict)."""

    def __init__(self, key: str, pid: int, fd: int, limit: float):
        self.key, self.pid, self.fd, self.limit = key, pid, fd, limit
        self.start = time.monotonic()
        self.deadline = self.start + limit
        self.buffer = b""
        self.test: str | None = None
        self.verdict: Verdict | None = None

    def read(self) -> bool:
        """Take what the worker wrote; False once it has closed its end."""
        chunk = os.read(self.fd, 65536)
        *lines, self.buffer = (self.buffer + chunk).split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "running" in message:
                self.test = message["running"]
            else:
                self.verdict = Verdict(**message)
        return bool(chunk)

    def finish(self) -> Verdict:
        """The worker closed its pipe: reap it; no verdict means it died mid-test."""
        os.close(self.fd)
        _, status = os.waitpid(self.pid, 0)
        if self.verdict is not None:
            return self.verdict
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit status {os.WEXITSTATUS(status)}"
        return Verdict(self.key, CRASHED, self._current(), time.monotonic() - self.start,
                       f"the process ended ({how}) during the test, before reporting")

    def kill(self) -> Verdict:
        """Past the deadline: kill the worker; the test it was in is named."""
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)
        return Verdict(self.key, TIMEOUT, self._current(), time.monotonic() - self.start,
                       f"still running after {self.limit:.1f} s (the time limit)")

    def _current(self) -> tuple[str, ...]:
        return (self.test,) if self.test else ()


def _worker(suite: Suite, job: Job, items, out: int, run_all: bool) -> None:
    """A forked worker: graft the variant, run the items, report, exit."""
    from _pytest.runner import runtestprotocol

    start = time.monotonic()
    if items:  # nothing is reported from a worker: without a terminal, plugins skip
        # their reporting work (Hypothesis would write a patch file per failure)
        items[0].config.pluginmanager.unregister(name="terminalreporter")
    try:
        if job.source is not None:
            module = sys.modules.get(suite.target)
            if module is None:
                import importlib

                module = importlib.import_module(suite.target)
            transplant(module, job.source)
    except TransplantError as error:
        _send(out, {"key": job.key, "status": ERROR, "detail": f"transplant: {error}"})
        os._exit(0)
    except BaseException as error:  # the variant itself fails to load: its tests cannot pass
        _send(out, {"key": job.key, "status": FAILED, "detail": f"the variant does not load: {error!r}"[:500],
                    "seconds": time.monotonic() - start})
        os._exit(0)
    failed: list[str] = []
    for index, item in enumerate(items):
        _send(out, {"running": item.nodeid})
        following = items[index + 1] if index + 1 < len(items) else None
        try:
            reports = runtestprotocol(item, nextitem=following, log=False)
            item_failed = any(report.failed for report in reports)
        except BaseException:  # pytest.exit(), or worse: the suite stops here
            item_failed, following = True, None
        if item_failed:
            failed.append(item.nodeid)
            if not run_all or following is None:
                break
    status = FAILED if failed else PASSED
    _send(out, {"key": job.key, "status": status, "failed": failed[:MAX_REPORTED_FAILURES],
                "seconds": time.monotonic() - start})
    os._exit(0)


def run_stages(suite: Suite, stages: Sequence[Stage], *, workers: int = 2, time_limit: float = 60.0,
               on_event: Callable[[dict], None] | None = None) -> RunResult:
    """Collect the suite once (in a forked collector) and run every stage.

    time_limit bounds collection, each reference or alternate run, and (as a
    ceiling) each mutant run, whose own limit is 2 s + 10x the reference's
    run time.  on_event sees each message ("collected", "verdict", ...) as it
    arrives, for a progress bar.  Raises SuiteProblem if the suite cannot run.
    """
    read_fd, write_fd = os.pipe()
    sys.stdout.flush(), sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the collector
        os.close(read_fd)
        try:
            _prepare_child(suite)
            import pytest

            pytest.main(_pytest_args(suite), plugins=[_Collector(suite, stages, write_fd, workers, time_limit)])
        except BaseException as error:
            _send(write_fd, {"event": "problem", "reason": "internal", "detail": repr(error)[:2000]})
        os._exit(0)
    os.close(write_fd)
    result = RunResult()
    problem: SuiteProblem | None = None
    buffer = b""
    deadline = time.monotonic() + time_limit
    try:
        while True:
            wait = max(0.0, deadline - time.monotonic()) if not result.collected else None
            ready, _, _ = select.select([read_fd], [], [], wait)
            if not ready:
                problem = SuiteProblem(
                    f"collecting your tests took longer than {time_limit:.0f} s: look for a loop or a long "
                    "computation at module level (outside any test function)"
                )
                break
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                message = json.loads(line)
                event = message.pop("event")
                if event == "collected":
                    result.collected = tuple(message["tests"])
                elif event == "verdict":
                    verdict = Verdict(**message)
                    result.verdicts[verdict.key] = verdict
                elif event == "stopped":
                    result.stopped_after_stage = message["stage"]
                elif event == "problem":
                    problem = SuiteProblem(_problem_text(message))
                if on_event is not None:
                    on_event({"event": event, **message})
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, signal.SIGKILL) if problem is not None else None
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    if problem is not None:
        raise problem
    return result


def _problem_text(message: dict) -> str:
    if message["reason"] == "collect":
        return "your tests do not collect (an error while importing them):\n" + message["detail"]
    if message["reason"] == "empty":
        return "pytest found no tests in your test folder: name files test_*.py and functions test_*"
    return "the grader failed while collecting your tests: " + message["detail"]


def fresh_verdict(suite: Suite, job: Job, *, run_all: bool, time_limit: float, output: Path | None = None) -> Verdict:
    """Run one job in a freshly forked interpreter that imports everything
    anew (no transplant): the fallback when grafting fails, the check that
    grafting gives the same verdicts, and (with `output`, a file that receives
    pytest's report with short tracebacks) the way to show a student why a
    test fails on a correct implementation."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush(), sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            _prepare_child(suite, job.source)
            extra = () if run_all else ("-x",)
            if output is not None:
                report = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(report, 1), os.dup2(report, 2)
                extra += ("--tb=short", "-rf", "--color=no")
            import pytest

            class Record:
                def __init__(self):
                    self.failed: list[str] = []

                def pytest_runtest_logreport(self, report):
                    if report.failed:
                        self.failed.append(report.nodeid)

                def pytest_collectreport(self, report):
                    if report.failed:
                        self.failed.append(report.nodeid or "collection")

                def pytest_runtest_logstart(self, nodeid, location):
                    _send(write_fd, {"running": nodeid})

            record = Record()
            code = pytest.main(_pytest_args(suite, extra), plugins=[record])
            status = FAILED if (record.failed or code not in (0,)) else PASSED
            _send(write_fd, {"key": job.key, "status": status, "failed": sorted(set(record.failed))[:MAX_REPORTED_FAILURES],
                             "seconds": time.monotonic() - start})
        finally:
            os._exit(0)
    os.close(write_fd)
    watch = _Watch(job.key, pid, read_fd, time_limit)
    while True:
        ready, _, _ = select.select([read_fd], [], [], max(0.0, watch.deadline - time.monotonic()))
        if not ready:
            return watch.kill()
        if not watch.read():
            return watch.finish()
