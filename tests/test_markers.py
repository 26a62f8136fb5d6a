"""The kit's markers stay true as tests are added.

`python -m pytest -m "not slow"` is the fast tier for local work: it must
leave out every test that does what takes minutes.  And a test that grades
inside bubblewrap must say so (`needs_confinement`, tests/conftest.py), or a
Python under /tmp fails it instead of skipping it.  Times alone cannot hold
this (no test here is timed); the rules below can, read from each test
file's source.

A test "does" something when it does it itself, or a fixture it takes does,
or a function of its own file that it names does (and so on, through those).
The rules:

  slow                runs `ol verify` (every pitfall and mutant of a module)
                      or `ol grade` (a class): a call with the word "verify"
                      or "grade" among its arguments, lists of the file
                      unpacked into the call included;
                      runs the cheat gallery: is parametrized over GALLERY;
                      runs or loads an oracle (torch, transformers): calls
                      run_oracle, or runs or imports (RUNS_A_FILE) a name
                      of its file whose value is a path under oracle/;
                      builds a venv with pip in it: `-m venv` without
                      --without-pip (ensurepip, and then installs; the
                      pip-less venvs of kit.virtual_environment take a
                      second or two).
  needs_confinement   calls check_module with a CheckRequest that does not
                      name `isolated` (the shared check, which only a
                      confined run has), or runs `ol grade` (it refuses to
                      grade unconfined).

A test is marked by its decorators, its file's `pytestmark`, or its
folder: a folder's conftest.py that names MARKERS gives them to every test
below it (tests/end_to_end/conftest.py: slow).

A rule is a sufficient reason, not the only one: tests measured above about
4 s are marked slow too (README: the fast tier).  A test that does one of
these but stops early (a refusal) is listed in EARLY_EXITS, with why; that
list is held to the source as well.
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass

from helpers.kit import ROOT, explain, run_probe

TESTS = ROOT / "tests"

# What each marker is owed, by the rules above: {marker: {reason: ...}} is
# filled in by `needs`; these are the reasons' words.
VERIFY, GRADE, GALLERY, ORACLE, VENV, SHARED = (
    "runs ol verify", "runs ol grade", "runs the cheat gallery", "runs an oracle", "builds a venv",
    "checks with sharing='shared'")
OWED = {VERIFY: ("slow",), GRADE: ("slow", "needs_confinement"), GALLERY: ("slow",), ORACLE: ("slow",),
        VENV: ("slow",), SHARED: ("needs_confinement",)}

# The calls that run or load the file they are given (reading its text is not
# running the oracle): subprocess.run/Popen, importlib's spec_from_file_location,
# runpy.run_path.
RUNS_A_FILE = ("run", "Popen", "spec_from_file_location", "run_path")

# Tests that reach a rule and stop before the work that takes minutes or needs
# confinement: {(file, test): (the reason it reaches, why it is exempt)}.
EARLY_EXITS = {
    ("test_class_grading.py", "test_refuses_to_grade_unconfined_unless_told"):
        (GRADE, "ol grade without bwrap on PATH: refused before any grading, and needs no confinement"),
    ("test_gradebook.py", "test_ol_grade_refuses_late_options_it_cannot_apply"):
        (GRADE, "bad late options and --assignment-id: refused before any submission is read"),
    ("test_check.py", "test_check_module_decides_sharing_and_the_verdict_cache"):
        (SHARED, "the confinement is faked and the grading replaced: only check_module's decision runs"),
    ("test_check.py", "test_check_module_refuses_to_grade_unconfined_when_asked_to_confine"):
        (SHARED, "the confinement is faked: refused before any grading, and needs no confinement"),
}


@dataclass(frozen=True)
class Finding:
    """A test that lacks a marker its source owes: `path` is how it gets there
    (the test, the fixtures and functions in between, the reason)."""
    file: str
    test: str
    marker: str
    path: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.file}::{self.test} is not marked {self.marker}: {' -> '.join(self.path)}"


def is_fixture(function: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(decorator) for decorator in function.decorator_list)


def markers_of(decorators: list[ast.expr]) -> set[str]:
    """{'slow', ...} from @pytest.mark.slow and @pytest.mark.slow(...)."""
    found = set()
    for decorator in decorators:
        match = re.fullmatch(r"pytest\.mark\.(\w+)(\(.*\))?", ast.unparse(decorator), re.S)
        if match:
            found.add(match.group(1))
    return found


def module_markers(tree: ast.Module) -> set[str]:
    """The markers of `pytestmark = pytest.mark.x` or `= [pytest.mark.x, ...]`."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            value = node.value
            return markers_of(list(value.elts) if isinstance(value, (ast.List, ast.Tuple)) else [value])
    return set()


