"""Every "section N" in the course's texts points to the section it means.

The chapters number their sections (`## 10. Worked example by hand`), and
the starters, the other chapters, the contracts and the course tests refer
to them by number: "the chapter's worked example (section 10)", "(L7.3,
section 8)", "course/chapters/L7.4-rope-scaling.md, sections 3 to 9",
"L7.3's worked example (section 10 there)".  A renumbered chapter, or a
number written from memory, sends a student to the wrong place.

Two checks:

- every reference resolves: the chapter it points into (its own module's,
  or the one it names just before the number) has every section it names;
- a reference whose own clause names a section by its heading ("the worked
  example (section 3)") points to that section, among the ones it names.
  A heading is named by its title (cut at ':', '(' or ','; without a leading
  article) or, for a title of three words or more, by its first two words
  when neither is a small word ("worked example").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from ol.core.catalog import load_catalog

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
CHAPTER_OF = {module.id: module.chapter for module in CATALOG.modules}
SCANNED = ("course/starters/*.py", "course/chapters/*.md", "course/contracts/**/*.pyi",
           "course/contracts/**/*.h", "course/tests/**/*.py")

HEADING = re.compile(r"^## (\d+)\. (.+)$", re.M)
MODULE_ID = r"\b[LM]\d+\.\d+x?\b"
# "section 10", "sections 3 to 9", "sections 8 and 9", "section 10 there"; not
# a paper's "sections 3.2 to 3.4".
REFERENCE = re.compile(r"\bsections?\s+(?P<first>\d+)(?!\d|\.\d)"
                       r"(?:\s*(?P<joint>to|and)\s*(?P<last>\d+)(?!\d|\.\d))?(?P<there>\s+there)?", re.I)
# What names another chapter right before the number: "L7.3, ", "the L7.3 chapter, ", "course/chapters/X.md, "
NAMED_CHAPTER = re.compile(rf"(?:(?P<path>course/chapters/[\w.-]+\.md)|(?P<module>{MODULE_ID})(?: chapter)?),\s*$")
# Where a clause starts: the subject of a reference is named after the last of these.
CLAUSE_START = re.compile(r"[.;:!?] |\||----|\)|\*\*;")
SMALL_WORDS = {"the", "a", "an", "of", "to", "and", "or", "in", "on", "by", "for", "with", "from", "what", "why",
               "how", "your", "one", "two", "any", "is", "give", "gives"}


@dataclass(frozen=True)
class Reference:
    file: str            # where the reference is written, relative to the repository
    text: str            # "section 3", "sections 3 to 9"
    clause: str          # the words before it, in its own clause
    chapter: str         # the chapter it points into
    numbers: frozenset   # the sections it names

    def __str__(self) -> str:
        return f"{self.file}: '...{self.clause.strip()} {self.text}' (in {self.chapter})"


def sections(chapter: str) -> dict[int, str]:
    """{number: title} of a chapter's numbered sections ({} if it has none or is missing)."""
    path = ROOT / chapter
    return {int(n): title for n, title in HEADING.findall(path.read_text())} if path.exists() else {}


def heading_names(title: str) -> set[str]:
    """The phrases that name a heading in running text (see the module docstring)."""
    name = re.split(r"[:(,?]", title.lower())[0].strip()
    name = re.sub(r"^(the|a|an) ", "", name)
    words = name.split()
    names = {name}
    if len(words) >= 3 and not SMALL_WORDS.intersection(words[:2]):
        names.add(" ".join(words[:2]))
    return names


def flatten(text: str) -> str:
    """The text as one line: comment markers at line starts gone, so that a
    reference broken over two comment lines reads whole."""
    text = re.sub(r"^[ \t]*(?:#|//|\*)[ \t]?", "", text, flags=re.M)
    return re.sub(r"\s+", " ", text)


def own_chapter(rel: str) -> str | None:
    """The chapter of the module a file belongs to."""
    for module in CATALOG.modules:
        if (rel == module.chapter or rel.startswith(module.course_tests + "/")
                or rel == f"course/starters/{module.id}.py" or rel in module.contracts):
            return module.chapter
    return None


