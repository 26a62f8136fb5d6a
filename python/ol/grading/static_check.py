"""What a student's test folder may do, checked by reading it (no code runs).

Graded tests must judge what the code *does*.  So they may import only the
catalog's allow-list (from the module under test, only the names of its
contract), and may not read files, code objects, the environment or the
interpreter's internals.  The folder holds Python source only: no compiled
file, no link, no file named like a module it would hide (numpy.py), and no
copy of the course's own implementations ("your oracle must be your own").
Every violation is reported with file:line.  A file that does not parse or
breaks the rules is left out of the grade and the rest is graded (Violation's
scope FILE); what makes the whole folder suspect (a link, a compiled file, a
file hiding a module, a copy of a course implementation) stops it (FOLDER).

This is the friendly first fence, with clear messages; it is not the
boundary.  A reader of source cannot see `g = getattr` used on a computed
name, or re-exports such as typing.sys: what holds is the process model
(README.md here): the tests never hold the code under test, and run confined.
"""

from __future__ import annotations

import ast
import io
import keyword
import sys
import tokenize
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path, PurePosixPath

from ol.core.catalog import REFERENCE_TREE, Catalog, Module, dotted_name
from ol.core import test_folder
from ol.core.test_folder import TEST_CLASS_PREFIX, TEST_FUNCTION_PREFIX, Snapshot, TestFolder, is_test_file

# Builtins that read files, run text as code, or reach the interpreter's state.
FORBIDDEN_CALLS = {
    "open": "reads or writes files",
    "eval": "runs text as code",
    "exec": "runs text as code",
    "compile": "builds code objects",
    "__import__": "imports around the allow-list",
    "globals": "reads the interpreter's state",
    "vars": "reads an object's internals",
    "breakpoint": "stops the run",
    "input": "waits for a keyboard",
}
# Attributes that reach source files, code objects, frames or file I/O.
FORBIDDEN_ATTRIBUTES = {
    "__file__", "__code__", "__globals__", "__builtins__", "__loader__", "__spec__", "__closure__",
    "__cached__", "__path__", "__subclasses__", "__import__", "__dict__", "__wrapped__",
    "f_code", "f_globals", "f_locals", "f_back", "f_builtins", "gi_code", "gi_frame", "cr_code",
    "tb_frame", "co_code", "co_consts", "co_names",
    "load", "loads", "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt",
    "fromfile", "tofile", "memmap", "DataSource", "fromregex", "importorskip",
}
DYNAMIC_ATTRIBUTE_CALLS = ("getattr", "setattr", "delattr", "hasattr")
COMPILED_SUFFIXES = (".so", ".pyd", ".pyc", ".pyo", ".dylib", ".dll", ".o", ".a")
# Syntax trees deeper than this are refused: compile() recurses once per level and stops near 1000
# (pytest's assert rewrite sooner); test code a person writes stays below 50.
MAX_DEPTH = 400
NESTED_TOO_DEEPLY = ("is nested too deeply to read (an expression or block thousands of levels deep): "
                     "split it into smaller pieces")
# A function at least this long whose tokens match a course implementation's
# this closely (names aside) is a copy, not an oracle of one's own.
COPY_MIN_TOKENS, COPY_SIMILARITY = 40, 0.85


FILE, FOLDER = "file", "folder"   # what a violation costs: its file (left out, the rest graded), or the suite


