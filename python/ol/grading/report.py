"""A CheckResult as the student reads it: terminal text, or one JSON object.

Pitfalls are shown by misconception and symptom, never by their diff (the
point is to find the bug, not to be told it).  A surviving generated mutant
is shown first as its witness, the call on which it and a correct
implementation differ (ol.grading.witnesses), grouped by the public function
that call reaches; then its diff (in a student kit, of the student's own
code; here, where the reference is in the repository anyway, of the
reference).  Every report a class gets back shows the witness alone
(ol.instructor.class_grading.feedback).
"""

from __future__ import annotations

import json
import math
import textwrap

from ol.grading.check import CheckResult
from ol.grading.floors import floor_line
from ol.grading.grader import NOT_RUN, REFUSED

DEFAULT_MAX_SURVIVORS = 3   # diffs shown per function; --all shows every one
POSSIBLY_EQUIVALENT = "no call of the course tests tells them apart (possibly equivalent)"
COURSE_TESTS_FAILED = "course tests fail on your code"     # how check.py's reason starts when they do
COURSE_OUTPUT_HEADING = "The course tests on your code (pytest's report)"


def to_json(result: CheckResult) -> str:
    """The result as one JSON object (CheckResult.to_json; a check that could
    not run prints check.not_run_json instead)."""
    return json.dumps(result.to_json(), indent=2)


def to_text(result: CheckResult, max_survivors: int | None = DEFAULT_MAX_SURVIVORS) -> str:
    """The result as the terminal shows it."""
    lines: list[str] = []
    if result.reason is not None:
        lines.append(f"ol check {result.module}: NOT GRADED: {result.reason}")
        lines.extend(_rejected(result) if result.rejected else [f"  {problem}" for problem in result.problems])
        if result.output:
            lines += ["", output_heading(result) + ":", _indent(result.output.rstrip(), 2)]
        return "\n".join(lines) + "\n"

    verdict = "PASSED" if result.passed else "NOT PASSED"
    pitfalls_caught = sum(p.killed for p in result.pitfalls)
    lines.append(
        f"ol check {result.module}: {verdict}: your tests catch {result.killed}/{result.counted} generated "
        f"mutants, score {floored(result.score)} (to pass: {to_pass(result)})"
    )
    lines.append(f"  and {pitfalls_caught}/{len(result.pitfalls)} pitfalls (graded on their own: each must be "
                 "caught; the score counts the generated mutants alone)")
    if result.rejected:
        lines += [""] + _left_out(result)
    if result.not_imported:
        lines += ["", f"{len(result.not_imported)} changed copies of your code did not import: your code behaves "
                  "differently when it is changed, or imported under another name.  They count, and none of them "
                  f"is caught: {', '.join(result.not_imported[:5])}{' ...' if len(result.not_imported) > 5 else ''}"]
    if result.course_failure:
        lines += ["", *course_failure_lines(result)]
    lines.append("")
    lines.append("Pitfalls (each one must be caught):")
    for pitfall in result.pitfalls:
        mark = "caught " if pitfall.killed else "MISSED "
        lines.append(f"  {mark} {pitfall.id}  {pitfall.misconception}")
        if not pitfall.killed:
            lines.append(_indent(f"symptom: {pitfall.symptom}", 12))
    if result.floors:
        lines += ["", "Every public function and feature of the chapter (each must have its share of mutants caught):"]
        for floor in result.floors:
            lines.append(f"  {'ok     ' if floor['met'] else 'BELOW  '} {floor_line(floor)}")
            example = feature_witness(result, floor["id"]) if "id" in floor and not floor["met"] else ""
            if example:
                lines.append(textwrap.fill(f"a call that would catch one: {example}", 110, initial_indent=" " * 11,
                                           subsequent_indent=" " * 13, break_on_hyphens=False))
    if result.survivors:
        lines += [""] + _survivors(result.survivors, max_survivors, result.mutants_of)
    if not result.passed:
        lines.append("")
        missing = [p.id for p in result.pitfalls if not p.killed]
        below = [f for f in result.floors if not f["met"]]
        advice = []
        if result.score is not None and result.score < result.threshold:
            advice.append(f"catch at least {_needed(result)} more of the surviving mutants")
        if missing:
            advice.append(f"catch pitfall{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        advice += [f"catch at least {f['needed'] - f['caught']} more of {f['function']}'s mutants" for f in below
                   if "id" not in f]
        advice += [f"catch at least {f['needed'] - f['caught']} more mutants of the feature \"{f['title']}\""
                   for f in below if "id" in f]
        tests_advice = bool(advice)
        if result.course_failure:
            advice.insert(0, "make the course tests pass on your code")
        lines.append("To pass: " + " and ".join(advice) + "." + (
            " Write a test that fails on the change, then ./ol check again." if tests_advice else ""))
    excluded = result.excluded
    lines.append("")
    timing = f"({result.seconds:.1f} s, {result.confinement or 'confined'})"
    if _unreviewed(result):
        possibly = sum(bool(s.possibly_equivalent) for s in result.survivors)
        lines.append(
            f"Not counted: {excluded.get('message_only', 0)} mutants that change only an error message.  The "
            f"mutants are of your own code: nobody has reviewed them for equivalence, so every other one counts"
            + (f", the {possibly} marked possibly equivalent among them" if possibly else "") + f".  {timing}"
        )
        lines.append("This check is feedback: your instructor's grade runs your tests against the reference's "
                     "reviewed mutants, a second correct implementation and the same pitfalls.")
    else:
        lines.append(
            f"Not counted: {excluded.get('message_only', 0)} mutants that change only an error message, "
            f"{excluded.get('equivalent', 0)} reviewed equivalent mutants.  {timing}"
        )
    if result.memory_bound:
        lines.append(f"Memory per run: {result.memory_bound}.")
    if result.course_failure and result.course_failure.get("output"):
        lines += ["", COURSE_OUTPUT_HEADING + ":", _indent(result.course_failure["output"].rstrip(), 2)]
    kept = []
    if result.course_tests_kept:
        kept.append("the course tests' pass (your code is unchanged)")
    if result.carried_over:
        kept.append(f"{result.carried_over} catches (the tests that made them are unchanged)")
    if kept:
        lines.append(f"Kept from your last check: {' and '.join(kept)}; --fresh grades everything again.")
    return "\n".join(lines) + "\n"


