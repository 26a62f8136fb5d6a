"""Import the reference solutions in this process, under their own names.

The kit's tests run beside the student's tree (python/tinyllm, a skeleton);
`reference_modules("tinyllm.modern.rope")` maps every module of the reference
tree (course/reference/python/tinyllm) over it with ol's import overlay and
returns the modules asked for; `served_through_the_proxy` serves one to
the grader's proxy of its contract, as a graded run's tests meet it.
"""

from __future__ import annotations

import importlib
import socket
import threading
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import ModuleType

from helpers.kit import ROOT
from ol.core.overlay import Source, install_overlay

REFERENCE = ROOT / "course" / "reference" / "python"


def reference_mapping() -> dict[str, Source]:
    """{dotted name: Source} for every module of the reference tinyllm tree."""
    mapping = {}
    for path in (REFERENCE / "tinyllm").rglob("*.py"):
        parts = path.relative_to(REFERENCE).with_suffix("").parts
        mapping[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = Source.from_path(path)
    return mapping


@cache
def _install() -> None:
    install_overlay(reference_mapping())


def reference_modules(*names: str):
    """The reference modules `names`, imported (a tuple in the same order)."""
    _install()
    return tuple(importlib.import_module(name) for name in names)


@contextmanager
def served_through_the_proxy(name: str, contract: Path, implementation: ModuleType):
    """The proxy module of `name` built from its contract (.pyi), connected to
    `implementation` served from a thread of this process."""
    from ol.grading import proxy
    from ol.grading.serve import serve

    ours, theirs = socket.socketpair()
    server = threading.Thread(target=serve, args=(theirs, implementation), daemon=True)
    server.start()
    module = proxy.build_proxy_module(name, contract.read_text(), str(contract))
    proxy.connect(ours)
    try:
        yield module
    finally:
        proxy.connect(None)
        ours.close()
        server.join(timeout=5)
        theirs.close()
