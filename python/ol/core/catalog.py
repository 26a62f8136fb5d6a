"""The course catalog: course/catalog.toml, read into frozen dataclasses.

Every `ol` command learns what a module is from here and nowhere else: its id,
title, rung, needs, the files the student writes, the contracts they are
stubbed from, the course tests, the student's test folder, the fixtures and,
for modules whose student tests are graded, the grading settings.

    catalog = load_catalog(root)
    module = catalog.get("L7.3")             # UnknownModule lists the known ids
    catalog.needs_closure(module)            # (L0.1, L0.2, M00.2): needs first

Paths in `files` are relative to the student's tree `python/`; the reference
solution of file F is `course/reference/python/F` and, for a .py file, its
contract is `course/contracts/py/F` + "i" unless the entry lists `contracts`.
Every other path is relative to the repository root.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ol.core.errors import OlError

CATALOG_PATH = "course/catalog.toml"
STUDENT_TREE = "python"
REFERENCE_TREE = "course/reference/python"
CONTRACT_TREE = "course/contracts/py"
STARTER_DIR = "course/starters"
# what every module's course tests share: their conftest, the golden loader, the diagnosis of a failure
COURSE_TESTS_SUPPORT = ("course/tests/conftest.py", "course/tests/golden.py", "course/tests/diagnose.py")

REQUIRED_KEYS = ("id", "title", "rung", "needs", "files", "chapter", "course_tests",
                 "student_tests", "fixtures")
OPTIONAL_KEYS = ("contracts", "starter", "grading")
GRADING_KEYS = ("threshold", "target", "pitfalls", "equivalent", "alternates",
                "model_answer", "allowed_imports")
GRADING_OPTIONAL_KEYS = ("points", "chaffs", "floors", "rejected", "max_rejected", "features")
FEATURE_KEYS = ("id", "title", "floor")
FEATURE_OPTIONAL_KEYS = ("calls", "when", "raises", "gradient")
# What each part of a grade is worth in an autograder (ol gradescope) unless
# [module.grading.points] says otherwise.
DEFAULT_POINTS = {"course_tests": 40.0, "mutation": 50.0, "pitfalls": 10.0}


class CatalogError(OlError):
    """course/catalog.toml is malformed; the message names the entry and the key."""


class NotGraded(OlError):
    """The module has no graded tests (no [module.grading] in the catalog)."""


class UnknownModule(OlError, ValueError):
    """A module id that the catalog does not list; the message lists the known ids."""

    def __init__(self, module_id: str, known: Iterable[str]):
        self.module_id = module_id
        self.known = tuple(known)
        super().__init__(
            f"unknown module {module_id!r}. The course has: {', '.join(self.known)}. "
            "(`ol list` shows them with their titles.)"
        )


@dataclass(frozen=True)
class Feature:
    """What the chapter teaches, as the calls that exercise it ([[module.grading.features]]).

    A counted mutant belongs to the first feature, in catalog order, whose
    calls its witness is one of (ol.grading.witnesses): the smallest call of
    the course tests on which it differs from the reference.  A call is the
    feature's when every condition given holds:

        calls      the public function (or Class, Class.method) called
        when       a Python expression over the call's arguments by name
                   ("past is not None", "n_kv_heads < n_heads"; `arguments`
                   is all of them, `self` a method's object, and `find(value,
                   key)` looks a key up in nested dicts and objects)
        raises     the reference raises on it (true) or answers it (false)
        gradient   they differ in a gradient (true), or in the result (false)

    A suite must catch `floor` of each feature's mutants (ol.grading.features)."""

    id: str
    title: str
    floor: float
    calls: tuple[str, ...] = ()
    when: str = ""
    raises: bool | None = None
    gradient: bool | None = None

    def as_setting(self) -> dict:
        return {"id": self.id, "calls": list(self.calls), "when": self.when, "raises": self.raises,
                "gradient": self.gradient}


@dataclass(frozen=True)
class Grading:
    """How `ol check` grades the student's own tests by mutation ([module.grading])."""

    threshold: float                    # killed / counted mutants needed to pass
    target: str                         # the file mutated, relative to python/
    pitfalls: str                       # hand-written pitfall mutants (toml)
    equivalent: str                     # reviewed equivalent mutants (toml)
    alternates: tuple[str, ...]         # other correct implementations
    model_answer: str                   # the instructor's own student-style tests
    allowed_imports: tuple[str, ...]    # what the student's tests may import
    points: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_POINTS))  # an autograder's points per part
    chaffs: str | None = None           # folder of the pitfalls as wrappers of a correct implementation
    floors: dict[str, float] = field(default_factory=dict)   # public function -> share of its mutants to catch
    # a test that fails on a correct implementation: "drop" (left out, the rest graded), "not graded"
    # (the suite is not graded), or a number (left out, and the score loses that much per such test)
    rejected: str | float = "drop"
    # "drop" or a penalty: at most this many tests may be left out, else the suite is not graded.  Each
    # test left out tells the grade one bit of what the correct implementation does (a test that guesses
    # a bit of its output is kept exactly when it guessed right): a suite may not buy its oracle by guessing
    max_rejected: int = 2
    features: tuple[Feature, ...] = ()   # what the chapter teaches, each with its floor (Feature)


@dataclass(frozen=True)
class Module:
    """One course module, as its [[module]] entry says."""

    id: str
    title: str
    rung: str
    needs: tuple[str, ...]
    files: tuple[str, ...]              # relative to python/
    chapter: str
    course_tests: str
    student_tests: str
    fixtures: tuple[str, ...]
    contracts: tuple[str, ...]          # one per file where one is known
    starter: str                        # example test for `ol start` (may not exist)
    grading: Grading | None = None

    def contract_for(self, file: str) -> str | None:
        """The contract that file (one of `files`) is stubbed from, or None."""
        index = self.files.index(file)
        same_path = [c for c in self.contracts if c.endswith("/" + file + "i")]
        if same_path:
            return same_path[0]
        if len(self.contracts) == len(self.files):
            return self.contracts[index]  # an explicit list, one contract per file
        return None

    @property
    def module_names(self) -> dict[str, str]:
        """Dotted import name of each Python file: {"tinyllm.modern.rope": "tinyllm/modern/rope.py"}."""
        return {dotted_name(f): f for f in self.files if f.endswith(".py")}

    @property
    def starter_test_name(self) -> str:
        """File name of the starter test `ol start` writes: test_<stem>_oracle.py."""
        first_py = next((f for f in self.files if f.endswith(".py")), self.files[0])
        stem = PurePosixPath(first_py).stem
        if stem == "__init__":
            stem = PurePosixPath(first_py).parent.name
        return f"test_{stem}_oracle.py"


def dotted_name(file: str) -> str:
    """'tinyllm/modern/rope.py' -> 'tinyllm.modern.rope' ('pkg/__init__.py' -> 'pkg')."""
    parts = list(PurePosixPath(file).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class Catalog:
    """The whole course, modules in file order."""

    root: Path
    modules: tuple[Module, ...]
    warnings: tuple[str, ...] = ()

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.modules)

    def get(self, module_id: str) -> Module:
        """The module with this id (an exact match, else a unique case-insensitive one)."""
        for module in self.modules:
            if module.id == module_id:
                return module
        folded = [m for m in self.modules if m.id.casefold() == str(module_id).casefold()]
        if len(folded) == 1:
            return folded[0]
        raise UnknownModule(module_id, self.ids)

    def graded(self, module_id: str, command: str) -> Grading:
        """The module's [module.grading]; NotGraded, naming the modules that
        have one, when it has none.  command: who grades ("ol check", ...)."""
        module = self.get(module_id)
        if module.grading is None:
            graded = ", ".join(m.id for m in self.modules if m.grading)
            raise NotGraded(f"{module.id} has no graded tests: {command} grades modules whose catalog entry has "
                            f"[module.grading] ({graded}). Run ./ol tests {module.id} for its course tests.")
        return module.grading

    def needs_closure(self, module: Module | str) -> tuple[Module, ...]:
        """Everything `module` needs, directly or through other needs, each module
        after its own needs (a dependency order); `module` itself is not included."""
        module = self.get(module) if isinstance(module, str) else module
        order: list[Module] = []

        def visit(m: Module) -> None:
            for need in m.needs:
                dep = self.get(need)
                if dep not in order:
                    visit(dep)
                    order.append(dep)

        visit(module)
        return tuple(order)


def load_catalog(root: str | Path) -> Catalog:
    """Read and check <root>/course/catalog.toml.

    Raises CatalogError (naming the entry and what is wrong) for a missing or
    unreadable file, missing or mistyped keys, duplicate ids, needs that name
    unknown modules, and cycles in the needs.  Keys that `ol` does not know
    are not errors: they are listed in Catalog.warnings.
    """
    root = Path(root).resolve()
    path = root / CATALOG_PATH
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogError(f"no course catalog at {path}: is {root} a tinyllm checkout?") from None
    except tomllib.TOMLDecodeError as error:
        raise CatalogError(f"{CATALOG_PATH} is not valid TOML: {error}") from None

    entries = data.get("module", [])
    if not isinstance(entries, list) or not entries:
        raise CatalogError(f"{CATALOG_PATH} lists no modules: expected [[module]] entries")

    warnings: list[str] = []
    modules: list[Module] = []
    seen: dict[str, int] = {}
    for number, entry in enumerate(entries, start=1):
        module = _parse_module(entry, number, warnings)
        if module.id in seen:
            raise CatalogError(
                f"{CATALOG_PATH}: module {module.id!r} is listed twice "
                f"(entries {seen[module.id]} and {number}); ids must be unique"
            )
        seen[module.id] = number
        modules.append(module)

    _check_needs(modules)
    return Catalog(root=root, modules=tuple(modules), warnings=tuple(warnings))


# ---- parsing and validation ------------------------------------------------


def _parse_module(entry: Mapping, number: int, warnings: list[str]) -> Module:
    where = f"{CATALOG_PATH}, [[module]] entry {number}"
    if not isinstance(entry, Mapping):
        raise CatalogError(f"{where}: expected a table of keys, got {type(entry).__name__}")
    if isinstance(entry.get("id"), str):
        where = f"{CATALOG_PATH}, module {entry['id']!r} (entry {number})"
    _check_keys(entry, REQUIRED_KEYS, OPTIONAL_KEYS, where, "every module", warnings)

    text = {k: _string(entry, k, where) for k in ("id", "title", "rung", "chapter",
                                                   "course_tests", "student_tests")}
    files = _strings(entry, "files", where)
    if not files:
        raise CatalogError(f"{where}: 'files' is empty; list the files the student writes")
    for file in files:
        _relative(file, "files", where)
    for key in ("chapter", "course_tests", "student_tests"):
        _relative(text[key], key, where)
    fixtures = _strings(entry, "fixtures", where)

    if "contracts" in entry:
        contracts = _strings(entry, "contracts", where)
    else:
        contracts = tuple(f"{CONTRACT_TREE}/{f}i" for f in files if f.endswith(".py"))
    starter = _string(entry, "starter", where) if "starter" in entry else f"{STARTER_DIR}/{text['id']}.py"

    grading = None
    if "grading" in entry:
        grading = _parse_grading(entry["grading"], where, warnings)

    return Module(
        id=text["id"], title=text["title"], rung=text["rung"],
        needs=_strings(entry, "needs", where), files=files,
        chapter=text["chapter"], course_tests=text["course_tests"],
        student_tests=text["student_tests"], fixtures=fixtures,
        contracts=contracts, starter=starter, grading=grading,
    )


REJECTED_POLICIES = ("drop", "not graded")


def _rejected_policy(value, where: str) -> str | float:
    """[module.grading] rejected: what a test that fails on a correct implementation costs."""
    if value in REJECTED_POLICIES:
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    raise CatalogError(f"{where}: rejected must be \"drop\" (such a test is left out and the rest graded), "
                       f"\"not graded\" (the suite is not graded), or a penalty from 0 to 1 taken from the score "
                       f"per such test; got {value!r}")


def _max_rejected(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CatalogError(f"{where}: max_rejected must be a whole number >= 0 (how many tests may be left out "
                           f"before the suite is not graded), got {value!r}")
    return value


def _check_keys(table: Mapping, required: tuple[str, ...], optional: tuple[str, ...], where: str, whose: str,
                warnings: list[str]) -> None:
    """CatalogError when `table` lacks a required key; a warning (the course
    still loads) for each key ol does not know."""
    missing = [k for k in required if k not in table]
    if missing:
        raise CatalogError(f"{where}: missing key(s) {', '.join(missing)}; {whose} needs {', '.join(required)}")
    for key in table:
        if key not in required + optional:
            warnings.append(f"{where}: key {key!r} is not one ol knows ({', '.join(required + optional)}); "
                            "it is ignored")


def _parse_grading(table, where: str, warnings: list[str]) -> Grading:
    where = f"{where}, [module.grading]"
    if not isinstance(table, Mapping):
        raise CatalogError(f"{where}: expected a table, got {type(table).__name__}")
    _check_keys(table, GRADING_KEYS, GRADING_OPTIONAL_KEYS, where, "grading", warnings)
    points = dict(DEFAULT_POINTS)
    given = table.get("points", {})
    if not isinstance(given, Mapping) or any(
            key not in DEFAULT_POINTS or isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
            for key, value in given.items()):
        raise CatalogError(f"{where}: points must be a table of numbers >= 0 for {', '.join(DEFAULT_POINTS)}, "
                           f"got {given!r}")
    points.update({key: float(value) for key, value in given.items()})
    floors = table.get("floors", {})
    if not isinstance(floors, Mapping) or any(
            not isinstance(name, str) or not name.isidentifier() or name.startswith("_") or isinstance(share, bool)
            or not isinstance(share, (int, float)) or not 0 <= share <= 1 for name, share in floors.items()):
        raise CatalogError(f"{where}: floors must be a table of public function names (as the contract spells "
                           f"them) to shares from 0 to 1 of that function's mutants to catch, got {floors!r}")
    threshold = table["threshold"]
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise CatalogError(f"{where}: threshold must be a number from 0 to 1 "
                           f"(the share of mutants to kill), got {threshold!r}")
    return Grading(
        threshold=float(threshold),
        target=_string(table, "target", where),
        pitfalls=_string(table, "pitfalls", where),
        equivalent=_string(table, "equivalent", where),
        alternates=_strings(table, "alternates", where),
        model_answer=_string(table, "model_answer", where),
        allowed_imports=_strings(table, "allowed_imports", where),
        points=points,
        chaffs=_string(table, "chaffs", where) if "chaffs" in table else None,
        floors={name: float(share) for name, share in floors.items()},
        rejected=_rejected_policy(table.get("rejected", "drop"), where),
        max_rejected=_max_rejected(table.get("max_rejected", 2), where),
        features=_features(table.get("features", []), where, warnings),
    )


def _features(entries, where: str, warnings) -> tuple[Feature, ...]:
    if not isinstance(entries, list):
        raise CatalogError(f"{where}: features must be an array of tables ([[module.grading.features]]), "
                           f"got {type(entries).__name__}")
    features = []
    for number, entry in enumerate(entries, start=1):
        at = f"{where}, feature {number}"
        if not isinstance(entry, Mapping):
            raise CatalogError(f"{at}: expected a table, got {type(entry).__name__}")
        _check_keys(entry, FEATURE_KEYS, FEATURE_OPTIONAL_KEYS, at, "feature", warnings)
        floor, calls, when = entry["floor"], entry.get("calls", []), entry.get("when", "")
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 <= floor <= 1:
            raise CatalogError(f"{at}: floor must be a share from 0 to 1 of the feature's mutants, got {floor!r}")
        if isinstance(calls, str):
            calls = [calls]
        if not isinstance(calls, list) or not all(isinstance(c, str) and c for c in calls):
            raise CatalogError(f"{at}: calls must be a function name or a list of them, got {calls!r}")
        if not isinstance(when, str):
            raise CatalogError(f"{at}: when must be a Python expression as a string, got {when!r}")
        try:
            compile(when or "True", at, "eval")
        except SyntaxError as error:
            raise CatalogError(f"{at}: when is not a Python expression: {error.msg}: {when!r}") from None
        flags = {key: entry.get(key) for key in ("raises", "gradient")}
        if any(value is not None and not isinstance(value, bool) for value in flags.values()):
            raise CatalogError(f"{at}: raises and gradient must be true or false, got {flags!r}")
        features.append(Feature(_string(entry, "id", at), _string(entry, "title", at), float(floor),
                                tuple(calls), when, flags["raises"], flags["gradient"]))
    if len({f.id for f in features}) != len(features):
        raise CatalogError(f"{where}: two features share an id: {', '.join(f.id for f in features)}")
    return tuple(features)


def _check_needs(modules: list[Module]) -> None:
    ids = [m.id for m in modules]
    by_id = {m.id: m for m in modules}
    for module in modules:
        for need in module.needs:
            if need not in by_id:
                raise CatalogError(
                    f"{CATALOG_PATH}, module {module.id!r}: needs {need!r}, which is not in the "
                    f"catalog; known modules: {', '.join(ids)}"
                )
            if need == module.id:
                raise CatalogError(f"{CATALOG_PATH}, module {module.id!r}: needs itself")

    # A cycle would make needs_closure (and --ref-deps) meaningless.
    done: set[str] = set()

    def visit(module_id: str, path: tuple[str, ...]) -> None:
        if module_id in path:
            cycle = " -> ".join(path[path.index(module_id):] + (module_id,))
            raise CatalogError(f"{CATALOG_PATH}: the needs form a cycle: {cycle}")
        if module_id in done:
            return
        for need in by_id[module_id].needs:
            visit(need, path + (module_id,))
        done.add(module_id)

    for module in modules:
        visit(module.id, ())


def _string(table: Mapping, key: str, where: str) -> str:
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return value


def _strings(table: Mapping, key: str, where: str) -> tuple[str, ...]:
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise CatalogError(f"{where}: {key!r} must be a list of non-empty strings, got {value!r}")
    return tuple(value)


def _relative(path: str, key: str, where: str) -> None:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or "\\" in path:
        raise CatalogError(f"{where}: {key} path {path!r} must be relative, use '/', "
                           "and stay inside the repository (no '..')")
