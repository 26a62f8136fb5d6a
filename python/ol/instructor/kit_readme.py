"""The README of a student kit (ol release): what a student does there.

It names only commands that work in the kit: the set-up, and start, tests,
check, submit, diff and list for the modules the kit holds, and says what to
hand in and how.  The kit's tests run every `./ol` command it shows.
"""

from __future__ import annotations

from ol.core.catalog import Catalog, Module
from ol.core.student_kit import Kit


def kit_readme(catalog: Catalog, kit: Kit) -> str:
    released = [catalog.get(m) for m in kit.released]
    first = released[0]
    graded = [m for m in released if m.grading]
    needs = [m for m in catalog.modules if m.id not in kit.released]
    names = _listed([m.id for m in released])
    lines = [
        f"# tinyllm: the student kit for {names}",
        "",
        "Your instructor wrote this kit from the tinyllm course with `ol release`. It holds the course",
        "runner, the chapters, the contracts and the course tests with their golden data"
        + (f", and the modules that {names} build on" if needs else "") + f". The answers of {names} are not",
        "here: you write them.",
        "",
        "On a fresh machine (Python 3.11+), in this folder:",
        "",
        "```bash",
        f"# set up, and start {first.id} (writes the stub {', '.join('python/' + f for f in first.files)})",
        f"python -m pip install -e '.[dev]' && ./ol start {first.id} --ref-deps",
        "```",
        "",
        "## The modules",
        "",
        "| module | what you write | your tests | chapter |",
        "|---|---|---|---|",
    ]
    for module in released:
        lines.append(f"| {module.id} {module.title} | {', '.join('python/' + f for f in module.files)} | "
                     f"{module.student_tests}/ | {module.chapter} |")
    lines += ["", "Each module, in this order:", ""]
    for module in released:
        lines += _loop(module)
    lines += [
        "`./ol start` never overwrites a file. `--ref-deps` takes what a module builds on from the",
        "reference that ships here" + (f" ({_listed([m.id for m in needs])})" if needs else "")
        + "; a module it builds on that you write here too comes from your own file even so.",
        "Exit codes: 0 ok, 1 tests fail (or the check does not pass, or diff is refused), 2 the command",
        "could not run. `./ol COMMAND --help` says more.",
        "",
    ]
    if graded:
        lines += _check_section(graded)
    lines += _submit_section(released)
    lines += ["## Your grade", ""]
    if graded:
        lines += [
            "The grade that counts is computed on your instructor's side, from what you submit: your",
            "files and your test folder, graded in isolation against the reference's mutants (with a",
            "reviewed list of equivalent ones set aside), a second correct implementation, and the same",
            "pitfalls. Your local check is feedback on the same formula; the two scores can differ.",
            "",
        ]
    else:
        lines += ["Your instructor grades what you submit on their side, from the course tests.", ""]
    lines += [
        "## After the deadline",
        "",
        "Your instructor adds each module's reference and model-answer tests to this kit (`git pull`",
        "brings them). Until then `./ol diff` says the reference is not released yet; afterwards it",
        "reruns the course tests and, once they pass, shows your code (-) against the reference (+).",
        "",
    ]
    return "\n".join(lines)


def _loop(module: Module) -> list[str]:
    mine = module.student_tests + "/"
    lines = ["```bash",
             f"./ol start {module.id} --ref-deps          # stub {', '.join('python/' + f for f in module.files)}, "
             f"start {mine}",
             f"./ol tests {module.id} --ref-deps          # the course tests on your code",
             f"./ol tests {module.id} --mine --ref-deps   # your own tests on your code"]
    if module.grading:
        lines.append(f"./ol check {module.id} --ref-deps          # the course tests, then the mutation grade of your tests")
    lines += [f"./ol submit {module.id}                    # {module.id}-submission.zip, checked as the grader "
              "will take it",
              f"./ol diff {module.id} --ref-deps           # your code against the reference, once it is released",
              "./ol list                           # every module, and how far you are",
              "```", ""]
    return lines


def _check_section(graded: list[Module]) -> list[str]:
    pitfalls = ", ".join(f"{m.grading.chaffs}/" for m in graded)
    return [
        "## What `./ol check` does here",
        "",
        "1. The course tests must pass on your code. From then on your code is the correct",
        "   implementation your own tests are graded around.",
        "2. Your test folder is read first: it may import only the catalog's allow-list, and may not read",
        "   files, source or the environment (`./ol tests MODULE --mine` shows what it would refuse).",
        "3. Your tests must pass on your code.",
        "4. They run against every mutant that mutmut generates from your own file (those that change only",
        "   an error message left out) and against the module's pitfalls, each a wrapper that shows one",
        "   misconception around your code, in a random order, with your code run again among them.",
        f"   A mutant is caught when your tests fail, hang or crash on it. (The pitfalls: {pitfalls})",
        "5. Score = caught / counted, over the mutants (the pitfalls are graded apart). You pass with the",
        "   module's threshold ("
        + ", ".join(f"{m.id}: {m.grading.threshold:.2f}" for m in graded) + ") and every pitfall caught.",
        "",
        "Every run is confined (bubblewrap: `sudo apt-get install bubblewrap`; without it the check runs",
        "unconfined and says so), and your tests call your code through a stand-in built from the",
        "contract, in another process: call it inside your test functions.",
        "",
        "What it promises, and what it does not: nobody has reviewed the mutants of your code, so a",
        "survivor may be equivalent to it (no test could tell them apart). Each survivor is shown with a",
        "call the course tests make on which your code and the changed copy differ: a test that makes",
        "that call and checks that value catches it. One with no such call is marked \"possibly",
        "equivalent\". Every survivor counts in the score. Each feature the chapter teaches (the",
        "key/value cache, bad input refused, ...) needs its share of mutants caught, as in the grade",
        "that counts: a suite that never calls a feature does not pass here either. A test that",
        "only your own code passes is not caught here (there is no second implementation in the kit),",
        "and your code passing the course tests does not make it the reference: the grade that counts is",
        "computed on your instructor's side.",
        "",
        "Nor can a check without an answer key stop code that tells its own changed copies apart. A copy",
        "of your code that does not import (it raises or exits while it is imported) is counted and never",
        "caught, and the check names it (best effort: the code shares its process with that word); but",
        "code that, once imported, behaves differently when it is",
        "changed makes the local score say more than your tests do. Your instructor's grade runs your",
        "tests against the reference's mutants, where that earns nothing.",
        "",
    ]


def _submit_section(released: list[Module]) -> list[str]:
    first = released[0]
    return [
        "## What to hand in, and how",
        "",
        f"For each module, your file ({', '.join('python/' + f for f in first.files)} for {first.id}) and your "
        f"test folder ({first.student_tests}/), nothing else. `./ol submit {first.id}` writes them, at these "
        f"paths, into {first.id}-submission.zip beside `./ol` and lists what is in it, after checking what the "
        "grader will take: the files at their paths, that they parse, that your tests keep the import rules "
        "of `./ol check`, and that the course tests run on your code. Hand in that archive as it is (do not "
        "unpack it or rename what is inside), the way your instructor says (an upload to Gradescope or your "
        "course's site).",
        "",
        "A problem it lists costs points but does not stop the archive: each part of the grade (the course "
        "tests, your tests' mutation grade, the pitfalls) stands on its own. Only a missing or unparsable "
        "module file leaves nothing to grade, and then nothing is written.",
        "",
    ]


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
