"""The grader's map matches its folder: the "Architecture" section of
python/ol/grading/README.md lists every .py file of python/ol/grading/ and of
its sub-folders (as sandbox/confine.py), one line each with what it holds,
and nothing else.  A file added, removed or
renamed without its line fails here, so the map a newcomer reads first
cannot drift from the code.

The list is the section's indented block, one file a line:

        wire.py               messages between processes: data only
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRADING = ROOT / "python" / "ol" / "grading"
SECTION = "## Architecture"
LISTED = re.compile(r"^ {4}(\S+\.py)(?: {2,}(\S.*))?$")   # "    name.py   what it holds"


def listed_files(readme: str) -> dict[str, str]:
    """{file name: what the line says it holds} from the Architecture section;
    a file listed twice is kept twice in the name (so the check sees it)."""
    if SECTION not in readme.splitlines():
        raise AssertionError(f"README.md has no line {SECTION!r}: the grader's map of files goes there")
    body = readme.split(SECTION + "\n", 1)[1]
    body = re.split(r"^## ", body, maxsplit=1, flags=re.MULTILINE)[0]
    found: dict[str, str] = {}
    for line in body.splitlines():
        match = LISTED.match(line)
        if match:
            name = match.group(1)
            found[name if name not in found else f"{name} (listed again)"] = match.group(2) or ""
    return found


def python_files(folder: Path) -> set[str]:
    """Every .py file of folder and its sub-folders, as its path below folder ("sandbox/confine.py")."""
    return {path.relative_to(folder).as_posix() for path in folder.rglob("*.py") if "__pycache__" not in path.parts}


def differences(readme: str, folder: Path) -> list[str]:
    """What keeps the section from being the folder's map, one line each ([]: none)."""
    listed = listed_files(readme)
    present = python_files(folder)
    problems = [f"{name} is in {folder.name}/ but not in the Architecture section: add a line saying what it holds"
                for name in sorted(present - set(listed))]
    problems += [f"{name} is in the Architecture section but not in {folder.name}/: remove or rename its line"
                 for name in sorted(set(listed) - present)]
    problems += [f"{name}'s line says nothing: say what the file holds" for name, said in listed.items() if not said]
    return problems


def test_the_architecture_section_lists_every_file_of_the_grader_and_no_other():
    readme = (GRADING / "README.md").read_text(encoding="utf-8")
    assert differences(readme, GRADING) == []


def test_a_file_without_its_line_or_a_line_without_its_file_is_found(tmp_path):
    readme = (GRADING / "README.md").read_text(encoding="utf-8")
    names = sorted(python_files(GRADING))
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "not_on_the_map.py").write_text("")   # a new file, not yet on the map
    (tmp_path / "sandbox" / "not_on_the_map.py").write_text("")   # and one in a sub-folder
    dropped = "wire.py"
    assert dropped in names
    shortened = "\n".join(line for line in readme.splitlines() if not LISTED.match(line)
                          or LISTED.match(line).group(1) != dropped)
    found = differences(shortened, tmp_path)
    assert any(line.startswith("not_on_the_map.py is in") for line in found), found
    assert any(line.startswith("sandbox/not_on_the_map.py is in") for line in found), found
    assert any(line.startswith(f"{dropped} is in") for line in found), found
    (tmp_path / "not_on_the_map.py").unlink()
    (tmp_path / dropped).unlink()
    assert any(line.startswith(f"{dropped} is in the Architecture") for line in differences(readme, tmp_path))
