"""One warm process's sandbox, seen from the observer: started as bwrap
(when confined) around the warm process (ol.grading.sandbox.warm), given its setup
once, then asked for runs on its control socket.

    ol (the observer, trusted)        never imports a student's code
     ├─ tests sandbox    (bwrap)      warm process for the tests' side
     └─ impl sandbox     (bwrap)      warm process for the implementation's side

Outside the namespace mode the sandboxes' files live in a private scratch
folder of the host (make_scratch), removed when the check ends.
"""

from __future__ import annotations

import dataclasses
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ol.core.removal import remove_tree
from ol.grading.protocol import NotesStream, RunEnd, RunRequest, parse_end
from ol.grading.sandbox import confine
from ol.grading.wire import PeerGone, WireError, read_available, recv_message, send_message

OL_PACKAGE = Path(__file__).resolve().parents[2]   # the `ol` package: all a sandbox sees of ol's code
READY_TIMEOUT = 180.0    # seconds a warm process may take to import numpy, pytest and the rest


class SandboxFault(Exception):
    """The grader's own machinery failed (a sandbox died or would not start):
    an internal fault, never a verdict."""


@dataclass(frozen=True)
class Setup:
    """What a warm process is given once: its role, its files
    (path relative to its folder -> bytes) and the rest of its setup message."""

    role: str                       # "tests" or "impl"
    header: dict
    files: dict[str, bytes] = field(default_factory=dict)


class RunEnds:
    """The observer's ends of one side of one run: its notes socket (what the
    run says, NotesStream; nothing is written back) and its
    end socket (what its guard says, protocol.parse_end; writing to it stops
    the run)."""

    def __init__(self, notes_fd: int, report: socket.socket):
        os.set_blocking(notes_fd, False)
        report.setblocking(False)
        self.notes_fd, self.report = notes_fd, report
        self.stream = NotesStream()
        self.said = bytearray()
        self.end: RunEnd | None = None     # set once the guard has said how the run ended (or gone quiet)

    def watched(self) -> list:
        return ([self.notes_fd] if self.notes_fd >= 0 else []) + ([self.report] if self.end is None else [])

    def take(self, ready) -> list[dict]:
        """Read what is ready (`ready`: select's list): the notes' new lines, parsed."""
        lines = self.read_notes() if self.notes_fd >= 0 and self.notes_fd in ready else []
        if self.end is None and self.report in ready:
            self.read_end()
        return lines

    def read_notes(self) -> list[dict]:
        """What the run has written since, as parsed lines; [] once it closed."""
        if self.notes_fd < 0:
            return []
        chunk = bytearray()
        closed = read_available(self.notes_fd, chunk, most=8)   # a run that never stops writing holds no loop
        lines = self.stream.feed(bytes(chunk))
        if closed:
            lines += self.stream.finish()
            os.close(self.notes_fd)
            self.notes_fd = -1
        return lines

    def read_end(self) -> bool:
        """Read what the guard said; True once the run has ended."""
        closed = read_available(self.report.fileno(), self.said)
        end = parse_end(self.said)
        if end.exit is not None or closed:
            self.end = end
            if self.notes_fd >= 0:         # the run is over: what it wrote is there, take it all
                chunk = bytearray()
                read_available(self.notes_fd, chunk)
                self.stream.feed(bytes(chunk))
                self.stream.finish()
                os.close(self.notes_fd)
                self.notes_fd = -1
            return True
        return False

    def stop(self) -> None:
        """Ask the guard to end the run now (it answers with the run's end)."""
        try:
            self.report.send(b"stop")
        except OSError:
            pass

    def close(self) -> None:
        if self.notes_fd >= 0:
            os.close(self.notes_fd)
            self.notes_fd = -1
        self.report.close()


