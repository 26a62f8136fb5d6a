"""`ol grade` on a class of 12 submissions: one at a time, two side by side,
and on a local Ray head, beside one plain `ol check` of the same suite.

    python bench/bench_grade.py

The class: the reference rope.py (each with its own comment line, so that no
two submissions are the same files, which ol grade grades once) with the
model answer or one of the three calibration suites, three students each.  Every grade is an isolated,
confined check in a private copy of the kit.  Prints the seconds per
submission for each way, its ratio to one plain `ol check --isolated` (the
mean over the four suites, each checked once the way a student would), and
the speed-up over --jobs 1.  By default each check already runs (cores / jobs)
+ 1 runs side by side, so --jobs 1 keeps every core busy and --jobs 2 cannot
add much on a small machine; "--jobs 1 --workers 1" and "--jobs 2 --workers 1"
(one run at a time per submission) show what submissions side by side give
over a serial grader.  The machine is shared: the ratios, measured side by
side in one run, are what mean something.  Needs the `cluster` extra
(ray==2.60.0).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_ROPE = ROOT / "course/reference/python/tinyllm/modern/rope.py"
SUITES = [ROOT / "course/reference/python/tests/l7-3-rope"] + [ROOT / f"tests/calibration/l7-3-suite-{s}" for s in "abc"]
STUDENTS = 12


def make_class(folder: Path) -> None:
    for number in range(STUDENTS):
        student = folder / f"student-{number:02d}"
        suite = SUITES[number % len(SUITES)]
        (student / "python/tinyllm/modern").mkdir(parents=True)
        shutil.copy2(REFERENCE_ROPE, student / "python/tinyllm/modern/rope.py")
        shutil.copytree(suite, student / "python/tests/l7-3-rope", ignore=shutil.ignore_patterns("__pycache__"))
        with open(student / "python/tinyllm/modern/rope.py", "a") as rope:   # ol grade grades equal files once
            rope.write(f"\n# student {number:02d}\n")


def timed(command: list[str], cwd: Path, env: dict | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def ray_head(scratch: Path) -> tuple[subprocess.Popen, str, dict]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
               RAY_USAGE_STATS_ENABLED="0", RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0")
    head = subprocess.Popen([str(Path(sys.executable).with_name("ray")), "start", "--head", "--block",
                             "--node-ip-address=127.0.0.1", f"--port={port}", f"--num-cpus={os.cpu_count()}",
                             "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={scratch}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return head, f"127.0.0.1:{port}", env


def stop(head: subprocess.Popen) -> None:
    os.killpg(head.pid, signal.SIGTERM)
    try:
        head.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)
        head.wait()


def main() -> None:
    ol = str(ROOT / "ol")
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        scratch = Path(tmp)
        make_class(scratch / "class")
        # plain checks, as a student runs them: the unit every other time is measured in
        checkout = scratch / "checkout"
        shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(".git", ".ol", "__pycache__", "build"))
        shutil.copy2(REFERENCE_ROPE, checkout / "python/tinyllm/modern/rope.py")
        check = [str(checkout / "ol"), "check", "L7.3", "--ref-deps", "--isolated"]
        plain_times = []
        for suite in SUITES:
            shutil.rmtree(checkout / "python/tests/l7-3-rope", ignore_errors=True)
            shutil.copytree(suite, checkout / "python/tests/l7-3-rope")
            if not plain_times:
                timed(check, checkout)   # warm: the mutant cache
            plain_times.append(timed(check, checkout))
        plain = sum(plain_times) / len(plain_times)
        results = {}
        for label, extra in (("--jobs 1", ["--jobs", "1"]), ("--jobs 2", ["--jobs", "2"]),
                             ("--jobs 1 --workers 1", ["--jobs", "1", "--workers", "1"]),
                             ("--jobs 2 --workers 1", ["--jobs", "2", "--workers", "1"])):
            out = scratch / label.replace(" ", "")
            results[label] = timed([ol, "grade", "L7.3", str(scratch / "class"), "--out", str(out), *extra], scratch)
        ray_tmp = Path(f"/tmp/olbench-{os.getpid()}")
        head, address, env = ray_head(ray_tmp)
        try:
            time.sleep(5)
            results["--ray (local head)"] = timed([ol, "grade", "L7.3", str(scratch / "class"), "--out",
                                                   str(scratch / "ray"), "--ray", address], scratch, env)
        finally:
            stop(head)
            shutil.rmtree(ray_tmp, ignore_errors=True)
    print(f"one plain `ol check L7.3 --ref-deps --isolated`: {plain:.1f} s (mean of "
          + ", ".join(f"{t:.1f}" for t in plain_times) + ")")
    print(f"{'way':22s} {'total':>8s} {'per submission':>15s} {'/ one check':>12s} {'speed-up':>9s}")
    for label, seconds in results.items():
        per = seconds / STUDENTS
        print(f"{label:22s} {seconds:7.1f}s {per:14.2f}s {per / plain:12.2f} {results['--jobs 1'] / seconds:8.2f}x")
    serial = results["--jobs 1 --workers 1"]
    print(f"two submissions side by side, each one run at a time, over one: "
          f"{serial / results['--jobs 2 --workers 1']:.2f}x; one submission with its runs side by side "
          f"(--jobs 1) over one run at a time: {serial / results['--jobs 1']:.2f}x")


if __name__ == "__main__":
    main()
