"""`ol watch MODULE [--mine] [--ref-deps | --ref-unstarted] [-- PYTEST_ARGS]`: the tests again on every save.

Runs what `./ol tests` runs with the same arguments (the course tests, or
with --mine your own, after the static check), then waits; each time a file
of your library (python/tinyllm/) or of your test folder changes, it runs
them again.  Ctrl-C stops it (exit 130).  --poll looks for changes by
polling, for folders whose change events do not arrive (a Windows drive
under WSL2, a network or container mount).

Started with SIGINT ignored (`ol watch ... &` in a script: a shell without
job control starts background jobs so, that a Ctrl-C meant for the command
in the foreground leaves them running), it keeps SIGINT ignored, as Python
and the shell do, and says how to stop it instead: SIGTERM (exit 143).
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path

from ol.core.errors import OlError

TAKES_PYTEST_ARGS = True
WATCHED_SUFFIXES = (".py", ".c", ".h")


def configure(parser: argparse.ArgumentParser) -> None:
    from ol.student import tests_cli

    tests_cli.configure(parser)
    parser.add_argument("--poll", action="store_true",
                        help="look for changes by polling (when saving a file does not start a run)")


def run(args: argparse.Namespace, ctx) -> int:
    from ol.core.deps import policy_of
    from ol.core.runner import plan_overlay
    from ol.student.tests_cli import run as run_tests

    module = ctx.module(args.module)
    plan_overlay(ctx.root, module, catalog=ctx.catalog, ref_deps=policy_of(args))  # NotReady: say why, exit 2
    folders = [ctx.root / "python" / "tinyllm", ctx.root / module.student_tests]
    shown = " and ".join(ctx.show(str(f.relative_to(ctx.root)) + "/") for f in folders if f.is_dir())
    stops = ("Ctrl-C stops" if signal.getsignal(signal.SIGINT) != signal.SIG_IGN
             else f"started with Ctrl-C ignored, as a background job: kill {os.getpid()} stops")
    for changed in changes(folders, poll=args.poll):
        if not changed:
            run_tests(args, ctx)   # the first run, once the watcher is live
        else:
            names = ", ".join(ctx.show(str(p.relative_to(ctx.root))) for p in changed)
            ctx.say(f"ol watch: {names} changed at {time.strftime('%H:%M:%S')}: running again", "")
            try:
                run_tests(args, ctx)
            except OlError as error:   # e.g. a file of the module deleted: say so, and keep watching
                ctx.say(f"ol: {error}")
        ctx.say("", f"ol watch: waiting for a change in {shown} ({stops})")
    return 0  # not reached: only a signal ends the watch


def changes(folders: list[Path], *, poll: bool = False):
    """Yield [] once the watcher is live, then each batch of changed files (a
    sorted list of paths) under `folders` that end in WATCHED_SUFFIXES,
    outside __pycache__ and hidden folders.  Runs until interrupted.

    The watcher keeps the changes made while the caller handles a batch (a
    run of the tests) and yields them next, so no save is missed, not even
    one made during the first run."""
    from watchfiles import DefaultFilter, watch

    class SourceFilter(DefaultFilter):
        def __call__(self, change, path: str) -> bool:
            return path.endswith(WATCHED_SUFFIXES) and super().__call__(change, path)

    # watchfiles turns any signal that arrives while it waits into
    # KeyboardInterrupt; SIGTERM must still end ol as SIGTERM does (exit 143),
    # so its handler (ol.core.command's) is wrapped to remember that it ran.
    terminated = []
    handler = signal.getsignal(signal.SIGTERM)
    if callable(handler):
        def on_sigterm(signum, frame):
            terminated.append(signum)
            handler(signum, frame)
        signal.signal(signal.SIGTERM, on_sigterm)

    existing = [str(f) for f in folders if f.is_dir()]
    live = False
    try:
        # With yield_on_timeout, an empty batch comes every rust_timeout ms
        # while nothing changes: the first one says the watcher is set up.
        for batch in watch(*existing, watch_filter=SourceFilter(), force_polling=poll or None, debounce=400,
                           rust_timeout=200, yield_on_timeout=True, raise_interrupt=True):
            if batch or not live:
                live = True
                yield sorted({Path(path) for _, path in batch})
    except KeyboardInterrupt:
        if terminated:
            handler(signal.SIGTERM, None)   # raises what ol's SIGTERM handler raises
        raise
    finally:
        if callable(handler):
            signal.signal(signal.SIGTERM, handler)
