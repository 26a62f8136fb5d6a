"""`ol check` in a student kit: mutation feedback without the answer key.

A student kit (ol release) holds no reference, alternate or reviewed list of
equivalent mutants for the modules it hands out.  There the student's own
file, once it passes the course tests, is the correct implementation the
student's tests are graded around, by the same process model as the
instructor's grade (confined runs, blind proxies, shuffled, with repeats):

    correct implementation   the student's own file (it passed the course tests)
    generated mutants        mutmut's mutants of that file, minus those that
                             change only an error message
    pitfalls                 each chaff (ol.grading.chaffs) around that file
    equivalent mutants       nobody has reviewed these mutants: any survivor
                             may be equivalent to the student's code.  When at
                             most MAX_TRIAGED survive, each is run against the
                             course tests too: one they catch is a real change
                             of behaviour; one they miss is marked "possibly
                             equivalent".  All count.

Every variant made from the student's code runs confined, as the student's
file does in the instructor's check.

What this promises, and what it does not: the score is the one the
instructor's formula gives, on the mutants of the student's code instead of
the reference's, so it measures how well the tests pin down what that code
does.  It is feedback: the instructor's grade (ol grade, Gradescope) runs the
same tests against the reference's mutants, the alternates and the reviewed
equivalent list, and can differ.  A test that only the student's own code
passes is not caught here (no second implementation).  Code under test that
tells its own copies apart (a mutant or chaff that raises or exits while it
is imported) catches nothing: a variant whose run never imported it is
counted and not caught (CheckResult.not_imported), and a chaff imports the
student's module under the module's own name.  Best effort: the note that
it imported comes from the process the code under test runs in, which can
write it too.  What no check without an
answer key can stop is code that, once imported, behaves differently when
changed (by hashing itself at each call, say): the local check then says
more than the tests do, and the instructor's grade, against the
reference's mutants, says what they are worth.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

from ol.core.catalog import CONTRACT_TREE, REFERENCE_TREE, STUDENT_TREE, NotGraded, dotted_name, load_catalog
from ol.core.errors import OlError
from ol.core.overlay import Source
from ol.grading.chaffs import chaff_variants, load_chaffs
from ol.grading.check import CheckRequest, CheckResult, check_module
from ol.grading.events import OnEvent
from ol.grading.mutants import MutantSet, Pitfall, generate_mutants
from ol.grading.protocol import RunRequest
from ol.grading.sandbox.warm_link import SandboxFault
from ol.grading.scheduler import Run
from ol.grading.session import GradingFault, GradingSession, _text
from ol.grading.variants import Variant

YOUR_CODE = "your own code"
# Survivors run against the course tests at most: one course run each.  A suite
# with more survivors has real changes to catch first; their marks would cost
# a minute and say little.
MAX_TRIAGED = 40


class LocalSession(GradingSession):
    """A grading session whose correct implementation is the student's own file."""

    suite_needs_passing_code = True     # mutants of code that fails the course tests grade nothing
    variants_must_import = True         # a mutant or chaff of the student's code that never imports is no catch
    witnesses_recorded_on = "student"   # the course tests' calls on the student's own code: its mutants'
                                        # witnesses, and so the features, as ol grade judges them

    def __init__(self, root: Path, module_id: str, *, cache_dir: Path | None = None):
        self.root = Path(root).resolve()
        self.catalog = load_catalog(self.root)
        self.module = self.catalog.get(module_id)
        grading = self.module.grading
        if grading is None or grading.chaffs is None:
            raise NotGraded(f"{self.module.id} has no local check in a student kit: it needs [module.grading] "
                            f"with chaffs in the catalog. Run ./ol tests {self.module.id} for its course tests.")
        self.grading = grading
        self.target = dotted_name(grading.target)
        origin = f"{STUDENT_TREE}/{grading.target}"
        source = _text(self.root / origin, whose="your")
        self.reference = Variant("reference", source, origin, trusted=False)
        self.alternates = ()
        self.mutant_error: str | None = None
        self.mutants = self._own_mutants(source, cache_dir)
        contract = self.module.contract_for(grading.target) or f"{CONTRACT_TREE}/{grading.target}i"
        self.contract = (contract, _text(self.root / contract))
        self.library = self._library()

    def _own_mutants(self, source: str, cache_dir: Path | None) -> MutantSet:
        """mutmut's mutants of the student's file (none, with the reason kept,
        if it does not parse: the course tests then say why)."""
        try:
            generated = generate_mutants(source, Path(self.grading.target).name, cache_dir)
        except OlError:  # mutmut missing, or another version: the message says what to install
            raise
        except Exception as error:  # libcst cannot read the file (a syntax error: the course tests say where)
            self.mutant_error, generated = f"{type(error).__name__}: {error}", []
        path = self.root / self.grading.pitfalls
        try:
            entries = tomllib.loads(path.read_text(encoding="utf-8")).get("pitfall", [])
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise GradingFault(f"the pitfalls of {self.module.id} cannot be read ({path}): {error}") from None
        pitfalls = tuple(Pitfall(e["id"], e["misconception"], e["symptom"], tuple(e.get("caught_by", ())), "")
                         for e in entries)
        return MutantSet(counted=tuple(m for m in generated if not m.message_only),
                         message_only=tuple(m for m in generated if m.message_only),
                         equivalent=(), stale_equivalents=(), pitfalls=pitfalls)

    def _library_entry(self, file: str) -> dict:
        """As the instructor's, but a need whose reference this kit withholds
        comes from the student's own file."""
        return Source.from_text(*library_source(self.root, file)).to_json()

    def pitfall_variants(self) -> list[Variant]:
        return chaff_variants(load_chaffs(self.root, self.grading, [p.id for p in self.mutants.pitfalls]),
                              self.reference)

    def mutant_variants(self, which: str = "counted") -> list[Variant]:
        return [Variant(m.id, m.source, self.reference.origin, trusted=False) for m in getattr(self.mutants, which)]

    def course_setup(self):
        setup = super().course_setup()
        setup.files.pop(self.reference.origin, None)   # the diagnosis reads the reference, which is not here
        return setup

    @staticmethod
    def describe_variant(key: str) -> str | None:
        return "your own code (it passes the course tests, so here it is the correct implementation)" \
            if key == "reference" else None