@dataclass(frozen=True)
class Violation:
    """One thing the tests may not do, where it is.  scope FILE: the file is
    left out of the grade and the rest graded (it does not parse, or breaks
    the import rules); FOLDER: the suite is not graded (links, compiled files,
    files that hide modules, copies of a course implementation, no tests)."""

    path: str   # relative to the repository
    line: int
    message: str
    scope: str = FILE

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def check_test_folder(folder: Snapshot, root: Path, allowed_imports: tuple[str, ...],
                      contract_names: dict[str, frozenset[str]],
                      implementations: dict[str, str] | None = None) -> list[Violation]:
    """Every violation in the snapshot `folder` (its bytes, not the disk's now).

    allowed_imports: module names the tests may import; a name also allows its
        submodules, except under `tinyllm`, where each module is listed.
    contract_names: for each tinyllm module in the allow-list, the public
        names of its contract; only those may be imported from it.
    implementations: {name shown: source} of the course's own implementations
        of the module under test (the reference, the alternates): a function
        copied from one of them is refused.
    """
    def shown_path(name: str) -> str:
        path = folder.path / name
        return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)

    violations = _folder_violations(folder, allowed_imports, shown_path)
    copied_from = _function_fingerprints(implementations or {})
    trees: dict[str, tuple[str, str, ast.Module]] = {}     # each file that reads: name -> (shown, text, tree)
    unread = 0
    for name in folder.python_files():
        shown = shown_path(name)
        read = _read(folder.files[name], shown)
        if isinstance(read, Violation):
            violations.append(read)
            unread += 1
            continue
        text, tree = read
        trees[name] = (shown, text, tree)
        violations.extend(_copies(tree, text, shown, copied_from))
    # A file left out is no module of the folder: another file that imports it by its name would get the
    # installed package of that name in the sandbox (ol, pluggy, ...).  So the rules are read again
    # with the files left out so far, until no more are.
    refused = {v.path for v in violations if v.scope == FILE}
    while True:
        local_modules = {PurePosixPath(name).stem for name, (shown, _, _) in trees.items() if shown not in refused}
        found = []
        for shown, _, tree in trees.values():
            checker = _Checker(shown, allowed_imports, contract_names, local_modules)
            checker.check(tree)
            found.extend(checker.violations)
        now = refused | {v.path for v in found}
        if now == refused:
            break
        refused = now
    violations.extend(found)
    tests = sum(_count_tests(tree) for name, (_, _, tree) in trees.items()
                if is_test_file(name))   # pytest collects no other file
    if tests == 0 and not unread:    # a file that does not read is named already: its tests are unknown
        violations.append(Violation(shown_path("."), 0, (
            "no tests found: write at least one `def test_...` function in a file named test_*.py"), FOLDER))
    return violations


def check_student_tests(root: Path, catalog: Catalog, module: Module,
                        folder: Snapshot | Path | None = None) -> list[Violation]:
    """Every violation `ol check` would find in the module's test folder (or
    `folder`, a path or a snapshot of one), read from the catalog alone:
    nothing is graded or run.  `ol tests --mine` shows these before it runs
    the tests.  A module without grading has no rules: [] then."""
    grading = module.grading
    if grading is None:
        return []
    root = Path(root)
    if not isinstance(folder, Snapshot):
        folder = TestFolder(folder if folder is not None else root / module.student_tests).snapshot()
    implementations = {f"{REFERENCE_TREE}/{grading.target}": root / REFERENCE_TREE / grading.target}
    implementations.update({path: root / path for path in grading.alternates})
    return check_test_folder(folder, root, grading.allowed_imports,
                             contract_names(root, catalog, grading.allowed_imports),
                             {shown: path.read_text(encoding="utf-8") for shown, path in implementations.items()
                              if path.exists()})


