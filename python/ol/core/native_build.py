"""Compile the C files of a module (L9.6) into a shared library for a test run.

In a C module the student writes a .c file and nothing in Python: the tests
call the C through a ctypes binding that the course provides.  The pieces,
for L9.6:

    the student's C     python/tinyllm/native/tl_rope.c
    its contract        course/contracts/c/tl_rope.h (catalog `contracts`)
    its binding         course/reference/python/tinyllm/native/__init__.py:
                        the package of the folder the C file is in, always
                        imported from the reference tree (the runner maps
                        `tinyllm.native` to it in the overlay)
    the build           <a temporary folder>/libtl_rope.so, outside the
                        repository, deleted after the run
    the link            TINYLLM_NATIVE_LIB=<the build>, which makes the
                        binding load this build instead of the installed one

The build uses the flags pip uses for the reference (setup.py's C_FLAGS)
plus what a shared library needs:

    cc -std=c99 -O3 -ffp-contract=off -fPIC -shared -I course/contracts/c \\
       python/tinyllm/native/tl_rope.c -o /tmp/.../libtl_rope.so

The compiler is $CC if set, else the first of cc, gcc, clang on the PATH.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ol.core.catalog import REFERENCE_TREE, STUDENT_TREE, Module, dotted_name
from ol.core.errors import OlError
from ol.core.overlay import Source

C_FLAGS = ("-std=c99", "-O3", "-ffp-contract=off")  # setup.py's C_FLAGS; a kit test keeps them equal
SHARED_FLAGS = ("-fPIC", "-shared")
COMPILERS = ("cc", "gcc", "clang")                   # tried in this order when $CC is not set
LIBRARY_ENV = "TINYLLM_NATIVE_LIB"                   # read by the binding, tinyllm.native
BUILD_SECONDS = 120

INSTALL_HINT = ("Install gcc or clang (Debian/Ubuntu: sudo apt-get install build-essential; "
                "Fedora: sudo dnf install gcc; macOS: xcode-select --install), or name a compiler "
                "in CC, e.g. CC=clang")


class NoCompiler(OlError):
    """No C compiler to build the student's C with; the message says what to install."""


class BuildFailed(OlError):
    """The compiler rejected the C; the message holds the command and the compiler's own output."""


@dataclass(frozen=True)
class Build:
    """A compiled library and how it was made."""

    library: Path                  # the shared library, in the folder build_native was given
    command: tuple[str, ...]       # the compiler command line
    messages: str = ""             # what the compiler printed (warnings) although it succeeded


# ---- what a module's C is ------------------------------------------------------------


def c_files(module: Module) -> tuple[str, ...]:
    """The module's C files, relative to python/ (empty for a Python module)."""
    return tuple(f for f in module.files if f.endswith(".c"))


def native_bindings(module: Module) -> dict[str, str]:
    """{package: its __init__.py}, relative to the reference tree, for the
    folder of each C file: {"tinyllm.native": "tinyllm/native/__init__.py"}.
    The binding is course code, so it always comes from the reference."""
    folders = dict.fromkeys(str(PurePosixPath(f).parent) for f in c_files(module))
    return {dotted_name(folder + "/__init__.py"): folder + "/__init__.py" for folder in folders}


def include_dirs(module: Module) -> tuple[str, ...]:
    """The folders of the module's C headers (its contracts), relative to the repository."""
    headers = [module.contract_for(f) for f in c_files(module)]
    return tuple(dict.fromkeys(str(PurePosixPath(h).parent) for h in headers if h))


# ---- the compiler --------------------------------------------------------------------


