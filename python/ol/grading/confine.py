"""The operating system's part of the boundary: where untrusted code may run.

Audit hooks and the static check are friendly first fences; code that can
write memory through numpy switches hooks off (see the threat model in
README.md here).  The boundary is the kernel:

    bwrap (one per grading process)   its own mount, pid, network, IPC and UTS
      │                               namespaces; a read-only view of the Python
      │                               installation and of `ol` alone (not the
      │                               repository, not the home folder); private
      │                               tmpfs for /tmp and the run's files
      └─ the warm process (trusted)   forks one run at a time:
          └─ run guard  (trusted)     new mount, pid, network, IPC, UTS namespaces;
              │                       fresh tmpfs on /tmp and /dev/shm, the kit
              │                       read-only; waits, then exits with the
              │                       run's status
              └─ run init (trusted)   pid 1 of the run: fresh /proc; dies with the
                  │                   guard; when it exits the kernel kills every
                  │                   process of the run, setsid escapees included
                  └─ the run          resource limits, then (as root) an
                                      unprivileged user of its own with no
                                      capabilities and no_new_privs; only its
                                      channel and report descriptors open

Where bubblewrap is missing (a student's macOS laptop) the same processes run
unconfined: resource limits and the guard's kill of every descendant only.
`ol check` says so; the instructor's side refuses to grade that way.
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import site
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CONFINED, UNCONFINED = "confined", "unconfined"
RUN_UID_BASE = 61000          # the runs' unprivileged users: RUN_UID_BASE + slot
KIT = "/kit"                  # inside the sandbox: the files a run may read
RUNTIME = "/opt/tinyllm-ol"   # inside the sandbox: the `ol` package, read-only

_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWPID, _CLONE_NEWNET = 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER, _PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38


class ConfinementError(Exception):
    """The sandbox could not be set up as asked."""


@dataclass(frozen=True)
class Limits:
    """What one run may use.  address_space is added to the warm process's
    own size (a fork starts with it); cpu_seconds is a backstop, the observer
    enforces wall-clock time."""

    address_space: int = 2 << 30
    cpu_seconds: int = 600
    file_size: int = 64 << 20
    processes: int = 64
    open_files: int = 256


# ---- is bubblewrap here? ------------------------------------------------------------------

_probe: tuple[bool, str] | None = None


def bubblewrap() -> tuple[bool, str]:
    """(usable, why not): bwrap is on PATH and starts a sandbox here, and
    this Python's installation lies outside /tmp (each confined run gets a
    fresh /tmp of its own, which would hide it)."""
    global _probe
    if _probe is None:
        path = shutil.which("bwrap")
        under_tmp = _environment_under_tmp()
        if under_tmp is not None:
            _probe = (False, f"this Python is installed under /tmp ({under_tmp}), which every confined run replaces "
                             "with an empty /tmp of its own; create the virtual environment elsewhere, e.g. "
                             "python -m venv ~/.venvs/tinyllm, or .venv inside your checkout")
        elif path is None:
            _probe = (False, "bubblewrap (bwrap) is not installed (Debian/Ubuntu: sudo apt-get install bubblewrap)")
        else:
            try:
                done = subprocess.run([path, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "true"],
                                      capture_output=True, text=True, timeout=30)
                _probe = (done.returncode == 0, f"bwrap cannot start a sandbox here: {done.stderr.strip()[:300]}")
            except (OSError, subprocess.TimeoutExpired) as error:
                _probe = (False, f"bwrap cannot start a sandbox here: {error}")
    return _probe


def _environment_roots() -> set[str]:
    """The folders of this Python's installation: its prefixes, its
    executable's folder and its site-packages."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
               os.path.dirname(sys.executable), *site.getsitepackages()}
    return {os.path.realpath(f) for f in folders if f}


def _environment_under_tmp() -> str | None:
    return next((f for f in sorted(_environment_roots()) if f == "/tmp" or f.startswith("/tmp/")), None)


