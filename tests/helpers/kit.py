"""Helpers shared by the kit's tests: a temporary checkout, and running the
real `./ol` in it as a student would."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import site
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A command run under this prefix runs as in Docker's default profile (no namespaces, setuid kept):
# the one-user-per-run mode Gradescope's containers give ol (helpers/docker_default.py).
DOCKER_DEFAULT = [sys.executable, str(ROOT / "tests" / "helpers" / "docker_default.py")]


def sampled_home(home: Path, every: int = 20, module: str = "L7.3") -> Path:
    """A home folder whose mutant cache holds every `every`th of `module`'s
    generated mutants: `ol grade` (or a Gradescope bundle) started with it
    grades against that sample and every pitfall.  The kit's end-to-end
    gradings test what happens to a submission, not each mutant; the
    calibration suites and ol verify are graded against every mutant."""
    import json

    from ol.grading.mutants import cache_path
    from ol.grading.session import GradingSession

    source = GradingSession(ROOT, module).reference.source   # the whole set, cached in this user's home
    whole = json.loads(cache_path(source).read_text())
    sample = cache_path(source, home / ".cache" / "tinyllm-ol")
    sample.parent.mkdir(parents=True, exist_ok=True)
    sample.write_text(json.dumps(whole[::every]))
    return home


def home_env(home: Path, **more: str) -> dict[str, str]:
    """This process's environment with `home` as HOME (where ol finds its mutant cache: a sampled_home)."""
    env = dict(os.environ, HOME=str(home), **more)
    env.pop("XDG_CACHE_HOME", None)
    return env


def copy_checkout(dest: Path) -> Path:
    """Copy what a fresh clone holds into dest: every file git tracks, plus
    kit files not yet committed, but none of a student's own work (files
    under python/ that git does not track: the README's first command
    starts L7.3 in this very checkout)."""
    def listed(*options: str) -> list[str]:
        out = subprocess.run(["git", "ls-files", "-z", *options], cwd=ROOT, check=True, capture_output=True).stdout
        return [name for name in out.decode().split("\0") if name]

    untracked = [name for name in listed("--others", "--exclude-standard") if not name.startswith("python/")]
    for rel in listed("--cached") + untracked:
        source = ROOT / rel
        if source.is_file():  # a tracked file deleted in the work tree is skipped
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


def run_ol(checkout: Path, *args: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run <checkout>/ol as an executable (its shebang finds python3 on PATH:
    this interpreter's directory comes first)."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run([str(checkout / "ol"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def pytest_with_plugin(folder: Path, plugin: str, *args: str, env: dict[str, str] | None = None,
                       unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """A real pytest in `folder` with one of ol's plugins (`-p plugin`), this
    repository's `ol` first on its path; `env` added to the environment,
    `unset` taken out of it."""
    from ol.core.runner import child_env

    environment = child_env(ROOT, **(env or {}))
    for name in unset:
        environment.pop(name, None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", plugin, "-p", "no:cacheprovider", "-q", *args],
                          cwd=folder, env=environment, capture_output=True, text=True, timeout=120)


def explain(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def snapshot(root: Path, skip: tuple[str, ...] = (".ol",)) -> dict[str, str]:
    """{relative path: sha256} of every file under root, except the top-level
    folders in `skip` (ol's own state)."""
    digests = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] not in skip and "__pycache__" not in rel.parts:
            digests[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def processes_with(marker: str) -> list[int]:
    """Pids of running processes whose command line contains `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if marker.encode() in cmdline.read().replace(b"\0", b" "):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def sigint_as_at_a_terminal() -> None:
    """preexec_fn for a child a test stops with SIGINT: SIGINT at its default
    there, as Ctrl-C finds a command in a terminal.  A shell without job
    control starts a background job (`python -m pytest &`) with SIGINT
    ignored, which children inherit, and Python then leaves it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL what is left of the process group that `process` leads (it was
    started with start_new_session=True) and reap it: a test's cleanup,
    whatever became of the test."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # the whole group has ended
        pass
    process.wait()


# What a graded run imports (ol.grading.sandbox.warm, the proxy, pytest_driver), with
# everything they require: the packages a venv must hold itself for its runs.
SANDBOX_PACKAGES = ("numpy", "pytest", "hypothesis")


def virtual_environment(folder: Path, holding: tuple[str, ...] = ()) -> Path:
    """A venv at folder that sees this interpreter's packages; its python.

    `--system-site-packages` is not enough: run from a venv, `-m venv` builds
    on the base interpreter and would see its packages, not this venv's (where
    the README's `pip install` put numpy and mutmut).  A .pth file adds this
    interpreter's site folders, in its order, .pth files included.  What a
    .pth adds is not the venv's own installation, so a confined run never
    sees it (ol.grading.session.host_sys_path): the distributions `holding`
    names, and all they require, are copied into the venv itself, as pip
    would have put them there."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    for distribution in _required(holding):
        for file in distribution.files or ():
            if ".." not in file.parts:   # scripts in bin/ are not needed by an import
                target = Path(purelib, file)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(distribution.locate_file(file), target)
    folders = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    adds = "; ".join(f"site.addsitedir({f!r})" for f in folders if os.path.isdir(f))
    Path(purelib, "kit-tests-packages.pth").write_text(f"import site; {adds}\n")
    return python


def _required(names: tuple[str, ...]) -> list:
    """The installed distributions `names`, and every one they require here
    (markers evaluated for this interpreter, no extras)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        try:
            found[name] = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue   # an optional requirement not installed here
        for text in found[name].requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())


def run_probe(where: Path, python: Path | str, probe: str, **env: str) -> subprocess.CompletedProcess:
    """pytest -rs, run by `python`, on a test file holding `probe` beside copies
    of the kit's tests/conftest.py and pyproject.toml (at where/kit): what the
    kit's own markers and hooks make of it.  CI is unset unless given."""
    kit = where / "kit"
    (kit / "tests").mkdir(parents=True)
    shutil.copy2(ROOT / "pyproject.toml", kit)
    shutil.copy2(ROOT / "tests" / "conftest.py", kit / "tests")
    (kit / "tests" / "test_probe.py").write_text(probe)
    environment = {name: value for name, value in os.environ.items() if name != "CI"}
    environment.update(PYTHONPATH=str(ROOT / "python"), **env)  # the ol of the conftest under test
    return subprocess.run([str(python), "-m", "pytest", "-rs", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "tests/test_probe.py"], cwd=kit, env=environment, capture_output=True, text=True,
                          timeout=120)
