"""Kit tests of ol.instructor.kit_readme: a student kit's README names only
what works in that kit.  Every `./ol` command it shows is a verb of ol and,
where it names a module, one the kit releases; a module kept back is never
named as one to start; `ol check` is explained only where a module is
graded.  (test_release runs every command of a real kit's README.)"""

from __future__ import annotations

import re

import pytest

from helpers.kit import ROOT
from ol.cli import VERBS
from ol.core.catalog import load_catalog
from ol.core.student_kit import Kit
from ol.instructor.kit_readme import kit_readme

CATALOG = load_catalog(ROOT)
MODULES = {m.id for m in CATALOG.modules}


def commands(readme: str) -> list[list[str]]:
    """Every `./ol ...` command of the README, as words (a comment after # dropped)."""
    found = []
    for line in readme.splitlines():
        for command in re.findall(r"\./ol(?: [^#`|]*)?", line):
            found.append(command.split()[1:])
    return found


@pytest.mark.parametrize("released", [("L7.3",), ("L7.3", "L7.4"), ("L7.5",), ("L0.1", "L7.3x")],
                         ids=lambda r: "+".join(r))
def test_every_command_names_a_verb_and_a_released_module(released):
    readme = kit_readme(CATALOG, Kit(released=released))
    shown = commands(readme)
    assert shown, "the README shows commands"
    for words in shown:
        if words and not words[0].isupper():          # `./ol COMMAND --help` names no verb
            assert words[0] in VERBS, words
        named = [w for w in words if w in MODULES]
        assert set(named) <= set(released), f"{words} names a module this kit does not release"
    started = {words[1] for words in shown if len(words) > 1 and words[0] == "start"}
    assert started == set(released), "each released module is started, and no other"


def test_the_check_is_explained_only_where_a_module_is_graded():
    graded = [m.id for m in CATALOG.modules if m.grading]
    ungraded = [m.id for m in CATALOG.modules if not m.grading]
    assert graded
    assert "## What `./ol check` does here" in kit_readme(CATALOG, Kit(released=(graded[0],)))
    if ungraded:
        readme = kit_readme(CATALOG, Kit(released=(ungraded[0],)))
        assert "## What `./ol check` does here" not in readme and f"./ol check {ungraded[0]}" not in readme
