"""Milestones: a whole model on the student's library, against a golden run.

A milestone is a [[milestone]] entry of course/catalog.toml.  MS-L7 runs
SmolLM2-135M on tinyllm, with the student's modules, and compares its logits
and its greedy text with what transformers computed on the same checkpoint;
MS-L7G (kind "gemma3") does the same with Gemma 3 270M, before and past its
sliding window.

    milestone = load_milestones(root)["MS-L7"]
    plan = plan_milestone(root, catalog, milestone, ref_deps="unstarted")
    plan.overlay      # {dotted name: Source}: what the run imports
    plan.rows         # (module id, file, "yours" / "the reference" / ...), to print

The run itself is ol.student.milestone.child (ol.student.milestone.gemma3_child for
Gemma 3), in a child Python that sees tinyllm through the overlay (ol never
imports a student's code), started by ol.student.milestone.launch;
ol.student.milestone.compare (ol.student.milestone.gemma3_run) judges what it wrote;
ol.student.milestone.milestone_cli is the command.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ol.core import deps
from ol.core.catalog import CATALOG_PATH, REFERENCE_TREE, STUDENT_TREE, Catalog, Module, dotted_name
from ol.core.errors import OlError
from ol.core.overlay import Source

MILESTONE_KEYS = ("id", "title", "subject", "needs", "chapter", "fixture", "infrastructure")
KINDS = ("llama", "gemma3")  # optional `kind`: which model the run builds (default llama: MS-L7)


class UnknownMilestone(OlError):
    """A milestone id the catalog does not list."""


class MilestoneNotReady(OlError):
    """A module the run needs is not started (and neither --ref-deps nor
    --ref-unstarted was given), or the subject module is not started."""


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
    kind: str = "llama"                # the model: "llama" (ol.student.milestone.child) or "gemma3" (gemma3_child)


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
        kind = entry.get("kind", "llama")
        if kind not in KINDS:
            raise OlError(f"{CATALOG_PATH}, [[milestone]] entry {number}: kind {kind!r}, expected one of {', '.join(KINDS)}")
        milestones[entry["id"]] = Milestone(
            id=entry["id"], title=entry["title"], subject=entry["subject"], needs=tuple(entry["needs"]),
            chapter=entry["chapter"], fixture=entry["fixture"], infrastructure=tuple(entry["infrastructure"]),
            kind=kind,
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


def plan_milestone(root: str | Path, catalog: Catalog, milestone: Milestone, *, ref_deps: bool | str,
                   subject_source: str | None = None, subject_label: str = "") -> Plan:
    """Where each module of the run comes from.

    The subject is the student's (or `subject_source`, a text standing in for
    it: a pitfall planted for a demonstration).  Every other module comes as
    ol.core.deps rules for `ref_deps`: the student's (False), the reference's
    (True), or the student's where started and the reference's where not
    ("unstarted").  Raises MilestoneNotReady, naming the modules and the
    command that helps.
    """
    root = Path(root)
    policy = deps.as_policy(ref_deps)
    others = [m for m in modules_of(catalog, milestone) if m.id != milestone.subject]
    referenced = deps.from_reference(root, others, policy)
    overlay: dict[str, Source] = {}
    rows = []
    unstarted = []
    for module in modules_of(catalog, milestone):
        is_subject = module.id == milestone.subject
        if is_subject and subject_source is not None:
            (file,) = module.files
            overlay[dotted_name(file)] = Source.from_text(subject_source, origin=str(root / REFERENCE_TREE / file))
            rows.append((module.id, f"{REFERENCE_TREE}/{file}", subject_label))
            continue
        if module.id in referenced:
            tree, whose = REFERENCE_TREE, f"the reference ({deps.FLAGS[policy]})"
        elif all((root / STUDENT_TREE / f).is_file() for f in module.files):
            tree, whose = STUDENT_TREE, "yours"
        else:
            unstarted.append(module)
            continue
        for file in module.files:
            overlay[dotted_name(file)] = Source.from_path(root / tree / file)
            rows.append((module.id, f"{tree}/{file}", whose))
    if unstarted:
        ids = ", ".join(m.id for m in unstarted)
        if any(m.id == milestone.subject for m in unstarted):
            raise MilestoneNotReady(
                f"{milestone.id} runs your {milestone.subject}, and you have not started it: "
                f"./ol start {milestone.subject} --ref-deps (and finish it), then ./ol milestone {milestone.id} --ref-deps")
        raise MilestoneNotReady(
            f"{milestone.id} runs {', '.join(m.id for m in modules_of(catalog, milestone))}; you have not started "
            f"{ids}. Add --ref-unstarted to take the modules you have not started from the reference (and yours "
            f"where you have), or --ref-deps to take every module but {milestone.subject} from it:\n"
            f"    ./ol milestone {milestone.id} --ref-unstarted")
    for file in milestone.infrastructure:
        overlay[dotted_name(file)] = Source.from_path(root / REFERENCE_TREE / file)
        rows.append(("", f"{REFERENCE_TREE}/{file}", "the course's checkpoint reader"))
    return Plan(overlay=overlay, rows=tuple(rows))


def stub_advice(root: str | Path, catalog: Catalog, milestone: Milestone, path: str) -> str | None:
    """What to do when the run stopped with NotImplementedError raised in
    `path` (a file of the run): the module it belongs to is a stub, or has one
    left in it; None if `path` is not one of the student's files."""
    try:
        rel = Path(path).resolve().relative_to((Path(root) / STUDENT_TREE).resolve()).as_posix()
    except ValueError:
        return None
    module = next((m for m in modules_of(catalog, milestone) if rel in m.files), None)
    if module is None:
        return None
    if module.id == milestone.subject:
        return (f"your {module.id} ({STUDENT_TREE}/{rel}) still raises NotImplementedError where the stub did: "
                f"finish it (./ol tests {module.id} --ref-deps shows what is left).")
    return (f"your {module.id} ({STUDENT_TREE}/{rel}) still raises NotImplementedError where the stub did. "
            f"Finish it (./ol tests {module.id} --ref-deps), or take it back to not started, so that the "
            f"reference serves it: ./ol reset {module.id} --remove (your file is saved first), then "
            f"./ol milestone {milestone.id} --ref-unstarted. (--ref-deps takes every module but "
            f"{milestone.subject} from the reference.)")


def module_table(root: str | Path, catalog: Catalog, milestone: Milestone) -> str:
    """The README's table of every module the milestone runs, from the catalog:
    its id, the files the student writes, its title, and whether it is graded
    (with how many pitfalls) or the milestone's subject."""
    lines = ["| module | you write | what it is |", "|---|---|---|"]
    for module in modules_of(catalog, milestone):
        notes = []
        if module.grading is not None:
            with (Path(root) / module.grading.pitfalls).open("rb") as file:
                pitfalls = len(tomllib.load(file).get("pitfall", []))
            notes.append(f"**graded by mutation** ({pitfalls} pitfalls)")
        if module.id == milestone.subject:
            notes.append("the milestone's subject: always yours")
        files = ", ".join(f"`{STUDENT_TREE}/{f}`" for f in module.files)
        lines.append(f"| {module.id} | {files} | {module.title}{'; ' + '; '.join(notes) if notes else ''} |")
    return "\n".join(lines) + "\n"
