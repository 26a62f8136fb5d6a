"""Source text reduced to its code, for `ol diff --code-only`.

A student's stub keeps the contract's docstrings, which differ from the
reference's; a plain diff is then mostly prose.  `code_only` drops what is
not code, so that the diff shows how the two implementations differ:

    Python  docstrings (of the module, classes and functions) and comments
    C       /* ... */ and // comments

and then every blank line, putting back one blank line before each `def`,
`class` or decorator (Python) or after each closing brace at the start of
a line (C), so that both sides are laid out alike and still read well.
Trailing spaces go too.  Text that does not parse is returned as it is.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize


def code_only(text: str, suffix: str) -> str:
    """`text` without docstrings and comments, by the file's `suffix` (".py",
    ".c", ".h"); any other suffix leaves the text as it is."""
    if suffix in (".py", ".pyi"):
        return _python(text)
    if suffix in (".c", ".h"):
        return _c(text)
    return text


# ---- Python ------------------------------------------------------------------------


def _python(text: str) -> str:
    try:
        tree = ast.parse(text)
        comments = [token.start for token in tokenize.generate_tokens(io.StringIO(text).readline)
                    if token.type == tokenize.COMMENT]
    except (SyntaxError, tokenize.TokenError, ValueError):
        return text
    lines = text.splitlines()

    # Comments first: each one runs from its column to the end of its line.
    for row, col in comments:
        lines[row - 1] = lines[row - 1][:col]

    # Then docstrings, last first so that earlier positions stay valid.  ast
    # gives columns in UTF-8 bytes; a docstring may share its first line with
    # code (def f(): """...""") or its last line with a comment (already cut).
    for node in sorted(_docstrings(tree), key=lambda n: (n.lineno, n.col_offset), reverse=True):
        first, last = node.lineno - 1, node.end_lineno - 1
        head = lines[first].encode()[:node.col_offset].decode()
        tail = lines[last].encode()[node.end_col_offset:].decode().lstrip()
        if tail.startswith(";"):  # def f(): """doc"""; return 1
            tail = tail[1:].lstrip()
        lines[first:last + 1] = [head + tail]

    kept = [line.rstrip() for line in lines if line.strip()]
    out: list[str] = []
    for line in kept:
        starts_block = line.lstrip().startswith(("def ", "async def ", "class ", "@"))
        after_header = out and (out[-1].lstrip().startswith("@") or out[-1].endswith(":"))
        if out and starts_block and not after_header:
            out.append("")
        out.append(line)
    return "\n".join(out) + "\n" if out else ""


def _docstrings(tree: ast.Module) -> list[ast.expr]:
    """The docstring expressions of the module and of every class and function."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.append(first.value)
    return found


# ---- C -----------------------------------------------------------------------------

# A string or character literal (kept whole, so that a "//" inside one is not
# taken for a comment), or a comment (dropped).
_C_TOKENS = re.compile(r'''"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|/\*.*?\*/|//[^\n]*''', re.S)


def _c(text: str) -> str:
    def replace(match: re.Match) -> str:
        token = match.group(0)
        if token.startswith("/*"):
            return "\n" * token.count("\n")  # keep the line structure; the blank lines go below
        return "" if token.startswith("//") else token

    stripped = _C_TOKENS.sub(replace, text)
    out: list[str] = []
    for line in stripped.splitlines():
        if line.strip():
            out.append(line.rstrip())
            if line.startswith("}"):
                out.append("")
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n" if out else ""
