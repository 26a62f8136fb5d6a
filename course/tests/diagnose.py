"""Failure messages that name the mistake, or say exactly what differs.

A course test compares what the student's code gives with what it should
give.  When a comparison fails, the same scenario runs again on each mistake
the course knows for the module:

    course/mutants/<module>/pitfalls.toml        the graded pitfall mutants (s01, ...)
    course/mutants/<module>/misconceptions.toml  more common mistakes, for diagnosis only (m01, ...)

Each mistake is the reference file with exact text edits (`old` -> `new`,
every `old` found exactly once), executed as a fresh module whose imports
(Tensor, F, ...) are this process's own.  A mistake is named when, on these
inputs, it fails the same comparison and gives the student's results, to
within the comparison's tolerance: here, and in every comparison of the test
that passed before this one.  The reference itself is tried the same way: if
it gives the student's failing result, the difference comes from the modules
both build on.  When nothing matches, the message says what differs (how many
entries, at which positions and pairs, the largest difference) and names no
cause.

    STUDENT = SimpleNamespace(rope_cos_sin=rope_cos_sin, apply_rope=apply_rope)
    MISTAKES = Mistakes("L7.3", "tinyllm/modern/rope.py", names=("rope_cos_sin", "apply_rope"))
    expect = Expectations(STUDENT, MISTAKES)          # one per test: it remembers what passed
    expect.close(lambda rope: rope.rope_cos_sin(1, [1.0, 0.01])[1], [0.841471, 0.01], 1e-6,
                 "rope_cos_sin(1, [1, 0.01]) sin", where=Where.tables(1))

A scenario is a function of a module-like namespace (`rope` above): it is
called on the student's functions, then on each mistake's, and must use only
those names and its own inputs.  It never calls anything else of the
student's, so it works the same when the student's module is a proxy to
another process (`ol check`).

A test that compares many cases in turn (every golden case, say) collects
them with Cases: each failing case says what differs, and each diagnosis is
given once, naming the cases it explains, however many cases one mistake
breaks.
"""

from __future__ import annotations

import sys
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, Callable

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]  # course/tests/diagnose.py -> the repository (or the grader's kit)
REFERENCE_TREE = Path("course", "reference", "python")
MISTAKE_FILES = (("pitfall", "pitfalls.toml"), ("misconception", "misconceptions.toml"))
LEFT_OUT = "(The diagnosis left out:"  # opens the line that lists the known mistakes that could not be built


# ---- the mistakes a module's course knows ---------------------------------------------------


class NoReference(Exception):
    """A student kit (ol release) holds no reference of the module: the
    mistakes, edits of it, cannot be tried."""


@dataclass(frozen=True)
class Mistake:
    """One known mistake, as the reference with its edits applied."""

    id: str        # "s02", "m01"
    kind: str      # "pitfall" or "misconception"
    by: str        # completes "what you get by ...": "computing the angles in float16"
    look_at: str   # completes "look at ...": "the dtype of the angle product in rope_cos_sin"
    source: str    # the whole edited file


