"""What a student is handed back: the same words in <student>.md, in
<student>.html and on Gradescope.

    --feedback none      the verdict and the points, nothing else; no files
    --feedback summary   + why it is not a pass, the pitfalls caught and not
                         caught (by misconception), the surviving mutants counted
                         per function, the files taken and ignored: <student>.md
    --feedback full      + the course tests' first failure and each left-out
                         test's failure; <student>.md and <student>.html (the
                         `ol check --html` page, drawn by ol.grading.html_report)

No level shows a line of the reference or an alternate, which stay secret
in a class: a survivor is shown as its witness (ol.grading.witnesses: the
call on which a correct implementation and the changed one differ), counted
under the public function that call reaches, never as its diff; the page
shows no source (html_report.without_answers).

    top_line(outcome, "full")        "NOT PASSED: 82.64 of 100 points: score 0.71 below 0.80"
    write_feedback(outcome, record, "full", folder, source, source_path)
"""

from __future__ import annotations

from pathlib import Path

from ol.core.files import write_whole
from ol.grading.floors import floor_line
from ol.grading.grader import NOT_RUN, REFUSED
from ol.instructor.class_grading.outcome import NOT_GRADED, PASSED, Outcome, check_result
from ol.instructor.class_grading.points import shown

LEVELS = ("none", "summary", "full")
DEFAULT_LEVEL = "full"
PART_NAMES = {"course_tests": "course tests", "mutation": "mutation grade", "pitfalls": "pitfalls"}
ROUNDING = "Numbers are rounded down to hundredths: never more than was earned."


def top_line(outcome: Outcome, level: str) -> str:
    """The verdict, the points, and (unless level is none) why it is not a pass."""
    verdict = outcome.status.upper()
    line = f"{verdict}: {shown(outcome.points.total)} of {float(outcome.points.maximum):g} points"
    if outcome.reason and level != "none":
        line += f": {outcome.reason}"
    return line


def part_lines(outcome: Outcome, table: dict[str, float]) -> list[tuple[str, str, str]]:
    """(part, what it counts, "points of maximum") for each part of the points."""
    out = []
    for part, earned, maximum in outcome.points.parts(table):
        if part == "course_tests":
            what = f"{outcome.course[0]} of {outcome.course[1]} pass" if outcome.course else "did not run"
        elif part == "mutation":
            needs = ("every pitfall, each function's floor and each feature's" if any("id" in f for f in outcome.floors)
                     else "every pitfall and each function's floor" if outcome.floors else "every pitfall")
            what = (f"score {shown(outcome.score)}: your tests catch {outcome.killed} of {outcome.counted} "
                    "generated mutants "
                    f"(to pass: {outcome.threshold:.2f}, {needs})" if outcome.graded else "not graded")
        else:
            caught = sum(1 for p in outcome.pitfalls if p.caught)
            what = f"{caught} of {len(outcome.pitfalls)} caught" if outcome.graded else "not graded"
        out.append((PART_NAMES[part], what, f"{shown(earned)} of {float(maximum):g}"))
    return out


def pitfall_title(pitfall) -> str:
    state = "not run" if pitfall.caught is None else "caught" if pitfall.caught else "not caught"
    return f"Misconception: {pitfall.misconception.rstrip('.')} ({state})"


WITNESSES_SHOWN = 3   # distinct witnesses per function in <student>.md and on Gradescope


def survivor_lines(outcome: Outcome, bullet: str = "- ") -> list[str]:
    """The survivors as a student reads them: per public function, how many survive and up to
    WITNESSES_SHOWN calls that would catch them; then how many no course-test call tells apart."""
    from ol.grading.report import POSSIBLY_EQUIVALENT, survivors_by_call

    lines = []
    for function, count, sentences in survivors_by_call(outcome.survivors):
        if function == POSSIBLY_EQUIVALENT:
            lines.append(f"{bullet}{count} that {POSSIBLY_EQUIVALENT}")
            continue
        more = len(sentences) - WITNESSES_SHOWN
        lines.append(f"{bullet}`{function}`: {count}" + (", for example:" if sentences else ""))
        lines += [f"    {bullet}`{sentence.split(': a right implementation')[0]}`: a right implementation"
                  f"{sentence.split(': a right implementation', 1)[1]}" for sentence in sentences[:WITNESSES_SHOWN]]
        if more > 0:
            lines.append(f"    {bullet}and {more} other call{'s' if more > 1 else ''}")
    return lines


