"""Find the functions of some implementations anywhere in a folder: the scan
`ol release` runs on a student kit before handing it out.

    leaks = scan_folder(kit, {"course/reference/python/tinyllm/modern/rope.py": text, ...})
    for leak in leaks: print(leak)    # chapter.md:120: apply_rope is apply_rope of course/reference/...

Functions are compared by their syntax trees, not their text: every name
(of the function, its arguments, its variables) becomes one placeholder,
strings and f-strings become empty, and docstrings, annotations and
decorators are dropped; numbers, operators, attribute names, keywords and
the shape of the code stay.  So a copy with other names, other messages or
other comments is still found; two functions that only share a signature
are not.

Every file is read: a .py file as Python, any other text file (a chapter, a
README, a TOML file) by each `def` line in it with the indented lines under
it, so a function pasted into a chapter's code block is found too.  Binary
files are skipped.
"""

from __future__ import annotations

import ast
import copy
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

DEF_LINE = re.compile(r"^(\s*)(?:async\s+)?def\s+\w+\s*\(")


@dataclass(frozen=True)
class Leak:
    path: str        # the file in the folder, relative to it
    line: int
    name: str        # the function there
    origin: str      # the implementation it comes from
    original: str    # its name there

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} is {self.original} of {self.origin}"


class _Normalize(ast.NodeTransformer):
    """Names to one placeholder, strings to empty; docstrings, annotations and decorators dropped."""

    def _function(self, node):
        node.name, node.decorator_list, node.returns = "_", [], None
        if hasattr(node, "type_params"):
            node.type_params = []
        if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            node.body = node.body[1:] or [ast.Pass()]
        return self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node):
        node.name, node.decorator_list = "_", []
        return self.generic_visit(node)

    def visit_arg(self, node):
        node.arg, node.annotation, node.type_comment = "_", None, None
        return node

    def visit_Name(self, node):
        return ast.Name(id="_", ctx=ast.Load())

    def visit_AnnAssign(self, node):
        node.annotation = ast.Constant(value=None)
        return self.generic_visit(node)

    def visit_Constant(self, node):
        return ast.Constant(value="") if isinstance(node.value, str) else ast.Constant(value=node.value)

    def visit_JoinedStr(self, node):
        return ast.Constant(value="")

    def visit_Global(self, node):
        return ast.Global(names=["_"])

    def visit_Nonlocal(self, node):
        return ast.Nonlocal(names=["_"])


def shape(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The function's normalized syntax tree, as text."""
    return ast.dump(_Normalize().visit(copy.deepcopy(function)), annotate_fields=False, include_attributes=False)


def functions(tree: ast.AST, first_line: int = 1) -> list[tuple[str, int, str]]:
    """(qualified name, line, shape) of every function in the tree, nested ones and methods included."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child.lineno + first_line - 1, shape(child)))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def functions_in_text(text: str, is_python: bool) -> list[tuple[str, int, str]]:
    """Every function in a file: parsed whole when it is Python that parses,
    else each `def` line with the lines indented under it."""
    if is_python:
        try:
            return functions(ast.parse(text))
        except (SyntaxError, ValueError):
            pass
    lines = text.splitlines()
    found = []
    for number, line in enumerate(lines):
        match = DEF_LINE.match(line)
        if not match:
            continue
        indent = len(match.group(1).expandtabs())
        end = number + 1
        while end < len(lines) and (not lines[end].strip() or len(lines[end].expandtabs()) - len(lines[end].expandtabs().lstrip()) > indent):
            if lines[end].lstrip().startswith("```"):
                break
            end += 1
        block = textwrap.dedent("\n".join(lines[number:end]))
        try:
            tree = ast.parse(block)
        except SyntaxError:
            continue
        found.extend(f for f in functions(tree, number + 1) if f[1] == number + 1)  # nested ones come with their own line
    return found


def fingerprints(implementations: dict[str, str]) -> dict[str, tuple[str, str]]:
    """{shape: (origin, function name)} of every function of the implementations ({origin: source})."""
    shapes = {}
    for origin, source in sorted(implementations.items()):
        for name, _, found in functions(ast.parse(source)):
            shapes.setdefault(found, (origin, name))
    return shapes


def scan_folder(folder: Path, implementations: dict[str, str], paths: list[str] | None = None) -> list[Leak]:
    """Every function in the folder's files (`paths`, relative to it; default:
    every file but .git's) that is one of the implementations' functions
    ({origin: source}), by shape."""
    folder = Path(folder)
    if paths is None:
        paths = [p.relative_to(folder).as_posix() for p in folder.rglob("*")
                 if ".git" not in p.relative_to(folder).parts]
    wanted = fingerprints(implementations)
    leaks = []
    for relative in sorted(paths):
        path = folder / relative
        if not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue  # a binary file (fixtures): no source in it
        for name, line, found in functions_in_text(text, path.suffix in (".py", ".pyi")):
            if found in wanted:
                leaks.append(Leak(relative, line, name, *wanted[found]))
    return leaks
