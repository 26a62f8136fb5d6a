"""Builds the native kernel of L9.6 during `pip install`; pyproject.toml holds
everything else about the package.

tl_rope.c (the reference C, course/reference/python/tinyllm/native/) becomes
the shared library `_tinyllm_native`.  It is built as a setuptools extension
so that pip compiles it and puts it on the path, but it is plain C with no
Python API: tinyllm.native finds it with importlib and loads it with ctypes.
"""

import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# -ffp-contract=off: no fused multiply-add, so a*c - b*s rounds exactly as numpy does.
# No -ffast-math and no -march: the results must not depend on the machine.
C_FLAGS = ["-std=c99", "-O3", "-ffp-contract=off"]

NO_COMPILER = """
tinyllm needs a C compiler to build its native kernel (tl_rope.c, course module L9.6),
and the compiler {name!r} was not found.
Install gcc or clang, then run the install again:
    Debian/Ubuntu:  sudo apt-get install build-essential
    Fedora/RHEL:    sudo dnf install gcc
    macOS:          xcode-select --install
    conda:          conda install -c conda-forge c-compiler
To use another compiler, name it in CC, e.g. CC=clang python -m pip install -e .
"""

BUILD_FAILED = """
tinyllm could not build its native kernel (tl_rope.c, course module L9.6) with {name!r}:
{error}
The compiler's own messages are above. If the compiler is broken or incomplete, install
gcc or clang (Debian/Ubuntu: sudo apt-get install build-essential) or choose one with CC.
"""


class BuildWithClearErrors(build_ext):
    """build_ext that says what to do when there is no working C compiler."""

    def build_extensions(self):
        compiler = getattr(self.compiler, "compiler_so", None) or ["cc"]
        if shutil.which(compiler[0]) is None:
            raise SystemExit(NO_COMPILER.format(name=compiler[0]))
        try:
            super().build_extensions()
        except Exception as error:  # CompileError, LinkError, DistutilsExecError, OSError ...
            raise SystemExit(BUILD_FAILED.format(name=compiler[0], error=error)) from error


KERNEL = "course/reference/python/tinyllm/native/tl_rope.c"

setup(
    ext_modules=[
        Extension(
            "_tinyllm_native",
            sources=[KERNEL],
            include_dirs=["course/contracts/c"],
            depends=["course/contracts/c/tl_rope.h"],
            extra_compile_args=C_FLAGS,
        )
    ] if (Path(__file__).resolve().parent / KERNEL).is_file() else [],  # a student kit without L9.6 (ol release)
    cmdclass={"build_ext": BuildWithClearErrors},
)
