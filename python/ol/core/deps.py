"""Where the other modules of a run come from: `--ref-deps` and `--ref-unstarted`.

Every command that runs a module's code (tests, watch, shell, check, diff,
milestone) serves the module in hand from your files and decides for each
module it needs (its `needs`, transitively; for a milestone, every module
but its subject) by the one rule below:

    neither flag       yours: python/..., started or not (a need not started
                       stops the command, saying so)
    --ref-deps         the reference's (course/reference/python/), whatever you
                       have written: only the module in hand is tested
    --ref-unstarted    yours where you have started it, the reference's where
                       you have not (`ol reset MODULE --remove` takes a module
                       back to not started)

A module is started when one of its files exists in python/ (as `ol list`
says); one started with a file missing stops the command, naming the file.
In a student kit a need whose reference is withheld is yours under either
flag (ol.core.student_kit).

    policy = policy_of(args)                    # MINE, REFERENCE or UNSTARTED
    from_reference(root, needs, policy)         # the ids of the needs the reference serves
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from ol.core import student_kit
from ol.core.catalog import STUDENT_TREE, Module
from ol.core.errors import OlError

MINE, REFERENCE, UNSTARTED = "mine", "reference", "unstarted"
POLICIES = (MINE, REFERENCE, UNSTARTED)
FLAGS = {MINE: "", REFERENCE: "--ref-deps", UNSTARTED: "--ref-unstarted"}



class PartlyStarted(OlError):
    """A module has some of its files in python/ but not all: neither yours nor not started."""


def add_flags(parser: argparse.ArgumentParser, needed: str = "the modules MODULE needs") -> None:
    """--ref-deps and --ref-unstarted, one or neither; `needed` names the modules they choose for."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--ref-deps", action="store_true",
                       help=f"{needed}: all from the reference, whatever you have written")
    group.add_argument("--ref-unstarted", action="store_true",
                       help=f"{needed}: yours where you have started them, the reference's where not "
                            "(ol reset M --remove takes a module back to not started)")


def policy_of(args: argparse.Namespace) -> str:
    """The policy the parsed flags ask for."""
    if getattr(args, "ref_unstarted", False):
        return UNSTARTED
    return REFERENCE if getattr(args, "ref_deps", False) else MINE


def as_policy(value: bool | str) -> str:
    """A policy from a library caller's `ref_deps`: False (MINE), True (REFERENCE), or a policy."""
    if value is True or value is False:
        return REFERENCE if value else MINE
    if value not in POLICIES:
        raise ValueError(f"ref_deps must be True, False or one of {POLICIES}, got {value!r}")
    return value


def flag(value: bool | str) -> str:
    """The flag that asks for `value`, with a space before it ("" for MINE), to print in a command."""
    shown = FLAGS[as_policy(value)]
    return f" {shown}" if shown else ""


def started(root: str | Path, module: Module) -> bool:
    """Whether `module` is started: all its files in python/ (True), none (False).
    Raises PartlyStarted when only some are there."""
    present = [f for f in module.files if (Path(root) / STUDENT_TREE / f).exists()]
    if present and len(present) < len(module.files):
        missing = [f"{STUDENT_TREE}/{f}" for f in module.files if f not in present]
        raise PartlyStarted(
            f"{module.id} is started, but {', '.join(missing)} is missing: ./ol start {module.id} writes "
            f"a fresh stub in its place, or ./ol reset {module.id} --remove takes {module.id} back to not "
            "started (your files are saved first) so that the reference serves it")
    return bool(present)


def from_reference(root: str | Path, needs: Iterable[Module], value: bool | str) -> set[str]:
    """The ids of `needs` that the reference serves under the policy `value`
    (a student kit's withheld needs never: they are the student's own)."""
    policy = as_policy(value)
    if policy == MINE:
        return set()
    withheld = set(student_kit.withheld(root))
    return {m.id for m in needs if m.id not in withheld and (policy == REFERENCE or not started(root, m))}