def references(rel: str, text: str) -> list[Reference]:
    """Every section reference in `text` (the file `rel`), resolved to its chapter."""
    found = []
    flat = flatten(text)
    for match in REFERENCE.finditer(flat):
        before = flat[max(0, match.start() - 80):match.start()]
        named = NAMED_CHAPTER.search(before)
        if named:
            chapter = named["path"] or CHAPTER_OF.get(named["module"], f"(no module {named['module']})")
        elif match["there"] and re.findall(MODULE_ID, before):
            chapter = CHAPTER_OF.get(re.findall(MODULE_ID, before)[-1], "(unknown module)")
        else:
            chapter = own_chapter(rel) or "(no chapter: the file belongs to no module)"
        first, last = int(match["first"]), int(match["last"] or match["first"])
        numbers = frozenset(range(first, last + 1) if match["joint"] == "to" else {first, last})
        clause = CLAUSE_START.split(before[-60:])[-1]
        found.append(Reference(rel, match.group(0), clause, chapter, numbers))
    return found


def problems(reference: Reference) -> list[str]:
    """What is wrong with one reference: a section that does not exist, or a
    clause that names another section's heading than the ones it points to."""
    titles = sections(reference.chapter)
    if not titles:
        return [f"{reference}: that chapter has no numbered sections"]
    missing = sorted(reference.numbers - set(titles))
    if missing:
        return [f"{reference}: no section {', '.join(map(str, missing))} there (it has 1 to {max(titles)})"]
    clause = reference.clause.lower()
    named = {n for n, title in titles.items()
             if any(re.search(rf"\b{re.escape(name)}\b", clause) for name in heading_names(title))}
    if named and not named & reference.numbers:
        meant = ", ".join(f"section {n} ('{titles[n]}')" for n in sorted(named))
        shown = ", ".join(f"'{titles[n]}'" for n in sorted(reference.numbers))
        return [f"{reference}: the words name {meant}, but it points to {shown}"]
    return []


def course_texts() -> list[str]:
    return sorted({str(p.relative_to(ROOT)) for pattern in SCANNED for p in ROOT.glob(pattern)})


# ---- the tests ------------------------------------------------------------------------


@pytest.mark.parametrize("rel", course_texts())
def test_every_section_reference_points_where_it_means(rel):
    found = references(rel, (ROOT / rel).read_text(encoding="utf-8"))
    wrong = [problem for reference in found for problem in problems(reference)]
    assert not wrong, "\n".join(wrong)


def test_the_references_are_found():
    """The scan sees the references it should (a pattern that matched nothing
    would make the test above pass on any text)."""
    found = {str(r): r for rel in course_texts() for r in references(rel, (ROOT / rel).read_text(encoding="utf-8"))}
    assert len(found) >= 60, len(found)
    starter = [r for r in found.values() if r.file == "course/starters/L7.3.py"]
    assert [(r.chapter, sorted(r.numbers)) for r in starter] == [("course/chapters/L7.3-rope.md", [10])]
    elsewhere = [r for r in found.values() if r.file == "course/chapters/L9.6-tl-rope.md" and "there" in r.text]
    assert [r.chapter for r in elsewhere] == ["course/chapters/L7.3-rope.md"], "'section 10 there' is L7.3's"
    split = [r for r in found.values() if r.file == "course/starters/L7.4.py" and r.text.startswith("sections")]
    assert split and split[0].numbers == frozenset(range(3, 10)), "a range broken over two comment lines"


@pytest.mark.parametrize("text, complaint", [
    ("    # The chapter's worked example (section 3): r = 4\n", "name section 10 ('Worked example by hand')"),
    ("    # The pitfalls (section 13) are the ones to catch\n", "name section 14 ('Pitfalls')"),
    ("    # see section 40\n", "no section 40 there"),
    ("    # (L7.3, sections 9 to 19)\n", "no section 18, 19 there"),
    ("    # (L0.1, section 2)\n", "has no numbered sections"),
])
def test_a_wrong_reference_is_caught(text, complaint):
    found = references("course/starters/L7.3.py", text)
    assert len(found) == 1
    assert complaint in " ".join(problems(found[0]))


def test_a_right_reference_passes():
    for text in ("# The chapter's worked example (section 10): r = 4\n", "# (L7.4, sections 3 to 9)\n",
                 "# Use positions other than 0 (section 3).\n", "# RoFormer, sections 3.2 to 3.4\n"):
        assert [p for r in references("course/starters/L7.3.py", text) for p in problems(r)] == [], text
