"""Kit tests of python/ol/GLOSSARY.md: the rules it marks held."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from helpers.kit import ROOT

PACKAGE = ROOT / "python" / "ol"
# The record's fields that keep mutmut's word (outside checks read them by it): CheckResult's,
# its PitfallOutcome's and MutantLine's, and ol grade's Outcome (grades.csv's column).
RECORD_FIELDS = {"killed", "killed_by"}
RECORDS = {"CheckResult", "PitfallOutcome", "MutantLine", "Outcome"}


def names_for_caught(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) of every name the code gives that says killed or kills
    for a caught variant: variables, arguments, functions, classes, and
    fields but the record's own."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                        and statement.target.id in RECORD_FIELDS and node.name in RECORDS:
                    statement.target.id = "_the_records_field"    # held apart from the names below
        named = (node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, ast.arg) else
                 node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None)
        if named is not None and named.startswith(("killed", "kills")):
            found.append((node.lineno, named))
    return found


def test_a_caught_variant_is_never_named_killed_but_in_the_records_fields():
    found = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in sorted(PACKAGE.rglob("*.py"))
             for line, name in names_for_caught(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "a variant is caught (GLOSSARY.md); kill is for processes:\n" + "\n".join(found)


def test_the_rule_finds_a_killed_name_and_spares_the_records_field():
    planted = ast.parse("class CheckResult:\n    killed: int = 0\n\n"
                        "class Verdict:\n    killed: bool\n\n"
                        "def save(kills):\n    killed = [k for k in kills]\n    return killed\n")
    assert sorted(names_for_caught(planted)) == [(5, "killed"), (7, "kills"), (8, "killed"), (8, "kills"),
                                                 (9, "killed")]


def test_no_two_classes_share_a_name():
    classes = Counter(node.name for path in PACKAGE.rglob("*.py")
                      for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                      if isinstance(node, ast.ClassDef))
    assert not [name for name, count in classes.items() if count > 1], \
        "one name, one class (GLOSSARY.md's outcome): " + str(sorted(n for n, c in classes.items() if c > 1))


# Where submissions are read and graded, "source" would say a module's text (GLOSSARY.md's source);
# a submission's is its entry.  The record's JSON key and grades.csv's column, a contract, are strings.
SUBMISSION_CODE = [PACKAGE / "core" / "submissions.py", *sorted((PACKAGE / "instructor" / "class_grading").glob("*.py"))]


def fields_named_source(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, class) of every class field named source."""
    return [(statement.lineno, node.name) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            for statement in node.body
            if isinstance(statement, ast.AnnAssign) and getattr(statement.target, "id", None) == "source"]


def test_a_submission_has_an_entry_never_a_source():
    found = [f"{path.relative_to(ROOT)}:{line}: {name}.source" for path in SUBMISSION_CODE
             for line, name in fields_named_source(ast.parse(path.read_text(encoding="utf-8")))]
    assert len(SUBMISSION_CODE) > 5 and not found, \
        "a submission's entry is its entry; source is a module's text (GLOSSARY.md):\n" + "\n".join(found)


def test_the_rule_finds_a_field_named_source():
    planted = ast.parse("class Submission:\n    student: str\n    source: str\n\nclass Kept:\n    entry: str\n")
    assert fields_named_source(planted) == [(3, "Submission")]