class Source:
    """One test file: its functions, fixtures and named values, and for each
    function the reasons (rules) it reaches, with the path that gets there."""

    def __init__(self, name: str, text: str, folder_marked: frozenset[str] = frozenset()):
        self.name = name
        self.tree = ast.parse(text)
        self.functions = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        self.values = {target.id: node.value for node in self.tree.body if isinstance(node, ast.Assign)
                       for target in node.targets if isinstance(target, ast.Name)}
        self.marked = module_markers(self.tree) | folder_marked
        self._reached: dict[str, dict[str, tuple[str, ...]]] = {}

    def words(self, call: ast.Call) -> list[str]:
        """The string constants among a call's arguments, `*NAME` of a list of
        the file unpacked: ("grade", "L7.3", ...)."""
        found = []
        for argument in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(argument, ast.Starred) and isinstance(argument.value, ast.Name):
                argument = self.values.get(argument.value.id, argument)
            elements = argument.elts if isinstance(argument, (ast.List, ast.Tuple)) else [argument]
            found += [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return found

    def names_an_oracle(self, call: ast.Call) -> bool:
        """A name of the file whose value is a path under oracle/ anywhere among
        the arguments: `[sys.executable, str(ORACLE)]` as well as `ORACLE`."""
        for argument in call.args:
            for node in ast.walk(argument):
                value = self.values.get(node.id) if isinstance(node, ast.Name) else None
                if value is not None and any(isinstance(n, ast.Constant) and n.value == "oracle"
                                             for n in ast.walk(value)):
                    return True
        return False

    def direct(self, function: ast.FunctionDef) -> set[str]:
        """The reasons `function`'s own body (and decorators) reach."""
        reasons = set()
        if any(isinstance(n, ast.Name) and n.id == "GALLERY" for d in function.decorator_list for n in ast.walk(d)):
            reasons.add(GALLERY)
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            callee = ast.unparse(node.func).rsplit(".", 1)[-1]
            words = self.words(node)
            if "verify" in words:
                reasons.add(VERIFY)
            if "grade" in words:
                reasons.add(GRADE)
            if callee == "run_oracle" or (callee in RUNS_A_FILE and self.names_an_oracle(node)):
                reasons.add(ORACLE)
            if "-m" in words and "venv" in words and "--without-pip" not in words:
                reasons.add(VENV)
            if callee == "check_module" and any(isinstance(a, ast.Call) and ast.unparse(a.func) == "CheckRequest"
                                                and not any(k.arg == "isolated" for k in a.keywords)
                                                for a in node.args):
                reasons.add(SHARED)
        return reasons

    def next_steps(self, function: ast.FunctionDef) -> list[str]:
        """The fixtures of the file it takes (a test or fixture) and the
        functions of the file it names."""
        steps = []
        if function.name.startswith("test_") or is_fixture(function):
            steps += [a.arg for a in function.args.args if a.arg in self.functions]
        body = [node for statement in function.body for node in ast.walk(statement)]
        steps += [n.id for n in body if isinstance(n, ast.Name) and n.id in self.functions]
        return [name for name in dict.fromkeys(steps) if name != function.name]

    def reached(self, name: str, visiting: frozenset[str] = frozenset()) -> dict[str, tuple[str, ...]]:
        """{reason: path from `name` to it}: the first path found for each."""
        if name in self._reached:
            return self._reached[name]
        function = self.functions[name]
        found = {reason: (name, reason) for reason in self.direct(function)}
        for step in self.next_steps(function):
            if step in visiting:
                continue
            for reason, path in self.reached(step, visiting | {name}).items():
                found.setdefault(reason, (name, *path))
        self._reached[name] = found
        return found

    def tests(self) -> list[ast.FunctionDef]:
        return [f for name, f in self.functions.items() if name.startswith("test_")]

    def findings(self, exempt: dict[tuple[str, str], tuple[str, str]]) -> list[Finding]:
        found = []
        for test in self.tests():
            marked = self.marked | markers_of(test.decorator_list)
            for reason, path in self.reached(test.name).items():
                if exempt.get((self.name, test.name), ("",))[0] == reason:
                    continue
                found += [Finding(self.name, test.name, marker, path) for marker in OWED[reason]
                          if marker not in marked]
        return found


# The folders of tests/ that hold data, never the kit's tests (tests/README.md): every other
# folder's test files are held to the rules, so a new folder of tests cannot slip past them.
DATA = ("grading_suites", "calibration", "hints", "native", "helpers")


def folder_markers(conftest_text: str) -> frozenset[str]:
    """The markers a folder's conftest.py gives every test below it: its `MARKERS = ("slow", ...)`."""
    for node in ast.parse(conftest_text).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MARKERS" for t in node.targets):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


def markers_of_folders(path) -> frozenset[str]:
    """What the conftest.py files of the folders from tests/ down to `path`'s give its tests."""
    found: frozenset[str] = frozenset()
    for folder in [TESTS, *reversed(path.relative_to(TESTS).parents[:-1])]:
        conftest = TESTS / folder / "conftest.py" if folder != TESTS else TESTS / "conftest.py"
        if conftest.is_file():
            found |= folder_markers(conftest.read_text())
    return found


def kit_sources() -> list[Source]:
    paths = [path for path in TESTS.rglob("test_*.py") if path.relative_to(TESTS).parts[0] not in DATA]
    names = [path.name for path in paths]
    assert len(set(names)) == len(names), f"two kit test files share a name (EARLY_EXITS names them by it): {names}"
    return [Source(path.name, path.read_text(), markers_of_folders(path))
            for path in sorted(paths, key=lambda path: path.name)]


# ---- the rules hold in the kit's tests --------------------------------------------------------


def test_every_kit_test_carries_the_markers_its_source_owes():
    findings = [str(f) for source in kit_sources() for f in source.findings(EARLY_EXITS)]
    assert findings == [], "mark these tests (or, for a test that stops early, list it in EARLY_EXITS):\n" + \
        "\n".join(findings)


def test_the_end_to_end_folder_marks_every_test_in_it_slow():
    """What the rules read from tests/end_to_end/conftest.py (MARKERS) is what
    pytest does: the fast tier collects none of the folder's tests, and the
    folder holds the gallery's and the class's."""
    folder = TESTS / "end_to_end"
    assert "slow" in markers_of_folders(folder / "test_trust.py")
    assert markers_of_folders(TESTS / "test_markers.py") == frozenset()
    fast = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not slow", "-p", "no:xdist",
                           str(folder)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    whole = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", str(folder)],
                           capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert whole.returncode == 0 and "test_ol_grade_gives_the_gallery_nothing" in whole.stdout, explain(whole)
    assert fast.returncode == 5 and "::" not in fast.stdout, explain(fast)    # 5: no test selected


def test_each_early_exit_still_reaches_its_rule():
    sources = {source.name: source for source in kit_sources()}
    for (file, test), (reason, why) in EARLY_EXITS.items():
        assert file in sources and test in sources[file].functions, f"EARLY_EXITS lists {file}::{test}: not found"
        assert reason in sources[file].reached(test), f"{file}::{test} no longer {reason}: drop it from EARLY_EXITS"


def test_the_markers_are_registered_and_ci_runs_every_tier():
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert {line.split(":")[0] for line in markers} >= {"slow", "needs_confinement"}, markers
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if "pytest" in line and not line.lstrip().startswith("#")]
    commands = [shlex.split(line) for line in lines]
    assert commands, ".ci/run runs pytest"
    for words in commands:
        tail = words[words.index("pytest") + 1:]
        assert not {"-m", "-k", "--deselect"} & set(tail), f".ci/run must run every test: {' '.join(words)}"
    assert 'python -m pytest -m "not slow"' in (ROOT / "README.md").read_text(), "the README names the fast tier"
    assert [line for line in (ROOT / "README.md").read_text().splitlines() if line in lines], \
        f".ci/run runs the README's test command: {lines}"