def bwrap_command(ol_package: Path, hidden: Path, python: str = sys.executable) -> list[str]:
    """The bwrap prefix for one warm process: the Python installation and the
    `ol` package read-only, nothing else of the host (nothing under `hidden`,
    the repository); no network; private /tmp and /kit."""
    command = [
        shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session",
        "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp", "--tmpfs", KIT,
        "--perms", "0755", "--dir", str(Path(RUNTIME).parent), "--perms", "0755", "--dir", RUNTIME,
        "--ro-bind", str(ol_package), f"{RUNTIME}/ol",
        "--hostname", "ol-sandbox", "--chdir", "/tmp", "--clearenv",
    ]
    if os.geteuid() == 0:  # keep only what the warm process needs to fork confined runs
        command += ["--cap-drop", "ALL"] + [arg for cap in ("SYS_ADMIN", "SETUID", "SETGID", "KILL")
                                            for arg in ("--cap-add", f"CAP_{cap}")]
    else:
        command += ["--unshare-user", "--uid", "0", "--gid", "0"]
    made = {"/"}
    for path in _system_paths(python, hidden):
        for parent in reversed(Path(path).parents):  # readable by the runs' own users
            if str(parent) not in made and not any(str(parent).startswith(m) for m in ("/usr", "/etc")):
                made.add(str(parent))
                command += ["--perms", "0755", "--dir", str(parent)]
        command += ["--ro-bind", path, path]
    for name in ("bin", "lib", "lib32", "lib64", "sbin"):
        link = Path("/", name)
        if link.is_symlink():
            command += ["--symlink", os.readlink(link), str(link)]
    return command


def _system_paths(python: str, hidden: Path) -> list[str]:
    """Read-only host paths a Python with numpy needs: /usr, /etc, the
    interpreter's prefixes and every sys.path folder, except the home folder
    itself and anything under `hidden`."""
    wanted = {"/usr", "/etc", sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(python))}
    wanted.update(p for p in sys.path if p and os.path.isdir(p))
    home = os.path.expanduser("~")
    kept = []
    for path in sorted({os.path.realpath(p) for p in wanted}):
        if not os.path.exists(path) or path in ("/", home) or any(path.startswith(k + os.sep) for k in kept):
            continue
        if path.startswith("/usr" + os.sep) or path.startswith("/etc" + os.sep):
            continue
        kept.append(path)
    return [p for p in kept if not hides(hidden, p)]


def hides(hidden: Path | str, path: str) -> bool:
    """Whether `path` (a real path) must stay out of a sandbox that hides
    `hidden` (the repository): the repository, anything in it, or a folder
    around it.  A virtual environment inside it (.venv) is the exception:
    it is this Python's installation, not the course's files."""
    hidden = os.path.realpath(hidden)
    if path == hidden or hidden.startswith(path + os.sep):
        return True
    if not path.startswith(hidden + os.sep):
        return False
    environments = {os.path.realpath(sys.prefix), os.path.realpath(sys.exec_prefix)}
    return not any(e.startswith(hidden + os.sep) and (path == e or path.startswith(e + os.sep)) for e in environments)


# ---- one run ---------------------------------------------------------------------------

_libc = None


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _call(name: str, *args) -> None:
    if getattr(_c(), name)(*args) != 0:
        error = ctypes.get_errno()
        raise ConfinementError(f"{name}{args[:2]}: {os.strerror(error)}")


