"""Kit tests of `ol check --html`: the page in a real browser, where it may
be written, and the command end to end.

The browser is Debian's chromium (/usr/bin/chromium, installed by
tests/setup.sh) driven by playwright (the browser extra); nothing downloads a
browser.  The page must work offline: every request it makes is recorded,
and only the page itself may be loaded.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from helpers.kit import ROOT, copy_checkout, explain, run_ol
from ol.core.catalog import REFERENCE_TREE
from ol.grading.check import CheckRequest, CheckResult, PitfallOutcome, check_module
from ol.grading.html_report import GENERATOR, ReportPathError, report_path, to_html, write_report
from ol.grading.report import floored

CHROMIUM = "/usr/bin/chromium"
SUITE = ROOT / "tests" / "grading_suites" / "shapes-and-errors"
SOURCE_PATH = f"{REFERENCE_TREE}/tinyllm/modern/rope.py"
SOURCE = (ROOT / SOURCE_PATH).read_text()


@pytest.fixture(scope="module")
def graded() -> CheckResult:
    """A weak suite's grade: some mutants caught, many survivors, every pitfall missed."""
    result = check_module(ROOT, "L7.3", CheckRequest(tests=SUITE, course_tests=False, fresh=True))
    assert result.reason is None, result.problems
    assert any(m.killed for m in result.mutants) and any(not m.killed for m in result.mutants)
    return result


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield browser
        browser.close()


def open_page(browser, path: Path):
    """The page at `path`, and the list of every URL it requests (the page's own included)."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(path.as_uri())
    return page, requested


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_the_report_in_a_browser(graded, browser, tmp_path):
    path = tmp_path / "L7.3-check.html"
    write_report(path, to_html(graded, SOURCE, SOURCE_PATH))
    page, requested = open_page(browser, path)

    # the score and the count, as the terminal shows them
    assert page.inner_text("#score") == floored(graded.score)
    assert page.inner_text("#killed") == f"{graded.killed}/{graded.counted}"
    assert "NOT PASSED" in page.inner_text("h1")
    # each pitfall by misconception and symptom
    pitfalls = page.inner_text("#pitfalls")
    for pitfall in graded.pitfalls:
        assert pitfall.misconception in pitfalls and pitfall.symptom in pitfalls

    # a surviving line: its mutants are hidden until a click shows each diff
    survivor = next(m for m in graded.mutants if not m.killed)
    line, panel = page.locator(f"#L{survivor.line}"), page.locator(f"#M{survivor.line}")
    assert "survived" in line.get_attribute("class")
    assert not panel.is_visible()
    line.click()
    assert panel.is_visible()
    assert line.get_attribute("aria-expanded") == "true"
    shown = panel.locator(f'.mutant[data-id="{survivor.id}"]').inner_text()
    added = next(text for text in survivor.diff.splitlines() if text.startswith("+"))
    assert added in shown and "survived" in shown
    page.screenshot(path=str(tmp_path / "report.png"), full_page=False)

    # a caught mutant names the student's test that caught it
    caught = next(m for m in graded.mutants if m.killed and m.killed_by)
    page.locator(f"#L{caught.line}").click()
    assert caught.killed_by in page.locator(f'.mutant[data-id="{caught.id}"]').inner_text()

    # the filter: lines with survivors stay, lines whose mutants were all caught go
    only_caught = next(n for n in {m.line for m in graded.mutants}
                       if all(m.killed for m in graded.mutants if m.line == n))
    assert page.locator(f"#L{only_caught}").is_visible()
    page.check("#survivors-only")
    assert not page.locator(f"#L{only_caught}").is_visible()
    assert page.locator(f"#L{survivor.line}").is_visible()
    page.screenshot(path=str(tmp_path / "survivors-only.png"), full_page=False)

    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert requested == [path.as_uri()], f"the page must load nothing but itself: {requested}"
    page.close()


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_the_page_carries_the_json_and_escapes_what_it_shows(graded, browser, tmp_path):
    """Text from the source, the diffs and the test ids is shown, never run as
    markup: a diff holding `</script>` cannot end the page's script."""
    mutants = [dataclasses.replace(graded.mutants[0], diff="-x = 1\n+x = '</script><b id=\"injected\">'")]
    result = CheckResult(module="L7.3", threshold=0.8, score=0.0, counted=1, mutants=mutants,
                         pitfalls=[PitfallOutcome("s01", "a <b>bold</b> claim", "symptom & more", False)])
    path = tmp_path / "escaped.html"
    write_report(path, to_html(result, SOURCE, SOURCE_PATH))
    page, _ = open_page(browser, path)
    assert page.locator("#injected").count() == 0
    assert "a <b>bold</b> claim" in page.inner_text("#pitfalls")
    data = json.loads(page.locator("#ol-check-data").text_content())
    assert data["mutants"][0]["diff"].endswith("</script><b id=\"injected\">'")
    page.close()


