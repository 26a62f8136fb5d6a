"""The local check's shared collection: collect the suite once, then fork one
clean run per variant.

This loop itself runs inside a confined run (its own unprivileged user,
namespaces and limits; ol.grading.sandbox.confine).  It collects the student's suite,
which runs the suite's code in this process, then forks one run per request.
Each run starts from the state right after collection, the same for every
run, gets the same request (every test, in the suite's order: the observer
stops a run it has heard enough from), and gets new user, mount, network,
IPC, pid and cgroup namespaces (the last rooted at its memory group, whose
name it cannot see) with a /proc of its own, a fresh /tmp and /dev/shm,
its capabilities dropped, and only its own two descriptors
(the channel to its implementation and its notes to the observer); shared
memory mapped while collecting is unmapped, and every process started while
collecting is killed before the first run.  So no run can leave anything for
a later one: not a file, a socket, shared memory, a process, a signal.

Why the code below looks unusual: once collect() returns, the suite's code has
run here and may have replaced any Python function or attribute (of `os`, of
pytest, of this package).  So everything the loop uses afterwards is bound to
a local variable *before* collecting, and is a builtin or a method of a C
type, which Python code cannot change; the loop calls no Python function of
ours until a forked run hands over to the suite.  Sys.addaudithook is refused
from before collection, gc.callbacks is emptied around the collector's own
gc.collect(), runs are forked by clone3 through the C library (os.fork would
call the suite's os.register_at_fork handlers), the ctypes functions bound
here lose any errcheck, restype or argtypes the suite gave them, and what they
are given is bytes or ints, never a ctypes object the suite could change: no
hook of the suite's runs here either.  Every run starts from the same
interpreter state, its random module's included (no at-fork handler reseeds
it).  What remains possible for code that writes this process's memory
directly (ctypes, numpy's raw memory) is in README.md: the local check is
feedback, the instructor's isolated grade is the authority.

Frames: ol.grading.protocol defines them (R, K from the observer; C, P, D
from here) and reads them on the observer's side.  This loop cannot call
protocol's functions once the suite's code has run, so it packs and unpacks
them with the layouts (struct.Struct objects, C types) bound beforehand.
Each run's memory group, when there is one, comes as a third descriptor of
its R frame: the run joins it first.
"""

from __future__ import annotations

import _ctypes
import _signal
import _socket
import ctypes
import gc
import os
import resource
import select
import socket
import struct
import sys

from ol.grading import protocol
from ol.grading.sandbox import clone, confine

EXIT_THREADS = protocol.EXIT_THREADS
COLLECTOR_PROCESSES = 16   # the collector's process limit, in runs' (a run's is Limits.processes)

# each run's own user, mount, network, IPC and pid namespaces
COLLECTED_RUN_NAMESPACES = (confine.CLONE_NEWUSER | confine.CLONE_NEWNS | confine.CLONE_NEWNET
                            | confine.CLONE_NEWIPC | confine.CLONE_NEWPID)
GLIBC_RESERVED_SIGNALS = (32, 33)   # the C library's own (NPTL): signal() refuses them