def test_two_workers_take_whole_files_unless_told_otherwise(pytestconfig):
    """`-n 2` hands out files (a file's module fixtures are made once); a --dist given stays."""
    from types import SimpleNamespace

    # tests/conftest.py as pytest loaded it (`import conftest` may find another folder's)
    kit = next(plugin for plugin in pytestconfig.pluginmanager.get_plugins()
               if getattr(plugin, "__file__", None) == str(TESTS / "conftest.py"))

    def dist_after(**option):
        config = SimpleNamespace(option=SimpleNamespace(**option))
        kit.pytest_cmdline_main(config)
        return config.option.dist

    assert dist_after(numprocesses=2, dist="no") == "loadfile"
    assert dist_after(numprocesses=2, dist="load") == "load"
    assert dist_after(numprocesses=None, dist="no") == "no"
    assert dist_after(dist="no") == "no"          # pytest-xdist not installed: no such option


def test_a_misspelt_marker_is_an_error_in_the_kit_tests(tmp_path):
    """@pytest.mark.slwo would put a slow test in the fast tier without a word."""
    probe = "import pytest\n\n\n@pytest.mark.slwo\ndef test_misspelt():\n    pass\n\n\n" \
            "@pytest.mark.slow\ndef test_slow():\n    pass\n"
    r = run_probe(tmp_path, sys.executable, probe)
    assert r.returncode != 0 and "PytestUnknownMarkWarning" in r.stdout and "slwo" in r.stdout, explain(r)
    assert "passed" not in r.stdout.splitlines()[-1], explain(r)


