"""What a student's test folder may do, checked by reading it (no code runs).

Graded tests must judge what the code *does*.  So they may import only the
catalog's allow-list (from the module under test, only the names of its
contract), and may not read files, code objects, the environment or the
interpreter's internals.  Every violation is reported with file:line; a
folder with any violation is not graded.

The check is the first of two fences: the sandbox that runs the tests also
refuses any access to the repository at run time (ol.grading.sandbox).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class Violation:
    """One thing the tests may not do, where it is."""

    path: str   # relative to the repository
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def check_test_folder(folder: Path, root: Path, allowed_imports: tuple[str, ...],
                      contract_names: dict[str, frozenset[str]]) -> list[Violation]:
    """Every violation in the .py files of `folder`.

    allowed_imports: module names the tests may import; a name also allows its
        submodules, except under `tinyllm`, where each module is listed.
    contract_names: for each tinyllm module in the allow-list, the public
        names of its contract; only those may be imported from it.
    """
    files = sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
    local_modules = {p.stem for p in files}
    violations: list[Violation] = []
    tests = 0
    for path in files:
        shown = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        try:
            tree = ast.parse(path.read_text(), filename=shown)
        except SyntaxError as error:
            violations.append(Violation(shown, error.lineno or 1, f"does not parse: {error.msg}"))
            continue
        checker = _Checker(shown, allowed_imports, contract_names, local_modules)
        checker.visit(tree)
        violations.extend(checker.violations)
        tests += _count_tests(tree) if path.name.startswith("test") or path.name.endswith("_test.py") else 0
    if tests == 0:
        shown = str(folder.relative_to(root)) if folder.is_relative_to(root) else str(folder)
        violations.append(Violation(
            shown, 0, "no tests found: write at least one `def test_...` function in a file named test_*.py"
        ))
    return violations


def _count_tests(tree: ast.Module) -> int:
    count = 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            count += 1
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            count += sum(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in node.body)
    return count


class _Checker(ast.NodeVisitor):
    def __init__(self, path, allowed, contract_names, local_modules):
        self.path, self.allowed, self.contract_names = path, allowed, contract_names
        self.local_modules = local_modules
        self.violations: list[Violation] = []

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
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in FORBIDDEN_ATTRIBUTES:
            self.report(node, (
                f"uses .{node.attr}, which reads files, source or the interpreter's internals; "
                "graded tests may only call the code and check what it returns or raises"
            ))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_ATTRIBUTE_CALLS and len(node.args) >= 2:
            name = node.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.report(node, f"calls {node.func.id}() with a computed attribute name; name the attribute directly")
            elif name.value in FORBIDDEN_ATTRIBUTES:
                self.report(node, f"uses {node.func.id}(..., {name.value!r}), which graded tests may not")
        self.generic_visit(node)
