"""`ol verify MODULE`: the instructor's check that a module is sound.

    every module   the reference passes its course tests; a fresh stub (from
                   the contract) fails every one of them
    graded module  each alternate passes the course tests; each pitfall (its
                   edits) and its chaff (ol.grading.chaffs) fail the course
                   tests it names, and so does each further mistake the
                   chapter warns against (misconceptions.toml beside
                   pitfalls.toml: the entries with a `caught_by`); around the
                   reference, each chaff gives what its edits give on every
                   course-test call where both give a result; the model-answer
                   suite grades 1.0 with every pitfall caught; the reviewed
                   equivalent list still matches what mutmut generates, and
                   the model answer catches none of them (else they are not
                   equivalent)

A change to the reference that breaks any of this is reported, never
silently absorbed.  Runs nothing inside the student's tree.  Each stage is
announced as it starts (`on_step`; the command prints it on stderr with
the seconds so far), so a minute of grading the model answer is not silence.
"""

from __future__ import annotations

import argparse
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ol.core.catalog import REFERENCE_TREE, Module, dotted_name, load_catalog
from ol.core.errors import OlError
from ol.core.exits import NOT_PASSED, OK

# Seconds the course tests may take on one variant here: far above what they
# take (a few), so only a hang stops them; verify runs the course's own code.
COURSE_TESTS_TIME_LIMIT = 300.0


@dataclass
class VerifyResult:
    module: str
    ok_lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def check(self, condition: bool, good: str, bad: str) -> None:
        (self.ok_lines if condition else self.problems).append(good if condition else bad)


def verify_module(root: Path, module_id: str, *, workers: int = 2,
                  on_step: Callable[[str], None] = lambda step: None) -> VerifyResult:
    """Every check above for one module; problems are listed, not raised;
    on_step(what) as each stage starts."""
    root = Path(root).resolve()
    module = load_catalog(root).get(module_id)
    result = VerifyResult(module.id)
    if module.grading is None:
        on_step("the reference and a fresh stub on the course tests")
        _verify_course_tests(root, module, result, workers)
    else:
        _verify_graded(root, module, result, workers, on_step)
    return result


def _verify_course_tests(root: Path, module: Module, result: VerifyResult, workers: int) -> None:
    """An ungraded module: the reference passes its course tests, a stub fails them."""
    from ol.core.runner import run_course_tests
    from ol.student.workspace import fresh_stubs

    catalog = load_catalog(root)
    stubs = {dotted_name(f): text for f, text in fresh_stubs(root, module).items()}
    with ThreadPoolExecutor(max_workers=workers) as pool:  # each run is its own pytest process
        reference, stub = pool.map(lambda sources: run_course_tests(
            root, module, implementation="reference", sources=sources, capture=True, catalog=catalog), [None, stubs])
    _check_reference_and_stub(result, reference.ok, reference.passed, reference.failed, reference.output,
                              stub.passed, stub.failed, stub.exit_code != 0)


def _check_reference_and_stub(result, ok, passed, failed, output, stub_passed, stub_failed, stub_not_ok) -> None:
    result.check(ok, f"the reference passes the {len(passed)} course tests",
                 f"the reference FAILS course tests: {', '.join(failed) or output[-2000:]}")
    result.check(not stub_passed and stub_not_ok, f"a fresh stub fails every course test ({len(stub_failed)})",
                 f"a fresh stub PASSES course tests {', '.join(stub_passed)}: they test nothing the stub lacks")


