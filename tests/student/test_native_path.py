"""Kit tests of the student's path through a C module (L9.6) with `./ol`.

- In a temporary checkout, run as a student would: `ol start L9.6` writes a C
  stub that compiles (warning-free) and a starter test; `ol tests` compiles
  the student's C outside the repository and fails on the stub (so the
  binding really loads the student's build), exits 2 with the compiler's
  message on a syntax error, passes on the reference C; `ol diff` and
  `ol reset` work as for a Python module; nothing outside python/ and .ol/
  changes, and python/ gains only the student's own files.
- Without a compiler, `ol tests` exits 2 and says what to install.
- The runner: the reference C passes the course tests, and a fresh stub fails
  every course test (each one calls the C).
- ol.student.c_stubs on a synthetic header; ol.core.native_build's compiler search and
  its flags, which must stay those of setup.py.
- The L9.6 chapter exists, names the header, the course tests and every
  course test function, and only TL_ROPE_ names the header defines.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.kit import ROOT, copy_checkout, explain, run_ol, snapshot
from ol.core.catalog import load_catalog
from ol.core.native_build import C_FLAGS, SHARED_FLAGS, NoCompiler, build_native, find_compiler
from ol.core.runner import plan_overlay, run_course_tests
from ol.student.c_stubs import c_stub_source
from ol.student.stubs import StubError
from ol.student.workspace import fresh_stubs

CATALOG = load_catalog(ROOT)
MODULE = CATALOG.get("L9.6")
STUDENT_C = "python/tinyllm/native/tl_rope.c"
REFERENCE_C = "course/reference/python/tinyllm/native/tl_rope.c"
HEADER = "course/contracts/c/tl_rope.h"
STARTER = "python/tests/l9-6-tl-rope/test_tl_rope_oracle.py"


def compiler() -> list[str]:
    """The compiler ol would use; the test fails (never skips) without one."""
    try:
        return find_compiler("L9.6")
    except NoCompiler as error:
        pytest.fail(f"these tests need a C compiler: {error}")


def outside_python(root: Path) -> dict[str, str]:
    return {path: digest for path, digest in snapshot(root).items() if not path.startswith("python/")}


def under_python(root: Path) -> set[str]:
    return {path for path in snapshot(root) if path.startswith("python/")}


# ---- the student's path, in a temporary checkout ------------------------------------------


@pytest.mark.slow
def test_c_student_path(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before_outside, before_python = outside_python(checkout), under_python(checkout)

    def ol(*args):
        return run_ol(checkout, *args, cwd=elsewhere)

    student = checkout / STUDENT_C
    reference = (checkout / REFERENCE_C).read_text()

    # 1. start writes the C stub (and no Python in python/tinyllm/native/) and the starter test.
    r = ol("start", "L9.6", "--ref-deps")
    assert r.returncode == 0, explain(r)
    stub = student.read_text()
    assert '#include "tl_rope.h"' in stub and "L9.6: implement tl_rope_f32 in python/tinyllm/native/tl_rope.c" in stub
    assert sorted(p.name for p in student.parent.iterdir()) == ["tl_rope.c"], "only the C in the student's native/"
    assert "tinyllm.native" in (checkout / STARTER).read_text(), "the starter imports the binding"
    for printed in ("course/chapters/L9.6-tl-rope.md", "course/tests/L9.6", "-ffp-contract=off"):
        assert printed in r.stdout, f"start should print {printed}\n{explain(r)}"

    # 2. the stub compiles, even with every warning an error.
    strict = [*compiler(), *C_FLAGS, *SHARED_FLAGS, "-Wall", "-Wextra", "-pedantic", "-Werror",
              "-I", str(checkout / "course/contracts/c"), str(student), "-o", str(tmp_path / "libstub.so")]
    built = subprocess.run(strict, capture_output=True, text=True)
    assert built.returncode == 0, f"the stub does not compile cleanly:\n{built.stderr}\n{stub}"

    # 3. the stub fails the course tests, and the starter test: the binding loaded the student's build.
    r = ol("tests", "L9.6", "--ref-deps")
    assert r.returncode == 1, explain(r)
    assert "L9.6: implement tl_rope_f32" in r.stdout and "test_hand_example" in r.stdout, explain(r)
    r = ol("tests", "L9.6", "--ref-deps", "--mine")
    assert r.returncode == 1 and "test_one_row_by_hand_half_layout" in r.stdout, explain(r)
    r = ol("tests", "L9.6")
    assert r.returncode == 2 and "--ref-deps" in r.stderr and "L7.3" in r.stderr, explain(r)
    r = ol("diff", "L9.6", "--ref-deps")
    assert r.returncode == 1 and "refused" in r.stderr and "reference:" not in r.stdout, explain(r)

    # 4. a syntax error: exit 2, with the compiler's own message about the student's file.
    student.write_text(reference.replace("return TL_ROPE_OK;", "return TL_ROPE_OK"))
    r = ol("tests", "L9.6", "--ref-deps")
    assert r.returncode == 2, explain(r)
    assert "does not compile" in r.stderr and f"{STUDENT_C}:" in r.stderr and "error" in r.stderr, explain(r)
    assert compiler()[0] in r.stderr, f"the message names the compiler\n{explain(r)}"

    # 5. the reference C (plus a note) passes the course tests and the starter test.
    student.write_text(reference + "// my note\n")
    r = ol("tests", "L9.6", "--ref-deps")
    assert r.returncode == 0 and " passed" in r.stdout and " failed" not in r.stdout, explain(r)
    r = ol("tests", "L9.6", "--ref-deps", "--mine")
    assert r.returncode == 0 and "1 passed" in r.stdout, explain(r)
    r = ol("list")
    assert re.search(r"^L9\.6\s+R5\s+course tests passing", r.stdout, re.M), explain(r)

    # 6. diff, after passing: the student's C against the reference's.
    r = ol("diff", "L9.6", "--ref-deps")
    assert r.returncode == 0, explain(r)
    assert f"--- student: {STUDENT_C}" in r.stdout and f"+++ reference: {REFERENCE_C}" in r.stdout, explain(r)
    assert "\n-// my note\n" in r.stdout, explain(r)

    # 7. reset saves the C to a backup and writes the fresh stub again.
    r = ol("reset", "L9.6")
    assert r.returncode == 0, explain(r)
    backup = Path(re.search(r"^backup: (.+)$", r.stdout, re.M).group(1))
    assert (backup / STUDENT_C).read_text() == reference + "// my note\n", explain(r)
    assert student.read_text() == stub, "reset writes the same stub as start"

    # 8. nothing changed outside python/ and .ol/; python/ gained only the student's files.
    assert outside_python(checkout) == before_outside, "ol wrote outside python/ and .ol/"
    assert under_python(checkout) - before_python == {STUDENT_C, STARTER}, "no build products in python/"


def test_without_a_compiler_tests_exit_2_saying_what_to_install(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    empty = tmp_path / "empty-path"
    empty.mkdir()
    assert run_ol(checkout, "start", "L9.6", "--ref-deps", cwd=tmp_path).returncode == 0
    env = {k: v for k, v in os.environ.items() if k != "CC"}

    def ol_tests(**changes):
        return subprocess.run([sys.executable, str(checkout / "ol"), "tests", "L9.6", "--ref-deps"],
                              cwd=tmp_path, env={**env, **changes}, capture_output=True, text=True)

    r = ol_tests(PATH=str(empty))  # neither cc, gcc nor clang
    assert r.returncode == 2, explain(r)
    assert "no C compiler" in r.stderr and "gcc or clang" in r.stderr, explain(r)
    r = ol_tests(CC=str(tmp_path / "no-such-cc"))
    assert r.returncode == 2, explain(r)
    assert "no-such-cc" in r.stderr and "CC" in r.stderr, explain(r)


# ---- the runner ----------------------------------------------------------------------------


@pytest.mark.slow
def test_reference_passes_and_the_stub_fails_every_course_test_that_reaches_the_c():
    reference = run_course_tests(ROOT, MODULE, implementation="reference", capture=True, catalog=CATALOG)
    assert reference.exit_code == 0 and reference.passed and not reference.failed, reference.output[-3000:]

    stub = {"tinyllm.native.tl_rope": fresh_stubs(ROOT, MODULE)["tinyllm/native/tl_rope.c"]}
    run = run_course_tests(ROOT, MODULE, implementation="reference", sources=stub, capture=True, catalog=CATALOG)
    assert run.exit_code == 1, run.output[-3000:]
    passing = {name.split("[")[0] for name in run.passed}
    assert not passing, f"the stub passes course tests, which then test nothing of the C: {passing}"
    assert "L9.6: implement tl_rope_f32" in run.output


def test_tinyllm_native_is_the_reference_binding_in_the_overlay():
    plan = plan_overlay(ROOT, MODULE, catalog=CATALOG, implementation="reference")
    assert Path(plan["tinyllm.native"].path) == ROOT / "course/reference/python/tinyllm/native/__init__.py"
    assert "tinyllm.modern.rope" in plan, "the needs are in the overlay too"
    assert not any(name.startswith("tinyllm.native.") for name in plan), "the C itself is compiled, not imported"


# ---- the pieces --------------------------------------------------------------------------


SYNTHETIC_HEADER = """\
// A header with what a contract may hold.
#ifndef K_H
#define K_H
#include <stdint.h>
#define K_OK 0  // success; a (parenthesis) in a comment; "a string"
typedef int (*k_callback)(int);
static inline int k_twice(int v) { return 2 * v; }
struct k_pair { float a; float b; };

