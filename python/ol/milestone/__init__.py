"""Milestones: a whole model on the student's library, against a golden run.

A milestone is a [[milestone]] entry of course/catalog.toml.  MS-L7 runs
SmolLM2-135M on tinyllm, with the student's modules, and compares its logits
and its greedy text with what transformers computed on the same checkpoint.

    milestone = load_milestones(root)["MS-L7"]
    plan = plan_milestone(root, catalog, milestone, ref_deps=True)
    plan.overlay      # {dotted name: Source}: what the run imports
    plan.rows         # (module id, file, "yours" / "the reference" / ...), to print

The run itself is ol.milestone.child, in a child Python that sees tinyllm
through the overlay (ol never imports a student's code); ol.milestone.compare
judges what it wrote; ol.milestone.milestone_cli is the command.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ol.catalog import CATALOG_PATH, REFERENCE_TREE, STUDENT_TREE, Catalog, Module, dotted_name
from ol.errors import OlError
from ol.overlay import Source

MILESTONE_KEYS = ("id", "title", "subject", "needs", "chapter", "fixture", "infrastructure")


class UnknownMilestone(OlError):
    """A milestone id the catalog does not list."""


class MilestoneNotReady(OlError):
    """A module the run needs is not started (and --ref-deps was not given), or
    the subject module is not started."""


@dataclass(frozen=True)
class Milestone:
    """One [[milestone]] entry."""

    id: str
    title: str
    subject: str                       # the module the milestone is about: always the student's
    needs: tuple[str, ...]             # modules run, with everything they need
    chapter: str
    fixture: str                       # the golden run (an .npz with provenance)
    infrastructure: tuple[str, ...]    # files under the reference tree that no student writes (the reader)


def load_milestones(root: str | Path) -> dict[str, Milestone]:
    """Every [[milestone]] of the catalog, by id."""
    path = Path(root) / CATALOG_PATH
    with path.open("rb") as file:
        entries = tomllib.load(file).get("milestone", [])
    milestones = {}
    for number, entry in enumerate(entries, start=1):
        missing = [key for key in MILESTONE_KEYS if key not in entry]
        if missing:
            raise OlError(f"{CATALOG_PATH}, [[milestone]] entry {number}: missing {', '.join(missing)}")
        milestones[entry["id"]] = Milestone(
            id=entry["id"], title=entry["title"], subject=entry["subject"], needs=tuple(entry["needs"]),
            chapter=entry["chapter"], fixture=entry["fixture"], infrastructure=tuple(entry["infrastructure"]),
        )
    return milestones


def get_milestone(root: str | Path, milestone_id: str) -> Milestone:
    milestones = load_milestones(root)
    for known_id, milestone in milestones.items():
        if known_id.casefold() == milestone_id.casefold():
            return milestone
    raise UnknownMilestone(f"unknown milestone {milestone_id!r}; the course has: {', '.join(milestones) or 'none'}")


def modules_of(catalog: Catalog, milestone: Milestone) -> tuple[Module, ...]:
    """Every module the run imports: the needs and what they need, needs first."""
    order: list[Module] = []
    for need in milestone.needs:
        for module in (*catalog.needs_closure(need), catalog.get(need)):
            if module not in order:
                order.append(module)
    return tuple(order)


@dataclass(frozen=True)
class Plan:
    overlay: dict[str, Source]
    rows: tuple[tuple[str, str, str], ...]   # (module id, file shown, whose)


def plan_milestone(root: str | Path, catalog: Catalog, milestone: Milestone, *, ref_deps: bool,
                   subject_source: str | None = None, subject_label: str = "") -> Plan:
    """Where each module of the run comes from.

    The subject is the student's (or `subject_source`, a text standing in for
    it: a pitfall planted for a demonstration).  Every other module is the
    student's; with ref_deps, one the student has not started (a file of it
    missing from python/) comes from the reference instead.  Raises
    MilestoneNotReady, naming the modules and the command that helps.
    """
    root = Path(root)
    overlay: dict[str, Source] = {}
    rows = []
    unstarted = []
    for module in modules_of(catalog, milestone):
        started = all((root / STUDENT_TREE / f).is_file() for f in module.files)
        is_subject = module.id == milestone.subject
        if is_subject and subject_source is not None:
            (file,) = module.files
            overlay[dotted_name(file)] = Source.from_text(subject_source, origin=str(root / REFERENCE_TREE / file))
            rows.append((module.id, f"{REFERENCE_TREE}/{file}", subject_label))
            continue
        if not started and (is_subject or not ref_deps):
            unstarted.append(module)
            continue
        tree, whose = (STUDENT_TREE, "yours") if started else (REFERENCE_TREE, "the reference (--ref-deps)")
        for file in module.files:
            overlay[dotted_name(file)] = Source.from_path(root / tree / file)
            rows.append((module.id, f"{tree}/{file}", whose))
    if unstarted:
        ids = ", ".join(m.id for m in unstarted)
        subject = [m for m in unstarted if m.id == milestone.subject]
        if subject:
            raise MilestoneNotReady(
                f"{milestone.id} runs your {milestone.subject}, and you have not started it: "
                f"./ol start {milestone.subject} --ref-deps (and finish it), then ./ol milestone {milestone.id} --ref-deps")
        raise MilestoneNotReady(
            f"{milestone.id} runs {', '.join(m.id for m in modules_of(catalog, milestone))}; you have not started "
            f"{ids}. Add --ref-deps to take the modules you have not started from the reference:\n"
            f"    ./ol milestone {milestone.id} --ref-deps")
    for file in milestone.infrastructure:
        overlay[dotted_name(file)] = Source.from_path(root / REFERENCE_TREE / file)
        rows.append(("", f"{REFERENCE_TREE}/{file}", "the course's checkpoint reader"))
    return Plan(overlay=overlay, rows=tuple(rows))
