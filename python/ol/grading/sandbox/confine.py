"""The operating system's part of the boundary: where untrusted code may run.

Audit hooks and the static check are friendly first fences; code that can
write memory through numpy switches hooks off (see the threat model in
README.md here).  The boundary is the kernel:

    bwrap (one per grading process)   its own mount, pid, network, IPC and UTS
      │                               namespaces; a read-only view of the Python
      │                               installation and of `ol` alone (not the
      │                               repository, not the home folder); private
      │                               tmpfs for /tmp and the run's files
      └─ the reporter (trusted)       reaps each run, stops it, reports its status
          ├─ the warm process         clones one run at a time beside itself
          │   (trusted)               (ol.grading.sandbox.reporter.Beside)
          └─ the run                  cloned into new mount, pid, network, IPC, UTS
                                      namespaces (RUN_NAMESPACES): pid 1 of its pid
                                      namespace, a fresh /proc; fresh tmpfs on /tmp
                                      and /dev/shm, its files read-only; dies with
                                      the reporter; when it ends the kernel kills
                                      every process it left, setsid escapees
                                      included.  Resource limits, then (as root)
                                      an unprivileged user of its own with no
                                      capabilities and no_new_privs; only its
                                      channel and notes descriptors open
                                      (become_confined_run)

Outside the namespaces, and for the shared check's collector (whose runs
need a reaper of their own), a trusted guard forked from the warm process
stands between: it forks the run and reports its status (run_confined).

Every confined run also starts with a fresh, empty session keyring and no
way to use the kernel's keyrings at all (ol.grading.sandbox.syscalls), and in a
memory cgroup of its slot where the host allows (ol.grading.sandbox.memory).  In
the namespace confinement a run has a user namespace of its own too, so nothing
the kernel keys by user outlives it.

Three modes (choose_confinement() picks the best the host allows):

    CONFINED    bwrap and the namespaces above
    BY_UID      where namespaces are refused (Docker's default seccomp
                profile, as on Gradescope) and the grader is root: no
                sandbox, but each run as an unprivileged user of its own,
                restricted by Landlock to reading the standard library, the
                packages its warm process imported, the system's libraries
                and its own files and writing its own temporary folder; no
                socket, SysV IPC or message queue (seccomp); every process
                of that user killed when it ends
    UNCONFINED  a student's laptop (macOS, no bubblewrap): resource limits
                and the guard's kill of every descendant only.  `ol check`
                says so; the instructor's side refuses to grade that way
"""

from __future__ import annotations

import ctypes
import os
import random
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

from ol.grading import protocol
from ol.grading.sandbox import landlock, syscalls

CONFINED, BY_UID, UNCONFINED = "confined", "confined-by-uid", "unconfined"
CONFINEMENTS = (CONFINED, BY_UID, UNCONFINED)
RUN_UID_BASE = 1 << 20        # the runs' unprivileged users: blocks of UID_BLOCK from here (UidBlock);
                              # above 610000 + 64 000, the users of ol's before one block a check
UID_BLOCK = 1 << 16          # per check: each run draws a fresh one (UidBlock)
UID_BLOCKS = 1000
UID_LOCKS = ("/run/lock", "/var/lock", "/tmp")   # where the blocks in use are locked (machine-wide)
RUN_FAULT = protocol.RUN_FAULT   # 70 (ol.grading.protocol's table of exit statuses)
SANDBOX_FILES = "/kit"        # inside the sandbox: the files a run may read (students see "/kit" in tracebacks)
RUNTIME = "/opt/tinyllm-ol"   # inside the sandbox: the `ol` package, read-only

# Linux's flags for unshare(2), mount(2), prctl(2) and capset(2), as <sched.h>,
# <sys/mount.h>, <linux/prctl.h> and <linux/capability.h> define them (public:
# the collector binds them before the suite's code runs)
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP = 0x20000000, 0x40000000, 0x02000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
CLONE_NEWUSER = 0x10000000
# a confined run's own mount, pid, network, IPC and host-name namespaces (its user namespace comes
# later, once it has its user: enter_run)
RUN_NAMESPACES = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
CAP_VERSION_3 = 0x20080522


