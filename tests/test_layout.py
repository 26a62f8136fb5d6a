"""Kit test of the tests' layout (tests/README.md): a test file in a wing's
folder is named for the module it tests, at the same path,

    tests/grading/sandbox/test_confine.py   tests   python/ol/grading/sandbox/confine.py

or holds a theme across modules, listed in THEMES with what it holds.  A test
file whose module was renamed or moved away is found here.  A module without
a test file of its own is held by another, named in ELSEWHERE with a word
that file must say (the module's dotted name, or the verb or idea it tests
it by): a newcomer looking for a module's tests finds them."""

from __future__ import annotations

from pathlib import Path

from helpers.kit import ROOT

PACKAGE = ROOT / "python" / "ol"
TESTS = ROOT / "tests"
WINGS = ("core", "grading", "student", "instructor")

THEMES = {
    "grading/test_running_order.py": "pytest_driver's order of a suite's tests",
    "student/test_student_loop.py": "the loop around ol tests: the static check of --mine, watch, shell, diff",
    "student/test_native_path.py": "a student's path through a C module (L9.6): ol start, ol tests, the build",
    "instructor/class_grading/test_hostile.py": "hostile text through every writer of a class's report",
}

# {module under python/ol/: (the test file that holds it, a word that file says)}
ELSEWHERE = {
    "core/archives.py": ("core/test_submissions.py", "ol.core.archives"),
    "core/command.py": ("test_cli.py", "ol.core.command"),
    "core/errors.py": ("grading/test_check.py", "ol.core.errors"),
    "core/exits.py": ("course/test_gemma3.py", "ol.core.exits"),
    "core/native_build.py": ("student/test_native_path.py", "ol.core.native_build"),
    "grading/call_recording.py": ("grading/test_witnesses.py", "ol.grading.call_recording"),
    "grading/chaff_equivalence.py": ("grading/test_chaffs.py", "ol.grading.chaff_equivalence"),
    "grading/check_cli.py": ("grading/test_events.py", "ol.grading.check_cli"),
    "grading/local.py": ("instructor/class_grading/test_hostile.py", "ol.grading.local"),
    "grading/report.py": ("grading/test_html_report.py", "ol.grading.report"),
    "grading/scheduler.py": ("grading/test_check.py", "ol.grading.scheduler"),
    "grading/serve.py": ("grading/test_proxy.py", "ol.grading.serve"),
    "grading/wire.py": ("grading/test_proxy.py", "ol.grading.wire"),
    "grading/witness_replay.py": ("grading/test_witnesses.py", "ol.grading.witness_replay"),
    # the processes of a confined check: every check the kit runs starts them; the shared
    # check's collector against the isolated runs' verdicts, the warm processes attacked
    "grading/sandbox/collector.py": ("grading/test_check.py", "test_the_shared_check_gives_the_verdicts_of_isolated_runs"),
    "grading/sandbox/reporter.py": ("grading/sandbox/test_clone.py", "ol.grading.sandbox.reporter"),
    "grading/sandbox/roles.py": ("end_to_end/test_trust.py", "a crashing warm process"),
    "grading/sandbox/warm.py": ("end_to_end/test_trust.py", "a crashing warm process"),
    "grading/sandbox/warm_link.py": ("grading/sandbox/test_collector_link.py", "ol.grading.sandbox.warm_link"),
    "instructor/answer_scan.py": ("grading/test_chaffs.py", "ol.instructor.answer_scan"),
    "instructor/class_grading/checkout.py": ("end_to_end/test_class_grading.py", "ol.instructor.class_grading.checkout"),
    "instructor/class_grading/cluster.py": ("end_to_end/test_class_grading.py", "Ray"),
    "instructor/class_grading/feedback.py": ("end_to_end/test_class_grading.py", "ol.instructor.class_grading.feedback"),
    "instructor/class_grading/grade_cli.py": ("instructor/class_grading/test_gradebook.py", "ol.instructor.class_grading.grade_cli"),
    "instructor/class_grading/gradescope.py": ("end_to_end/test_class_grading.py", "ol.instructor.class_grading.gradescope"),
    "instructor/class_grading/points.py": ("instructor/class_grading/test_gradebook.py", "ol.instructor.class_grading.points"),
    # the student's verbs, run as a student runs them: the real ./ol in a temporary checkout
    "student/c_stubs.py": ("student/test_native_path.py", "ol.student.c_stubs"),
    "student/code_only.py": ("student/test_student_loop.py", "ol.student.code_only"),
    "student/diff_cli.py": ("test_cli.py", '"diff"'),
    "student/list_cli.py": ("test_cli.py", '"list"'),
    "student/needs.py": ("test_cli.py", "the needs are not done"),
    "student/reset_cli.py": ("test_cli.py", '"reset"'),
    "student/shell.py": ("student/test_student_loop.py", '"shell"'),
    "student/start_cli.py": ("test_cli.py", '"start"'),
    "student/tests_cli.py": ("test_cli.py", "ol.student.tests_cli"),
    "student/watch.py": ("student/test_student_loop.py", '"watch"'),
    "student/workspace.py": ("core/test_runner.py", "ol.student.workspace"),
    "student/milestone/child.py": ("course/test_smollm2.py", '"milestone", "MS-L7"'),
    "student/milestone/compare.py": ("course/test_smollm2.py", "ol.student.milestone.compare"),
    "student/milestone/launch.py": ("course/test_smollm2.py", '"milestone", "MS-L7"'),
    "student/milestone/milestone_cli.py": ("course/test_smollm2.py", '"milestone", "MS-L7"'),
    "student/milestone/gemma3_child.py": ("course/test_gemma3.py", '"milestone", "MS-L7G"'),
    "student/milestone/gemma3_run.py": ("course/test_gemma3.py", "ol.student.milestone.gemma3_run"),
}


