"""`ol check L7.3` beside `mutmut run`, on the same reference rope.py and the
same suite (the instructor's model answer), alternated in one run.

    python bench/bench_check.py [--rounds 3]

Both graders run as the student would start them, from their own scratch
copies:
  ol check    a copy of the repository whose student tree holds the reference
              rope.py and the model answer; `./ol check L7.3 --ref-deps`
              (course tests first, then the reference, the alternate, 7
              pitfalls and every counted generated mutant, module-level ones
              included, with the correct implementations repeated among them;
              every run confined, the suite collected once), and the same
              with --isolated (the suite collected afresh in every run, as the
              instructor's grade does);
  mutmut run  a scratch project with the reference tinyllm tree and the same
              suite; `mutmut run` from an empty mutants/ cache each round
              (function-level mutants only: it cannot run the others).
Prints each round's wall times and the median ratios ol / mutmut.  The
machine is shared: only the ratio, measured side by side, means much.

Then the re-check, twice: a suite of three files (the model answer and
calibration suites a and c), and the model answer's single file as most
students write it; each checked once, one test appended to one file, then
`ol check` again (it keeps the catches of every test whose code is unchanged,
and cuts each pitfall's run where the last check saw the rest) beside
`ol check --fresh` (everything graded again).  Prints the median ratio
re-check / cold of each (target <= 0.25).

    python bench/bench_check.py --recheck-only    # the re-checks alone, without mutmut
    python bench/bench_check.py --profile         # where one check's time goes, by stage

--profile grades the model answer once shared and once isolated, in
process, then re-checks it shared after one test is added, and prints
each stage's wall time (ol.grading.events' StageEnded events: fixtures and the static check, the sandboxes' start, the course
tests, the suite on every variant with its collection, the left-out
report, the result), the runs (on correct implementations and again) and
runs and mutants per second, beside `mutmut run`'s mutants per second on
the same suite (its function-level mutants, from mutmut export-cicd-stats).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "course" / "reference" / "python"
MODEL_ANSWER = REFERENCE / "tests" / "l7-3-rope"


def ol_workspace(scratch: Path) -> Path:
    """A copy of the repository's tracked files with a finished student tree."""
    repo = scratch / "repo"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    shutil.copy2(REFERENCE / "tinyllm/modern/rope.py", repo / "python/tinyllm/modern/rope.py")
    shutil.copytree(MODEL_ANSWER, repo / "python/tests/l7-3-rope", dirs_exist_ok=True)
    return repo


