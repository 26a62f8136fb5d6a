"""Which code each test of a suite can run, as one digest per test: a kill
carries over to the next check while that digest is the same
(ol.grading.verdict_cache).

A test's digest covers

    its unit          the top-level `def test*` or `class Test*` it belongs to,
                      as written (decorators, parametrize lists and comments
                      inside it included: Hypothesis seeds a test from its source)
    the units it names    a test that calls another test, or uses a Test class,
                      depends on it too (followed to the end)
    its file's module code   every other top-level statement: imports,
                      constants, helpers, fixtures, pytestmark; and, when the
                      file imports another test file of the folder, that whole file
    the folder's support files  conftest.py, helper modules, data: every file
                      that is not a test file

so adding a test, or editing one, changes the digest of that test alone;
editing a helper of one file changes its file's tests; editing conftest.py
changes every test.  The files are only parsed here (ast), never run.

    digests = SuiteDigests(TestFolder(folder).snapshot(), "python/tests/l7-3-rope")
    digests.of("python/tests/l7-3-rope/test_rope.py::test_half[3-1]")   # a hex digest, or None
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import PurePosixPath

from ol.core.test_folder import TEST_CLASS_PREFIX, TEST_FUNCTION_PREFIX, Snapshot, is_test_file



class SuiteDigests:
    """The digest of every test of a folder, by node id."""

    def __init__(self, suite: Snapshot, suite_path: str):
        self.prefix = suite_path.rstrip("/") + "/"
        self.support = _sha(json.dumps(sorted((name, digest) for name, digest in suite.digests().items()
                                              if not is_test_file(name))))
        tests = {name: suite.files[name] for name in suite.test_files()}
        whole = {PurePosixPath(name).stem: _sha(data) for name, data in tests.items()}
        self.files = {name: _FileUnits(data, whole) for name, data in tests.items()}

    def of(self, test: str) -> str | None:
        """The digest of the test with this node id; None when it is not a
        test of a readable file of the folder."""
        path, _, rest = test.partition("::")
        if not path.startswith(self.prefix) or not rest:
            return None
        units = self.files.get(path[len(self.prefix):])
        unit = rest.split("::", 1)[0].split("[", 1)[0]
        digest = units.digest(unit) if units is not None else None
        return _sha(f"{self.support} {digest}") if digest is not None else None


class _FileUnits:
    """One test file: its units and its module code, each with its digest."""

    def __init__(self, data: bytes, whole_files: dict[str, str]):
        self.units: dict[str, str] = {}
        try:
            text = data.decode("utf-8")
            tree = ast.parse(text)
            decorated = {id(node): any("fixture" in ast.dump(d) for d in node.decorator_list)
                         for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            self.module = None           # it does not parse (or nests past what ast can dump): nothing carries over
            return
        lines = source_lines(text)
        units: dict[str, list[ast.stmt]] = {}
        module_code: list[ast.stmt] = []
        for node in tree.body:
            if _is_unit(node, decorated.get(id(node), False)):
                units.setdefault(node.name, []).append(node)
            else:
                module_code.append(node)
        source = {name: "\n".join(_segment(lines, node) for node in nodes) for name, nodes in units.items()}
        names = {name: _names(nodes) & set(units) for name, nodes in units.items()}
        imported = sorted(whole_files[name] for name in _imports(tree) if name in whole_files)
        module_names = _names(module_code) & set(units)
        self.module = _sha(json.dumps([[_segment(lines, node) for node in module_code], imported,
                                       [source[name] for name in sorted(_reach(module_names, names))]]))
        for name in units:
            reached = sorted(_reach({name}, names))
            self.units[name] = _sha(json.dumps([self.module, [[n, source[n]] for n in reached]]))

    def digest(self, unit: str) -> str | None:
        return self.units.get(unit) if self.module is not None else None


def _is_unit(node: ast.stmt, fixture: bool) -> bool:
    """A test function or class; a fixture named test* is module code (an
    autouse one reaches every test without being named)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name.startswith(TEST_FUNCTION_PREFIX) and not fixture
    return isinstance(node, ast.ClassDef) and node.name.startswith(TEST_CLASS_PREFIX)


def source_lines(text: str) -> list[str]:
    """The lines of Python source as the tokenizer (and so ast's line numbers)
    counts them: ended by \\n, \\r\\n or \\r only.  str.splitlines also breaks at
    \\v, \\f, \\x1c-\\x1e, \\x85, U+2028 and U+2029, which Python source may hold
    inside a line: slicing those lines by ast's numbers would digest other text."""
    return _LINE_END.split(text)


_LINE_END = re.compile(r"\r\n|\r|\n")


def _segment(lines: list[str], node: ast.stmt) -> str:
    """The statement as written, from its first decorator on."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "\n".join(lines[first - 1:node.end_lineno])


def _names(nodes: list[ast.stmt]) -> set[str]:
    """Every name the code could reach a unit by: names, parameters (a
    fixture), and strings (getfixturevalue, usefixtures)."""
    found = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                found.add(n.id)
            elif isinstance(n, ast.arg):
                found.add(n.arg)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                found.add(n.value)
    return found


def _imports(tree: ast.Module) -> set[str]:
    """The first part of every module name the file imports, anywhere in it."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.update(alias.name for alias in node.names)
            if node.module:
                found.add(node.module.split(".")[0])
    return found


def _reach(start: set[str], names: dict[str, set[str]]) -> set[str]:
    """The units `start` names, and the ones those name, to the end."""
    seen, todo = set(), list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(names.get(name, ()))
    return seen


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()
