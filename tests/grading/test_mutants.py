"""Kit tests of ol.grading.mutants: the generated mutants are mutmut's own,
and the message-only ones are exactly those inside a raise's arguments."""

from __future__ import annotations

import ast
import os
import tempfile
from pathlib import Path

import pytest

from helpers.kit import ROOT
from ol.grading.mutants import _generate, build_mutant_set

REFERENCE_ROPE = ROOT / "course/reference/python/tinyllm/modern/rope.py"


@pytest.mark.slow
def test_spliced_mutants_are_mutmuts_own():
    """ol builds each mutant's file by splicing mutmut's mutated node into the
    text; it must be the program mutmut's own deep_replace gives."""
    from mutmut.mutation.file_mutation import create_mutations, deep_replace

    source = REFERENCE_ROPE.read_text()
    ours = _generate(source, "rope.py")
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["."]\n')
        os.chdir(scratch)
        try:
            module, mutations, _, _ = create_mutations("rope.py", source)
        finally:
            os.chdir(here)
    assert len(ours) == len(mutations) > 100
    for mine, theirs in zip(ours, mutations):
        expected = deep_replace(module, theirs.original_node, theirs.mutated_node).code
        assert ast.dump(ast.parse(mine.source)) == ast.dump(ast.parse(expected)), mine.diff
    assert len({m.id for m in ours}) == len(ours), "mutant ids must be unique"


def test_message_only_mutants_are_exactly_those_inside_raise_arguments():
    mutants = build_mutant_set(REFERENCE_ROPE, ROOT / "course/mutants/L7.3/pitfalls.toml",
                               ROOT / "course/mutants/L7.3/equivalent.toml")
    assert mutants.message_only and mutants.counted
    for mutant in mutants.message_only:
        changed = [line for line in mutant.diff.splitlines() if line.startswith(("-", "+"))]
        assert changed, mutant.id
    conditions = [m for m in mutants.counted if "if r <= 0 or r % 2 or r > head_dim" in m.diff]
    assert conditions, "a mutant of a condition that raises must be counted"
    assert not mutants.stale_equivalents