# One BLAS thread per process: runs are forked, and a suite's timing must not
# depend on how many run at once.  The libraries read it once, as numpy loads.
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def pin_blas_threads() -> None:
    """ONE_BLAS_THREAD for this process and all it starts, where the caller
    set nothing else; call it before numpy is imported (this module imports
    no numpy, so it can)."""
    for name, value in ONE_BLAS_THREAD.items():
        os.environ.setdefault(name, value)


class ConfinementError(Exception):
    """The sandbox could not be set up as asked."""


@dataclass(frozen=True)
class Limits:
    """What one run may use.  address_space is added to the warm process's
    own size (a fork starts with it), per process; memory bounds all the
    run's processes together (ol.grading.sandbox.memory: a cgroup, or processes x
    address_space where there is none).  cpu_seconds is the processor time
    each process may use (the kernel ends it with SIGXCPU, then SIGKILL a
    second later): the time limit that does not depend on the machine's load."""

    address_space: int = 2 << 30
    cpu_seconds: int = 600
    file_size: int = 64 << 20
    processes: int = 64
    open_files: int = 256
    memory: int = 2 << 30


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


def choose_confinement(wanted: str = "auto") -> tuple[str, str]:
    """(mode, why): the strongest confinement this host allows, or the one
    `wanted` (a mode name) if it is possible; why explains a mode below
    CONFINED (what is missing), or why `wanted` cannot be had."""
    if wanted not in ("auto", *CONFINEMENTS):
        raise ValueError(f"confinement must be auto, {', '.join(CONFINEMENTS)}; got {wanted!r}")
    namespaces, no_namespaces = bubblewrap()
    if wanted in ("auto", CONFINED) and namespaces:
        return CONFINED, ""
    by_uid, no_uid = by_uid_usable()
    if wanted == CONFINED:
        return UNCONFINED, no_namespaces
    if wanted in ("auto", BY_UID) and by_uid:
        return BY_UID, no_namespaces if wanted == "auto" else ""
    if wanted == BY_UID:
        return UNCONFINED, no_uid
    return UNCONFINED, no_namespaces + ("" if wanted == UNCONFINED else f"; and {no_uid}")


_uid_probe: tuple[bool, str] | None = None


def by_uid_usable() -> tuple[bool, str]:
    """(usable, why not): BY_UID needs root, Linux with Landlock, and a
    Python installation that an unprivileged user can read (each run is
    one).  Probed once, in a child that becomes such a user."""
    global _uid_probe
    if _uid_probe is None:
        if not sys.platform.startswith("linux") or os.geteuid() != 0:
            _uid_probe = (False, "confining runs by user needs Linux and a grader running as root")
        elif landlock.abi() < 1:
            _uid_probe = (False, "confining runs by user needs Landlock (Linux 5.13 or later, enabled in the "
                                 "kernel's lsm= list), which this kernel does not offer")
        elif not syscalls.supported():
            _uid_probe = (False, f"confining runs by user needs a seccomp filter for this architecture "
                                 f"({os.uname().machine}); x86_64 and aarch64 have one")
        else:
            from ol.grading.sandbox.access_times import mount_problem

            unreadable = _unreadable_to_others(_python_files())
            moving = mount_problem(installation_roots())
            _uid_probe = ((False, f"confining runs by user needs this Python readable by other users; "
                                  f"{unreadable} is not (make its folders world-readable, e.g. "
                                  "chmod o+rx, or use a Python installed outside a private home folder)")
                          if unreadable else (False, f"confining runs by user needs access times that stay still: "
                                                     f"{moving}") if moving else (True, ""))
    return _uid_probe


