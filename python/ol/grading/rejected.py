"""Tests that fail on a correct implementation: each one once, with its own
failure, and the correct implementations it fails on.

A test is graded only when it passed on every run of a correct
implementation (ol.grading.grader); the others are left out (LeftOut:
failed, errored, hung, or never reached because an earlier test ended the
run) and, by the catalog's `rejected` policy, the rest of the suite is
graded or not.  Here each correct implementation that a test failed on runs
the suite once more in a pytest run of its own (task "pytest"), after the
grade is made, which says, per failing test, what pytest's short test
summary says: the exception and its message, or the assertion with its
values ("NameError: name 'foo' is not defined", "assert 0.5 == 1.0").

    found = rejected_tests(grader, session, grader.left_out)
    found.entries   [{"test": node id, "status": "failed" (or "timeout", "crashed", "not run"), "failure": text,
                      "implementations": ["reference", "alternate:1"]}]
    found.lines     one line per test, for CheckResult.problems
    found.output    the end of pytest's report on the implementation the first test fails on,
                    from a failure's heading on

Which tests failed is what the graded runs saw; the failures' text is what
the report run said (information only, as every report of a run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ol.grading.grader import FAILED
from ol.grading.protocol import RunRequest, merged_notes
from ol.grading.scheduler import Run
from ol.grading.variants import describe

REPORT_TAIL = 6000          # characters of pytest's report kept
SECTION = re.compile(r"^(_{3,} .+ _{3,}|={3,} .+ ={3,})$", re.MULTILINE)
PREFIX = "your test rejects a correct implementation: "


@dataclass
class Rejected:
    entries: list[dict] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    output: str = ""


def rejected_tests(grader, session, left_out: dict) -> Rejected:
    """Each test of `left_out` (test -> grader.LeftOut), once, in the
    suite's file order, with its failure as pytest words it and the
    implementations it fails on."""
    variants = {v.key: v for v in (session.reference, *session.alternates)}
    failing_on = sorted({key for entry in left_out.values() if entry.status == FAILED for key in entry.implementations})
    runs = {grader._id(): variants[key] for key in failing_on if key in variants}   # a hang would hang again
    outcomes = grader.scheduler.run([Run(run_id, RunRequest(suite="student", task="pytest"), variant.request(),
                                         grader.time_limit) for run_id, variant in runs.items()])
    notes = {variant.key: merged_notes(outcomes[run_id].notes) for run_id, variant in runs.items()}
    order = {test: n for n, test in enumerate(grader.filed or grader.collected)}   # as the student wrote them
    rank = {key: n for n, key in enumerate(variants)}       # the reference first, then the alternates
    entries = []
    for test, entry in sorted(left_out.items(), key=lambda item: (order.get(item[0], len(order)), item[0])):
        said = next((notes.get(key, {}).get("failures", {}).get(test) for key in entry.implementations
                     if notes.get(key, {}).get("failures", {}).get(test)), "")
        entries.append({"test": test, "status": entry.status, "failure": str(said or entry.detail or ""),
                        "implementations": sorted(entry.implementations, key=lambda k: (rank.get(k, len(rank)), k))})
    lines = [f"{PREFIX}{e['test']} {e['status']} on {' and '.join(named(k, session) for k in e['implementations'])}"
             + (f": {first_line(e['failure'])}" if e["failure"] else "") for e in entries]
    shown = [entries[0]["implementations"][0]] if entries else []
    output = next((notes[key]["output"] for key in shown if notes.get(key, {}).get("output")), "")
    return Rejected(entries, lines, report_tail(output))


def named(key: str, session=None) -> str:
    """How a report names a correct implementation ("the reference", or in a
    student kit "your own code")."""
    own = session.describe_variant(key) if session is not None else None
    return own.split(" (", 1)[0] if own else describe(key)


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def report_tail(output: str, limit: int = REPORT_TAIL) -> str:
    """The end of a pytest report, at most `limit` characters, starting at a
    heading (a failure's, or the short summary's) rather than mid-traceback."""
    if len(output) <= limit:
        return output
    tail = output[-limit:]
    heading = SECTION.search(tail)
    return tail[heading.start():] if heading else tail
