"""Every chapter runs, and agrees with the catalog (issues 19 and 30).

Every file of course/chapters/ is a chapter of a catalog module or
milestone, and every fenced block in it is executed by the convention of
tests/helpers/chapter_blocks.py:

- python blocks run on the reference in `ol shell`'s namespace (the names
  ol.student.shell binds, each block in a fresh namespace), and each output block is
  what its block prints, to the digits shown; a comment showing a result is
  refused;
- every python block pastes as it is into `ol shell MODULE --ref-deps -c ...`
  in a fresh clone, where nothing is started, and prints what the chapter
  shows (slow: a real `ol` per block);
- python contract blocks have the contracts' parameters and defaults;
- json blocks parse;
- bash blocks run as the chapter gives them, each command with the exit the
  chapter says (0 unless "exits N"), each block in a checkout of its own
  where every module is done (the reference's files, the model answers as
  the student's tests), and an output block after one is what its last
  command prints (slow; a milestone command runs once for every chapter).

And the checks that can fail, do: a changed digit, a swapped pair of
numbers and a changed word in an output block are caught; so is an excerpt
whose default differs from its contract.

Besides: each module's chapter names its course tests and its files; a
graded module's chapter names every test of its course tests, its pitfall
table names for each pitfall exactly the course tests pitfalls.toml's
`caught_by` lists (which `ol verify` runs), and each mistake a section warns
against by name ("misconception m07") is the misconceptions.toml entry that
says so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from helpers.chapter_blocks import (commands, contract_problems, output_problems, read_blocks, result_comments)
from helpers.kit import ROOT, copy_checkout, explain, home_env, run_ol, sampled_home
from ol.core.catalog import REFERENCE_TREE, STUDENT_TREE, load_catalog
from ol.core.deps import REFERENCE
from ol.student.milestone import load_milestones

CATALOG = load_catalog(ROOT)
MILESTONES = load_milestones(ROOT)
CHAPTERS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "course" / "chapters").glob("*.md"))
GRADED = [m for m in CATALOG.modules if m.grading is not None]
REFERENCE_TREE_PATH = ROOT / REFERENCE_TREE


def owner(chapter: str):
    """The module whose namespace the chapter's blocks run in: the module of the chapter, or a
    milestone's first need (its modules are that need and what it needs)."""
    for module in CATALOG.modules:
        if module.chapter == chapter:
            return module
    for milestone in MILESTONES.values():
        if milestone.chapter == chapter:
            return CATALOG.get(milestone.needs[0])
    raise AssertionError(f"{chapter} is the chapter of no module or milestone of course/catalog.toml")


def text_of(chapter: str) -> str:
    return (ROOT / chapter).read_text(encoding="utf-8")


def blocks_of(chapter: str, *kinds: str):
    return [b for b in read_blocks(text_of(chapter)) if b.kind in kinds]


# ---- python blocks, in the shell's namespace ------------------------------------------------

# Runs in the child that ol.student.shell.shell_environment prepares: each block (stdin: a JSON list of
# sources) in a namespace of its own, bound as `ol shell` binds __main__; stdout: for each, what it
# printed and the traceback if it raised.
_RUN_BLOCKS = r"""
import builtins, contextlib, io, json, os, sys, traceback
from ol.core.overlay import install_from_env
from ol.student.shell import NAMES_ENV, bind_ready_names

finder = install_from_env()
with open(os.environ[NAMES_ENV], encoding="utf-8") as file:
    contracts = json.load(file)
results = []
for code in json.load(sys.stdin):
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    bind_ready_names(namespace, sorted(finder.mapping), contracts)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "<chapter block>", "exec"), namespace)
        results.append({"printed": printed.getvalue(), "error": None})
    except BaseException:
        results.append({"printed": printed.getvalue(), "error": traceback.format_exc()})
json.dump(results, sys.__stdout__)
"""


