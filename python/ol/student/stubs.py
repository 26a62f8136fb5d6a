"""A contract (.pyi) turned into the stub (.py) that `ol start` writes.

The stub keeps everything the contract says: the module docstring, imports,
classes (decorators, dataclass fields, annotations), signatures and
docstrings.  Each function or method whose body is only `...` (or only a
docstring, or `pass`) gets a body that raises

    NotImplementedError("L7.3: implement apply_rope in python/tinyllm/modern/rope.py
                         (contract: course/contracts/py/tinyllm/modern/rope.pyi)")

A body with real code is kept: the contract gives that code to the student.
The contract is edited by source position (from `ast`), so its comments and
layout survive.  `from __future__ import annotations` is added when missing,
since a .pyi may annotate with names (like the class itself) that a .py
cannot evaluate at definition time.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

STUB_NOTE = (
    "# Written by `ol start {module_id}` from {contract}.\n"
    "# Replace each `raise NotImplementedError(...)` with your code; keep the signatures.\n"
)


class StubError(ValueError):
    """The contract cannot be turned into a stub (e.g. it is not valid Python)."""


@dataclass(frozen=True)
class _Edit:
    start: int  # byte offsets into the UTF-8 source
    end: int
    text: str


def stub_source(contract_text: str, module_id: str, student_path: str, contract_path: str | None = None) -> str:
    """The stub .py for a contract .pyi.

    contract_text: the .pyi source.
    module_id: the catalog id, e.g. "L7.3" (it starts every error message).
    student_path: the file the student writes, relative to python/, e.g.
        "tinyllm/modern/rope.py".
    contract_path: where the contract lives, for the messages; defaults to
        course/contracts/py/<student_path>i.

    Raises StubError if the contract does not parse, or the stub would not.
    """
    contract_path = contract_path or f"course/contracts/py/{student_path}i"
    try:
        tree = ast.parse(contract_text, filename=contract_path, type_comments=False)
    except SyntaxError as error:
        raise StubError(f"{contract_path} is not valid Python, so no stub can be made from it: {error}") from None

    source = contract_text.encode("utf-8")
    lines = _line_starts(source)

    def offset(lineno: int, col: int) -> int:
        return lines[lineno - 1] + col  # ast columns are UTF-8 byte offsets

    edits: list[_Edit] = []
    for qualname, node in _functions(tree):
        if not _is_placeholder(node.body):
            continue
        message = (f"{module_id}: implement {qualname} in python/{student_path} "
                   f"(contract: {contract_path})")
        quoted = f'"{message}"' if '"' not in message and "\\" not in message else repr(message)
        raise_stmt = f"raise NotImplementedError({quoted})"
        body = node.body[1:] if _docstring(node.body) else node.body
        indent = _body_indent(source, lines, node)
        if not body:  # a docstring and nothing else: add the raise after it
            doc = node.body[0]
            at = offset(doc.end_lineno, doc.end_col_offset)
            edits.append(_Edit(at, at, "\n" + indent + raise_stmt))
            continue
        start = offset(body[0].lineno, body[0].col_offset)
        end = offset(body[-1].end_lineno, body[-1].end_col_offset)
        if _starts_its_line(source, lines, body[0]):
            edits.append(_Edit(start, end, raise_stmt))
        else:  # `def f(x): ...` on one line: the raise goes on a line of its own
            while start > 0 and source[start - 1:start] in (b" ", b"\t"):
                start -= 1
            edits.append(_Edit(start, end, "\n" + indent + raise_stmt))
            # ...and a blank line before the next statement, if it follows at once.
            line_end = source.find(b"\n", end)
            next_line = source[line_end + 1:source.find(b"\n", line_end + 1)] if line_end >= 0 else b""
            if next_line.strip():
                edits.append(_Edit(line_end + 1, line_end + 1, "\n"))

    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        source = source[:edit.start] + edit.text.encode("utf-8") + source[edit.end:]
    text = _with_header(source.decode("utf-8"), tree, module_id, contract_path)

    try:
        ast.parse(text)
    except SyntaxError as error:  # a bug here, not in the contract
        raise StubError(f"the stub made from {contract_path} does not parse ({error}); "
                        "please report this with the contract") from None
    return text


# ---- helpers ---------------------------------------------------------------


def _functions(tree: ast.Module):
    """(qualname, node) for every function and method, classes nested as A.B.f."""
    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield prefix + node.name, node
                # functions defined inside a function body are the student's business
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body, prefix + node.name + ".")
            elif isinstance(node, (ast.If, ast.Try)):  # e.g. `if TYPE_CHECKING:` / version checks
                for block in _blocks(node):
                    yield from walk(block, prefix)

    yield from walk(tree.body, "")


def _blocks(node):
    if isinstance(node, ast.If):
        return [node.body, node.orelse]
    return [node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody]


def _docstring(body) -> bool:
    first = body[0] if body else None
    return (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str))


def _is_placeholder(body) -> bool:
    """A body that only says "to be written": `...`, `pass`, a docstring, or these together."""
    rest = body[1:] if _docstring(body) else body
    return all(
        isinstance(s, ast.Pass)
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is Ellipsis)
        for s in rest
    )


def _starts_its_line(source: bytes, lines: list[int], stmt) -> bool:
    """True if only whitespace precedes `stmt` on its first line."""
    before = source[lines[stmt.lineno - 1]:lines[stmt.lineno - 1] + stmt.col_offset]
    return not before.strip()


def _body_indent(source: bytes, lines: list[int], node) -> str:
    """The indentation of the function's body: the first body line's own
    indentation if the body starts on a line of its own, else the def's + 4."""
    first = node.body[0]
    if _starts_its_line(source, lines, first):
        return source[lines[first.lineno - 1]:lines[first.lineno - 1] + first.col_offset].decode("utf-8")
    def_line = source[lines[node.lineno - 1]:].split(b"\n", 1)[0].decode("utf-8")
    return def_line[: len(def_line) - len(def_line.lstrip())] + "    "


def _line_starts(source: bytes) -> list[int]:
    starts, at = [0], 0
    for line in source.splitlines(keepends=True):
        at += len(line)
        starts.append(at)
    return starts


def _with_header(text: str, tree: ast.Module, module_id: str, contract_path: str) -> str:
    """Put the "written by ol start" note (and, if missing, the __future__
    import) right after the module docstring, or at the top."""
    note = STUB_NOTE.format(module_id=module_id, contract=contract_path)
    has_future = any(
        isinstance(n, ast.ImportFrom) and n.module == "__future__"
        and any(a.name == "annotations" for a in n.names)
        for n in tree.body
    )
    addition = note + ("" if has_future else "\nfrom __future__ import annotations\n")
    if tree.body and _docstring(tree.body):
        lines = text.splitlines(keepends=True)
        end = tree.body[0].end_lineno  # the docstring's last line (unchanged by the edits above)
        head, tail = "".join(lines[:end]), "".join(lines[end:])
        if not head.endswith("\n"):
            head += "\n"
        return head + "\n" + addition + tail
    return addition + ("\n" if text.strip() else "") + text