def _verify_graded(root: Path, module: Module, result: VerifyResult, workers: int,
                   on_step: Callable[[str], None]) -> None:
    """A graded module: every check, through one grading session."""
    from ol.grading.grader import Grader
    from ol.grading.mutants import overlapping_edits
    from ol.grading.session import GradingSession
    from ol.grading.variants import Variant, pitfall_key
    from ol.student.workspace import fresh_stubs

    grading = module.grading
    pitfall_errors: list[str] = []
    on_step("the mutant set (mutmut's, built once and cached)")
    session = GradingSession(root, module.id, pitfall_errors=pitfall_errors)
    result.problems.extend(pitfall_errors)
    result.problems.extend(overlapping_edits(root / grading.pitfalls, session.reference.source))
    stub = Variant("stub", fresh_stubs(root, module)[grading.target], session.reference.origin)
    warnings = _chapter_warnings(root / grading.pitfalls, session.reference.source, result)
    warned = [Variant(f"warning:{entry['id']}", source, session.reference.origin) for entry, source in warnings]
    edits = [Variant(f"edit:{v.key.split(':', 1)[1]}", v.source, v.origin) for v in session.pitfall_edit_variants()]
    try:
        chaffs = session.pitfall_variants() if grading.chaffs else []
    except OlError as error:  # a pitfall without its chaff
        result.problems.append(str(error))
        chaffs = []
    variants = [session.reference, stub, *session.alternates, *edits, *chaffs, *warned]
    on_step(f"the course tests on {len(variants)} variants (the reference, a stub, the alternates, each pitfall "
            "and its chaff, the chapter's warnings)")
    with session.scheduler({}, workers=workers) as scheduler:
        runs = Grader(session, scheduler, time_limit=COURSE_TESTS_TIME_LIMIT).course_tests_of(variants)
    reference, stub_run = runs.pop("reference"), runs.pop("stub")
    _check_reference_and_stub(result, reference.ok, reference.passed, reference.failed, reference.output,
                              stub_run.passed, stub_run.failed, not stub_run.ok)
    for number, alternate in enumerate(session.alternates, start=1):
        run = runs[alternate.key]
        result.check(run.ok, f"alternate {number} ({grading.alternates[number - 1]}) passes the course tests",
                     f"alternate {number} FAILS course tests: {', '.join(run.failed)}")
    for pitfall in session.mutants.pitfalls:
        for key, what in ((f"edit:{pitfall.id}", f"pitfall {pitfall.id}"), (pitfall_key(pitfall.id), f"chaff {pitfall.id}")):
            if key not in runs or (what.startswith("chaff") and not chaffs):
                continue
            failed = {name.split("[")[0] for name in runs[key].failed}
            missed = [test for test in pitfall.caught_by if test not in failed]
            result.check(not missed, f"{what} fails {', '.join(pitfall.caught_by)}",
                          f"{what} is NOT caught by {', '.join(missed)} (it fails: {', '.join(sorted(failed)) or 'nothing'})")
    for entry, _ in warnings:
        failed = {name.split("[")[0] for name in runs[f"warning:{entry['id']}"].failed}
        missed = [test for test in entry["caught_by"] if test not in failed]
        said = f"misconception {entry['id']} (a warning of chapter section {entry.get('section', '?')})"
        result.check(not missed, f"{said} fails {', '.join(entry['caught_by'])}",
                     f"{said} is NOT caught by {', '.join(missed)} (it fails: {', '.join(sorted(failed)) or 'nothing'})")
    if chaffs and not pitfall_errors:
        on_step(f"each of the {len(chaffs)} chaffs against its pitfall's edits on the course tests' calls")
        _verify_chaffs_mean_their_edits(session, result)
    if pitfall_errors:
        result.problems.append("the model answer is not graded until every pitfall applies to the reference")
    else:
        on_step(f"the model answer graded against {len(session.mutants.counted)} mutants and "
                f"{len(session.mutants.pitfalls)} pitfalls, then the {len(session.mutants.equivalent)} reviewed "
                "equivalent ones")
        _verify_grading(session, result, workers)


def _chapter_warnings(pitfalls: Path, reference: str, result: VerifyResult) -> list[tuple[dict, str]]:
    """The mistakes the chapter warns against beyond its pitfalls: the entries of
    misconceptions.toml (beside pitfalls.toml) that name the course tests that must
    fail on them (`caught_by`), each with its source, the reference with its edits.
    An entry whose edits no longer apply is a problem."""
    path = pitfalls.with_name("misconceptions.toml")
    if not path.is_file():
        return []
    warnings = []
    for entry in tomllib.loads(path.read_text(encoding="utf-8")).get("misconception", []):
        if not entry.get("caught_by"):
            continue
        source = reference
        for number, edit in enumerate(entry.get("edit", []), start=1):
            count = reference.count(edit["old"])
            if count != 1:
                result.problems.append(f"{path.name}: misconception {entry['id']}'s edit {number} finds its `old` text "
                                       f"{count} times in the reference, not once: update the edit")
                break
            source = source.replace(edit["old"], edit["new"])
        else:
            warnings.append((entry, source))
    return warnings


