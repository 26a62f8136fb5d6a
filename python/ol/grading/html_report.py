"""A CheckResult as one self-contained HTML page (`ol check --html`).

The page needs nothing but itself: its style and its script are inline, it
loads no font, image or script, and it makes no request.  It shows

    the verdict and the score (killed/counted, floored as in the terminal);
    the pitfalls, each by its misconception and symptom (never its diff);
    the surviving and caught mutants per function;
    the graded source (the module's reference file), line by line, with a
        mark on every line a counted mutant changes: how many survived and
        how many were caught.  A click on such a line opens its mutants:
        each one's diff, and the student's test that caught it;
    a "survivors only" filter, which hides the lines and mutants that hold
        no survivor.

    page = to_html(result, source, "course/reference/python/tinyllm/modern/rope.py")
    path = report_path(None, root, "L7.3")        # .ol/reports/L7.3-check.html
    write_report(path, page)

The page also carries the result as `--json` prints it, in a
<script type="application/json" id="ol-check-data"> element, so a report
file can be read by a program as well as by a person.
"""

from __future__ import annotations

import dataclasses
import html
from pathlib import Path

from ol.core.errors import OlError
from ol.core.files import write_whole
from ol.grading.check import CheckResult, MutantLine
from ol.grading.floors import floor_line
from ol.grading.report import (COURSE_OUTPUT_HEADING, course_failure_lines, floored, implementation_name, left_out_line,
                               output_heading, to_json, to_pass)
from ol.grading.variants import pitfall_key

GENERATOR = "ol check --html"          # the <meta name="generator"> of every page written here
REPORTS_DIR = ".ol/reports"             # the default folder, inside ol's own (gitignored) .ol/
HTML_SUFFIXES = (".html", ".htm")


# ---- where the page goes ---------------------------------------------------------


class ReportPathError(OlError):
    """--html names a place the report may not be written (exit 2)."""


def report_path(requested: Path | None, root: Path, module_id: str) -> Path:
    """The file `ol check --html [PATH]` writes, checked before any grading.

    No PATH: <root>/.ol/reports/<module>-check.html (ol's own folder).  A
    PATH must end in .html, sit in a folder that exists, and either not exist
    yet or be a report this module wrote before: a file of the student's is
    never overwritten.
    """
    if requested is None:
        return Path(root) / REPORTS_DIR / f"{module_id}-check.html"
    path = Path(requested).expanduser().absolute()
    if path.suffix.lower() not in HTML_SUFFIXES:
        raise ReportPathError(f"--html: expected a file name ending in .html, got {str(requested)!r} "
                              f"(for example --html {module_id}-check.html)")
    if path.is_dir():
        raise ReportPathError(f"--html: {requested} is a folder; give a file name in it, "
                              f"e.g. --html {Path(requested) / (module_id + '-check.html')}")
    if not path.parent.is_dir():
        raise ReportPathError(f"--html: the folder {path.parent} does not exist; create it first, "
                              "or give a path in a folder that exists")
    if path.exists() and not _written_by_ol(path):
        raise ReportPathError(f"--html: {requested} exists and is not a report ol wrote; ol never overwrites "
                              "your files. Give another name, or move that file away first.")
    return path


def _written_by_ol(path: Path) -> bool:
    """Whether `path` is a page this module wrote (its generator tag is near the top)."""
    try:
        with open(path, "rb") as file:
            head = file.read(4096)
    except OSError:
        return False
    return f'<meta name="generator" content="{GENERATOR}">'.encode() in head


