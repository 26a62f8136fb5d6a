"""Is this checkout a student kit, and what does it hold back?

`ol release` (ol.instructor.release) writes a student kit from the instructor's
repository and records what it did in the kit's course/release.toml:

    released = ["L7.3", "L7.4"]   # modules handed out without their answers
    solutions = ["L7.3"]          # of those, the ones whose reference was added since (--solutions)

A module is withheld while it is released and its solutions are not.  The
commands that would need its reference read this file: `ol diff` says the
reference is not released yet; `--ref-deps` takes a withheld need from the
student's own files; `ol check` grades against mutants of the student's own
code (ol.grading.local).  A checkout without the file (the instructor's
repository, or a clone for studying alone) withholds nothing.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ol.core.errors import OlError

MANIFEST = "course/release.toml"


@dataclass(frozen=True)
class Kit:
    released: tuple[str, ...] = ()
    solutions: tuple[str, ...] = ()

    @property
    def withheld(self) -> tuple[str, ...]:
        return tuple(m for m in self.released if m not in self.solutions)


def read_kit(root: str | Path) -> Kit | None:
    """The kit's manifest, or None when `root` is not a student kit."""
    path = Path(root) / MANIFEST
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise OlError(f"{MANIFEST} (written by ol release) cannot be read: {error}; restore it with "
                      f"git checkout -- {MANIFEST}") from None
    lists = {key: data.get(key, []) for key in ("released", "solutions")}
    if not all(isinstance(v, list) and all(isinstance(m, str) for m in v) for v in lists.values()):
        raise OlError(f"{MANIFEST}: released and solutions must be lists of module ids; restore it with "
                      f"git checkout -- {MANIFEST}")
    return Kit(tuple(lists["released"]), tuple(lists["solutions"]))


def withheld(root: str | Path) -> tuple[str, ...]:
    """Module ids whose answers this checkout does not hold (none outside a student kit)."""
    kit = read_kit(root)
    return kit.withheld if kit else ()


def released(root: str | Path, module_id: str) -> bool:
    """True in a student kit for a module handed out by ol release (its local
    check grades against the student's own code, with or without solutions)."""
    kit = read_kit(root)
    return kit is not None and module_id in kit.released


def write_manifest(root: str | Path, kit: Kit) -> None:
    lines = [
        "# Written by `ol release`: this checkout is a student kit.",
        "# released: modules handed out without their answers (reference, alternates, model answer,",
        "#   calibration suites, pitfall edits, equivalent list); their local check (ol check) grades",
        "#   your tests against mutants of your own code and the chaffs around it.",
        "# solutions: released modules whose reference and model answer were added since (ol diff shows them).",
        f"released = [{', '.join(_quoted(m) for m in kit.released)}]",
        f"solutions = [{', '.join(_quoted(m) for m in kit.solutions)}]",
        "",
    ]
    (Path(root) / MANIFEST).write_text("\n".join(lines), encoding="utf-8")


def _quoted(text: str) -> str:
    import json

    return json.dumps(text)