def test_a_check_that_did_not_grade_says_why(browser, tmp_path):
    result = CheckResult(module="L7.3", threshold=0.8, reason="your tests fail on a correct implementation",
                         problems=["test_x failed on the reference"], output="E   assert 1 == 2")
    path = tmp_path / "not-graded.html"
    write_report(path, to_html(result, SOURCE, SOURCE_PATH))
    page, _ = open_page(browser, path)
    assert "NOT GRADED" in page.inner_text("h1")
    assert page.inner_text("#score") == "-"
    assert "test_x failed on the reference" in page.inner_text("body")
    page.close()


# ---- where the page may go ----------------------------------------------------------


def test_report_path_never_overwrites_a_file_ol_did_not_write(tmp_path):
    assert report_path(None, tmp_path, "L7.3") == tmp_path / ".ol/reports/L7.3-check.html"
    mine = tmp_path / "notes.html"
    mine.write_text("<p>my notes</p>")
    with pytest.raises(ReportPathError, match="not a report ol wrote"):
        report_path(mine, tmp_path, "L7.3")
    with pytest.raises(ReportPathError, match="ending in .html"):
        report_path(tmp_path / "rope.py", tmp_path, "L7.3")
    with pytest.raises(ReportPathError, match="does not exist"):
        report_path(tmp_path / "missing" / "r.html", tmp_path, "L7.3")
    with pytest.raises(ReportPathError, match="is a folder"):
        (tmp_path / "dir.html").mkdir()
        report_path(tmp_path / "dir.html", tmp_path, "L7.3")
    ours = tmp_path / "ours.html"
    write_report(ours, to_html(CheckResult(module="L7.3", threshold=0.8, reason="r"), SOURCE, SOURCE_PATH))
    assert GENERATOR in ours.read_text()
    assert report_path(ours, tmp_path, "L7.3") == ours, "a report ol wrote may be replaced"


@pytest.mark.slow
def test_ol_check_html_end_to_end(tmp_path):
    """As a student runs it: the page is written where asked and its place
    printed; a file of the student's under that name is refused and kept."""
    checkout = copy_checkout(tmp_path / "checkout")
    r = run_ol(checkout, "start", "L7.3", cwd=tmp_path)
    assert r.returncode == 0, explain(r)
    shutil.copy(ROOT / SOURCE_PATH, checkout / "python/tinyllm/modern/rope.py")

    mine = tmp_path / "mine.html"
    mine.write_text("my own page")
    r = run_ol(checkout, "check", "L7.3", "--ref-deps", "--html", str(mine), cwd=tmp_path)
    assert r.returncode == 2 and "--html" in r.stderr and "never overwrites" in r.stderr, explain(r)
    assert mine.read_text() == "my own page"
    r = run_ol(checkout, "check", "L7.3", "--html", "rope.py", cwd=tmp_path)
    assert r.returncode == 2 and "ending in .html" in r.stderr, explain(r)

    r = run_ol(checkout, "check", "L7.3", "--ref-deps", "--tests", str(SUITE), "--json", "--html", "r.html",
               cwd=tmp_path)
    assert r.returncode == 1, explain(r)
    data = json.loads(r.stdout)   # stdout holds the JSON alone; the page's place goes to stderr
    page = (tmp_path / "r.html").read_text()
    assert (tmp_path / "r.html").as_uri() in r.stderr
    assert f'<b id="killed">{data["killed"]}/{data["counted"]}</b>' in page
    assert "http://" not in page and "https://" not in page, "a self-contained page names no address"
