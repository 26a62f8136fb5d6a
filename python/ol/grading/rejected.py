"""Tests that fail on a correct implementation: each one once, with its own
failure, and the correct implementations it fails on.

The first stage runs every test of the suite on the reference and on each
alternate (ol.grading.grader); a test failing on any of them rejects the
suite.  Then each correct implementation that rejected it runs the suite once
more in a pytest run of its own (task "pytest"), which says, per failing test, what pytest's
short test summary says: the exception and its message, or the assertion
with its values ("NameError: name 'foo' is not defined", "assert 0.5 == 1.0").

    found = rejected_tests(grader, session, rejected_verdicts)
    found.entries   [{"test": node id, "status": "failed" (or "timeout", "crashed"), "failure": text,
                      "implementations": ["reference", "alternate:1"]}]
    found.lines     one line per test, for CheckResult.problems
    found.output    the end of pytest's report on the implementation the first test fails on,
                    from a failure's heading on

Which tests failed is what the first stage saw; the failures' text is what
the report run said (information only, as every report of a run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ol.grading.scheduler import Run
from ol.grading.protocol import RunRequest, merged_notes
from ol.grading.grader import FAILED, TIMEOUT, Verdict
from ol.grading.variants import describe

REPORT_TAIL = 6000          # characters of pytest's report kept
SECTION = re.compile(r"^(_{3,} .+ _{3,}|={3,} .+ ={3,})$", re.MULTILINE)
PREFIX = "your test rejects a correct implementation: "


@dataclass
class Rejected:
    entries: list[dict] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    output: str = ""


def rejected_tests(grader, session, verdicts: list[Verdict]) -> Rejected:
    """Each test the rejecting `verdicts` name, once, in the suite's file
    order, with its failure as pytest words it and the implementations it
    fails on."""
    variants = {v.key: v for v in (session.reference, *session.alternates)}
    runs = {grader._id(): variants[v.key] for v in verdicts if v.status != TIMEOUT}   # a hang would hang again
    outcomes = grader.scheduler.run([Run(run_id, RunRequest(suite="student", task="pytest"), variant.request(),
                                      grader.time_limit) for run_id, variant in runs.items()])
    notes = {variant.key: merged_notes(outcomes[run_id].notes) for run_id, variant in runs.items()}
    notes.update({v.key: {} for v in verdicts if v.key not in notes})
    order = {test: n for n, test in enumerate(grader.collected)}
    found: dict[str, dict] = {}
    whole_run: list[Verdict] = []        # rejected with no single test to blame
    for verdict in verdicts:
        if not verdict.failed:
            whole_run.append(verdict)
            continue
        said = notes[verdict.key].get("failures") or {}
        for test in verdict.failed:
            entry = found.setdefault(test, {"test": test, "status": verdict.status, "failure": "",
                                            "implementations": []})
            entry["implementations"].append(verdict.key)
            if not entry["failure"]:
                entry["failure"] = verdict.detail if verdict.status != FAILED else str(said.get(test) or "")
    entries = sorted(found.values(), key=lambda e: (order.get(e["test"], len(order)), e["test"]))
    lines = [f"{PREFIX}{e['test']} {e['status']} on {' and '.join(named(k, session) for k in e['implementations'])}"
             + (f": {first_line(e['failure'])}" if e["failure"] else "") for e in entries]
    lines += [f"{PREFIX}(no single test: {v.detail}) {v.status} on {named(v.key, session)}" for v in whole_run]
    # the report on the implementation the first test names (the reports' heading says which)
    shown = [entries[0]["implementations"][0]] if entries else [v.key for v in verdicts]
    output = next((notes[key]["output"] for key in shown if notes[key].get("output")), "")
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