class Sandbox:
    """A process running ol.grading.sandbox.warm, in bwrap when confined."""

    def __init__(self, setup: Setup, confinement: str, hidden: Path, limits: confine.Limits, runtime: str):
        self.setup, self.confinement, self.runtime = setup, confinement, runtime
        ours, theirs = socket.socketpair()
        boot = (f"import sys; sys.path.insert(0, {runtime!r}); "
                f"from ol.grading.sandbox.warm import main; main({theirs.fileno()})")
        command = [sys.executable, "-c", boot]
        env = dict(setup.header.get("env", {}), OL_ROLE=setup.role)   # names the sandbox in `ps`
        if confinement == confine.CONFINED:
            command = confine.bwrap_command(OL_PACKAGE, hidden) + [a for k, v in env.items() for a in ("--setenv", k, v)] + command
            env = {}
        self.process = subprocess.Popen(command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        start_new_session=True, env=env or None)
        theirs.close()
        self.control = ours
        self.ready = False      # it said it is set up (Scheduler._await_ready)
        self.stderr = bytearray()
        os.set_blocking(self.process.stderr.fileno(), False)
        header = dict(setup.header, op="setup", role=setup.role, confinement=confinement,
                      limits=dataclasses.asdict(limits), files_root=confine.SANDBOX_FILES if confinement == confine.CONFINED else None)
        names = list(setup.files)
        header["files"] = {name: index for index, name in enumerate(names)}
        self.header = header
        self.buffers = [setup.files[name] for name in names]

    def send_setup(self, scratch: str) -> None:
        """Send the setup; outside the namespace mode the files go to `scratch`, a host folder."""
        header = dict(self.header, files_root=self.header["files_root"] or scratch)
        header["sys_path"] = [self.runtime, *header["sys_path"]]
        try:
            send_message(self.control, header, self.buffers)
        except OSError as error:
            raise SandboxFault(self.died(f"it did not take its setup ({error})")) from None

    def receive(self) -> dict:
        try:
            header, _ = recv_message(self.control)
        except (PeerGone, WireError, OSError) as error:
            raise SandboxFault(self.died(f"its control connection failed ({error})")) from None
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

    def start_run(self, request: RunRequest, channel: socket.socket, user: int, memory_fd: int = -1) -> RunEnds:
        """Ask for one run as `user`, on `channel`, in the memory group whose
        join file (memory.JOIN_FILE) is memory_fd (-1: none).  Its notes and its end come
        back here directly (RunEnds), never through the warm process."""
        notes_ours, notes_theirs = socket.socketpair()   # the run writes its notes; we read them
        ours, theirs = socket.socketpair()
        fds = [channel.fileno(), notes_theirs.fileno(), theirs.fileno()] + ([memory_fd] if memory_fd >= 0 else [])
        request = dataclasses.replace(request, user=user)
        try:
            send_message(self.control, request.header(fds=len(fds)))
            socket.send_fds(self.control, [b"F"], fds)
        except OSError as error:   # the warm process ended: say how, not "Broken pipe"
            notes_ours.close()
            ours.close()
            raise SandboxFault(self.died(f"it could not be sent a run ({error.strerror or error})")) from None
        finally:
            notes_theirs.close()
            theirs.close()
        return RunEnds(notes_ours.detach(), ours)

    def close(self) -> None:
        # A warm process that said it is ready ends on "quit"; one stopped before (Ctrl-C or SIGTERM
        # during the setup, perhaps halfway through sending it) would wait for the rest of its
        # setup, so it is killed at once: an interrupted check ends within its caller's grace.
        if self.ready:
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


def make_scratch(confinement: str = confine.UNCONFINED) -> str:
    """A private host folder for the sandboxes' files outside the namespace
    mode, marked with our pid; folders left by an `ol` that was killed are
    removed first.  Confined by uid, the runs (other users) must reach their
    files in it: it is then made in /tmp (TMPDIR may lie in a private
    folder), traversable but not listable (0711)."""
    import tempfile

    here = tempfile.gettempdir()
    base = Path(here if confinement != confine.BY_UID or _traversable(here) else "/tmp")
    for old in base.glob(SCRATCH_PREFIX + "*"):
        try:
            owner = int((old / "owner").read_text())
            os.kill(owner, 0)
        except ProcessLookupError:
            remove_tree(old)
        except (OSError, ValueError):
            continue
    folder = tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=base)
    Path(folder, "owner").write_text(str(os.getpid()))
    if confinement == confine.BY_UID:
        os.chmod(folder, 0o711)
    return folder


def _traversable(folder: str) -> bool:
    """Whether every folder from / down to `folder` lets other users through."""
    path = Path(folder).resolve()
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def runtime_copy(scratch: str) -> str:
    """A copy of the `ol` package that the runs' users can read (confined by
    uid the checkout's own copy may lie in a private folder); the folder to put
    on sys.path."""
    from ol.grading.sandbox.access_times import freeze_own

    runtime = Path(scratch, "runtime")
    shutil.copytree(OL_PACKAGE, runtime / "ol", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [runtime, *runtime.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    freeze_own(runtime)   # every run may read it: no read may move a time another run sees
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