MAX_COURSE_FAILURES = 5     # failing course tests named when the suite was graded all the same


def course_failure_lines(result: CheckResult) -> list[str]:
    """The course tests' failure, when the suite was graded all the same
    (CheckResult.course_failure): each part stands on its own."""
    failure, course = result.course_failure, result.course_tests
    counts = f"{course['total'] - course['passed']} of {course['total']} fail" if course.get("total") else "they fail"
    problems = list(failure.get("problems") or [])
    reason = failure.get("reason") or COURSE_TESTS_FAILED
    hint = reason.split(": ", 1)[1] if reason.startswith(COURSE_TESTS_FAILED + ": ") else reason
    lines = [f"Course tests: {counts} on your code; {hint}:"]
    lines += [f"  {problem}" for problem in problems[:MAX_COURSE_FAILURES]]
    if len(problems) > MAX_COURSE_FAILURES:
        lines.append(f"  ... and {len(problems) - MAX_COURSE_FAILURES} more")
    lines.append("Your tests are graded all the same: the mutants they must catch are of the reference, not of "
                 "your code. The check does not pass until the course tests do.")
    return lines


def to_pass(result: CheckResult) -> str:
    """What passing takes: "0.80 and every pitfall" (and each public function's floor)."""
    if result.features:
        return f"{result.threshold:.2f}, every pitfall, each function's floor and each feature's"
    return f"{result.threshold:.2f}, every pitfall and each function's floor" if result.floors else \
        f"{result.threshold:.2f} and every pitfall"