# ---- the rules find what they say (a planted file) ----------------------------------------------

PLANTED = textwrap.dedent('''
    import pytest

    COMMAND = ["grade", "L7.3", "submissions"]
    ORACLE = ROOT / "oracle" / "L7.3" / "rope_hf.py"


    @pytest.fixture(scope="module")
    def graded(tmp_path_factory):
        return run_ol(ROOT, *COMMAND, cwd=tmp_path_factory.mktemp("x"))


    def test_reads_the_graded_class(graded):
        pass


    @pytest.mark.slow
    @pytest.mark.needs_confinement
    def test_marked_as_owed(graded):
        pass


    def verified():
        return run_ol(ROOT, "verify", "L7.3")


    def test_through_a_helper():
        assert verified()


    @pytest.mark.parametrize("cheat", GALLERY)
    def test_each_cheat(cheat):
        pass


    def test_loads_the_oracle():
        spec_from_file_location("oracle", ORACLE)


    def test_a_venv(tmp_path):
        subprocess.run([sys.executable, "-m", "venv", str(tmp_path)])


    def test_a_venv_without_pip_and_the_oracle_read(tmp_path):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path)])
        assert "Returns" in ORACLE.read_text() and literals(ORACLE)


    @pytest.mark.slow
    def test_shared(tmp_path):
        check_module(ROOT, "L7.3", CheckRequest(tests=tmp_path, fresh=True))


    def test_isolated_and_the_word_grade_in_a_string(tmp_path):
        check_module(ROOT, "L7.3", CheckRequest(tests=tmp_path, isolated=True))
        assert "grade" in "ol grade"
''')


def test_the_rules_find_each_unmarked_test_and_the_path_to_its_reason():
    found = {(f.test, f.marker): f.path for f in Source("test_planted.py", PLANTED).findings({})}
    assert found == {
        ("test_reads_the_graded_class", "slow"): ("test_reads_the_graded_class", "graded", GRADE),
        ("test_reads_the_graded_class", "needs_confinement"): ("test_reads_the_graded_class", "graded", GRADE),
        ("test_through_a_helper", "slow"): ("test_through_a_helper", "verified", VERIFY),
        ("test_each_cheat", "slow"): ("test_each_cheat", GALLERY),
        ("test_loads_the_oracle", "slow"): ("test_loads_the_oracle", ORACLE),
        ("test_a_venv", "slow"): ("test_a_venv", VENV),
        ("test_shared", "needs_confinement"): ("test_shared", SHARED),
    }, found


def test_a_folder_marker_covers_what_it_names():
    conftest = 'import pytest\n\nMARKERS = ("slow",)\n'
    assert folder_markers(conftest) == {"slow"} and folder_markers("import pytest\n") == frozenset()
    owed = {(f.test, f.marker) for f in Source("test_planted.py", PLANTED, folder_markers(conftest)).findings({})}
    assert {marker for _, marker in owed} == {"needs_confinement"}, owed


def test_a_module_marker_and_an_early_exit_cover_what_they_name():
    slow_file = "import pytest\n\npytestmark = [pytest.mark.slow]\n" + PLANTED.split("import pytest", 1)[1]
    owed = {(f.test, f.marker) for f in Source("test_planted.py", slow_file).findings({})}
    assert {marker for _, marker in owed} == {"needs_confinement"}, owed
    exempt = {("test_planted.py", "test_shared"): (SHARED, "refused early")}
    assert ("test_shared", "needs_confinement") not in {(f.test, f.marker)
                                                        for f in Source("test_planted.py", PLANTED).findings(exempt)}