def _verify_chaffs_mean_their_edits(session, result: VerifyResult) -> None:
    """Around the reference, each chaff gives what its pitfall's edits give on
    every course-test call where both give a result (ol.grading.chaff_equivalence)."""
    from ol.grading.chaff_equivalence import compare_chaffs_with_edits

    for pid, comparison in compare_chaffs_with_edits(session.root, session.module.id, session=session).items():
        skipped = f"; {comparison.one_sided} where only one raised, not compared" if comparison.one_sided else ""
        result.check(not comparison.problems,
                     f"chaff {pid} around the reference equals its edit on the course tests' {comparison.compared} "
                     f"calls with a result and {comparison.both_raised} that raise{skipped}",
                     f"chaff {pid} around the reference does NOT equal its edit on the course tests' inputs: "
                     + "; ".join(comparison.problems))


def _verify_grading(session, result: VerifyResult, workers: int) -> None:
    from ol.grading.check import check_model_answer

    grading, mutants = session.grading, session.mutants
    for entry in mutants.stale_equivalents:
        result.problems.append(
            f"{grading.equivalent}: {entry.id} ({entry.function}) is no longer generated by mutmut from "
            f"{REFERENCE_TREE}/{grading.target}: the reference changed; review the list (ids of the current "
            "survivors of the model answer are printed by ol check on it)"
        )
    _list_mutants_without_witness(session, result)
    check, caught = check_model_answer(session, session.root / grading.model_answer, workers=workers)
    if check.reason:
        result.problems.append(f"the model answer ({grading.model_answer}) is not graded: {check.reason}: "
                               + "; ".join(check.problems))
        return
    missed = [p.id for p in check.pitfalls if not p.killed]
    result.check(
        check.killed == check.counted and not missed,
        f"the model answer scores {check.score:.2f} ({check.killed}/{check.counted}, every pitfall caught)",
        f"the model answer scores {check.score:.3f} ({check.killed}/{check.counted}); pitfalls missed: "
        f"{', '.join(missed) or 'none'}; surviving mutants: "
        + "; ".join(f"{s.id}\n{s.diff}" for s in check.survivors),
    )
    result.check(
        not caught,
        f"none of the {len(mutants.equivalent)} reviewed equivalent mutants is caught by the model answer",
        f"{grading.equivalent} lists mutants the model answer CATCHES, so they are not equivalent: "
        + ", ".join(caught),
    )


def _list_mutants_without_witness(session, result: VerifyResult) -> None:
    """Every counted mutant's witness (ol.grading.witnesses), found and cached here once per mutant set;
    the ones without one are possibly equivalent: listed for review (counted until the equivalent list
    gives each a reason)."""
    from ol.grading.witnesses import find_witnesses

    counted = list(session.mutants.counted)
    found = find_witnesses(session, counted)
    without = [m.id for m in counted if found[m.id] is None]
    result.check(True, f"{len(counted) - len(without)} of the {len(counted)} counted mutants have a witness (a "
                 "course-test call that tells them from the reference)" + (
                     f"; {len(without)} have none, possibly equivalent: review them for "
                     f"{session.grading.equivalent} (counted until then): {', '.join(without)}" if without else ""),
                 "")


# ---- the command line ---------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Instructor: check a module end to end: the reference passes its course tests, a fresh stub "
        "fails them, each pitfall and its chaff fail the tests it names, each chaff equals its pitfall's "
        "edits on the course tests' inputs, the model answer grades 1.0, and the "
        "reviewed equivalent mutants still match what mutmut generates. Exit 0 sound, 1 a problem."
    )
    parser.add_argument("module", metavar="MODULE", nargs="?", help="a module id (default: every module)")


def run(args: argparse.Namespace, ctx) -> int:
    from ol.grading.sandbox import confine

    confine.pin_blas_threads()   # before numpy loads
    modules = [ctx.module(args.module)] if args.module else list(ctx.catalog.modules)
    status = OK
    started = time.monotonic()
    for number, module in enumerate(modules, start=1):
        def step(what: str, module=module, number=number) -> None:
            print(f"ol verify {module.id} ({number}/{len(modules)}, {time.monotonic() - started:.0f} s): {what}",
                  file=ctx.err, flush=True)

        outcome = verify_module(ctx.root, module.id, on_step=step)
        print(f"ol verify {module.id}: {'sound' if outcome.ok else 'PROBLEMS'}", file=ctx.out)
        for line in outcome.ok_lines:
            print(f"  ok       {line}", file=ctx.out)
        for line in outcome.problems:
            print(f"  PROBLEM  {line}", file=ctx.out)
        status = status if outcome.ok else NOT_PASSED
    return status