def output_heading(result: CheckResult) -> str:
    """What the pytest report in a stopped check's `output` is of."""
    if (result.reason or "").startswith(COURSE_TESTS_FAILED):
        return COURSE_OUTPUT_HEADING
    first = next((entry["implementations"][0] for entry in result.rejected if entry["implementations"]), None)
    if first is not None:
        return f"Your tests on {implementation_name(first, result)} (pytest's report, its end)"
    return "Your tests (pytest's report)"


def _rejected(result: CheckResult) -> list[str]:
    """Each test that fails on a correct implementation, once: where it fails and why."""
    lines = ["  A correct implementation must pass every test; "
             f"{'this test fails' if len(result.rejected) == 1 else 'these tests fail'} on one:"]
    for entry in result.rejected:
        if entry["status"] == REFUSED:
            lines.append(f"  {left_out_line(entry, result)}")
        else:
            where = " and ".join(implementation_name(key, result) for key in entry["implementations"])
            lines.append(f"  {entry['test']} rejects a correct implementation (it fails on {where})")
        if entry["failure"]:
            lines.append(_indent(entry["failure"].rstrip(), 6))
    lines += [f"  {problem}" for problem in result.problems if "(no single test:" in problem]
    return lines


def _left_out(result: CheckResult) -> list[str]:
    """The tests left out of a grade that went on: how many were graded, and each one left out with why."""
    files = sum(entry["status"] == REFUSED for entry in result.rejected)
    lines = [f"Graded: {result.graded_tests} of your {result.tests} tests"
             + (f", and {files} {'file' if files == 1 else 'files'} not run" if files else "")
             + ".  Left out (a test counts only when it passes on every correct implementation, a file only "
               "when it keeps the rules of graded tests; fix it to have it count again):"]
    for entry in result.rejected:
        lines.append(f"  {left_out_line(entry, result)}")
        if entry["failure"]:
            lines.append(_indent(entry["failure"].rstrip(), 6))
    return lines


def left_out_line(entry: dict, result: CheckResult) -> str:
    """One entry of CheckResult.rejected in a sentence: what was left out, and where it failed."""
    if entry["status"] == REFUSED:
        return f"{entry['test']} was not run: it breaks the rules of graded tests"
    where = " and ".join(implementation_name(key, result) for key in entry["implementations"])
    why = "was never reached on" if entry["status"] == NOT_RUN else f"{entry['status']} on"
    return f"{entry['test']} {why} {where}"


def implementation_name(key: str, result: CheckResult) -> str:
    """A correct implementation as reports name it ("the reference"; in a student kit "your own code")."""
    from ol.grading.variants import describe

    return "your own code" if key == "reference" and _unreviewed(result) else describe(key)


def floored(score: float | None) -> str:
    """The score floored to two digits: 1.00 only when every fault is caught."""
    if score is None:
        return "-"
    return f"{math.floor(score * 100 + 1e-9) / 100:.2f}"


def _unreviewed(result: CheckResult) -> bool:
    """The mutants are of the student's own code (a student kit: ol.grading.local)."""
    return result.mutants_of != CheckResult.mutants_of


