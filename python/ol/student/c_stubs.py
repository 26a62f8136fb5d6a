"""A C header (the contract of a C module) turned into the stub .c that `ol start` writes.

The stub includes the header, so the compiler checks every definition the
student writes against its declaration, and it turns each function the
header declares into a definition that says what to write and fails:

    int tl_rope_f32(float *out,                // (n, head_dim), may be x itself
                    ...
                    int inverse) {             // 0: rotate by +angle, 1: by -angle
        (void)out; (void)x; (void)cos; ...     // unused until you write the body
        fprintf(stderr, "L9.6: implement tl_rope_f32 in python/tinyllm/native/tl_rope.c\\n");
        return -1;  // not implemented: a failure code, never success
    }

The declaration is copied as the header writes it, comments included.  A
function returning a number returns -1, one returning a pointer NULL, one
returning void nothing.  The (void) casts keep the stub free of warnings
under -Wall -Wextra -pedantic, so a sanitizer build accepts it too.

The header is read as plain C: comments, string literals and preprocessor
lines are set aside, and every top-level declaration of the form
`type name(parameters);` is a function to stub.  Definitions ({...}),
typedefs and variables are left alone.  A declaration the stub cannot be
made from (an unnamed parameter, a struct returned by value) raises
StubError naming it.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from ol.student.stubs import StubError

STUB_NOTE = (
    "// Written by `ol start {module_id}` from {contract}.\n"
    "// Replace each function body with your code; keep the signatures (the compiler\n"
    "// checks them against the header). The header says what each function must do.\n"
)

# Comments, string and character literals, and preprocessor lines (with their continuations).
_SET_ASIDE = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*",
    re.S | re.M,
)
_FUNCTION = re.compile(r"^(?P<returns>[^()]*?)\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>.*)\)$", re.S)
_TYPE_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
               "const", "volatile", "restrict", "_Bool", "struct", "union", "enum"}
_STORAGE_WORDS = {"extern", "static", "inline"}


def c_stub_source(header_text: str, module_id: str, student_path: str, contract_path: str) -> str:
    """The stub .c for a C header.

    header_text: the .h source.
    module_id: the catalog id, e.g. "L9.6" (it starts every message).
    student_path: the file the student writes, relative to python/, e.g.
        "tinyllm/native/tl_rope.c".
    contract_path: where the header lives, relative to the repository; the stub
        includes it by its file name, so its folder must be on the include path
        (ol.core.native_build adds it).

    Raises StubError if the header declares no function, or one that cannot be stubbed.
    """
    masked = _SET_ASIDE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), header_text)
    functions = []
    for start, end in _declarations(masked):
        declaration = " ".join(masked[start:end].split())
        if "(" not in declaration or declaration.split()[0] == "typedef":
            continue  # a variable or a typedef
        functions.append(_definition(header_text, masked, start, end, module_id, student_path, contract_path))
    if not functions:
        raise StubError(f"{contract_path} declares no function (`type name(parameters);`), "
                        f"so there is nothing to stub for {module_id}")
    header = PurePosixPath(contract_path).name
    return (STUB_NOTE.format(module_id=module_id, contract=contract_path)
            + "\n#include <stdio.h>  // fprintf, for the stub's message\n\n"
            + f'#include "{header}"\n\n' + "\n\n".join(functions) + "\n")


def _declarations(masked: str):
    """(start, end) of each top-level declaration in the masked header: from
    the first character after the previous one up to its ';' (excluded).
    Anything with a {...} body is dropped whole."""
    start, depth = 0, 0
    for at, char in enumerate(masked):
        if char in "({":
            depth += 1
        elif char in ")}":
            depth -= 1
            if char == "}" and depth == 0:
                start = at + 1  # a definition or a struct: not a declaration to stub
        elif char == ";" and depth == 0:
            text = masked[start:at]
            if text.strip():
                yield start + len(text) - len(text.lstrip()), at
            start = at + 1


def _definition(original: str, masked: str, start: int, end: int, module_id: str,
                student_path: str, contract_path: str) -> str:
    """The stub definition of the function declared at original[start:end]."""
    shown = " ".join(masked[start:end].split())
    match = _FUNCTION.match(masked[start:end].strip())
    if match is None or not match["returns"].strip():
        raise StubError(f"{contract_path}: cannot read `{shown}` as a function declaration "
                        "(`type name(parameters);`), so no stub can be made from it")
    name, returns = match["name"], match["returns"].split()
    params = [_parameter_name(p, name, contract_path) for p in _split_parameters(match["params"])]
    params = [p for p in params if p]

    # The declaration as the header writes it; its ';' becomes ' {', and a comment after it stays.
    line_end = original.find("\n", end)
    after = original[end + 1:line_end if line_end >= 0 else len(original)]
    if after.startswith("  "):
        after = after[1:]  # keep the comment in its column
    lines = [original[start:end].rstrip() + " {" + after.rstrip()]

    if params:
        lines.extend(_wrap([f"(void){p};" for p in params], "    ", "  // unused until you write the body"))
    message = f"{module_id}: implement {name} in python/{student_path}"
    lines.append(f'    fprintf(stderr, "{_c_string(message)}\\n");')
    kind = [w for w in returns if w not in _STORAGE_WORDS]
    if kind == ["void"]:
        pass
    elif returns[-1].endswith("*"):
        lines.append("    return NULL;  // not implemented")
    elif kind and kind[0] in ("struct", "union"):
        raise StubError(f"{contract_path}: {name} returns {' '.join(kind)} by value; the stub can "
                        "only return a number, a pointer or void")
    else:
        lines.append("    return -1;  // not implemented: a failure code, never success")
    lines.append("}")
    return "\n".join(lines)


def _split_parameters(params: str) -> list[str]:
    """The parameters of a masked parameter list, split at top-level commas."""
    parts, depth, current = [], 0, []
    for char in params:
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        current.append(char)
    parts.append("".join(current))
    parts = [" ".join(p.split()) for p in parts]
    return [] if parts in ([""], ["void"]) else parts


def _parameter_name(param: str, function: str, contract_path: str) -> str | None:
    """The name a parameter declares ('...' has none); StubError if it has none."""
    if param == "...":
        return None
    pointer_to_function = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", param)
    if pointer_to_function:
        return pointer_to_function.group(1)
    words = re.findall(r"[A-Za-z_]\w*", re.sub(r"\[[^\]]*\]", "", param))
    if len(words) < 2 or words[-1] in _TYPE_WORDS or words[-1].endswith("_t"):
        raise StubError(f"{contract_path}: the parameter `{param}` of {function} has no name; "
                        "a contract names every parameter, so that the stub can define the function")
    return words[-1]


def _wrap(items: list[str], indent: str, last_comment: str, width: int = 96) -> list[str]:
    lines, line = [], indent
    for item in items:
        if len(line) + len(item) > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += item + " "
    lines.append(line.rstrip() + last_comment)
    return lines


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