def check_in_kit(root: Path, module_id: str, request: CheckRequest = CheckRequest(), *,
                 on_event: OnEvent | None = None) -> CheckResult:
    """`ol check` for a module a student kit hands out: check_module's flow on a
    LocalSession, whose survivors get witnesses as ol grade's do (a survivor
    with none may be equivalent); a survivor whose witness search failed is
    run against the course tests instead, to mark the ones that may be."""
    session = LocalSession(root, module_id)
    result = check_module(root, module_id, request, session=session, on_event=on_event)
    result.mutants_of = YOUR_CODE
    if result.reason is None and session.mutant_error:
        raise GradingFault(f"mutmut could not make mutants of your {session.reference.origin}: {session.mutant_error}")
    # A witness shows a real change; a survivor without one (a call that needs an earlier call's state,
    # arguments the recorder cannot copy) is left to the course tests to judge.
    _mark(result, {s.id: (False if s.witness else None) for s in result.survivors})
    undecided = [s for s in result.survivors if s.possibly_equivalent is None]
    if result.reason is None and 0 < len(undecided) <= MAX_TRIAGED:
        _mark_possibly_equivalent(session, result, workers=request.workers, time_limit=request.time_limit,
                                  confinement=result.confinement)
    return result


def _mark_possibly_equivalent(session: LocalSession, result: CheckResult, *, workers: int, time_limit: float,
                              confinement: str) -> None:
    """Run the course tests (stopping at the first failure) on every surviving
    mutant not yet judged: the ones they pass are possibly equivalent to the student's code."""
    by_id = {m.id: m for m in session.mutants.counted}
    survivors = [s for s in result.survivors if s.id in by_id and s.possibly_equivalent is None]
    runs = {number: s for number, s in enumerate(survivors, start=1)}
    try:
        with session.scheduler({}, course=True, workers=workers, confinement=confinement) as scheduler:
            outcomes = scheduler.run([
                Run(number, RunRequest(suite="course", task="pytest", pytest_args=["-x"]),
                    Variant(s.id, by_id[s.id].source, session.reference.origin, trusted=False).request(), time_limit)
                for number, s in runs.items()])
    except SandboxFault as fault:
        raise GradingFault(f"the grader failed: {fault}") from None
    possibly = {runs[number].id for number, outcome in outcomes.items() if outcome.exit == 0}
    _mark(result, {s.id: s.id in possibly for s in survivors})


def _mark(result: CheckResult, possibly_equivalent: dict[str, bool | None]) -> None:
    """Each survivor and mutant line named in `possibly_equivalent` (id -> its value) gets it."""
    def marked(line):
        return dataclasses.replace(line, possibly_equivalent=possibly_equivalent[line.id]) \
            if line.id in possibly_equivalent else line
    result.survivors = [marked(s) for s in result.survivors]
    result.mutants = [marked(m) for m in result.mutants]


def library_source(root: Path, file: str) -> tuple[str, str]:
    """(text, origin) of a library file: the reference's, or in a student kit
    that withholds it, the student's own."""
    reference = Path(root) / REFERENCE_TREE / file
    if reference.is_file():
        return _text(reference), f"{REFERENCE_TREE}/{file}"
    own = Path(root) / STUDENT_TREE / file
    if own.is_file():
        return _text(own, whose="your"), f"{STUDENT_TREE}/{file}"
    raise OlError(f"{REFERENCE_TREE}/{file} is not in this student kit and you have no {STUDENT_TREE}/{file}: "
                  "the module it belongs to is one you write; start it first")
