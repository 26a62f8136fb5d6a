"""A chapter's code blocks, read by the convention every chapter follows.

The info string of a fenced block says what it is, and so how
tests/course/test_chapters.py executes it:

    python           runs as it is in `ol shell MODULE --ref-deps` (a fresh namespace of its own),
                     on the reference; MODULE is the module whose chapter it is (for a
                     milestone's chapter, the milestone's first need)
    python contract  an excerpt of MODULE's contracts: every def and class in it has the
                     contract's parameters and defaults (annotations may be left out)
    bash             commands a student types at the repository's root, one a line (a
                     trailing backslash continues it); each exits 0 in a checkout where every
                     module is done, unless its comment says "exits N"; `python -m pip install`
                     lines are not run (no network here): the packages they pin must be
                     installed at those versions; `python bench/...` lines are not run either
                     (a benchmark takes minutes): the script must exist
    json             data: it parses
    text             a diagram, a formula or pseudo-code: read, not run
    text output      what the block right above it prints (only blank lines between them):
                     a python block's stdout, a bash block's last command's stdout.  "..."
                     alone on a line stands for any lines, "..." in a line for any text;
                     every number shown must be the one printed, to the digits shown.

A python block shows a result only in its output block: a comment that
starts with a number, or with ( or [ and a number, is a result no test
reads, and is refused.
"""

from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
from dataclasses import dataclass, field

KINDS = ("python", "python contract", "bash", "json", "text", "text output")
FENCE = re.compile(r"^```(.*)$")
# A number as it is printed: -0.010000, 3.96e-05, 15, nan.  Not a digit inside a word (L7.3, float32, s01).
NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan"
NUMBER_TOKEN = re.compile(rf"(?<![\w.])(?:{NUMBER})(?![\w])")
RESULT_COMMENT = re.compile(r"#\s*(?:->|=>|=)?\s*[(\[]?\s*[-+]?\d")
EXITS = re.compile(r"#.*\bexits (\d+)")


@dataclass
class Block:
    kind: str                 # one of KINDS
    code: str
    line: int                 # the line of its opening fence, counted from 1
    end: int                  # the line of its closing fence
    output: Block | None = None
    problems: list[str] = field(default_factory=list)

    def where(self, chapter: str) -> str:
        return f"{chapter}:{self.line} ({self.kind} block)"


def read_blocks(text: str) -> list[Block]:
    """Every fenced block of `text`, each text output block attached to the block above it.
    A block with an unknown info string, or an output block with no block above it, carries
    a problem."""
    lines = text.splitlines()
    blocks: list[Block] = []
    opened = None
    for number, line in enumerate(lines, start=1):
        fence = FENCE.match(line)
        if not fence:
            continue
        if opened is None:
            opened = (" ".join(fence.group(1).split()), number)
            continue
        info, start = opened
        blocks.append(Block(info, "\n".join(lines[start:number - 1]) + "\n", start, number))
        opened = None
    for index, block in enumerate(blocks):
        if block.kind not in KINDS:
            block.problems.append(f"a fenced block says {block.kind!r}; say what it is: one of {', '.join(KINDS)}")
        if block.kind == "text output":
            above = blocks[index - 1] if index else None
            gap = lines[above.end:block.line - 1] if above else ["(nothing)"]
            if above is None or above.kind not in ("python", "bash") or any(line.strip() for line in gap):
                block.problems.append("an output block must come right after the python or bash block whose "
                                      "output it is (only blank lines between)")
            else:
                above.output = block
    return blocks


# ---- output ------------------------------------------------------------------------------


def _line_pattern(line: str) -> str:
    """A regex for one shown line: numbers captured, "..." any text, runs of spaces any run."""
    parts = []
    for piece in _pieces(line):
        if piece == "...":
            parts.append(r"[^\n]*?")
        elif NUMBER_TOKEN.fullmatch(piece):
            parts.append(f"({NUMBER})")
        else:
            parts.append(re.sub(r"(\\ )+", " +", re.escape(piece)))
    return "".join(parts)


def _tolerance(shown: str) -> float:
    """Half a unit in the last digit shown: 0.195570 -> 5e-7, 3.96e-05 -> 5e-8; 0 for a whole number."""
    mantissa, _, exponent = shown.lower().partition("e")
    if "." not in mantissa:
        return 0.0
    decimals = len(mantissa.split(".")[1])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def output_problems(shown: str, printed: str) -> list[str]:
    """How `printed` differs from the output block `shown` (empty: it is what the chapter shows)."""
    shown_lines = [line.rstrip() for line in shown.rstrip("\n").splitlines()]
    pattern = "".join(r"(?:[^\n]*\n)*?" if line.strip() == "..." else _line_pattern(line) + r"\n"
                      for line in shown_lines)
    text = "\n".join(line.rstrip() for line in printed.rstrip("\n").splitlines()) + "\n"
    matched = re.fullmatch(pattern, text)
    if matched is None:
        diff = "\n".join(difflib.unified_diff(shown_lines, text.splitlines(), "the chapter shows", "the block prints",
                                              lineterm=""))
        return [f"the block prints something else than its output block:\n{diff}"]
    shown_numbers = [n for line in shown_lines if line.strip() != "..." for n in _numbers_of(line)]
    problems = []
    for shown_number, printed_number in zip(shown_numbers, matched.groups(), strict=True):
        if not _agrees(shown_number, printed_number):
            problems.append(f"the chapter shows {shown_number}, the block prints {printed_number}")
    return problems