/* Scales x in place; returns K_OK. */
int k_scale(float *x,      // (n,)
            int64_t n,     // entries
            float factor); // the scale
void k_reset(void);
const float *k_first(const float *x, int (*pick)(int), const char *names[]);
double k_sum(const double *values, int64_t n);

#endif
"""


def test_c_stub_of_a_synthetic_header_compiles_without_warnings(tmp_path):
    stub = c_stub_source(SYNTHETIC_HEADER, "X1", "pkg/k.c", "course/contracts/c/k.h")
    assert '#include "k.h"' in stub
    assert stub.count('fprintf(stderr, "X1: implement') == 4, stub
    assert "float factor) { // the scale" in stub, "the declaration keeps its comments"
    assert "k_twice" not in stub and "k_callback" not in stub, "definitions and typedefs are not stubbed"
    assert "return NULL;" in stub and stub.count("return -1;") == 2, stub
    (tmp_path / "k.h").write_text(SYNTHETIC_HEADER)
    (tmp_path / "k.c").write_text(stub)
    command = [*compiler(), *C_FLAGS, *SHARED_FLAGS, "-Wall", "-Wextra", "-pedantic", "-Werror",
               "-I", str(tmp_path), str(tmp_path / "k.c"), "-o", str(tmp_path / "libk.so")]
    built = subprocess.run(command, capture_output=True, text=True)
    assert built.returncode == 0, f"{built.stderr}\n{stub}"


@pytest.mark.parametrize("header, says", [
    ("int f(float *, int n);\n", "has no name"),
    ("#define ONLY 1\nextern int counter;\n", "declares no function"),
    ("struct s { int a; };\nstruct s make(int a);\n", "by value"),
])
def test_a_header_that_cannot_be_stubbed_says_why(header, says):
    with pytest.raises(StubError, match=says):
        c_stub_source(header, "X2", "pkg/bad.c", "course/contracts/c/bad.h")


def test_find_compiler_takes_cc_then_the_usual_names(tmp_path):
    fake = tmp_path / "gcc"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    assert find_compiler("L9.6", env={"PATH": str(tmp_path)}) == ["gcc"]
    assert find_compiler("L9.6", env={"PATH": str(tmp_path), "CC": f"{fake} -m64"}) == [str(fake), "-m64"]
    with pytest.raises(NoCompiler, match="CC='nope'"):
        find_compiler("L9.6", env={"PATH": str(tmp_path), "CC": "nope"})
    with pytest.raises(NoCompiler, match="none of cc, gcc, clang"):
        find_compiler("L9.6", env={"PATH": str(tmp_path / "nothing-here")})


def test_a_build_keeps_the_compilers_warnings_and_writes_only_into_its_folder(tmp_path):
    reference = (ROOT / REFERENCE_C).read_text()
    build = build_native(ROOT, MODULE, tmp_path / "out", implementation="reference",
                         sources={"tinyllm.native.tl_rope": reference + '#warning "read me"\n'})
    assert build is not None and build.library.exists() and tmp_path in build.library.parents
    assert "read me" in build.messages, f"the compiler's warning is kept for the student: {build.messages!r}"
    assert " ".join((*C_FLAGS, *SHARED_FLAGS, "-I", "course/contracts/c")) in " ".join(build.command)
    assert build_native(ROOT, CATALOG.get("L7.3"), tmp_path / "none") is None, "a Python module builds nothing"


def test_the_flags_are_those_of_setup_py():
    tree = ast.parse((ROOT / "setup.py").read_text())
    flags = next(ast.literal_eval(node.value) for node in ast.walk(tree)
                 if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "C_FLAGS" for t in node.targets))
    assert tuple(flags) == C_FLAGS, f"setup.py builds with {flags}, ol with {C_FLAGS}: keep them equal"


# ---- the chapter ----------------------------------------------------------------------------


def test_the_chapter_names_the_header_the_course_tests_and_only_real_names():
    chapter = ROOT / MODULE.chapter
    assert chapter.exists(), f"{MODULE.chapter} is missing"
    text = chapter.read_text(encoding="utf-8")
    for named in (HEADER, MODULE.course_tests, MODULE.student_tests.removeprefix("python/"), STUDENT_C,
                  "TINYLLM_NATIVE_LIB", "-ffp-contract=off", "./ol tests L9.6"):
        assert named in text, f"the chapter does not name {named}"
    tests = ast.parse((ROOT / MODULE.course_tests / "test_tl_rope.py").read_text())
    functions = [n.name for n in tests.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    missing = [f for f in functions if f"`{f}`" not in text]
    assert functions and not missing, f"the chapter does not name the course tests {missing}"
    defined = set(re.findall(r"#define (TL_ROPE_\w+)", (ROOT / HEADER).read_text()))
    unknown = set(re.findall(r"TL_ROPE_\w+", text)) - defined
    assert not unknown, f"the chapter names {sorted(unknown)}, which {HEADER} does not define"
    command = " ".join(("cc", *C_FLAGS, *SHARED_FLAGS, "-I", "course/contracts/c", STUDENT_C))
    assert command in text, f"the chapter should show the command ol compiles with: {command}"