class Mistakes:
    """A module's pitfalls and misconceptions, loaded on first use (a test
    that passes never reads them).

    module: "L7.3"; target: the file under test inside the reference tree,
    "tinyllm/modern/rope.py"; names: what a scenario may use of it.
    """

    def __init__(self, module: str, target: str, names: tuple[str, ...], repo: Path = REPO):
        self.module, self.target, self.names, self.repo = module, target, names, Path(repo)
        self._loaded: tuple[SimpleNamespace, list[tuple[Mistake, SimpleNamespace]], list[str]] | None = None

    @property
    def reference_path(self) -> Path:
        return self.repo / REFERENCE_TREE / self.target

    def catalog(self) -> tuple[list[Mistake], list[str]]:
        """Every mistake whose edits apply, in file order (pitfalls first), and a
        problem line for each one that does not."""
        if not self.reference_path.is_file():
            raise NoReference(f"{self.module}'s reference is not in this student kit")
        reference = self.reference_path.read_text(encoding="utf-8")
        mistakes, problems = [], []
        for kind, filename in MISTAKE_FILES:
            path = self.repo / "course" / "mutants" / self.module / filename
            if not path.is_file():
                continue
            with path.open("rb") as file:
                entries = tomllib.load(file).get(kind, [])
            for entry in entries:
                try:
                    source = apply_edits(reference, entry.get("edit", []))
                    mistakes.append(Mistake(entry["id"], kind, entry["by"], entry["look_at"], source))
                except (ValueError, KeyError) as error:
                    what = f"it has no {error}" if isinstance(error, KeyError) else str(error)
                    problems.append(f"{kind} {entry.get('id', '?')} in {path.relative_to(self.repo)}: {what}")
        return mistakes, problems

    def loaded(self) -> tuple[SimpleNamespace, list[tuple[Mistake, SimpleNamespace]], list[str]]:
        """(the reference, [(mistake, its module)], problems), built once."""
        if self._loaded is None:
            mistakes, problems = self.catalog()
            reference = self._namespace("reference", self.reference_path.read_text(encoding="utf-8"))
            variants = []
            for mistake in mistakes:
                try:
                    variants.append((mistake, self._namespace(mistake.id, mistake.source)))
                except Exception as error:  # an edit that leaves broken code
                    problems.append(f"{mistake.kind} {mistake.id} does not load: {type(error).__name__}: {error}")
            self._loaded = (reference, variants, problems)
        return self._loaded

    def _namespace(self, label: str, source: str) -> SimpleNamespace:
        """Execute `source` as a fresh module and keep the public names a scenario uses."""
        name = f"_course_{self.module.replace('.', '_')}_{label}"
        module = ModuleType(name)
        module.__file__ = str(self.reference_path)
        sys.modules[name] = module  # dataclasses look up their class's module while building it
        try:
            code = compile(source, f"{self.reference_path} ({label})", "exec", dont_inherit=True)
            exec(code, module.__dict__)
        finally:
            del sys.modules[name]
        return SimpleNamespace(**{n: getattr(module, n) for n in self.names})


def apply_edits(reference: str, edits: list[dict]) -> str:
    """The reference with each edit's `old` text (found exactly once) replaced by its `new`."""
    source = reference
    for number, edit in enumerate(edits, start=1):
        count = reference.count(edit["old"])
        if count != 1:
            raise ValueError(f"edit {number}'s `old` text occurs {count} times in the reference, not once")
        source = source.replace(edit["old"], edit["new"])
    if source == reference:
        raise ValueError("its edits change nothing")
    return source


# ---- what a scenario gave ----------------------------------------------------------------------


@dataclass(frozen=True)
class Raised:
    """A scenario that raised instead of returning."""

    error: BaseException

    def __str__(self) -> str:
        return f"{type(self.error).__name__}: {self.error}"


def outcome(scenario: Callable[[Any], Any], module) -> Any:
    """What scenario(module) returns, or Raised(the exception)."""
    __tracebackhide__ = True
    try:
        return scenario(module)
    except Exception as error:
        return Raised(error)


@dataclass(frozen=True)
class Tolerance:
    """|got - want| <= atol + rtol |want|, entry by entry (atol may be an array
    that broadcasts against the values)."""

    atol: Any = 0.0
    rtol: float = 0.0

    def agree(self, got: np.ndarray, want: np.ndarray, nan_matches: bool) -> np.ndarray:
        """Entry by entry: within the tolerance, or equal (inf == inf), or (if
        nan_matches) both nan."""
        got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            ok = (np.abs(got64 - want64) <= self.atol + self.rtol * np.abs(want64)) | (got64 == want64)
        if nan_matches:
            ok |= np.isnan(got64) & np.isnan(want64)
        return ok

    def __str__(self) -> str:
        """"1e-06", "1e-06 relative", "their tolerance (2.5e-07 to 3.1e-05)"..."""
        if np.ndim(self.atol):
            low, high = float(np.min(self.atol)), float(np.max(self.atol))
            return f"their tolerance ({low:.3g} to {high:.3g})"
        parts = ([f"{self.atol:g}"] if self.atol or not self.rtol else []) + (
            [f"{self.rtol:g} relative"] if self.rtol else [])
        return " + ".join(parts)


def same(a, b, tolerance: Tolerance) -> bool:
    """Two outcomes agree: the same exception (type and message), or values of
    the same structure, shape and dtype within the tolerance (nan matching nan)."""
    if isinstance(a, Raised) or isinstance(b, Raised):
        return isinstance(a, Raised) and isinstance(b, Raised) and str(a) == str(b)
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return (isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b)
                and all(same(x, y, tolerance) for x, y in zip(a, b)))
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind not in "biuf":
        return bool(np.all(a == b))
    return bool(np.all(tolerance.agree(a, b, nan_matches=True)))