def write_report(path: Path, page: str) -> None:
    """Write `page` to `path` whole or not at all (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, page)


# ---- the page --------------------------------------------------------------------


def to_html(result: CheckResult, source: str | None, source_path: str) -> str:
    """The whole page for `result`; `source` is the graded reference file's
    text (the file the mutants' line numbers refer to), shown as `source_path`.
    source None: the reference is secret (a class's feedback): the page shows
    no line of it, and its data no mutant's diff (without_answers)."""
    title = f"ol check {result.module}: " + ("NOT GRADED" if result.reason else
                                             "PASSED" if result.passed else "NOT PASSED")
    if source is None:
        result = without_answers(result)
    if result.reason is not None:
        body = _not_graded(result)
    else:
        body = "\n".join((_summary(result), _floors(result), _pitfalls(result), _witnesses(result),
                          _functions(result) if source is not None else "",
                          _source(result, source, source_path) if source is not None else SECRET))
        if result.course_failure and result.course_failure.get("output"):
            body += f"\n<h2>{_e(COURSE_OUTPUT_HEADING)}</h2><pre>{_e(result.course_failure['output'])}</pre>"
    data = to_json(result).replace("</", "<\\/")  # a "</script>" inside a diff cannot end the element
    return PAGE.format(title=_e(title), style=STYLE, body=body, data=data, script=SCRIPT, generator=GENERATOR)


SECRET = """
<section id="source">
  <p class="muted">The course's own implementation, which the mutants change, stays secret: none of its
     lines is shown here. Each survivor is shown above by a call that tells it apart.</p>
</section>"""


def _witnesses(result: CheckResult) -> str:
    """Each surviving mutant by the call that would catch it (its witness), per public function:
    what to do next, before the long lists."""
    if not result.survivors:
        return ""
    from ol.grading.report import POSSIBLY_EQUIVALENT, survivors_by_call

    items = []
    for function, count, sentences in survivors_by_call(result.survivors):
        if function == POSSIBLY_EQUIVALENT:
            items.append(f"<li>{count} that {_e(POSSIBLY_EQUIVALENT)}</li>")
            continue
        calls = "".join(f"<li><code>{_e(sentence)}</code></li>" for sentence in sentences)
        items.append(f"<li><b><code>{_e(function)}</code></b>: {count} survive"
                     + (f"<details{' open' if len(items) == 0 else ''}><summary>{len(sentences)} call"
                        f"{'s' if len(sentences) != 1 else ''} that would catch them</summary><ul>{calls}</ul>"
                        "</details>" if sentences else "") + "</li>")
    return f"""
<section id="witnesses">
  <h2>Surviving mutants: the calls that would catch them</h2>
  <p class="muted">Each survivor is a small change none of your tests notices, shown by a call on which a
     correct implementation and the changed one differ: a test that makes that call and checks that value
     would catch it.</p>
  <ul>{''.join(items)}</ul>
</section>"""


def without_answers(result: CheckResult) -> CheckResult:
    """`result` with no line of the implementation its mutants change: every diff left out."""
    return dataclasses.replace(result, survivors=[dataclasses.replace(s, diff="") for s in result.survivors],
                               mutants=[dataclasses.replace(m, diff="") for m in result.mutants])


def _summary(result: CheckResult) -> str:
    pitfalls_caught = sum(p.killed for p in result.pitfalls)
    verdict = "PASSED" if result.passed else "NOT PASSED"
    excluded = result.excluded
    return f"""
<header>
  <h1>ol check {_e(result.module)}: <span class="verdict {'pass' if result.passed else 'fail'}">{verdict}</span></h1>
  <p class="score">score <b id="score">{floored(result.score)}</b>
     &mdash; your tests catch <b id="killed">{result.killed}/{result.counted}</b> generated mutants
     (to pass: {_e(to_pass(result))})</p>
  <p>and {pitfalls_caught}/{len(result.pitfalls)} pitfalls, graded on their own: each must be caught; the
     score counts the generated mutants alone.</p>
  {_course_failure(result)}{_graded_left_out(result)}<p class="muted">Not counted: {excluded.get('message_only', 0)} mutants that change only an error message,
     {excluded.get('equivalent', 0)} reviewed equivalent mutants. ({result.seconds:.1f} s,
     {_e(result.confinement or 'confined')})</p>
</header>"""


def _graded_left_out(result: CheckResult) -> str:
    """How many tests were graded, and each test or file left out with why (nothing when none was)."""
    if not result.rejected:
        return ""
    items = "".join(f"<li>{_e(left_out_line(entry, result))}"
                    + (f'<pre class="failure">{_e(entry["failure"].rstrip())}</pre>' if entry["failure"] else "")
                    + "</li>" for entry in result.rejected)
    return (f'<p id="left-out">Graded: {result.graded_tests} of your {result.tests} tests. Left out (fix one to '
            f"have it count again):</p><ul>{items}</ul>\n  ")


def _course_failure(result: CheckResult) -> str:
    """A line for course tests that fail on the student's code while the suite
    was graded all the same (CheckResult.course_failure); nothing otherwise."""
    if not result.course_failure:
        return ""
    first, *failing, last = course_failure_lines(result)
    items = "".join(f"<li>{_e(line.strip())}</li>" for line in failing)
    return f'<p id="course-failure"><b>{_e(first)}</b></p><ul>{items}</ul><p>{_e(last)}</p>\n  '


def _not_graded(result: CheckResult) -> str:
    if result.rejected:
        problems = "".join(_rejected(entry, result) for entry in result.rejected) + "".join(
            f"<li>{_e(p)}</li>" for p in result.problems if "(no single test:" in p)
    else:
        problems = "".join(f"<li>{_e(p)}</li>" for p in result.problems)
    output = f"<h2>{_e(output_heading(result))}</h2><pre>{_e(result.output)}</pre>" if result.output else ""
    return f"""
<header>
  <h1>ol check {_e(result.module)}: <span class="verdict fail">NOT GRADED</span></h1>
  <p class="score">score <b id="score">{floored(result.score)}</b> &mdash; {_e(result.reason)}</p>
  <ul>{problems}</ul>
</header>
{output}"""


def _rejected(entry: dict, result: CheckResult) -> str:
    """One test that fails on a correct implementation (which, where, and pytest's words for it), or a
    file left out."""
    failure = f'<pre class="failure">{_e(entry["failure"].rstrip())}</pre>' if entry["failure"] else ""
    if not entry["implementations"]:
        return f'<li class="rejected">{_e(left_out_line(entry, result))}{failure}</li>'
    where = " and ".join(_e(implementation_name(key, result)) for key in entry["implementations"])
    return (f'<li class="rejected"><code>{_e(entry["test"])}</code> rejects a correct implementation '
            f"(it fails on {where}){failure}</li>")


def _pitfalls(result: CheckResult) -> str:
    rows = []
    for pitfall in result.pitfalls:
        tests = list(pitfall.tests) or [t for t in [result.killed_by.get(pitfall_key(pitfall.id))] if t]
        by = "".join(f"<li><code>{_e(test)}</code></li>" for test in tests)
        status = ('<span class="k">caught</span>' + (f'<details class="by"><summary>by {len(tests)} test'
                                                       f'{"s" if len(tests) != 1 else ""}</summary><ul>{by}</ul>'
                                                       "</details>" if by else "")
                  if pitfall.killed else '<span class="s">MISSED</span>')
        rows.append(f'<tr class="{"killed" if pitfall.killed else "survived"}"><td>{_e(pitfall.id)}</td>'
                    f"<td>{status}</td><td>{_e(pitfall.misconception)}</td><td>{_e(pitfall.symptom)}</td></tr>")
    return f"""
<section id="pitfalls">
  <h2>Pitfalls: each one must be caught</h2>
  <p class="muted">A pitfall is named by its misconception and what it looks like, not by its diff:
     write the test that would notice it. Under "by": the tests of your suite, in file order, that fail on it.</p>
  <table><thead><tr><th>id</th><th>your tests</th><th>misconception</th><th>symptom</th></tr></thead>
  <tbody>{''.join(rows)}</tbody></table>
</section>"""


def _floors(result: CheckResult) -> str:
    """Each public function and each feature of the chapter, caught of counted against its floor: the
    verdict's parts, below-floor first, each with one call that would catch a survivor."""
    if not result.floors:
        return ""
    from ol.grading.report import feature_witness

    rows = []
    for floor in sorted(result.floors, key=lambda f: f["met"]):
        example = feature_witness(result, floor["id"]) if "id" in floor and not floor["met"] else ""
        rows.append(f'<tr class="{"killed" if floor["met"] else "survived"}"><td>{_e(floor["function"])}</td>'
                    f'<td class="num">{floor["caught"]} of {floor["counted"]}</td><td class="num">{floor["needed"]}</td>'
                    f'<td class="{"k" if floor["met"] else "s floor-below"}">{"ok" if floor["met"] else "BELOW"}'
                    + (f'<div class="by">a call that would catch one: <code>{_e(example)}</code></div>' if example else "")
                    + "</td></tr>")
    return f"""
<section id="floors">
  <h2>Every public function and feature of the chapter</h2>
  <p class="muted">Each needs its share of mutants caught, whatever the score.</p>
  <table><thead><tr><th>function or feature</th><th>caught</th><th>needed</th><th></th></tr></thead>
  <tbody>{''.join(rows)}</tbody></table>
</section>"""


def _functions(result: CheckResult) -> str:
    """Caught and surviving generated mutants per function, most survivors first."""
    counts: dict[str, list[int]] = {}        # function -> [survived, caught, first line with a survivor]
    for mutant in result.mutants:
        entry = counts.setdefault(mutant.function, [0, 0, 0])
        entry[1 if mutant.killed else 0] += 1
        if not mutant.killed and not entry[2]:
            entry[2] = mutant.line
    floors = {floor["function"]: floor for floor in result.floors}
    rows = []
    for function, (survived, caught, line) in sorted(counts.items(), key=lambda item: (-item[1][0], item[0])):
        name = f'<a href="#L{line}">{_e(function)}</a>' if line else _e(function)
        floor = floors.get(function.split(".", 1)[0])     # a method counts toward its class's floor
        rows.append(f'<tr class="{"survived" if survived else "killed"}"><td>{name}</td>'
                    f'<td class="num {"s" if survived else "muted"}">{survived}</td><td class="num k">{caught}</td>'
                    + (f'<td class="{"k" if floor["met"] else "s floor-below"}">{_e(floor_line(floor))}</td>'
                       if floor else "<td></td>") + "</tr>")
    below = [floor_line(f) for f in result.floors if not f["met"]]
    warning = (f'<p class="s" id="floors-below">Below a floor: {_e("; ".join(below))}. '
               "Every public function and every feature of the chapter needs its share of mutants caught, "
               "whatever the score.</p>" if below else "")
    return f"""
<section id="functions">
  <h2>Generated mutants by function</h2>
  {warning}
  <table><thead><tr><th>function</th><th>survived</th><th>caught</th><th>floor (public functions)</th></tr></thead>
  <tbody>{''.join(rows)}</tbody></table>
</section>"""


def _source(result: CheckResult, source: str, source_path: str) -> str:
    """The source, one row per line; a line that mutants change is followed by
    a hidden panel with those mutants, which a click on the line opens."""
    lines = source.splitlines()
    by_line: dict[int, list[dict]] = {}
    elsewhere = []
    for mutant in result.mutants:
        if 1 <= mutant.line <= len(lines):
            by_line.setdefault(mutant.line, []).append(mutant)
        else:
            elsewhere.append(mutant)

    rows = []
    for number, text in enumerate(lines, start=1):
        mutants = sorted(by_line.get(number, []), key=lambda m: (m.killed, m.id))
        if not mutants:
            rows.append(f'<div class="line" id="L{number}"><span class="no">{number}</span>'
                        f'<span class="marks"></span><code>{_e(text)}</code></div>')
            continue
        survived = sum(not m.killed for m in mutants)
        caught = len(mutants) - survived
        marks = (f'<span class="s">&#10007; {survived}</span>' if survived else "") + \
                (f'<span class="k">&#10003; {caught}</span>' if caught else "")
        status = "survived" if survived else "killed"
        rows.append(
            f'<div class="line has-mutants {status}" id="L{number}" data-line="{number}" tabindex="0" role="button" '
            f'aria-expanded="false" aria-controls="M{number}" '
            f'title="{len(mutants)} mutant{"s" if len(mutants) > 1 else ""} on this line: {survived} survived, '
            f'{caught} caught (click to show)"><span class="no">{number}</span><span class="marks">{marks}</span>'
            f"<code>{_e(text)}</code></div>")
        rows.append(f'<div class="mutants {status}" id="M{number}" hidden>'
                    + "".join(_mutant(m) for m in mutants) + "</div>")

    unplaced = ""
    if elsewhere:
        unplaced = ('<h3>Mutants not tied to a line of this file</h3><div class="mutants open">'
                    + "".join(_mutant(m) for m in elsewhere) + "</div>")
    return f"""
<section id="source">
  <h2>The graded source: <code>{_e(source_path)}</code></h2>
  <p class="muted">Each mark is a mutant: a small change to this file. <span class="s">&#10007;</span> survived
     (none of your tests failed on it), <span class="k">&#10003;</span> caught. Click a marked line for the
     changes and the test that caught each one.</p>
  <label class="filter"><input type="checkbox" id="survivors-only"> survivors only</label>
  <div class="code">{''.join(rows)}</div>
  {unplaced}
</section>"""


def _mutant(mutant: MutantLine) -> str:
    if mutant.killed:
        verdict = ('<span class="k">caught</span> by <code class="by">'
                   f'{_e(mutant.killed_by or "a crash or time-out of the run (no single test)")}</code>')
    else:
        verdict = '<span class="s">survived</span>: none of your tests failed on it'
    diff = "".join(f'<span class="{_diff_class(line)}">{_e(line)}</span>\n' for line in mutant.diff.splitlines())
    return (f'<div class="mutant {"killed" if mutant.killed else "survived"}" data-id="{_e(mutant.id)}">'
            f'<div class="head"><code>{_e(mutant.id)}</code> in <code>{_e(mutant.function)}</code>: '
            f'{verdict}</div><pre class="diff">{diff}</pre></div>')


def _diff_class(line: str) -> str:
    return "del" if line.startswith("-") else "add" if line.startswith("+") else "ctx"


def _e(text) -> str:
    return html.escape(str(text), quote=True)


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="generator" content="{generator}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
{body}
<script type="application/json" id="ol-check-data">{data}</script>
<script>{script}</script>
</body>
</html>
"""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
.verdict.pass { color: #17692f; } .verdict.fail { color: #a4161a; }
.score { font-size: 1.15em; } .muted { color: #666; }
table { border-collapse: collapse; } td, th { border-bottom: 1px solid #ddd; padding: .3em .6em; text-align: left;
  vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.s { color: #a4161a; font-weight: 600; } .k { color: #17692f; }
.by { color: #444; font-size: .9em; } .by ul { margin: .1em 0; padding-left: 1.2em; }
pre.failure { margin: .2em 0 .6em; padding: .3em; background: #fff4f4; border: 1px solid #f0caca; white-space: pre-wrap; }
.filter { display: inline-block; margin: .5em 0; font-weight: 600; }
.code { font-family: ui-monospace, monospace; font-size: 13px; border: 1px solid #ddd; }
.line { display: flex; white-space: pre; line-height: 1.45; }
.line .no { width: 3.5em; text-align: right; padding-right: .6em; color: #999; user-select: none; flex: none; }
.line .marks { width: 6.5em; flex: none; user-select: none; }
.line .marks span { margin-right: .4em; }
.line code { font-family: inherit; }
.line.has-mutants { cursor: pointer; }
.line.survived { background: #fde8e8; } .line.killed { background: #eaf6ec; }
.line.has-mutants:hover, .line.has-mutants:focus { outline: 2px solid #888; outline-offset: -2px; }
.mutants { border-left: 4px solid #bbb; margin: .2em 0 .4em 3.5em; padding: .2em .6em; background: #fafafa;
  font-family: system-ui, sans-serif; }
.mutants.survived { border-left-color: #a4161a; } .mutants.killed { border-left-color: #17692f; }
.mutant { margin: .4em 0; }
.diff { margin: .2em 0; padding: .3em; background: #fff; border: 1px solid #e4e4e4; overflow-x: auto; }
.diff .del { color: #a4161a; } .diff .add { color: #17692f; } .diff .ctx { color: #777; }
body.survivors-only .line:not(.survived), body.survivors-only .mutant.killed,
body.survivors-only .mutants.killed, body.survivors-only #functions tr.killed,
body.survivors-only #pitfalls tr.killed { display: none; }
"""

# Open and close a line's mutants by click or by Enter / Space; the filter
# toggles one class on <body>, and the style sheet does the hiding.
SCRIPT = """
(function () {
  function toggle(line) {
    var panel = document.getElementById("M" + line.dataset.line);
    panel.hidden = !panel.hidden;
    line.setAttribute("aria-expanded", String(!panel.hidden));
  }
  var code = document.querySelector(".code");
  if (code) {
    code.addEventListener("click", function (event) {
      var line = event.target.closest(".line.has-mutants");
      if (line) toggle(line);
    });
    code.addEventListener("keydown", function (event) {
      var line = event.target.closest(".line.has-mutants");
      if (line && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); toggle(line); }
    });
  }
  var filter = document.getElementById("survivors-only");
  if (filter) {
    filter.addEventListener("change", function () {
      document.body.classList.toggle("survivors-only", filter.checked);
    });
  }
})();
"""