def _survivors(survivors: list, max_survivors: int | None, mutants_of: str = CheckResult.mutants_of) -> list[str]:
    """Survivors grouped by the public function their witness calls (a survivor without one: by the
    function it changes), with counts; the first `max_survivors` of each group with their witness and
    diff (None: all of them).  A survivor of the student's own code says whether the course tests notice it."""
    groups: dict[str, list] = {}
    for survivor in survivors:
        groups.setdefault(survivor_group(survivor), []).append(survivor)
    lines = [f"Surviving mutants ({len(survivors)}): changes to {mutants_of} that none of your tests notices, "
             "by the function a call must reach to notice them:"]
    if any(s.witness for s in survivors):
        lines.append("(each with a call on which a correct implementation and the changed one differ, one the "
                     "course tests make or one of theirs with a number changed: a test that makes that call and "
                     "checks that value catches it)")
    if any(s.possibly_equivalent is not None for s in survivors) and mutants_of != CheckResult.mutants_of:
        lines.append("(none is reviewed: \"possibly equivalent\" marks the ones the course tests do not notice "
                     "either; look at each: it may behave exactly as your code does)")
    elif mutants_of != CheckResult.mutants_of:
        from ol.grading.local import MAX_TRIAGED

        lines.append("(none is reviewed, and with this many survivors ol check does not sort out which may be "
                     f"equivalent to your code: it does so once at most {MAX_TRIAGED} survive)")
    lines += [f"  {len(group):4d}  {function}" for function, group in sorted(groups.items(), key=lambda g: -len(g[1]))]
    hidden = 0
    for function, group in sorted(groups.items(), key=lambda g: -len(g[1])):
        shown = group if max_survivors is None else group[:max_survivors]
        hidden += len(group) - len(shown)
        if not shown:   # --max-survivors 0: the counts above alone
            continue
        lines += ["", f"{function} ({len(group)}):"]
        for survivor in shown:
            lines.append(f"  [{survivor.id}]" + _equivalence_note(survivor, mutants_of != CheckResult.mutants_of))
            if survivor.witness:
                lines.append(textwrap.fill(witness_sentence(survivor.witness), 110, initial_indent="    ",
                                           subsequent_indent="      ", break_on_hyphens=False))
            lines.append(_indent(survivor.diff, 4))
    if hidden:
        lines += ["", f"({hidden} more not shown: ./ol check ... --all shows every one, --max-survivors N more per function)"]
    return lines


def survivor_group(survivor) -> str:
    """The public function a survivor counts under: the one its witness calls; without a witness, the
    function the mutant changes, marked as such."""
    if survivor.witness:
        return survivor.witness["function"]
    return survivor.function


def survivors_by_call(survivors: list) -> list[tuple[str, int, list[str]]]:
    """(public function, how many survive under it, the distinct witness sentences) for each function
    a witness calls, most survivors first; survivors without a witness last, under
    POSSIBLY_EQUIVALENT with no sentence.  What every report a class gets back shows of a survivor."""
    groups: dict[str, list] = {}
    for survivor in survivors:
        groups.setdefault(survivor.witness["function"] if survivor.witness else POSSIBLY_EQUIVALENT,
                          []).append(survivor)
    ordered = sorted(groups.items(), key=lambda item: (item[0] == POSSIBLY_EQUIVALENT, -len(item[1]), item[0]))
    return [(function, len(group), list(dict.fromkeys(witness_sentence(s.witness) for s in group if s.witness)))
            for function, group in ordered]


def feature_witness(result: CheckResult, feature: str) -> str:
    """One surviving mutant's witness sentence for a feature (the smallest call), "" when none survives."""
    sentences = [witness_sentence(s.witness) for s in result.survivors
                 if s.witness and s.witness.get("feature") == feature]
    return min(sentences, key=len) if sentences else ""


def witness_sentence(witness: dict) -> str:
    """ol.grading.witnesses.Witness.sentence, from the record's fields."""
    from ol.grading.witnesses import Witness, WITNESS_FIELDS

    return Witness(**{name: witness.get(name, "") for name in WITNESS_FIELDS}).sentence()


def _equivalence_note(survivor, kit: bool) -> str:
    if survivor.possibly_equivalent is None or survivor.witness:
        return ""
    if not kit:
        return "  possibly equivalent: no call of the course tests tells it from a correct implementation"
    return ("  possibly equivalent (the course tests do not notice it either)" if survivor.possibly_equivalent
            else "  the course tests notice it: a real change of behaviour")


def _needed(result: CheckResult) -> int:
    return max(0, math.ceil(result.threshold * result.counted - 1e-9) - result.killed)


def _indent(text: str, spaces: int) -> str:
    return textwrap.indent(text, " " * spaces)