# ---- where the entries of an array sit -------------------------------------------------------------


class Where:
    """What the entries of a compared array are, so that a message can say
    where two arrays differ: by position and pair, not only by index.

    Where.tables(positions)              [*P, r/2] tables: position, pair (no positions: [r/2], pairs only)
    Where.heads(positions, layout, r)    [..., head_dim] head vectors: position, pair, a or b, pass-through
    Where.items("shift", [1, 1000])      a 1-D array, one entry per labelled case

    positions broadcast against the array's shape without its last axis.
    """

    def __init__(self, kind: str, positions=None, layout: str | None = None, rotary_dim: int | None = None,
                 name: str = "", labels=()):
        self.kind, self.positions, self.layout, self.rotary_dim = kind, positions, layout, rotary_dim
        self.name, self.labels = name, list(labels)

    @classmethod
    def tables(cls, positions=None) -> Where:
        return cls("tables", positions)

    @classmethod
    def heads(cls, positions, layout: str, rotary_dim: int | None = None) -> Where:
        return cls("heads", positions, layout, rotary_dim)

    @classmethod
    def items(cls, name: str, labels) -> Where:
        return cls("items", name=name, labels=labels)

    @property
    def noun(self) -> str:
        """What one entry is called: "entries", or the items' name ("shifts")."""
        return f"{self.name}s" if self.kind == "items" else "entries"

    def labels_for(self, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
        """Arrays of `shape`: "position", "pair" (-1: passes through) and
        "member" (0: a, 1: b), those this description knows."""
        if self.kind not in ("tables", "heads") or not shape:
            return {}
        labels = {}
        if self.positions is not None:
            try:
                lead = np.broadcast_to(np.asarray(self.positions), shape[:-1])
                labels["position"] = np.broadcast_to(lead[..., None], shape)
            except ValueError:
                pass  # positions that do not fit: indexes only
        width = shape[-1]
        entry = np.arange(width)
        if self.kind == "tables":
            labels["pair"] = np.broadcast_to(entry, shape)
        else:
            r = self.rotary_dim or width
            rotates = entry < r
            if self.layout == "half":
                pair, member = entry % max(r // 2, 1), entry // max(r // 2, 1)
            else:
                pair, member = entry // 2, entry % 2
            labels["pair"] = np.broadcast_to(np.where(rotates, pair, -1), shape)
            labels["member"] = np.broadcast_to(np.where(rotates, member, -1), shape)
        return labels

    def describe(self, index: tuple[int, ...], shape: tuple[int, ...]) -> str:
        """One entry: "index (0, 2, 5, 9): position 17, pair 1, b"."""
        if self.kind == "items" and len(index) == 1 and index[0] < len(self.labels):
            return f"{self.name} {self.labels[index[0]]}"
        if not index:
            return "the single value"
        words = [f"index {index}"]
        labels = self.labels_for(shape)
        if "position" in labels:
            words.append(f"position {_number(labels['position'][index])}")
        if "pair" in labels:
            pair = int(labels["pair"][index])
            if pair < 0:
                words.append(f"entry {index[-1]}, past rotary_dim: it passes through")
            else:
                member = labels.get("member")
                words.append(f"pair {pair}" + ("" if member is None else f", {'ab'[int(member[index])]}"))
        return ": ".join([words[0], ", ".join(words[1:])]) if len(words) > 1 else words[0]

    def spread(self, bad: np.ndarray) -> str:
        """Which entries `bad` (a boolean array) marks, by position, pair and member."""
        if self.kind == "items":
            names = [str(self.labels[i]) for i in np.flatnonzero(bad) if i < len(self.labels)]
            return f"for {self.name} {_listed(names)}" if names else ""
        labels = self.labels_for(bad.shape)
        phrases = []
        if "position" in labels:
            phrases.append(_subset("position", labels["position"][bad], labels["position"]))
        if "pair" in labels:
            pair = labels["pair"]
            rotating = bad & (pair >= 0)
            if rotating.any():
                phrases.append(_subset("pair", pair[rotating], pair[pair >= 0]))
            member = labels.get("member")
            if member is not None and rotating.any():
                members = set(np.unique(member[rotating]).tolist())
                if members != {0, 1}:
                    phrases.append("only in the " + ("first" if members == {0} else "second")
                                   + f" entry of each pair ({'ab'[members.pop()]})")
            if (bad & (pair < 0)).any():
                phrases.append(("only " if not rotating.any() else "and ")
                               + "in entries past rotary_dim, which pass through unchanged")
        return ", ".join(p for p in phrases if p)


def _number(value) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _listed(names: list[str], shown: int = 6) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _subset(noun: str, chosen: np.ndarray, every: np.ndarray) -> str:
    """"at every position", "at positions 2049, 4096", "in 12 of 32 pairs (0 to 11)"..."""
    chosen_set = np.unique(chosen)
    every_set = np.unique(every)
    preposition = "at" if noun == "position" else "in"
    if len(every_set) <= 1:
        return ""
    if len(chosen_set) == len(every_set):
        return f"{preposition} every {noun}"
    missing = np.setdiff1d(every_set, chosen_set)
    if len(missing) <= 3 and len(chosen_set) > 3:
        return f"{preposition} every {noun} but {', '.join(_number(v) for v in missing)}"
    if len(chosen_set) <= 6:
        return f"{preposition} {noun}{'s' if len(chosen_set) > 1 else ''} {', '.join(_number(v) for v in chosen_set)}"
    return (f"{preposition} {len(chosen_set)} of {len(every_set)} {noun}s "
            f"({_number(chosen_set[0])} to {_number(chosen_set[-1])})")


# ---- comparisons that explain themselves ---------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One comparison: scenario(module) must equal `expected` (a value, or a
    function of the module), to within the tolerance and with dtype `dtype`
    if given; exactly (Python ==, np.array_equal for arrays) if `exact`."""

    scenario: Callable[[Any], Any]
    expected: Any
    tolerance: Tolerance = Tolerance()
    dtype: Any = None
    exact: bool = False

    def want(self, module):
        return self.expected(module) if callable(self.expected) else self.expected

    def passes(self, got, want) -> bool:
        if isinstance(got, Raised) or isinstance(want, Raised):
            return False
        return _equal(got, want) if self.exact else problem(got, want, self.tolerance, self.dtype) is None


def _equal(a, b) -> bool:
    """a == b, element by element for tuples and lists, np.array_equal for arrays."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


def _numbers(value) -> bool:
    """A number or an array of numbers (not a tuple, string or None)."""
    return not isinstance(value, (tuple, list)) and np.asarray(value).dtype.kind in "biuf"


def problem(got, want, tolerance: Tolerance, dtype=None) -> str | None:
    """None if got equals want to within the tolerance (and has `dtype`, if given);
    "values" if some entries differ by more; otherwise what else is wrong."""
    got, want = np.asarray(got), np.asarray(want)
    if dtype is not None and got.dtype != np.dtype(dtype):
        return f"dtype {got.dtype}, expected {np.dtype(dtype)}"
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.dtype.kind not in "biuf" or want.dtype.kind not in "biuf":
        return None if np.array_equal(got, want) else f"got {got!r}, expected {want!r}"
    return None if np.all(tolerance.agree(got, want, nan_matches=False)) else "values"


class Expectations:
    """The comparisons of one test, on the student's code.

    student: a namespace of the names scenarios use; mistakes: the module's
    Mistakes.  Keeps the comparisons that passed, so that a later failure
    names only the mistakes that pass them too.
    """

    def __init__(self, student, mistakes: Mistakes):
        self.student, self.mistakes = student, mistakes
        self.passed: list[Check] = []

    def __repr__(self) -> str:  # pytest shows the test's arguments
        return f"<the comparisons of this test, {len(self.passed)} passed so far>"

    def close(self, scenario, expected, atol, what: str, *, rtol: float = 0.0, where: Where | None = None,
              dtype=None) -> None:
        """scenario(student) must be within atol + rtol |expected| of expected,
        entry by entry (and of dtype `dtype`, if given); atol may be an array.
        expected: an array, or a function of the module: then the student's
        code computes it, and each mistake's code computes its own.  where:
        what the entries are, for the message."""
        __tracebackhide__ = True
        self._expect(Check(scenario, expected, Tolerance(atol, rtol), dtype), what, where)

    def equal(self, scenario, expected, what: str, *, where: Where | None = None) -> None:
        """scenario(student) must equal expected exactly (numbers, strings,
        arrays, or tuples of them); expected and where as for close."""
        __tracebackhide__ = True
        self._expect(Check(scenario, expected, exact=True), what, where)

    def _expect(self, check: Check, what: str, where: Where | None) -> None:
        __tracebackhide__ = True
        got = outcome(check.scenario, self.student)
        want = None if isinstance(got, Raised) else outcome(check.want, self.student)
        for value in (got, want):
            if isinstance(value, Raised):  # keep the traceback of the student's code, and add what it matches
                found = self._diagnosis(check, got, want)
                if found:
                    value.error.add_note(f"{what}:\n{found}")
                raise value.error
        if check.passes(got, want):
            self.passed.append(check)
            return
        if check.exact and not (_numbers(got) and _numbers(want)):
            with np.printoptions(threshold=20, edgeitems=3):
                facts = f"got {got!r}, expected {want!r}."
        else:
            facts = problem(got, want, check.tolerance, check.dtype)
            if facts == "values":
                facts = _differences(np.asarray(got), np.asarray(want), check.tolerance, where)
            else:
                facts += "."
        facts, diagnosis = f"{what}: {facts}", self._diagnosis(check, got, want, quiet=False)
        try:
            pytest.fail(f"{facts}\n{diagnosis}".rstrip())
        except pytest.fail.Exception as failure:  # pytest's own Failed, with its two parts for Cases
            failure.facts, failure.diagnosis = facts, diagnosis
            raise

    def _diagnosis(self, check: Check, got, want, quiet: bool = True) -> str:
        """The known mistakes that give the student's results, as message
        lines; if none, "" when quiet, else a line saying so."""
        try:
            reference, variants, problems = self.mistakes.loaded()
        except NoReference:  # a student kit: the message says what differs, and names no cause
            return ""
        except Exception as error:  # a missing or broken mistake file must not hide the failure itself
            return f"(No diagnosis: the known mistakes of {self.mistakes.module} could not be read: {error!r}.)"
        file = Path(self.mistakes.target).name
        lines = []
        if self._reproduces(reference, check, got, want):
            lines.append(
                f"Your result equals what the course's reference {file} gives on these inputs with the same "
                f"modules under it, and that fails here too: the difference comes from the modules {file} "
                f"builds on (yours, unless you add --ref-deps), not from your {file}."
            )
        for mistake, module in [] if lines else variants:  # a mistake that the reference matches here is not one
            if self._reproduces(module, check, got, want):
                said = "code raises the same error as" if isinstance(got, Raised) else "result equals"
                lines.append(f"Your {said} what you get by {mistake.by} ({mistake.kind} {mistake.id}); "
                             f"look at {mistake.look_at}.")
        if not lines and not quiet:
            ids = ", ".join(mistake.id for mistake, _ in variants)
            lines.append(f"None of the known mistakes of {self.mistakes.module} ({ids}) gives this result "
                         "on these inputs.")
        if problems and (lines or not quiet):
            lines.append(f"{LEFT_OUT} " + "; ".join(problems) + ".)")
        return "\n".join(lines)

    def _reproduces(self, module, check: Check, got, want) -> bool:
        """module fails this check as the student's code does (the same result
        and the same expected value) and passes every earlier check of the test.
        Its warnings (a float16 overflow, ...) are not the student's: they stay quiet."""
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return self._same_failure(module, check, got, want)

    def _same_failure(self, module, check: Check, got, want) -> bool:
        theirs = outcome(check.scenario, module)
        if not same(got, theirs, check.tolerance):
            return False
        if not isinstance(got, Raised):
            their_want = outcome(check.want, module)
            if not same(want, their_want, check.tolerance) or check.passes(theirs, their_want):
                return False
        return all(earlier.passes(outcome(earlier.scenario, module), outcome(earlier.want, module))
                   for earlier in self.passed)


class Cases:
    """The cases of one test that compares many in turn: each runs even when
    an earlier one failed, and the failure reports every failing case's facts,
    then each diagnosis once, with the cases it explains (one mistake breaks
    many cases: its name is given once, not once per case).

        cases = Cases()
        for name, inputs in golden_cases.items():
            cases.check(name, lambda: expect.close(...))
        cases.report("differ from HF")
    """

    def __init__(self):
        self.total = 0
        self.failed: list[tuple[str, str, str]] = []  # (case, facts, diagnosis)

    def check(self, name: str, compare: Callable[[], None]) -> None:
        """Run compare() (an Expectations comparison); a failure is kept for report()."""
        self.total += 1
        try:
            compare()
        except pytest.fail.Exception as failure:
            facts = getattr(failure, "facts", str(failure))
            self.failed.append((name, facts, getattr(failure, "diagnosis", "")))

    def report(self, verb: str) -> None:
        """Fail if a case did: "3 of 36 cases <verb>:", each case's facts, then each diagnosis once."""
        __tracebackhide__ = True
        if not self.failed:
            return
        names: dict[str, list[str]] = {}  # diagnosis -> the cases it explains, in order
        left_out = []  # "(The diagnosis left out: ...)": the same for every case, said once at the end
        for name, _, diagnosis in self.failed:
            lines = diagnosis.splitlines()
            left_out += [line for line in lines if line.startswith(LEFT_OUT) and line not in left_out]
            names.setdefault("\n".join(line for line in lines if not line.startswith(LEFT_OUT)), []).append(name)
        lines = [f"{len(self.failed)} of {self.total} cases {verb}:", ""]
        spaced = any("\n" in facts for _, facts, _ in self.failed)  # facts of several lines: a gap
        lines += [facts + ("\n" if spaced else "") for _, facts, _ in self.failed]
        lines += [] if spaced else [""]
        for diagnosis, cases in names.items():
            if diagnosis and len(self.failed) == 1:
                lines.append(diagnosis)
            elif diagnosis:
                which = "every case above" if len(cases) == len(self.failed) else _listed(cases, shown=12)
                lines.append(f"For {which}: {diagnosis}")
        pytest.fail("\n".join(lines + left_out).rstrip())


def _differences(got: np.ndarray, want: np.ndarray, tolerance: Tolerance, where: Where | None) -> str:
    """How many entries differ, where, and the largest difference (beyond its
    tolerance) with its two values."""
    where = where or Where("indexes")
    bad = ~tolerance.agree(got, want, nan_matches=False)
    with np.errstate(invalid="ignore", over="ignore"):
        size = np.abs(got.astype(np.float64) - want.astype(np.float64))
        excess = size - (tolerance.atol + tolerance.rtol * np.abs(want.astype(np.float64)))
    ranked = np.where(np.isnan(excess), np.inf, np.where(bad, excess, -np.inf))
    worst = tuple(int(i) for i in np.unravel_index(np.argmax(ranked), bad.shape))
    largest = "nan" if np.isnan(size[worst]) else f"{size[worst]:.3g}"
    if tolerance.rtol and want[worst] != 0 and not np.isnan(size[worst]):
        largest += f" ({size[worst] / abs(float(want[worst])):.2g} relative)"
    values = f"got {float(got[worst]):.7g}, expected {float(want[worst]):.7g}"
    if bad.size == 1:
        return f"{values}: a difference of {largest}, more than {tolerance}."
    spread = where.spread(bad)
    return (
        f"{int(bad.sum())} of {bad.size} {where.noun} differ by more than {tolerance}" + (f", {spread}" if spread else "")
        + f".\nThe largest difference is {largest}, at {where.describe(worst, bad.shape)}: {values}."
    )


# ---- calls that must raise ---------------------------------------------------------------------------


def refuses(error: type[Exception], call: Callable[[], Any], passed: str) -> None:
    """call() must raise `error`.  If it does not, the failure says on its own
    line what was passed (`passed`, as the test writes the call) and what it
    should have raised, then what happened instead."""
    __tracebackhide__ = True
    try:
        result = call()
    except error:
        return
    except Exception as other:
        pytest.fail(f"{passed}\n  should raise {error.__name__}, but raised {type(other).__name__}: {other}")
    pytest.fail(f"{passed}\n  should raise {error.__name__}, but returned {_summary(result)}")


def _summary(value) -> str:
    """A returned value, short: arrays and Tensors by their shape and dtype."""
    if isinstance(value, tuple):
        return "(" + ", ".join(_summary(v) for v in value) + ")"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        name = "numpy array" if isinstance(value, np.ndarray) else type(value).__name__
        return f"a {name} of shape {tuple(value.shape)}, dtype {value.dtype}"
    return repr(value)


class Case:
    """One case of a parametrized test: case(expect, ...) runs it (with the
    test's other fixtures after expect, if the case needs them); pytest shows
    it by its description (what it passes) instead of a function's address."""

    def __init__(self, description: str, run: Callable[..., None]):
        self.description, self.run = description, run

    def __call__(self, expect: Expectations, *fixtures) -> None:
        __tracebackhide__ = True
        self.run(expect, *fixtures)

    def __repr__(self) -> str:
        return self.description