def mutmut_project(scratch: Path) -> Path:
    """The reference tinyllm tree and the same suite, configured for mutmut."""
    project = scratch / "mutmut"
    shutil.copytree(REFERENCE / "tinyllm", project / "tinyllm", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(MODEL_ANSWER, project / "tests" / "l7-3-rope", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "pyproject.toml").write_text(
        '[tool.mutmut]\n'
        'source_paths = ["tinyllm/"]\n'
        'only_mutate = ["tinyllm/modern/rope.py"]\n'
        'pytest_add_cli_args_test_selection = ["tests/l7-3-rope/"]\n'
    )
    return project


def timed(command: list[str], cwd: Path, env: dict, ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in ok:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--recheck-only", action="store_true", help="only the re-checks (no mutmut)")
    parser.add_argument("--profile", action="store_true", help="one check's time by stage, beside mutmut's rate")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if args.profile:
        profile(env)
        return
    if args.recheck_only:
        recheck(args.rounds, env, files="ac")
        recheck(args.rounds, env, files="")
        return
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        scratch = Path(tmp)
        repo, project = ol_workspace(scratch), mutmut_project(scratch)
        # --fresh: every mutant graded in every round (a check of an unchanged
        # suite would otherwise keep the last check's verdicts)
        check = [str(repo / "ol"), "check", "L7.3", "--ref-deps", "--fresh"]
        # warm both once: compiled bytecode, ol's mutant cache, mutmut's imports
        timed(check, repo, env)
        timed([sys.executable, "-m", "mutmut", "run"], project, env)
        times: dict[str, list[float]] = {"ol check": [], "ol check --isolated": [], "mutmut run": []}
        for number in range(1, args.rounds + 1):
            times["ol check"].append(timed(check, repo, env))
            times["ol check --isolated"].append(timed(check + ["--isolated"], repo, env))
            shutil.rmtree(project / "mutants", ignore_errors=True)
            times["mutmut run"].append(timed([sys.executable, "-m", "mutmut", "run"], project, env))
            print(f"round {number}: " + "   ".join(f"{name} {t[-1]:6.2f} s" for name, t in times.items()))
    for name in ("ol check", "ol check --isolated"):
        ratios = [o / m for o, m in zip(times[name], times["mutmut run"])]
        target = "  (target <= 0.30)" if name == "ol check" else "  (the instructor's grade; target <= 0.40)"
        print(f"median ratio {name} / mutmut run: {statistics.median(ratios):.2f} "
              f"(spread {min(ratios):.2f} to {max(ratios):.2f}){target}")
    recheck(args.rounds, env, files="ac")
    recheck(args.rounds, env, files="")


PROFILE_DRIVER = """
import json, sys
sys.path.insert(0, {python!r})
from pathlib import Path
from dataclasses import asdict
from ol.grading.check import CheckRequest, check_module
from ol.grading.events import StageEnded
events = []
result = check_module(Path({repo!r}), "L7.3", CheckRequest(ref_deps=True, fresh={fresh!r}, isolated={isolated!r}),
                      on_event=lambda event: events.append(asdict(event)) if isinstance(event, StageEnded) else None)
print(json.dumps({{"events": events, "seconds": result.seconds, "counted": result.counted, "score": result.score}}))
"""


def profile(env: dict) -> None:
    """Where one check of the model answer spends its time, shared and isolated."""
    import json

    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        scratch = Path(tmp)
        repo, project = ol_workspace(scratch), mutmut_project(scratch)
        tests = repo / "python/tests/l7-3-rope" / "test_rope_oracle.py"
        original = tests.read_text()
        # a cold check shared and isolated; then a re-check after one test is added (the
        # cache filled by a first check of the unedited suite)
        for name, isolated, fresh, edit in (("ol check", False, True, False), ("ol check --isolated", True, True, False),
                                            ("ol check (to fill the cache)", False, False, False),
                                            ("ol check, re-check after adding one test", False, False, True)):
            if edit:
                tests.write_text(original + "\n\ndef test_added():\n    assert rope_cos_sin(0, [1.0])[0][0] == 1\n")
            driver = PROFILE_DRIVER.format(python=str(repo / "python"), repo=str(repo), isolated=isolated, fresh=fresh)
            done = subprocess.run([sys.executable, "-c", driver], cwd=repo, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"the profiled check failed:\n{done.stderr[-3000:]}")
            data = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{name}: {data['seconds']:.2f} s, score {data['score']}")
            for event in data["events"]:
                counts = {k: v for k, v in event.items() if k not in ("stage", "seconds") and v is not None}
                print(f"  {event['seconds']:7.2f} s  {event['stage']}"
                      + (f"  {counts}" if counts else ""))
                if event["runs"] is not None and event["seconds"] > 0:
                    suite = event["seconds"]
                    print(f"           {event['runs'] / suite:.1f} runs/s, "
                          f"{data['counted'] / suite:.1f} mutants/s (pitfalls and generated, counted)")
        shutil.rmtree(project / "mutants", ignore_errors=True)
        seconds = timed([sys.executable, "-m", "mutmut", "run"], project, env)
        timed([sys.executable, "-m", "mutmut", "export-cicd-stats"], project, env)
        stats = json.loads((project / "mutants" / "mutmut-cicd-stats.json").read_text())
        total = int(stats.get("total", 0))
        print(f"mutmut run: {seconds:.2f} s, {total} mutants, {total / seconds:.1f} mutants/s")


def recheck(rounds: int, env: dict, files: str) -> None:
    """A re-check after adding one test to one file, beside a cold check: the
    model answer with calibration suites `files` beside it ("ac": three
    files), or alone ("": the one file most students write)."""
    with tempfile.TemporaryDirectory(prefix="bench-recheck-") as tmp:
        repo = ol_workspace(Path(tmp))
        tests = repo / "python/tests/l7-3-rope"
        for suite in files:
            shutil.copy2(ROOT / f"tests/calibration/l7-3-suite-{suite}/test_rope_{suite}.py", tests)
        check = [str(repo / "ol"), "check", "L7.3", "--ref-deps"]
        edited = tests / ("test_rope_c.py" if files else "test_rope_oracle.py")
        original = edited.read_text()
        what = f"{1 + len(files)} files" if files else "one file"
        ratios = []
        for number in range(1, rounds + 1):
            edited.write_text(original)
            timed(check, repo, env)                                   # the check before the edit
            edited.write_text(original + f"\n\ndef test_added_{number}():\n    assert rope_cos_sin(0, [1.0])[0][0] == 1\n")
            warm = timed(check, repo, env)
            cold = timed(check + ["--fresh"], repo, env)
            ratios.append(warm / cold)
            print(f"round {number} ({what}): re-check after adding one test {warm:6.2f} s   "
                  f"cold check {cold:6.2f} s   ratio {ratios[-1]:.2f}")
    print(f"median ratio re-check / cold check, {what}: {statistics.median(ratios):.2f} "
          f"(spread {min(ratios):.2f} to {max(ratios):.2f})  (target <= 0.25)")


if __name__ == "__main__":
    main()