def _python_files() -> list[str]:
    """Files a run's Python reads: the interpreter, the standard library,
    numpy, pytest and hypothesis."""
    import importlib.util

    files = [os.path.realpath(sys.executable), os.__file__]
    for name in ("numpy", "pytest", "_pytest", "hypothesis", "pluggy"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            files.append(spec.origin)
    return files


def _unreadable_to_others(paths: list[str]) -> str:
    """The first of `paths` an unprivileged user cannot read ("" if none)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setresgid(RUN_UID_BASE - 1, RUN_UID_BASE - 1, RUN_UID_BASE - 1)
            os.setresuid(RUN_UID_BASE - 1, RUN_UID_BASE - 1, RUN_UID_BASE - 1)
            for path in paths:
                try:
                    with open(path, "rb") as f:
                        f.read(1)
                except OSError:
                    os.write(write_fd, path.encode())
                    break
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        failed = pipe.read().decode(errors="replace")
    os.waitpid(pid, 0)
    return failed


def installation_roots() -> list[str]:
    """The folders of this Python's installation (real paths): its
    prefixes, its executable's folder and its site-packages.  All a run
    needs of the host beyond /usr and /etc; no path that sys.path or a .pth
    file adds (an editable install's checkout, PYTHONPATH) is among them."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.exec_prefix),
               os.path.dirname(os.path.realpath(sys.executable)), os.path.dirname(sys.executable),
               *site.getsitepackages()}
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else ""
    if user_site and user_site in sys.path:
        folders.add(user_site)
    return sorted({os.path.realpath(f) for f in folders if f and os.path.exists(f)})


def within_installation(path: str) -> bool:
    """Whether `path` (a real path) lies in this Python's installation."""
    return any(path == root or path.startswith(root + os.sep) for root in installation_roots())


def _environment_under_tmp() -> str | None:
    return next((f for f in installation_roots() if f == "/tmp" or f.startswith("/tmp/")), None)


def bwrap_command(ol_package: Path, hidden: Path, python: str = sys.executable) -> list[str]:
    """The bwrap prefix for one warm process: the Python installation and the
    `ol` package read-only, nothing else of the host (nothing under `hidden`,
    the repository); no network; private /tmp and /kit."""
    command = [
        shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session",
        "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp", "--tmpfs", SANDBOX_FILES,
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
    """Read-only host paths a Python with numpy needs: /usr, /etc and this
    Python's installation (installation_roots: not the other folders on
    sys.path), except the home folder itself and anything under `hidden`."""
    wanted = {"/usr", "/etc", os.path.dirname(os.path.realpath(python)), *installation_roots()}
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

def _call(name: str, *args) -> None:
    if getattr(syscalls.libc(), name)(*args) != 0:
        error = ctypes.get_errno()
        raise ConfinementError(f"{name}{args[:2]}: {os.strerror(error)}")


def set_subreaper() -> None:
    """Orphans of this process's descendants come back to it (Linux)."""
    if sys.platform.startswith("linux"):
        _call("prctl", PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def run_confined(body, *, confinement: str, user: int, limits: Limits, keep_fds: dict[int, int], report_fd: int,
                 private: str | None = None, dumpable: bool = False, memory_fd: int = -1,
                 readable: tuple[str, ...] = ()) -> int:
    """Fork the guard and run processes described above; in the run,
    call body(kept descriptors) and exit with its return value.  In the
    caller, return the guard's pid.

    The guard tells the observer how the run ended on report_fd (a socket
    whose other end the observer holds, never held by the run), one line of
    protocol.end_line: the run's exit status (128 + signal if a signal ended
    it), its processor time, and whether it was stopped.  It stops the run
    (SIGKILL to the run: in the namespace confinement the kernel then ends
    every process it left) as soon as report_fd turns readable: the
    observer wrote to it or closed it.  A fault of the confinement itself (a
    mount refused, say) goes to report_fd too, as protocol.fault_line, so a
    run cannot fake one.  The guard's own exit status is 0, or RUN_FAULT: it
    carries nothing of the run to the process that reaps it.

    keep_fds maps descriptors of the caller to the numbers they get in the
    run (everything else is closed there).  Outside the namespace
    confinement, `private` is the run's temporary folder (the caller makes
    it, owned by the run's user, and removes it when the guard has ended).
    memory_fd (>= 0) joins the slot's memory cgroup (memory.JOIN_FILE): the guard
    joins it first, so every process of the run is counted there.
    readable: what a run confined by uid may read besides the Python
    installation and the system (its files).
    """
    guard = os.fork()
    if guard:
        return guard
    code = RUN_FAULT
    try:
        _guard(body, confinement, user, limits, keep_fds, report_fd, private, dumpable, memory_fd, readable)
        code = 0
    except BaseException as error:
        _report_fault(report_fd, error)
    finally:
        os._exit(code)


def become_plain_run(body, *, limits: Limits, keep_fds: dict[int, int], memory_fd: int = -1) -> None:
    """In a process forked for trusted code (a variant of the course's own),
    which ol.grading.sandbox.reporter watches: its slot's memory group, resource
    limits and only the kept descriptors, no namespaces; then body(kept
    descriptors), and exit with its return value.  Never returns."""
    status = RUN_FAULT
    try:
        join_memory_group(memory_fd)
        _set_limits(limits, user_of_its_own=False)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        status = body(move_fds(keep_fds))
    finally:
        os._exit(status)


def join_memory_group(memory_fd: int) -> None:
    """Move this process (and so all it will start) into a memory cgroup."""
    if memory_fd >= 0:
        os.write(memory_fd, b"0")


def _guard(body, confinement, user, limits, keep_fds, report_fd, private, dumpable, memory_fd, readable) -> None:
    _default_signals()
    join_memory_group(memory_fd)
    confined = confinement == CONFINED
    uid = run_uid(user) if confinement != UNCONFINED else None
    if confined:
        _call("unshare", RUN_NAMESPACES)
        _mount_run_files(uid)
    else:
        set_subreaper()
        if private is None:
            raise ConfinementError("a run outside the namespace confinement needs its temporary folder")
        os.environ.update(TMPDIR=private, HOME=private)
    run = os.fork()
    if run == 0:
        try:
            parent = os.getppid()
            if dumpable:   # the shared check's collector forks runs: a reaper of its own above it
                parent = _reaper(parent, report_fd)
            _run(body, confinement, user, limits, keep_fds, report_fd, dumpable, guard=parent,
                 readable=(*readable, private) if private else readable)
        except BaseException as error:
            _report_fault(report_fd, error)
            os._exit(RUN_FAULT)
    status, cpu, stopped = watch(run, report_fd)
    if not confined:   # escapees came back to us (subreaper); the caller kills the run's user too
        kill_descendants()
        if uid is not None:
            kill_user(uid)
    _report(report_fd, status, cpu, stopped)


def become_confined_run(body, *, user: int, limits: Limits, keep_fds: dict[int, int], report_fd: int,
                        memory_fd: int = -1, readable: tuple[str, ...] = ()) -> None:
    """In a process cloned straight into RUN_NAMESPACES (pid 1 of its own pid
    namespace, beside the warm process: ol.grading.sandbox.reporter watches it): the
    run of run_confined in the namespace confinement, with no guard above
    it.  Its memory group, its mounts, its own /proc, then enter_run; a fault
    of any of these goes to report_fd, which is closed before body runs, so
    only the reporter says how the run ended.  Never returns."""
    try:
        _default_signals()
        _call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)   # SIGKILL when the reporter goes
        join_memory_group(memory_fd)
        _mount_run_files(run_uid(user))
        _call("mount", b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        enter_run(CONFINED, user, limits, readable=readable)
        _call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)   # a change of user cleared it
        signal.signal(signal.SIGXCPU, out_of_processor_time)
        os.close(report_fd)
    except BaseException as error:
        _report_fault(report_fd, error)
        os._exit(RUN_FAULT)
    _body_then_exit(body, keep_fds)


def _body_then_exit(body, keep_fds: dict[int, int]) -> None:
    """body(the kept descriptors, in their places), then exit with what it
    returned (RUN_FAULT if it raised)."""
    code = RUN_FAULT
    try:
        code = body(move_fds(keep_fds))
    finally:
        os._exit(code)


def _default_signals() -> None:
    """No signal blocked, none handled but SIGPIPE ignored, no wakeup
    descriptor: what the warm process set for itself stays there."""
    signal.set_wakeup_fd(-1)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)   # an observer that went away: report_fd says so, not a signal


def _mount_run_files(uid: int | None) -> None:
    """In a fresh mount namespace: the sandbox's files read-only, a fresh
    /tmp (the run user's, where there is one) and /dev/shm, every other
    mount frozen read-only (freeze_mounts)."""
    _call("mount", b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    _call("mount", SANDBOX_FILES.encode(), SANDBOX_FILES.encode(), None, MS_BIND | MS_REC, None)
    _call("mount", b"none", SANDBOX_FILES.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    _call("mount", b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, f"size=512m,mode=0700{owner}".encode())
    if os.path.isdir("/dev/shm"):
        _call("mount", b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"size=64m,mode=1777")
    freeze_mounts(writable=("/tmp", "/dev/shm"))


def watch(pid: int, report_fd: int) -> tuple[int, float, bool]:
    """Wait for the child `pid` to end, SIGKILLing it as soon as report_fd
    turns readable (the observer asks for the run to stop, or is gone).
    Returns (its exit code, the processor time of it and all it waited for,
    whether it was stopped)."""
    import select

    stopped = False
    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):   # before Linux 5.3: look every 50 ms
        handle = None
    try:
        while True:
            if not stopped:
                waiting = [report_fd] if handle is None else [report_fd, handle]
                ready, _, _ = select.select(waiting, [], [], 0.05 if handle is None else None)
                if report_fd in ready:
                    stopped = True
                    _sigkill([pid])
            done, status, usage = os.wait4(pid, 0 if stopped else os.WNOHANG)
            if done == pid:
                return exit_code(status), usage.ru_utime + usage.ru_stime, stopped
    finally:
        if handle is not None:
            os.close(handle)


def _run(body, confinement, user, limits, keep_fds, report_fd, dumpable, guard: int, readable: tuple) -> None:
    """The run itself, the guard's only child (the shared check's collector:
    its reaper's).  In the namespace confinement it is pid 1 of its pid
    namespace: when it ends, the kernel kills every process it left.  No
    process stands between it and its guard (each fork of the warm
    process's image costs a run about 2 ms of copying page tables), so its
    orphans are its own to reap.  The kernel drops an init's SIGXCPU unless
    it has a handler: out_of_processor_time ends it there as the signal
    would; in C code, where no handler runs, the SIGKILL a second later
    does (grader.out_of_processor_time)."""
    _follow(guard)
    if confinement == CONFINED:
        _call("mount", b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    try:
        enter_run(confinement, user, limits, dumpable=dumpable, readable=readable)
        _follow(guard)   # a change of user clears the parent-death signal: set it again
        if os.getpid() == 1:
            signal.signal(signal.SIGXCPU, out_of_processor_time)
    except BaseException as error:
        _report_fault(report_fd, error)
        os._exit(RUN_FAULT)
    _body_then_exit(body, keep_fds)


def _reaper(guard: int, report_fd: int) -> int:
    """Pid 1 above the shared check's collector: it forks the collector and
    reaps every process orphaned to it until the collector ends, then ends
    as it did.  The collector forks a guard for each of its runs and kills
    it to stop the run; what that guard leaves comes here, not to the
    collector, which waits only for the guards it knows.  In the forked
    child (the collector) it returns the pid to follow."""
    _follow(guard)
    run = os.fork()
    if run == 0:
        return os.getppid()
    os.close(report_fd)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == run:
            os._exit(exit_code(status))


def out_of_processor_time(signum, frame) -> None:
    """SIGXCPU's handler in a run that is pid 1: end as the signal's default
    action would end any other process (exit status 128 + SIGXCPU)."""
    os._exit(128 + signal.SIGXCPU)


def _follow(guard: int) -> None:
    """Die with the guard (SIGKILL when it ends); end now if it already has."""
    if sys.platform.startswith("linux"):
        _call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != guard:
            os._exit(RUN_FAULT)  # the guard died before we could follow it


# Linux's statvfs flags (ST_*) and the mount flags (MS_*) that keep them in a
# bind remount: a remount must repeat the flags the kernel has locked.
_KEPT_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
               (getattr(os, "ST_NOATIME", 1024), 1024), (getattr(os, "ST_NODIRATIME", 2048), 2048),
               (getattr(os, "ST_RELATIME", 4096), 1 << 21))


def freeze_mounts(writable: tuple[str, ...]) -> None:
    """Make every mount of this mount namespace read-only, but `writable`
    (the run's own fresh /tmp and /dev/shm) and /proc (the run mounts its own):
    a read-only mount never changes a file's access time, so no run can
    leave a mark in the times of a file that a later run may read (the
    sandbox's own tmpfs root, /dev, the files bound into it)."""
    from ol.grading.sandbox.access_times import mount_points

    for target in mount_points():
        if target in writable or target == "/proc" or target.startswith("/proc/"):
            continue
        try:
            flags = os.statvfs(target).f_flag
        except OSError:
            continue   # hidden beneath a later mount
        if flags & os.ST_RDONLY:
            continue
        kept = sum(ms for st, ms in _KEPT_FLAGS if flags & st)
        _call("mount", b"none", target.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept, None)


def enter_run(confinement: str, user: int, limits: Limits, *, dumpable: bool = False, readable: tuple = ()) -> None:
    """In the process that is about to run untrusted code:

        resource limits
        (as root) the run's own unprivileged user, with a fresh, empty session keyring
        no_new_privs
        CONFINED: a user namespace of its own (unless dumpable: the shared check's
                  collector gives one to each of its runs), no capabilities
        BY_UID:   Landlock: read only `readable` (the role's: its files, `ol`, the
                  standard library and what the warm process imported),
                  write only its temporary folder
        a seccomp filter: no keyring; BY_UID: no socket, SysV IPC, message queue

    dumpable keeps /proc/self writable by that user (a collector needs it to
    give each run its own user namespace)."""
    uid = run_uid(user) if confinement != UNCONFINED else None
    _set_limits(limits, user_of_its_own=uid is not None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python starts: a closed peer is an error, not death
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    if confinement == CONFINED:
        os.environ.update(HOME="/tmp", TMPDIR="/tmp")
    tempfile.tempdir = None   # the run's own, not one the warm process may have cached
    if sys.platform.startswith("linux"):
        if confinement != UNCONFINED:
            syscalls.join_fresh_session_keyring()
        _call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if confinement == CONFINED and not dumpable:
            _own_user_namespace()
        if dumpable:
            _call("prctl", PR_SET_DUMPABLE, 1, 0, 0, 0)
        if confinement == BY_UID:   # readable: what the role allows (ol.grading.sandbox.access_times.readable_system)
            private = os.environ.get("TMPDIR", "")
            landlock.restrict(readable=[r for r in readable if r != private], writable=[private] if private else [])
        if confinement != UNCONFINED:
            syscalls.refuse(syscalls.KEYRING + (syscalls.SHARED_OBJECTS if confinement == BY_UID else ()))
    os.chdir(os.environ.get("TMPDIR") or "/tmp")


def _own_user_namespace() -> None:
    """A user namespace of this run's own, mapping its user to itself; no
    capabilities in it.  What the kernel keys by user (the per-user
    keyrings, their quota) lives in the namespace and dies with the run."""
    uid, gid = os.getuid(), os.getgid()
    _call("prctl", PR_SET_DUMPABLE, 1, 0, 0, 0)   # /proc/self/*_map stay ours to write after setuid
    _call("unshare", CLONE_NEWUSER)
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    _call("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(CAP_VERSION_3, 0)
    _call("capset", header, (ctypes.c_uint32 * 6)())


def run_uid(user: int) -> int | None:
    """The run's unprivileged user (a uid the observer's UidBlock holds),
    when we may switch users."""
    return user if os.geteuid() == 0 else None


class UidBlock:
    """A block of UID_BLOCK run users for one check, held (flock on a file of
    /run/lock) for as long as this object lives, so that no two checks on
    one machine (two students of `ol grade --jobs 2`) ever share a user.

        block = UidBlock()     uid = block.draw()     block.close()

    Each run (each side of it) draws a fresh user at random from the block,
    never one used before in this check: a run's user says nothing of its
    role, its slot or how many runs came before it, and nothing a run
    leaves behind that the kernel keys by user (a process that outlived the
    run, a process count) can touch a later run.  sweep() kills every
    process of every user of the block: a check does it when it takes the
    block (what a killed check left) and when it ends.
    """

    def __init__(self):
        import fcntl

        folder = next((f for f in UID_LOCKS if os.access(f, os.W_OK)), None)
        self.fd = -1
        self.used: set[int] = set()
        self._random = random.SystemRandom()
        if folder is None or os.geteuid() != 0:   # no users to switch to: any base will do
            self.base = RUN_UID_BASE
            return
        for index in range(UID_BLOCKS):
            fd = os.open(os.path.join(folder, f"tinyllm-ol-users-{index}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.fd, self.base = fd, RUN_UID_BASE + index * UID_BLOCK
            self.sweep()
            return
        raise ConfinementError(f"no free block of run users: {UID_BLOCKS} graders already run here")

    def draw(self) -> int:
        """A user of the block that no run of this check has had."""
        if len(self.used) >= UID_BLOCK // 2:
            raise ConfinementError(f"this check has used {len(self.used)} run users, the most one block holds")
        while True:
            uid = self.base + self._random.randrange(UID_BLOCK)
            if uid not in self.used:
                self.used.add(uid)
                return uid

    def sweep(self) -> None:
        """SIGKILL every process of every user of the block, until none is left."""
        if os.geteuid() == 0:
            kill_users(self.base, self.base + UID_BLOCK)

    def close(self) -> None:
        if self.fd >= 0:
            self.sweep()
            os.close(self.fd)
            self.fd = -1


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


def _set_limits(limits: Limits, *, user_of_its_own: bool) -> None:
    """The run's resource limits.  RLIMIT_NPROC counts a user's processes:
    set only where the run has a user of its own.  RLIMIT_CPU: SIGXCPU at
    the limit, SIGKILL a second later (a run may catch SIGXCPU)."""
    size = _address_space_now()
    wanted = [
        (resource.RLIMIT_AS, size + limits.address_space, 0),
        (resource.RLIMIT_CPU, limits.cpu_seconds, 1),
        (resource.RLIMIT_FSIZE, limits.file_size, 0),
        (resource.RLIMIT_NOFILE, limits.open_files, 0),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    if user_of_its_own:
        wanted.append((resource.RLIMIT_NPROC, limits.processes, 0))
    for kind, value, grace in wanted:
        soft, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        top = value + grace if hard == resource.RLIM_INFINITY else min(value + grace, hard)
        resource.setrlimit(kind, (value, top))


def _address_space_now() -> int:
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 30


def exit_code(wait_status: int) -> int:
    """A child's wait status (os.waitpid) as the exit code to pass on: its
    exit status, or 128 + the signal that ended it (the shell's convention)."""
    return 128 + os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else os.WEXITSTATUS(wait_status)


def describe_exit(code: int | None) -> str:
    """How a process ended, for a person (protocol.exit_meaning: the one
    table); a negative Popen returncode -N is signal N."""
    return protocol.exit_meaning(code)


def _report(report_fd: int, code: int, cpu: float, stopped: bool) -> None:
    """The run's end, as the observer reads it (protocol.end_line)."""
    from ol.grading.protocol import end_line

    _write_all(report_fd, end_line(code, cpu, stopped))


def _report_fault(report_fd: int, error: BaseException) -> None:
    from ol.grading.protocol import fault_line

    _write_all(report_fd, fault_line(f"the run could not be confined: {error!r}"))


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass   # the observer is gone: nobody is left to tell


def kill_user(uid: int) -> None:
    """SIGKILL every process of `uid` (a run's own user) until none is left."""
    kill_users(uid, uid + 1)


def kill_users(low: int, high: int) -> None:
    """SIGKILL every process whose real user lies in [low, high), until none is left."""
    def chosen(status: str) -> bool:
        at = status.find("\nUid:\t")
        if at < 0 or "\nState:\tZ" in status:   # a zombie is dead already
            return False
        try:
            return low <= int(status[at + 6:].split("\t", 1)[0]) < high
        except ValueError:
            return False

    for _ in range(50):
        found = _processes(chosen)
        if not found:
            return
        _sigkill(found)
        time.sleep(0.001)


def kill_descendants() -> None:
    """SIGKILL every process reparented to this subreaper, until none is left."""
    me = f"\nPPid:\t{os.getpid()}\n"
    for _ in range(50):
        found = _processes(lambda status: me in status)
        if not found:
            return
        _sigkill(found)
        for pid in found:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        time.sleep(0.001)


def _processes(chosen) -> list[int]:
    """The pids whose /proc/PID/status text `chosen` accepts (a process that
    ends while we read is skipped)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/status") as status:
                    if chosen(status.read()):
                        found.append(int(name))
            except OSError:
                continue
    return found


def _sigkill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
