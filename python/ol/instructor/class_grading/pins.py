"""The exact versions a grade depends on: every package the checkout needs to grade
(its dependencies and the `dev` extra, and all they need in turn), at the
version installed in the environment that builds the autograder, where the
instructor runs `ol verify`.

    text = lock_file(root, python="3.11")     # "name==version" lines, sorted

setup.sh installs the lock with `pip install --no-deps --only-binary=:all:
-r requirements.lock` and then `pip check`: nothing is resolved, nothing is
built, nothing newer arrives when PyPI changes, and a lock that misses a
dependency fails loudly.  Markers are evaluated for the autograder's
platform (Linux, x86_64, CPython `python`), not the builder's.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import tomllib
from pathlib import Path

from ol.core.errors import OlError

EXTRAS = ("dev",)      # the checkout's extras a grade needs (pyproject.toml)


class LockError(OlError):
    """A package the grade needs is not installed here, so its version is unknown."""


def lock_file(root: Path, python: str) -> str:
    """requirements.lock's text for an autograder running CPython `python` on Linux x86_64."""
    pins = locked_versions(root, python)
    header = ["# The packages an autograder grades with, pinned to the versions installed where it was built",
              f"# (Python {platform.python_version()}, where `ol verify` runs), for CPython {python} on Linux.",
              "# Written by ol gradescope; installed by setup.sh with --no-deps --only-binary=:all:."]
    return "\n".join(header + [f"{name}=={version}" for name, version in sorted(pins.items())]) + "\n"


def locked_versions(root: Path, python: str) -> dict[str, str]:
    """{normalised name: installed version} of the whole dependency closure."""
    from packaging.requirements import Requirement

    project = tomllib.loads((Path(root) / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project.get("dependencies", []))
    for extra in EXTRAS:
        wanted += project.get("optional-dependencies", {}).get(extra, [])
    environment = {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux",
                   "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
                   "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    pins: dict[str, str] = {}
    expanded: set[tuple[str, str]] = set()
    stack = [(Requirement(text), "") for text in wanted]
    while stack:
        requirement, extra = stack.pop()
        if requirement.marker and not requirement.marker.evaluate({**environment, "extra": extra}):
            continue
        name = normalised(requirement.name)
        try:
            distribution = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            raise LockError(f"the autograder needs {requirement} (for Python {python}), which is not installed "
                            "here, so its version cannot be pinned; build the bundle from the Python environment "
                            f"you grade with (python -m pip install -e '.[{','.join(EXTRAS)}]')") from None
        if not requirement.specifier.contains(distribution.version, prereleases=True):
            raise LockError(f"{requirement} is needed, but {distribution.version} is installed here; install a "
                            "matching version, run ol verify, then build the bundle again")
        pins[name] = distribution.version
        for extra_name in ["", *sorted(requirement.extras)]:     # what it needs, and what each extra asked adds
            if (name, extra_name) not in expanded:
                expanded.add((name, extra_name))
                stack += [(Requirement(text), extra_name) for text in distribution.requires or []]
    return pins


def normalised(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()