def contract_names(root: Path, catalog: Catalog, allowed_imports: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """For each tinyllm module in `allowed_imports`, the public names of its
    contract (the functions, classes and constants of its .pyi)."""
    names: dict[str, frozenset[str]] = {}
    for module in catalog.modules:
        for file in module.files:
            name = dotted_name(file)
            contract = module.contract_for(file)
            if name not in allowed_imports or contract is None or not (root / contract).exists():
                continue
            tree = ast.parse((root / contract).read_text())
            public = set()
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    public.add(node.name)
                elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    public.update(t.id for t in targets if isinstance(t, ast.Name))
            names[name] = frozenset(n for n in public if not n.startswith("_"))
    return names


def _folder_violations(folder: Snapshot, allowed_imports: tuple[str, ...], shown_path) -> list[Violation]:
    """Links, compiled files, and files or folders named like a module they would hide."""
    shadowable = set(sys.stdlib_module_names) | {name.split(".")[0] for name in allowed_imports}
    violations = []
    for name, kind in folder.entries:
        path = PurePosixPath(name)
        if kind == test_folder.LINK:
            violations.append(Violation(shown_path(name), 0, "is a symbolic link: a graded folder holds plain files only",
                                        FOLDER))
        elif path.suffix in COMPILED_SUFFIXES or folder.files.get(name, b"")[:4] == b"\x7fELF":
            violations.append(Violation(shown_path(name), 0, (
                "is a compiled file: graded tests are Python source only (a compiled module beside a .py file "
                "would be imported in its place)"), FOLDER))
        elif (path.suffix == ".py" and path.stem in shadowable) or (kind == test_folder.FOLDER
                                                                     and path.name in shadowable):
            violations.append(Violation(shown_path(name), 0, (
                f"is named like the module {path.stem}, which it would hide from your tests; rename it "
                "(helpers need names of their own)"), FOLDER))
    return violations


def _tokens(source: str) -> list[str]:
    """The tokens of a piece of source, names and literals reduced to their
    kind: two functions that differ only in naming give the same list."""
    kept = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                              tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            if token.type == tokenize.NAME and not keyword.iskeyword(token.string):
                kept.append("N")
            elif token.type in (tokenize.NUMBER, tokenize.STRING):
                kept.append(tokenize.tok_name[token.type])
            else:
                kept.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return kept


def _function_tokens(tree: ast.Module, text: str) -> list[tuple[str, int, list[str]]]:
    """(name, line, tokens) of every function, docstrings left out."""
    lines = text.splitlines(keepends=True)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body[1:] if (node.body and isinstance(node.body[0], ast.Expr)
                                     and isinstance(node.body[0].value, ast.Constant)
                                     and isinstance(node.body[0].value.value, str)) else node.body
            if body:
                source = "".join(lines[body[0].lineno - 1:body[-1].end_lineno])
                found.append((node.name, node.lineno, _tokens(_dedent(source))))
    return found


def _dedent(source: str) -> str:
    import textwrap

    return textwrap.dedent(source)


def _function_fingerprints(implementations: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    prints = []
    for shown, source in implementations.items():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for name, _, tokens in _function_tokens(tree, source):
            if len(tokens) >= COPY_MIN_TOKENS:
                prints.append((shown, name, tokens))
    return prints


def _copies(tree: ast.Module, text: str, shown: str, fingerprints) -> list[Violation]:
    violations = []
    for name, line, tokens in _function_tokens(tree, text):
        if len(tokens) < COPY_MIN_TOKENS:
            continue
        for origin, original, theirs in fingerprints:
            matcher = SequenceMatcher(None, tokens, theirs, autojunk=False)
            if (matcher.real_quick_ratio() >= COPY_SIMILARITY and matcher.quick_ratio() >= COPY_SIMILARITY
                    and matcher.ratio() >= COPY_SIMILARITY):
                violations.append(Violation(shown, line, (
                    f"{name} is a copy of {original} in {origin}: your oracle must be your own (compute the "
                    "expected values another way, as the chapter's graded-tests section shows)"), FOLDER))
                break
    return violations


def _read(data: bytes, shown: str) -> tuple[str, ast.Module] | Violation:
    """A file's text and syntax tree, or why it cannot be graded."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return Violation(shown, 1, f"is not UTF-8 text ({error.reason} at byte {error.start}): save it as UTF-8")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        return Violation(shown, 1, f"declares an encoding Python does not know: {error.msg}")
    if encoding not in ("utf-8", "utf-8-sig"):   # Python would decode it so, and run what UTF-8 reads as comments
        return Violation(shown, 1, f"declares the encoding {encoding}: graded tests are UTF-8, with no other "
                                   "coding: line")
    try:
        tree = ast.parse(text, filename=shown)
    except SyntaxError as error:
        return Violation(shown, error.lineno or 1, f"does not parse: {error.msg}")
    except (RecursionError, MemoryError):   # Python's own parser gives up on very deep nesting
        return Violation(shown, 1, NESTED_TOO_DEEPLY)
    deep = _deeper_than(tree, MAX_DEPTH)
    if deep is not None:    # compile() and pytest's assert rewrite would recurse past Python's limit
        return Violation(shown, getattr(deep, "lineno", 1), NESTED_TOO_DEEPLY)
    return text, tree


def _deeper_than(tree: ast.AST, limit: int) -> ast.AST | None:
    """The first node found more than `limit` levels down, or None (an explicit stack: no recursion)."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return node
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return None


def _count_tests(tree: ast.Module) -> int:
    count = 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(TEST_FUNCTION_PREFIX):
            count += 1
        elif isinstance(node, ast.ClassDef) and node.name.startswith(TEST_CLASS_PREFIX):
            count += sum(isinstance(n, ast.FunctionDef) and n.name.startswith(TEST_FUNCTION_PREFIX) for n in node.body)
    return count


class _Checker:
    """The rules that look at one node each.  check() walks the tree with
    ast.walk, which keeps its own queue: no depth of nesting a student
    writes can exhaust the observer's stack (a NodeVisitor recurses)."""

    def __init__(self, path, allowed, contract_names, local_modules):
        self.path, self.allowed, self.contract_names = path, allowed, contract_names
        self.local_modules = local_modules
        self.violations: list[Violation] = []

    def check(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            rule = getattr(self, f"visit_{type(node).__name__}", None)
            if rule is not None:
                rule(node)
        self.violations.sort(key=lambda v: v.line)   # in file order, as a reader meets them

    def report(self, node, message):
        self.violations.append(Violation(self.path, getattr(node, "lineno", 0), message))

    def allowed_module(self, name: str) -> bool:
        if name.split(".")[0] in self.local_modules:
            return True
        for allowed in self.allowed:
            if name == allowed:
                return True
            if not allowed.startswith("tinyllm") and name.startswith(allowed + "."):
                return True
        return False

    def refuse_import(self, node, name):
        shown = ", ".join(self.allowed)
        self.report(node, f"imports {name}, which graded tests may not use. Allowed: {shown}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not self.allowed_module(alias.name):
                self.refuse_import(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            return  # a helper module of the student's own test folder
        module = node.module or ""
        for alias in node.names:
            if self.allowed_module(f"{module}.{alias.name}"):
                continue  # `from tinyllm.autograd import functional as F`
            if not self.allowed_module(module):
                self.refuse_import(node, module)
                return
            names = self.contract_names.get(module)
            if names is not None and alias.name not in names:
                self.report(node, (
                    f"imports {alias.name} from {module}, which is not in its contract; "
                    f"use only {', '.join(sorted(names))}"
                ))

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_CALLS:
            self.report(node, f"uses {node.id}(), which {FORBIDDEN_CALLS[node.id]}; graded tests may not")
        elif node.id in FORBIDDEN_ATTRIBUTES and node.id.startswith("__"):
            self.report(node, f"uses {node.id}, which reads the program instead of testing what it does")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in FORBIDDEN_ATTRIBUTES:
            self.report(node, (
                f"uses .{node.attr}, which reads files, source or the interpreter's internals; "
                "graded tests may only call the code and check what it returns or raises"
            ))

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_ATTRIBUTE_CALLS and len(node.args) >= 2:
            name = node.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.report(node, f"calls {node.func.id}() with a computed attribute name; name the attribute directly")
            elif name.value in FORBIDDEN_ATTRIBUTES:
                self.report(node, f"uses {node.func.id}(..., {name.value!r}), which graded tests may not")
