"""`ol list`: every module of the catalog with the student's state in it;
nothing is run."""

from __future__ import annotations

from ol.core.command import Context
from ol.core.exits import OK
from ol.core.state import PASSING

DESCRIPTION = (
    "Shows every module of the catalog with its state: not started, started, course tests\n"
    "passing, or checked.  It reads .ol/state.json, which start, tests, diff, reset and\n"
    "check update, and runs nothing."
)


def configure(parser) -> None:
    pass


def run(args, ctx: Context) -> int:
    ctx.store.records()  # a corrupt state file is reported (and kept) even if nothing is started
    rows = []
    notes = set()
    for module in ctx.catalog.modules:
        status = ctx.store.status(module)
        marks = []
        if status.ref_deps and status.at_least(PASSING):
            marks.append("*")
            notes.add("* with needs from the reference (--ref-deps, or --ref-unstarted)")
        if status.edited_since and status.at_least(PASSING):
            marks.append("+")
            notes.add("+ your files changed since (run ./ol tests again to update)")
        if status.missing:
            marks.append("!")
            notes.add("! some of the module's files are missing")
        rows.append((module.id, module.rung, status.state + "".join(marks), module.title))
    widths = [max(len(r[i]) for r in rows + [("Module", "Rung", "State", "")]) for i in range(3)]
    ctx.say("  ".join(h.ljust(w) for h, w in zip(("Module", "Rung", "State"), widths)) + "  Title")
    for row in rows:
        ctx.say("  ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + "  " + row[3])
    for note in sorted(notes):
        ctx.say(note.replace("./ol", ctx.ol))
    return OK
