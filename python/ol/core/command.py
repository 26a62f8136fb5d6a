"""What every verb gets and how it ends: the command's context (the
repository, its catalog and state, the streams), and SIGTERM as an
exception while a command runs.

A verb is a module with

    def configure(parser: argparse.ArgumentParser) -> None
    def run(args: argparse.Namespace, ctx: Context) -> int      (an exit code: ol.core.exits)
    TAKES_PYTEST_ARGS = True     (optional: it accepts `-- ARGS` for pytest)
    DESCRIPTION = "..."          (optional: `ol VERB --help`'s text; else its docstring's first paragraph)

listed in ol.cli.VERBS, which imports it only when it is run.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TextIO

from ol.core.catalog import Catalog, Module, load_catalog
from ol.core.state import StateStore


@dataclass
class Context:
    """What every verb gets: the repository, its catalog and state, and the streams."""

    root: Path
    out: TextIO = sys.stdout
    err: TextIO = sys.stderr

    @cached_property
    def catalog(self) -> Catalog:
        catalog = load_catalog(self.root)
        for warning in catalog.warnings:
            self.warn(warning)
        return catalog

    @cached_property
    def store(self) -> StateStore:
        return StateStore(self.root, warn=self.warn)

    def module(self, module_id: str) -> Module:
        """The catalog's module; UnknownModule (exit 2, listing the ids) otherwise."""
        return self.catalog.get(module_id)

    def say(self, *lines: str) -> None:
        for line in lines:
            print(line, file=self.out)
        self.out.flush()

    def warn(self, message: str) -> None:
        print(f"ol: warning: {message}", file=self.err)

    def show(self, rel: str) -> str:
        """A repository path (relative to the root) as the user should type it
        from where they are: relative inside the repository, absolute outside."""
        path = self.root / rel
        try:
            cwd = Path.cwd().resolve()
        except FileNotFoundError:  # the current directory was deleted
            cwd = Path("/")
        if cwd == self.root or self.root in cwd.parents:
            shown = os.path.relpath(path, cwd)
            return shown + ("/" if rel.endswith("/") else "")
        return str(path) + ("/" if rel.endswith("/") else "")

    @cached_property
    def ol(self) -> str:
        """How to run ol from the current directory: "./ol" at the root."""
        shown = self.show("ol")
        return shown if os.sep in shown else "./" + shown


class Terminated(BaseException):
    """SIGTERM arrived: unwind like Ctrl-C, so every sandbox and temporary
    folder is cleaned up on the way out."""


@contextlib.contextmanager
def terminating_cleanly():
    """SIGTERM raises Terminated inside the block (in the main thread: only
    there can Python set a handler); the handler before it is restored after."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)   # None: set outside Python