SURVIVORS_SAID = ("small changes to the course's implementation (which stays secret: none of its lines is shown) "
                  "that none of your tests notices. Each is shown by a call on which a correct implementation and "
                  "the changed one differ: a test that makes that call and checks that value would catch it.")


def left_out_sentence(entry: dict) -> str:
    """A test or file of the student's left out of a graded suite, and why."""
    if entry.get("status") == REFUSED:
        return f"`{entry['test']}` was not run: it breaks the rules of graded tests"
    if entry.get("status") == NOT_RUN:
        return f"`{entry['test']}` was never reached on a correct implementation (an earlier test ended the run)"
    return f"`{entry['test']}` {entry.get('status', 'failed')} on a correct implementation"


def markdown(outcome: Outcome, table: dict[str, float], level: str) -> str:
    """<student>.md: short enough to paste into an email."""
    lines = [f"# {outcome.module}: {outcome.student}", "", f"**{top_line(outcome, level)}**", ""]
    lines += ["| part | | points |", "|---|---|---|"]
    lines += [f"| {part} | {what} | {pts} |" for part, what, pts in part_lines(outcome, table)]
    if outcome.points.late_share:
        lines.append(f"| late penalty | {outcome.late} | -{shown(outcome.points.penalty)} |")
    lines += [f"| total | | {shown(outcome.points.total)} of {float(outcome.points.maximum):g} |", "", ROUNDING, ""]
    if level == "none":
        return "\n".join(lines)
    if outcome.status != PASSED:
        lines += ["## Why it is not a pass" if outcome.status != NOT_GRADED else "## Why it was not graded", "",
                  outcome.reason, ""]
        details = outcome.details if level == "full" else outcome.details[:3]
        if details:
            lines += ["```", *details, "```", ""]
        if level == "full" and outcome.suite_output:
            lines += ["Your tests on that correct implementation (pytest's report, its end):", "", "```",
                      *outcome.suite_output.rstrip().splitlines()[-40:], "```", ""]
    if outcome.graded and outcome.rejected:
        lines += ["## Left out of the grade", "",
                  "A test counts only when it passes on every correct implementation, a file only when it keeps "
                  "the rules of graded tests; fix one to have it count again:", ""]
        for entry in outcome.rejected:
            lines.append(f"- {left_out_sentence(entry)}")
            if level == "full" and entry.get("failure"):
                lines += ["", "  ```", *("  " + line for line in str(entry["failure"]).splitlines()[:8]), "  ```"]
        lines.append("")
    if outcome.floors:
        lines += ["## Every public function and feature of the chapter (each needs its share of mutants caught)", ""]
        lines += [f"- {floor_line(f)}{'' if f.get('met') else ': BELOW its floor'}" for f in outcome.floors]
        lines.append("")
    if outcome.pitfalls:
        lines += ["## Pitfalls (each one must be caught)", ""]
        for pitfall in outcome.pitfalls:
            lines.append(f"- {pitfall_title(pitfall)}" + (f" Symptom: {pitfall.symptom}" if pitfall.caught is False
                                                           else ""))
        lines.append("")
    if outcome.survivors:
        lines += ["## Surviving mutants", "", f"{len(outcome.survivors)} {SURVIVORS_SAID}", ""]
        lines += survivor_lines(outcome)
        lines.append("")
    lines += ["## Files", ""]
    names = outcome.record.names
    lines += [f"- graded: {', '.join(sorted(names.values())) or 'none'}",
              *([f"- found: {outcome.record.taken_from}"] if outcome.record.taken_from else []),
              f"- ignored (not part of {outcome.module}): {', '.join(outcome.ignored) or 'none'}", ""]
    return "\n".join(lines)


def write_feedback(outcome: Outcome, table: dict[str, float], level: str, folder: Path, source: str,
                   source_path: str) -> list[Path]:
    """<student>.md (summary, full) and <student>.html (full) in `folder`;
    source is the graded reference file's text, shown as source_path."""
    from ol.grading.html_report import to_html, write_report

    text, page = folder / f"{outcome.student}.md", folder / f"{outcome.student}.html"
    for stale in ([text] if level == "none" else []) + ([page] if level != "full" else []):
        stale.unlink(missing_ok=True)       # an earlier run's, at a level that handed back more
    if level == "none":
        return []
    write_whole(text, markdown(outcome, table, level))
    if level == "summary":
        return [text]
    write_report(page, to_html(check_result(outcome), None, source_path))   # the reference stays secret
    return [text, page]
