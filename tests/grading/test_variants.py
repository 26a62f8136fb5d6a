"""A variant's key and its kind, read in one place (ol.grading.variants)."""

from __future__ import annotations

import pytest

from ol.grading.variants import (ALTERNATE, MUTANT, PITFALL, REFERENCE, STUDENT, alternate_key, describe, is_pitfall,
                                 kind_of, pitfall_key)


@pytest.mark.parametrize("key, kind, said", [
    ("reference", REFERENCE, "the reference"),
    (alternate_key(1), ALTERNATE, "a second correct implementation (alternate:1)"),
    (pitfall_key("s01"), PITFALL, "pitfall s01"),
    ("student", STUDENT, None),                         # graded by the course tests, never named as a variant
    ("tinyllm.modern.rope.x_apply_rope__mutmut_12", MUTANT, "mutant tinyllm.modern.rope.x_apply_rope__mutmut_12"),
    ("pitfall", MUTANT, "mutant pitfall"),              # no id: not a pitfall's key
    ("pitfalls:s01", MUTANT, "mutant pitfalls:s01"),
])
def test_each_key_has_one_kind_and_one_name(key, kind, said):
    assert kind_of(key) == kind
    assert is_pitfall(key) == (kind == PITFALL)
    assert said is None or describe(key) == said