def serve_collected(control_fd: int, collect, run_items, limits: confine.Limits) -> int:
    """Collect with collect() -> (items, test ids) or an exit code, then serve
    run requests on control_fd until it closes; returns the exit status.
    limits: each run's (this process may start more processes than a run:
    its own limit is COLLECTOR_PROCESSES times a run's, so that a run that
    forks all it may cannot stop it from forking the next run)."""
    # ---- bound before the suite's code runs; nothing else is used afterwards -------------
    kill, exit_, getuid, getgid, getpid = os.kill, os._exit, os.getuid, os.getgid, os.getpid
    wait4 = os.wait4
    run_head, kill_head, done_frame, sized_head = protocol.RUN_HEAD, protocol.KILL, protocol.DONE, protocol.SIZED_HEAD
    unpack_run, unpack_kill, pack_done, pack_sized = run_head.unpack_from, kill_head.unpack_from, done_frame.pack, sized_head.pack
    run_size, kill_size = run_head.size, kill_head.size
    frame_run, frame_kill, frame_done = protocol.FRAME_RUN, protocol.FRAME_KILL, protocol.FRAME_DONE
    frame_collected, frame_problem = protocol.FRAME_COLLECTED, protocol.FRAME_PROBLEM
    open_, read, write, close, dup, dup2, closerange = os.open, os.read, os.write, os.close, os.dup, os.dup2, os.closerange
    pidfd_open, wait_readable, setrlimit = os.pidfd_open, select.select, resource.setrlimit
    recvmsg, sendall = _socket.socket.recvmsg, _socket.socket.sendall
    set_signal, settrace, setprofile, listdir = _signal.signal, sys.settrace, sys.setprofile, os.listdir
    gc_collect, gc_freeze, clear_gc_callbacks = gc.collect, gc.freeze, gc.callbacks.clear
    from_bytes, byte_order = int.from_bytes, "little"
    int_, len_, range_, type_, tuple_ = int, len, range, type, tuple   # the suite may replace builtins'
    os_error, value_error, runtime_error = OSError, ValueError, RuntimeError
    exit_threads = EXIT_THREADS
    libc = ctypes.CDLL(None, use_errno=True)
    # clone3, not fork: each run starts in its own namespaces, pid 1 of its pid namespace, with no
    # process between it and this loop (clone.py).  Not os.fork either: os.fork runs the handlers
    # os.register_at_fork keeps, which the suite may add while collecting and no Python code can
    # take back out.
    syscall, unshare, mount, prctl, capset = libc.syscall, libc.unshare, libc.mount, libc.prctl, libc.capset
    clone_arguments = clone.arguments(COLLECTED_RUN_NAMESPACES, clone.tid_field(libc))
    sys_clone3, clone_size = clone.SYS_CLONE3, clone.ARGUMENTS.size
    # munmap's addresses need 64 bits, so it takes argument types; a prototype's are converted by
    # what its class was built with, here, never by a class attribute the suite could replace.
    munmap = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)(("munmap", libc))
    c_functions = (syscall, unshare, mount, prctl, capset, munmap)
    attribute = _ctypes.CFuncPtr.__dict__    # C setters: a function's errcheck or restype can be Python code
    drop_errcheck, drop_restype = attribute["errcheck"].__delete__, attribute["restype"].__delete__
    drop_argtypes = attribute["argtypes"].__delete__
    max_fd = limits.open_files
    run_fault, cgroup_namespace = confine.RUN_FAULT, confine.CLONE_NEWCGROUP
    ms_rec_private = confine.MS_REC | confine.MS_PRIVATE
    ms_tmp, ms_shm = confine.MS_NOSUID | confine.MS_NODEV, confine.MS_NOSUID | confine.MS_NODEV | confine.MS_NOEXEC
    pr_set_pdeathsig = confine.PR_SET_PDEATHSIG
    ms_proc = confine.MS_NOSUID | confine.MS_NODEV | confine.MS_NOEXEC
    run_cpu_seconds = limits.cpu_seconds     # the same for every run: a run can read its own limits
    sigkill = int(_signal.SIGKILL)
    cap_header = struct.pack("=II", confine.CAP_VERSION_3, 0)    # bytes: the suite cannot change them
    no_caps = bytes(24)
    ancillary = socket.CMSG_SPACE(3 * 4)
    rdonly, wronly = os.O_RDONLY, os.O_WRONLY
    limits_now = ((resource.RLIMIT_AS, resource.getrlimit(resource.RLIMIT_AS)),   # tuples: the suite can reach
                  (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),    # this frame while it is
                  (resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size)),       # collected, and change
                  (resource.RLIMIT_NPROC, (limits.processes, limits.processes)))       # what it can change
    rlimit_cpu = resource.RLIMIT_CPU
    uncatchable = (int(_signal.SIGKILL), int(_signal.SIGSTOP), *GLIBC_RESERVED_SIGNALS)
    catchable = tuple(n for n in range(1, int(_signal.NSIG)) if n not in uncatchable)
    sig_dfl, sig_ign, sigpipe = int(_signal.SIG_DFL), int(_signal.SIG_IGN), int(_signal.SIGPIPE)
    uid_map = f"{getuid()} {getuid()} 1".encode()
    gid_map = f"{getgid()} {getgid()} 1".encode()
    control = socket.socket(fileno=control_fd)
    # The hook stays registered after collection, when the suite may have rewritten it: its
    # code and defaults are put back (by C setters bound here) before the loop begins.
    hook, set_code, set_defaults = _refuse_more_hooks, type(_refuse_more_hooks).__code__.__set__, \
        type(_refuse_more_hooks).__defaults__.__set__
    hook_code, hook_defaults = hook.__code__, hook.__defaults__
    # each run is pid 1 of its namespace, whose SIGXCPU the kernel drops unless it is handled
    on_xcpu, sigxcpu = _out_of_processor_time, int(_signal.SIGXCPU)
    xcpu_code, xcpu_defaults = on_xcpu.__code__, on_xcpu.__defaults__
    sys.addaudithook(hook)

    collected = collect()                       # <- the suite's code runs here
    # Code of the suite's can still run here until the collector's own gc.collect() returns: in
    # a result collect() was made to return (its iteration, its __class__), in the finalizers of
    # the suite's garbage.  So the result is made plain first, the garbage collected next, and
    # only then is everything the suite could have changed put back.
    collected = tuple_(collected)
    if type_(collected[0]) is int_:
        problem = collected[1]
        text = (problem.get("problem", "") + "\n" + problem.get("detail", "")).encode()
        sendall(control, pack_sized(frame_problem, len_(text)) + text)
        return collected[0]
    items, test_ids, filed = collected
    joined = ("\n".join(test_ids) + "\n\n" + "\n".join(filed)).encode()   # protocol.collected_ids
    clear_gc_callbacks()   # the list the collector's gc_collect calls
    gc_collect()
    clear_gc_callbacks()   # and any a finalizer added
    gc_freeze()            # the runs share the collected suite's pages instead of copying them
    # ---- from here on: only the names bound above -------------------------------------------
    set_code(hook, hook_code)
    set_defaults(hook, hook_defaults)
    set_code(on_xcpu, xcpu_code)
    set_defaults(on_xcpu, xcpu_defaults)
    for function in c_functions:     # back to C: a Python errcheck or restype would run here
        drop_errcheck(function)
        drop_restype(function)
        drop_argtypes(function)
    settrace(None)
    setprofile(None)
    for number in catchable:
        try:
            set_signal(number, sig_ign if number == sigpipe else sig_dfl)
        except (os_error, value_error, runtime_error):
            pass
    me = getpid()
    for entry in listdir("/proc"):             # no process started while collecting lives on
        if entry.isdigit() and int_(entry) not in (1, me):
            try:
                kill(int_(entry), sigkill)
            except os_error:
                pass
    if len_(listdir("/proc/self/task")) != 1:
        text = b"your tests start threads while being collected (at import time); start them inside tests"
        sendall(control, pack_sized(frame_problem, len_(text)) + text)
        return exit_threads
    # Shared memory mapped while collecting would join every run: each run unmaps it.  The
    # loop below maps nothing shared, so the list read once here is every run's.
    shared = []      # (address, length) of each shared mapping
    maps = open_(b"/proc/self/maps", rdonly)
    listing = b""
    while chunk := read(maps, 65536):
        listing += chunk
    close(maps)
    for line in listing.split(b"\n"):
        fields = line.split()
        if len_(fields) > 1 and fields[1][3:4] == b"s":
            low, high = fields[0].split(b"-")
            shared.append((int_(low, 16), int_(high, 16) - int_(low, 16)))
    sendall(control, pack_sized(frame_collected, len_(joined)) + joined)

    runs = {}        # pidfd of a run -> (run id, pid)
    buffer = b""
    while True:
        ready = wait_readable([control_fd, *runs], [], [])[0]
        for fd in ready:
            if fd in runs:                        # the run ended, and its pid namespace with it
                run_id, pid = runs.pop(fd)
                _, status, usage = wait4(pid, 0)
                close(fd)
                code = (128 + (status & 0x7F)) if status & 0x7F else (status >> 8) & 0xFF   # confine.exit_code
                sendall(control, pack_done(frame_done, run_id, code, int_((usage.ru_utime + usage.ru_stime) * 1000)))
                continue
            if fd != control_fd:
                continue                          # a descriptor this round already closed
            data, ancdata, _, _ = recvmsg(control, 65536, ancillary)
            if not data and not ancdata:
                return 0                          # the observer is done
            fds = []
            for _, _, cmsg in ancdata:
                fds += [from_bytes(cmsg[i:i + 4], byte_order) for i in range_(0, len_(cmsg) - len_(cmsg) % 4, 4)]
            buffer += data
            while buffer:
                kind = buffer[:1]
                if kind == frame_kill and len_(buffer) >= kill_size:
                    victim = unpack_kill(buffer)[1]
                    buffer = buffer[kill_size:]
                    for run_id, pid in runs.values():
                        if run_id == victim:
                            try:
                                kill(pid, sigkill)    # pid 1 of its namespace: every process it left goes too
                            except os_error:
                                pass
                    continue
                if kind != frame_run or len_(buffer) < run_size:
                    break
                _, run_id, descriptors = unpack_run(buffer)
                buffer = buffer[run_size:]
                channel, notes = fds[0], fds[1]
                memory = fds[2] if descriptors > 2 else -1
                fds = fds[descriptors:]
                pid = syscall(sys_clone3, clone_arguments, clone_size)
                if pid < 0:
                    raise os_error("the collector could not fork a run (clone3 returned -1)")
                if pid == 0:
                    # ---- one run, pid 1 of fresh namespaces of its own; then the suite ---------
                    code = run_fault
                    try:
                        if memory >= 0:                   # the run's memory group, before anything else
                            write(memory, b"0")
                        if unshare(cgroup_namespace) != 0:    # rooted at that group: its path reads "/"
                            exit_(run_fault)
                        for path, text in ((b"/proc/self/setgroups", b"deny"), (b"/proc/self/uid_map", uid_map),
                                           (b"/proc/self/gid_map", gid_map)):
                            fd = open_(path, wronly)
                            write(fd, text)
                            close(fd)
                        for source, target, kind_, flags, options in (
                            (b"none", b"/", None, ms_rec_private, None),
                            (b"tmpfs", b"/tmp", b"tmpfs", ms_tmp, b"size=512m,mode=0700"),    # fresh, this run's only
                            (b"tmpfs", b"/dev/shm", b"tmpfs", ms_shm, b"size=64m,mode=0700"),
                        ):  # the sandbox's files are read-only already: the collector's own confinement made it so
                            if mount(source, target, kind_, flags, options) != 0:
                                exit_(run_fault)
                        prctl(pr_set_pdeathsig, sigkill, 0, 0, 0)   # SIGKILL when this loop goes
                        # a /proc of its own pid namespace: no run sees another's processes
                        if mount(b"proc", b"/proc", b"proc", ms_proc, None) != 0:
                            exit_(run_fault)
                        if capset(cap_header, no_caps) != 0:
                            exit_(run_fault)
                        for address, length in shared:    # shared memory mapped while collecting
                            munmap(address, length)
                        for kind_, value in limits_now:
                            setrlimit(kind_, value)
                        if run_cpu_seconds > 0:           # SIGXCPU at the limit, SIGKILL a second later
                            setrlimit(rlimit_cpu, (run_cpu_seconds, run_cpu_seconds + 1))
                        set_signal(sigxcpu, on_xcpu)
                        kept_channel, kept_notes = dup(channel), dup(notes)
                        dup2(kept_channel, 3)
                        dup2(kept_notes, 4)
                        closerange(5, max_fd)
                        null = open_(b"/dev/null", rdonly)
                        dup2(null, 0), dup2(null, 1), dup2(null, 2)
                        if null > 4:
                            close(null)
                        code = run_items(items)    # <- the suite runs against one variant, every test
                    finally:
                        exit_(code)
                close(channel)
                close(notes)
                if memory >= 0:
                    close(memory)
                runs[pidfd_open(pid)] = (run_id, pid)


def _out_of_processor_time(signum, frame, exit_=os._exit, code=128 + int(_signal.SIGXCPU)) -> None:
    """A run's SIGXCPU handler (confine.out_of_processor_time), on names bound
    here: its code and defaults are restored after collection."""
    exit_(code)


def _refuse_more_hooks(event: str, args: tuple, refusal=RuntimeError) -> None:
    """The audit hook that keeps the suite's own out (a RuntimeError makes
    sys.addaudithook skip the new hook).  It names nothing global: its code
    and defaults are restored after collection, its globals are not."""
    if event == "sys.addaudithook":
        raise refusal("graded tests may not add audit hooks")