def find_compiler(module_id: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The compiler command: $CC split into words if set (it must exist: it is
    what the user asked for), else the first of cc, gcc, clang on the PATH.
    Raises NoCompiler, naming what was tried and what to install."""
    env = os.environ if env is None else env
    hint = f"{INSTALL_HINT} ./ol tests {module_id}."
    if env.get("CC", "").strip():
        words = shlex.split(env["CC"])
        if shutil.which(words[0], path=env.get("PATH")):
            return words
        raise NoCompiler(f"no C compiler: ./ol tests {module_id} compiles your C with CC={env['CC']!r}, "
                         f"and {words[0]!r} was not found. Set CC to a compiler that exists, or unset it "
                         f"to use cc, gcc or clang. {hint}")
    for name in COMPILERS:
        if shutil.which(name, path=env.get("PATH")):
            return [name]
    raise NoCompiler(f"no C compiler: ./ol tests {module_id} compiles your C, and none of "
                     f"{', '.join(COMPILERS)} is on the PATH. {hint}")


# ---- the build ---------------------------------------------------------------------------


def plan_c_sources(
    root: str | Path,
    module: Module,
    *,
    implementation: str = "student",
    sources: Mapping[str, str | Source] | None = None,
) -> dict[str, Source]:
    """{C file (relative to python/): where its code comes from}: the student's
    file, or the reference's with implementation="reference", unless `sources`
    replaces it.  A C file is named in `sources` like a Python module, by its
    path with dots: tinyllm/native/tl_rope.c is "tinyllm.native.tl_rope"."""
    root = Path(root)
    sources = sources or {}
    tree = REFERENCE_TREE if implementation == "reference" else STUDENT_TREE
    plan = {}
    for file in c_files(module):
        replacement = sources.get(dotted_name(file))
        if isinstance(replacement, str):
            replacement = Source.from_text(replacement, origin=f"{STUDENT_TREE}/{file}")
        plan[file] = replacement or Source.from_path(root / tree / file)
    return plan


def build_native(
    root: str | Path,
    module: Module,
    out_dir: str | Path,
    *,
    implementation: str = "student",
    sources: Mapping[str, str | Source] | None = None,
) -> Build | None:
    """Compile the module's C files (chosen as plan_c_sources says) into one
    shared library in `out_dir`, a folder outside the repository; None for a
    module without C files.

    The compiler runs in the repository, so its messages name files as the
    student sees them (python/tinyllm/native/tl_rope.c:12:5: error: ...).
    Raises NoCompiler, or BuildFailed with the command and the compiler's
    messages.
    """
    root, out_dir = Path(root).resolve(), Path(out_dir)
    files = plan_c_sources(root, module, implementation=implementation, sources=sources)
    if not files:
        return None
    compiler = find_compiler(module.id)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [_source_file(root, source, out_dir / "src" / file) for file, source in files.items()]
    library = out_dir / f"lib{PurePosixPath(next(iter(files))).stem}.so"
    includes = [word for folder in include_dirs(module) for word in ("-I", folder)]
    command = (*compiler, *C_FLAGS, *SHARED_FLAGS, *includes, *paths, "-o", str(library))
    shown = " ".join(shlex.quote(word) for word in command)
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=BUILD_SECONDS)
    except subprocess.TimeoutExpired:
        raise BuildFailed(f"compiling {', '.join(paths)} took more than {BUILD_SECONDS} s and was "
                          f"stopped:\n    {shown}") from None
    except OSError as error:
        raise BuildFailed(f"could not run the C compiler {compiler[0]!r}: {error}. {INSTALL_HINT}.") from None
    messages = (done.stderr + done.stdout).strip()
    if done.returncode != 0 or not library.exists():
        raise BuildFailed(
            f"your C does not compile, so the tests of {module.id} cannot run. "
            f"{compiler[0]} (exit {done.returncode}) said:\n\n{messages or '(nothing)'}\n\n"
            f"The command was:\n    {shown}\n"
            f"Fix the first error it names (file:line:column), then run ./ol tests {module.id} again."
        )
    return Build(library=library, command=command, messages=messages)


def _source_file(root: Path, source: Source, scratch: Path) -> str:
    """The path to hand the compiler: relative to the repository for a file in
    it (so messages read python/...), else a scratch copy of a text source."""
    if source.path is not None:
        path = Path(source.path).resolve()
        if not path.exists():
            raise BuildFailed(f"{path} does not exist, so it cannot be compiled")
        return os.path.relpath(path, root) if root in path.parents else str(path)
    scratch.parent.mkdir(parents=True, exist_ok=True)
    scratch.write_text(source.text, encoding="utf-8")
    return str(scratch)
