#!/usr/bin/env python3
"""ol: the tinyllm course runner.  ./ol --help

Works from any directory and always acts on the repository it lives in: it
finds its own real path (through symlinks), puts <repo>/python first on
sys.path (ahead of any installed ol or tinyllm) and runs ol.cli.main.
"""

import os
import sys

if sys.version_info < (3, 11):
    sys.exit(f"ol needs Python 3.11 or newer (for tomllib); this is {sys.version.split()[0]} "
             f"at {sys.executable}")

ROOT = os.path.dirname(os.path.realpath(__file__))
PYTHON_TREE = os.path.join(ROOT, "python")

# Drop the entries that could shadow the repository's own packages: the
# script's directory (as invoked and as resolved) and the current directory.
try:
    _cwd = os.getcwd()
except FileNotFoundError:  # the current directory was deleted
    _cwd = ""
_shadows = {"", ".", _cwd, ROOT, os.path.dirname(os.path.abspath(__file__))}
sys.path[:] = [PYTHON_TREE] + [p for p in sys.path if p not in _shadows and p != PYTHON_TREE]
for _name in [n for n in sys.modules if n == "ol" or n.startswith("ol.")]:
    del sys.modules[_name]  # a site hook may have imported another ol

from ol.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(root=ROOT))