def run_python_blocks(module, sources: list[str]) -> list[dict]:
    """Each source run on the reference in ol shell's namespace for `module`."""
    from ol.student.shell import shell_environment

    with shell_environment(ROOT, CATALOG, module, REFERENCE, implementation="reference") as (_, env):
        done = subprocess.run([sys.executable, "-c", _RUN_BLOCKS], input=json.dumps(sources), env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_block_says_what_it_is(chapter):
    problems = [f"{block.where(chapter)}: {problem}" for block in read_blocks(text_of(chapter))
                for problem in block.problems]
    problems += [f"{block.where(chapter)}: {comment!r} shows a result no test reads: print it, and show it in a "
                 "text output block after the block" for block in blocks_of(chapter, "python")
                 for comment in result_comments(block.code)]
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if blocks_of(c, "python")])
def test_python_blocks_run_on_the_reference_and_print_what_the_chapter_shows(chapter):
    blocks = blocks_of(chapter, "python")
    problems = []
    for block, result in zip(blocks, run_python_blocks(owner(chapter), [b.code for b in blocks]), strict=True):
        if result["error"]:
            problems.append(f"{block.where(chapter)} raised:\n{result['error']}")
        elif block.output is not None:
            problems += [f"{block.output.where(chapter)}: {p}" for p in output_problems(block.output.code,
                                                                                          result["printed"])]
    assert problems == [], "\n\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_contract_blocks_are_the_contracts(chapter):
    module = owner(chapter)
    contracts = {module.contract_for(f): text_of(module.contract_for(f)) for f in module.files
                 if module.contract_for(f) and f.endswith(".py")}
    problems = [f"{block.where(chapter)}: {p}" for block in blocks_of(chapter, "python contract")
                for p in contract_problems(block.code, contracts)]
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_json_blocks_parse(chapter):
    for block in blocks_of(chapter, "json"):
        try:
            json.loads(block.code)
        except json.JSONDecodeError as error:
            pytest.fail(f"{block.where(chapter)}: not JSON: {error}")


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory):
    """What a fresh clone holds: nothing of a student's is started."""
    return copy_checkout(tmp_path_factory.mktemp("fresh"))


@pytest.mark.slow   # a real ol per block
@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if blocks_of(c, "python")])
def test_every_python_block_pastes_into_ol_shell_in_a_fresh_clone(chapter, fresh_clone):
    module = owner(chapter)
    for block in blocks_of(chapter, "python"):
        r = run_ol(fresh_clone, "shell", module.id, "--ref-deps", "-c", block.code, cwd=fresh_clone)
        assert r.returncode == 0, f"ol shell {module.id} --ref-deps -c <{block.where(chapter)}>\n{explain(r)}"
        if block.output is not None:
            assert output_problems(block.output.code, r.stdout) == [], block.where(chapter)


# ---- the checks can fail --------------------------------------------------------------------


def test_a_changed_number_or_word_in_an_output_block_is_caught():
    shown = "cos 1    = 0.540302\nhalf:        (0.540302, -0.010000, 0.841471, 0.999950)\n"
    printed = "cos 1    = 0.5403023\nhalf:        (0.5403023, -0.00999983, 0.841471, 0.99995)\n"
    assert output_problems(shown, printed) == []
    assert output_problems(shown.replace("0.999950", "0.999951"), printed) == [
        "the chapter shows 0.999951, the block prints 0.99995"]
    assert output_problems(shown.replace("-0.010000, 0.841471", "0.841471, -0.010000"), printed)
    assert output_problems(shown.replace("half:", "interleaved:"), printed)
    assert output_problems(shown.replace("= 0.540302", "= -0.540302"), printed)
    assert output_problems("argmax 5/5 ok\n...\ndone\n", "argmax 4/5 ok\nmore\ndone\n")
    assert output_problems("tokens 16, ...\n", "tokens 16, 3.9 tokens/s\n") == []


def test_an_excerpt_that_is_not_its_contract_is_caught():
    contract = {"c.pyi": 'def apply_rope(x, cos, sin, layout: str = "half", rotary_dim=None) -> T: ...\n'
                         "class RopeSpec:\n    attention_scaling: float = 1.0\n    def apply(self, x, positions): ...\n"}
    assert contract_problems('def apply_rope(x, cos, sin, layout="half", rotary_dim=None): ...\n', contract) == []
    assert contract_problems('def apply_rope(x, cos, sin, layout="interleaved", rotary_dim=None): ...\n', contract)
    assert contract_problems("def apply_rope(x, cos, sin): ...\n", contract)
    assert contract_problems("class RopeSpec:\n    attention_scaling: float = 2.0\n", contract)
    assert contract_problems("class RopeSpec:\n    def apply(self, x): ...\n", contract)
    assert contract_problems("def rope_cos_sin(positions, inv_freq): ...\n", contract)
    assert contract_problems("class UnknownOpError(LookupError)\n", contract)   # not Python