def _pieces(line: str) -> list[str]:
    """A shown line cut into "...", numbers, and the text between them."""
    return [piece for piece in re.split(rf"(\.\.\.|{NUMBER_TOKEN.pattern})", line) if piece]


def _numbers_of(line: str) -> list[str]:
    return [piece for piece in _pieces(line) if piece != "..." and NUMBER_TOKEN.fullmatch(piece)]


def _agrees(shown: str, printed: str) -> bool:
    a, b = float(shown), float(printed)
    if a != a or b != b:   # nan is shown as nan
        return a != a and b != b
    if abs(a) == float("inf") or abs(b) == float("inf"):
        return a == b
    return abs(a - b) <= _tolerance(shown) * (1 + 1e-9)   # the slack: 0.5e-6 itself is not exact in binary


def result_comments(code: str) -> list[str]:
    """The comments of a python block that show a result (which only an output block may show)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    return [token.string for token in tokens if token.type == tokenize.COMMENT and RESULT_COMMENT.match(token.string)]


# ---- shell commands ----------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    text: str          # as bash runs it
    exits: int         # what it must exit with


def commands(code: str) -> list[Command]:
    """The commands of a bash block: continuation lines joined, comments kept for `exits N`."""
    joined, pending = [], ""
    for line in code.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    found = []
    for line in joined:
        text, _, comment = line.partition(" #")
        if line.lstrip().startswith("#") or not text.strip():
            continue
        exits = EXITS.search("#" + comment)
        found.append(Command(" ".join(text.split()), int(exits.group(1)) if exits else 0))
    return found


# ---- contracts ---------------------------------------------------------------------------


def _parameters(node: ast.FunctionDef) -> list[tuple[str, str, str | None]]:
    """(kind, name, default source) of each parameter, in order."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + [ast.unparse(d) for d in args.defaults]
    found = [("positional", a.arg, d) for a, d in zip(positional, defaults)]
    if args.vararg:
        found.append(("*args", args.vararg.arg, None))
    found += [("keyword", a.arg, None if d is None else ast.unparse(d)) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        found.append(("**kwargs", args.kwarg.arg, None))
    return found


def _named(body) -> dict[str, ast.AST]:
    found = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
        elif isinstance(node, ast.Assign):
            found.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
    return found


def contract_problems(code: str, contracts: dict[str, str]) -> list[str]:
    """Where an excerpt (a python contract block) differs from the contracts ({path: text})."""
    try:
        excerpt = ast.parse(code)
    except SyntaxError as error:
        return [f"it is not Python (line {error.lineno}: {error.msg}): write each signature as a stub, `def f(x): ...`"]
    known = {}
    for path, text in contracts.items():
        for name, node in _named(ast.parse(text).body).items():
            known.setdefault(name, (path, node))
    problems = []
    for node in excerpt.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        names = list(_named([node]))
        if not names:
            problems.append(f"line {node.lineno}: {ast.unparse(node)[:60]!r} is not a def, class or constant")
        for name in names:
            if name not in known:
                problems.append(f"{name} is in no contract of the module ({', '.join(contracts)})")
                continue
            problems += _compare(node, known[name][1], name, known[name][0])
    return problems


def _compare(shown: ast.AST, contract: ast.AST, name: str, path: str) -> list[str]:
    if type(shown) is not type(contract) and not (isinstance(shown, (ast.Assign, ast.AnnAssign))
                                                  and isinstance(contract, (ast.Assign, ast.AnnAssign))):
        return [f"{name} is a {type(contract).__name__} in {path}, a {type(shown).__name__} here"]
    if isinstance(shown, ast.FunctionDef):
        if _parameters(shown) != _parameters(contract):
            return [f"{name}: the chapter's parameters {_said(shown)} are not {path}'s {_said(contract)}"]
        return []
    if isinstance(shown, ast.ClassDef):
        theirs = _named(contract.body)
        problems = [] if [ast.unparse(b) for b in shown.bases] == [ast.unparse(b) for b in contract.bases] else [
            f"class {name}: bases ({', '.join(map(ast.unparse, shown.bases))}) are not {path}'s"]
        for member, node in _named(shown.body).items():
            if member not in theirs:
                problems.append(f"{name}.{member} is not in {path}")
                continue
            if isinstance(node, ast.AnnAssign) and node.value is not None and (
                    getattr(theirs[member], "value", None) is None
                    or ast.unparse(node.value) != ast.unparse(theirs[member].value)):
                problems.append(f"{name}.{member}: default {ast.unparse(node.value)} is not {path}'s")
            elif not isinstance(node, ast.AnnAssign):
                problems += _compare(node, theirs[member], f"{name}.{member}", path)
        return problems
    return []


def _said(node: ast.FunctionDef) -> str:
    return "(" + ", ".join(name + ("" if default is None else f"={default}") for _, name, default in _parameters(node)) + ")"