def own_test_file(module: Path, package: Path, tests: Path) -> Path:
    relative = module.relative_to(package)
    return tests.joinpath(*relative.parts[:-1], "test_" + module.name)


def unheld(package: Path, tests: Path, elsewhere: dict[str, tuple[str, str]]) -> list[str]:
    """The modules with no test file of their own and no true ELSEWHERE entry ([]: none)."""
    found = []
    for module in sorted(package.rglob("*.py")):
        relative = module.relative_to(package).as_posix()
        if module.name == "__init__.py" or own_test_file(module, package, tests).is_file():
            if relative in elsewhere:
                found.append(f"{relative} has its own test file now: drop it from ELSEWHERE")
            continue
        if relative not in elsewhere:
            found.append(f"{relative} has no test file (tests/{own_test_file(module, package, tests).relative_to(tests)})"
                         f" and no ELSEWHERE entry")
            continue
        holder, word = elsewhere[relative]
        if not (tests / holder).is_file() or word not in (tests / holder).read_text(encoding="utf-8"):
            found.append(f"{relative}: ELSEWHERE says tests/{holder} holds it by {word!r}, which it does not")
    found += [f"ELSEWHERE names {name}, which is not a module" for name in sorted(elsewhere)
              if not (package / name).is_file()]
    return found


def strays(package: Path, tests: Path, themes: dict[str, str]) -> list[str]:
    """The test files of the wings' folders that name no module and no theme ([]: none)."""
    found = []
    for wing in WINGS:
        for test in sorted((tests / wing).rglob("test_*.py")):
            relative = test.relative_to(tests)
            module = package.joinpath(*relative.parts[:-1], test.name.removeprefix("test_"))
            if not module.is_file() and relative.as_posix() not in themes:
                found.append(f"tests/{relative.as_posix()} names no module: python/ol/"
                             f"{module.relative_to(package).as_posix()} is not there (rename it, or list its theme)")
    return found


def test_each_test_file_of_a_wing_names_its_module_or_its_theme():
    assert strays(PACKAGE, TESTS, THEMES) == []


def test_each_theme_is_a_test_file():
    assert [path for path in THEMES if not (TESTS / path).is_file()] == []


def test_every_module_has_its_test_file_or_says_where_its_tests_are():
    assert unheld(PACKAGE, TESTS, ELSEWHERE) == []


def test_a_module_without_tests_or_with_a_false_entry_is_found(tmp_path):
    package, tests = tmp_path / "ol", tmp_path / "tests"
    (package / "core").mkdir(parents=True)
    (tests / "core").mkdir(parents=True)
    for name in ("tested", "untested", "held", "falsely_held"):
        (package / "core" / f"{name}.py").write_text("")
    (tests / "core" / "test_tested.py").write_text("")
    (tests / "test_other.py").write_text("import ol.core.held\n")
    assert unheld(package, tests, {"core/held.py": ("test_other.py", "ol.core.held"),
                                   "core/falsely_held.py": ("test_other.py", "ol.core.falsely_held"),
                                   "core/tested.py": ("test_other.py", "x")}) == [
        "core/falsely_held.py: ELSEWHERE says tests/test_other.py holds it by 'ol.core.falsely_held', which it does not",
        "core/tested.py has its own test file now: drop it from ELSEWHERE",
        "core/untested.py has no test file (tests/core/test_untested.py) and no ELSEWHERE entry"]


def test_a_test_file_whose_module_moved_is_found(tmp_path):
    package, tests = tmp_path / "ol", tmp_path / "tests"
    (package / "core").mkdir(parents=True)
    (package / "core" / "kept.py").write_text("")
    (tests / "core").mkdir(parents=True)
    for name in ("test_kept.py", "test_gone.py", "test_theme.py"):
        (tests / "core" / name).write_text("")
    assert strays(package, tests, {"core/test_theme.py": "a theme"}) == [
        "tests/core/test_gone.py names no module: python/ol/core/gone.py is not there (rename it, or list its theme)"]