def set_subreaper() -> None:
    """Orphans of this process's descendants come back to it (Linux)."""
    if sys.platform.startswith("linux"):
        _call("prctl", _PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def run_confined(body, *, mode: str, slot: int, limits: Limits, keep_fds: dict[int, int], fault_fd: int,
                 scratch: Path | None = None, dumpable: bool = False) -> int:
    """Fork the guard, init and run processes described above; in the run,
    call body(kept descriptors) and exit with its return value.  In the
    caller, return the guard's pid; the guard exits with the run's status
    (128 + signal if a signal ended it).

    keep_fds maps descriptors of the caller to the numbers they get in the
    run (everything else is closed there).  A fault of the confinement
    itself (a mount refused, say) is written to fault_fd, which the run
    never holds, so a run cannot fake one.  Unconfined, the run's temporary
    folder is a fresh folder under `scratch`, removed when the run ends.
    """
    guard = os.fork()
    if guard:
        return guard
    try:
        _guard(body, mode, slot, limits, keep_fds, fault_fd, scratch, dumpable)
    except BaseException as error:
        _report_fault(fault_fd, error)
        os._exit(70)


def _guard(body, mode, slot, limits, keep_fds, fault_fd, scratch, dumpable) -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(number, signal.SIG_DFL)
    confined = mode == CONFINED
    if confined:
        _call("unshare", _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS)
        _call("mount", b"none", b"/", None, _MS_REC | _MS_PRIVATE, None)
        _call("mount", KIT.encode(), KIT.encode(), None, _MS_BIND | _MS_REC, None)
        _call("mount", b"none", KIT.encode(), None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV, None)
        uid = run_uid(slot)
        owner = f",uid={uid},gid={uid}" if uid is not None else ""
        _call("mount", b"tmpfs", b"/tmp", b"tmpfs", _MS_NOSUID | _MS_NODEV, f"size=512m,mode=0700{owner}".encode())
        if os.path.isdir("/dev/shm"):
            _call("mount", b"tmpfs", b"/dev/shm", b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, b"size=64m,mode=1777")
    else:
        set_subreaper()
        scratch.mkdir(parents=True, exist_ok=True)
        private = tempfile.mkdtemp(dir=scratch)
        os.environ.update(TMPDIR=private, HOME=private)
    init = os.fork()
    if init == 0:
        try:
            _init(body, mode, slot, limits, keep_fds, fault_fd, dumpable, guard=os.getppid())
        except BaseException as error:
            _report_fault(fault_fd, error)
            os._exit(70)
    _, status = os.waitpid(init, 0)
    if not confined:
        kill_descendants()
        shutil.rmtree(private, ignore_errors=True)
    os._exit(_exit_code(status))


def _init(body, mode, slot, limits, keep_fds, fault_fd, dumpable, guard: int) -> None:
    if sys.platform.startswith("linux"):
        _call("prctl", _PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != guard:
            os._exit(70)  # the guard died before we could follow it
    if mode == CONFINED:
        _call("mount", b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)
    run = os.fork()
    if run == 0:
        try:
            enter_run(mode, slot, limits, dumpable=dumpable)
        except BaseException as error:
            _report_fault(fault_fd, error)
            os._exit(70)
        code = 70
        try:
            code = body(move_fds(keep_fds))
        finally:
            os._exit(code)
    while True:  # pid 1 of the run: reap everything until the run itself ends
        pid, status = os.waitpid(-1, 0)
        if pid == run:
            os._exit(_exit_code(status))


def run_plain(body, *, limits: Limits, keep_fds: dict[int, int]) -> int:
    """Fork one process for trusted code (a variant of the course's own
    module): resource limits and only the kept descriptors, no namespaces.
    Returns its pid; it exits with body()'s return value."""
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        _set_limits(limits)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        code = body(move_fds(keep_fds))
    finally:
        os._exit(code)


def enter_run(mode: str, slot: int, limits: Limits, *, dumpable: bool = False) -> None:
    """In the process that is about to run untrusted code: resource limits,
    then (as root) the run's own unprivileged user, then no_new_privs.
    dumpable keeps /proc/self writable by that user (a collector needs it to
    give each run its own user namespace)."""
    _set_limits(limits)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python starts: a closed peer is an error, not death
    uid = run_uid(slot) if mode == CONFINED else None
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    if sys.platform.startswith("linux"):
        _call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if dumpable:
            _call("prctl", _PR_SET_DUMPABLE, 1, 0, 0, 0)
    if mode == CONFINED:
        os.environ.update(HOME="/tmp", TMPDIR="/tmp")
    os.chdir(os.environ.get("TMPDIR") or "/tmp")


def run_uid(slot: int) -> int | None:
    """The unprivileged user of a run in `slot`, when we may switch users."""
    return RUN_UID_BASE + slot if os.geteuid() == 0 else None


def move_fds(keep_fds: dict[int, int]) -> dict[int, int]:
    """Give each kept descriptor its number in the run; close all others;
    stdin, stdout and stderr read and write /dev/null."""
    staged = {os.dup(old): new for old, new in keep_fds.items()}
    for fd, new in staged.items():
        os.dup2(fd, new, inheritable=False)
    keep = set(keep_fds.values())
    for fd in set(staged) - keep:
        os.close(fd)
    highest = max([*keep, 2]) + 1
    for fd in range(3, highest):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    os.closerange(highest, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if devnull not in keep:
        os.close(devnull)
    return dict(zip(keep_fds, keep_fds.values()))


def _set_limits(limits: Limits) -> None:
    size = _address_space_now()
    wanted = [
        (resource.RLIMIT_AS, size + limits.address_space),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_FSIZE, limits.file_size),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CORE, 0),
    ]
    if os.geteuid() == 0:  # counted per user: only meaningful for the run's own user
        wanted.append((resource.RLIMIT_NPROC, limits.processes))
    for kind, value in wanted:
        soft, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))


def _address_space_now() -> int:
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 30


def _exit_code(status: int) -> int:
    """A child's wait status as an exit code to pass on (128 + signal)."""
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _report_fault(fault_fd: int, error: BaseException) -> None:
    try:
        os.write(fault_fd, f"the run could not be confined: {error!r}\n".encode())
    except OSError:
        pass


def kill_descendants() -> None:
    """SIGKILL every process reparented to this subreaper, until none is left."""
    me = f"\nPPid:\t{os.getpid()}\n"
    for _ in range(50):
        found = []
        try:
            names = os.listdir("/proc")
        except OSError:
            return
        for name in names:
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/status") as status:
                    if me in status.read():
                        found.append(int(name))
            except OSError:
                continue
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in found:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        time.sleep(0.001)