def test_an_output_block_must_follow_its_block_and_a_result_comment_is_refused():
    text = "```python\nprint(1)\n```\n\nprose\n\n```text output\n1\n```\n"
    assert read_blocks(text)[1].problems and read_blocks(text)[0].output is None
    assert read_blocks(text.replace("\nprose\n", ""))[0].output is not None
    assert result_comments("nn.softmax(x)   # (0.25, 0.75, 0)\nk = 1   # [B, H, S, D]\n") == ["# (0.25, 0.75, 0)"]


# ---- shell commands, in a checkout where every module is done ----------------------------------


def done_checkout(dest: Path) -> Path:
    """A fresh clone in which a student has done every module: each file the reference's, each graded
    module's tests the model answer."""
    root = copy_checkout(dest)
    for module in CATALOG.modules:
        for file in module.files:
            (root / STUDENT_TREE / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / REFERENCE_TREE / file, root / STUDENT_TREE / file)
        if module.grading is not None:
            shutil.copytree(root / module.grading.model_answer, root / module.student_tests, dirs_exist_ok=True)
    return root


def run_command(root: Path, command: str, home: Path) -> subprocess.CompletedProcess:
    env = home_env(home, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(["bash", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def sampled(tmp_path_factory) -> Path:
    """A home whose mutant cache holds a fifth of each graded module's mutants: the chapters' ol check
    commands are about what a student types, and no output block shows their counts."""
    home = tmp_path_factory.mktemp("home")
    for module in CATALOG.modules:
        if module.grading is not None:
            sampled_home(home, every=5, module=module.id)
    return home


_MILESTONE_RUNS: dict[str, subprocess.CompletedProcess] = {}   # one run of each milestone command, for every chapter


@pytest.mark.slow   # every command of the chapter, ol check and ol milestone among them
@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if blocks_of(c, "bash")])
def test_shell_commands_run_as_the_chapter_gives_them(chapter, tmp_path, sampled):
    for number, block in enumerate(blocks_of(chapter, "bash")):
        root = done_checkout(tmp_path / f"done-{number}")   # each block from the start: an earlier one may reset
        changed = False
        for command in commands(block.code):
            words = command.text.split()
            if words[:4] == ["python", "-m", "pip", "install"]:   # no network: what it pins must be installed
                for pin in (w for w in words if "==" in w):
                    name, version = pin.split("==")
                    assert metadata.version(name) == version, f"{block.where(chapter)}: {pin} is not installed"
                continue
            if words[0] == "python" and len(words) > 1 and words[1].startswith("bench/"):
                assert (root / words[1]).is_file(), f"{block.where(chapter)}: no benchmark {words[1]}"
                continue
            if words[:2] == ["./ol", "milestone"] and not changed:
                r = _MILESTONE_RUNS.get(command.text) or _MILESTONE_RUNS.setdefault(
                    command.text, run_command(root, command.text, sampled))
            else:
                r = run_command(root, command.text, sampled)
            changed = changed or words[:2] == ["./ol", "reset"]
            assert r.returncode == command.exits, f"{block.where(chapter)}: {command.text}\n{explain(r)}"
        if block.output is not None:
            assert output_problems(block.output.code, r.stdout) == [], f"{block.where(chapter)}\n{explain(r)}"


# ---- the chapters and the catalog -----------------------------------------------------------


@pytest.mark.parametrize("module", [m for m in CATALOG.modules], ids=lambda m: m.id)
def test_chapter_exists_and_names_its_course_tests(module):
    chapter = ROOT / module.chapter
    assert chapter.is_file(), f"{module.id}: the catalog names {module.chapter}, which does not exist"
    text = chapter.read_text(encoding="utf-8")
    assert module.course_tests in text, f"{chapter.name} does not name its course tests {module.course_tests}"
    assert module.id in text.splitlines()[0], f"{chapter.name} does not open with its module id"
    for path in module.files:
        assert path in text, f"{chapter.name} does not name the file the student writes, {path}"


def course_test_names(module) -> list[str]:
    return sorted({name for path in (ROOT / module.course_tests).glob("test_*.py")
                   for name in re.findall(r"^def (test_\w+)\(", path.read_text(encoding="utf-8"), re.MULTILINE)})


@pytest.mark.parametrize("module", GRADED, ids=lambda m: m.id)
def test_a_graded_chapter_names_every_course_test(module):
    text = text_of(module.chapter)
    names = course_test_names(module)
    assert len(names) >= 10
    missing = [name for name in names if f"`{name}`" not in text]
    assert missing == [], f"the {module.id} chapter does not mention {missing}"


def pitfalls_of(module) -> list[dict]:
    with (ROOT / module.grading.pitfalls).open("rb") as file:
        return tomllib.load(file)["pitfall"]


@pytest.mark.parametrize("module", GRADED, ids=lambda m: m.id)
def test_the_pitfall_table_names_the_course_tests_that_catch_each_pitfall(module):
    """The last column of each pitfall's row is exactly its caught_by, which ol verify runs."""
    lines = text_of(module.chapter).splitlines()
    for pitfall in pitfalls_of(module):
        rows = [line for line in lines if line.startswith(f"| {pitfall['id']} |")]
        assert len(rows) == 1, f"the {module.id} chapter's pitfall table has no row (or two) for {pitfall['id']}"
        named = re.findall(r"`(test_\w+)`", rows[0].rsplit("|", 2)[-2])
        assert sorted(named) == sorted(pitfall["caught_by"]), (
            f"{module.id}'s row of {pitfall['id']} names {named}; pitfalls.toml's caught_by is {pitfall['caught_by']}")


def sections(text: str) -> dict[int, str]:
    """section number -> its text, for the chapter's numbered sections."""
    parts = re.split(r"^## (\d+)\. .*$", text, flags=re.MULTILINE)
    return {int(number): body for number, body in zip(parts[1::2], parts[2::2])}


@pytest.mark.parametrize("module", GRADED, ids=lambda m: m.id)
def test_each_warning_is_named_in_its_section(module):
    path = (ROOT / module.grading.pitfalls).with_name("misconceptions.toml")
    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("misconception", []) if path.exists() else []
    warnings = {entry["id"]: entry for entry in entries if "section" in entry}
    assert all(entry.get("caught_by") for entry in warnings.values()), "a warning names the course tests it fails"
    text = text_of(module.chapter)
    named = set(re.findall(r"\bmisconception (m\d\d)", text))
    assert named - {entry["id"] for entry in entries} == set(), "the chapter names a misconception the file lacks"
    for mistake_id, entry in warnings.items():
        assert f"misconception {mistake_id}" in sections(text)[entry["section"]], (
            f"{mistake_id} says chapter section {entry['section']} warns against it, but that section does not "
            f"name it as \"misconception {mistake_id}\"")


# ---- L7.5, section 11: "a transposed wo" raises ----------------------------------------------


@pytest.mark.slow   # two runs of the course tests (about a minute on two busy cores)
def test_l75s_transposed_wo_case_is_the_chapters_example():
    """The course test's case is the transpose of a valid wo, and of another shape than a valid one (H * D = 12,
    d = 8; with H * D = d, as in the other cases, a transposed wo has the valid shape and nothing can see it).
    An attention that accepts a wo either way round fails the case; the reference passes it."""
    from ol.core.runner import run_course_tests

    reference = (REFERENCE_TREE_PATH / "tinyllm/modern/attention.py").read_text(encoding="utf-8")
    forgiving = reference.replace(
        "    batch, seq, head_dim = _check(",
        "    if isinstance(wo, Tensor) and isinstance(x, Tensor) and wo.shape == (wq.shape[0], x.shape[-1]):\n"
        "        wo = F.transpose(wo, (1, 0))   # a transposed wo, taken the right way round\n"
        "    batch, seq, head_dim = _check(", 1)
    assert forgiving != reference
    case = ["-k", "validation and wo and transposed", "-q"]
    runs = {name: run_course_tests(ROOT, "L7.5", ref_deps=True, sources={"tinyllm.modern.attention": source},
                                   pytest_args=case, capture=True)
            for name, source in (("reference", reference), ("forgiving", forgiving))}
    assert runs["reference"].ok and runs["reference"].passed == ["test_validation[wo transposed]"], runs["reference"].output
    assert runs["forgiving"].failed == ["test_validation[wo transposed]"], runs["forgiving"].output
