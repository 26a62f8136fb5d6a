"""What a run does, by the role of its sandbox's warm process (set up once
from the setup message; run() is called in each forked run):

    role "tests"  the run connects the proxy module to its channel (the other
                  end is an implementation run) and runs a test suite: the
                  student's, every test in the suite's own order, each one's
                  outcome in the notes (task "grade": the observer stops the run
                  when it has heard enough), or any suite with pytest's own
                  report ("pytest"), or, in the shared check, collects it once
                  and serves runs ("collect": ol.grading.sandbox.collector);
    role "impl"   the run loads one variant of the module under test and
                  serves it on its channel (ol.grading.serve).

A run holds two descriptors: CHANNEL_FD (to the other side of its run) and
NOTES_FD (what it says, for the report: information, never a verdict).
pytest and Hypothesis are driven by ol.grading.pytest_driver.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ol.grading import pytest_driver
from ol.grading.pytest_driver import EXIT_COLLECT, WARM_MODULES

if TYPE_CHECKING:
    from ol.grading.sandbox.confine import Limits

CHANNEL_FD, NOTES_FD = 3, 4


def traceback_text(error: BaseException) -> str:
    """The end of an exception's traceback, as a fault message carries it."""
    import traceback

    return "".join(traceback.format_exception(error)[-6:])[-3000:]


class Role:
    """Set up once from the setup message; run() is called in each run."""

    def __init__(self, setup: dict, files: dict[str, bytes]):
        from ol.grading.sandbox.confine import Limits

        self.setup = setup
        self.confinement = setup["confinement"]
        self.folder = Path(setup["files_root"])
        # outside the namespace confinement: where each run gets a temporary folder of its own,
        # beside the files (not beneath them: no run may list or reach another's), 0o711
        self.runs_root = None if self.confinement == "confined" else self.folder.with_name(self.folder.name + "-runs")
        self.limits = Limits(**setup.get("limits", {}))
        self.readable = (str(self.folder), setup["sys_path"][0])   # confined by uid: its files and `ol` (Landlock),
                                                                    # then what run_ready adds
        sys.path[:] = setup["sys_path"]
        os.environ.clear()
        os.environ.update(setup["env"])
        sys.dont_write_bytecode = True
        write_files(self.folder, files)
        if self.runs_root is not None:
            self.runs_root.mkdir(mode=0o711, exist_ok=True)
            os.chmod(self.runs_root, 0o711)
        from ol.core.overlay import Source, install_overlay

        install_overlay({name: Source.from_json(name, entry) for name, entry in setup["modules"].items()})

    def prepare_runs(self) -> None:
        """Confined by uid, once this process has imported all it will: what
        its runs may read of the system (ol.grading.sandbox.access_times), read once
        now so that no run's read moves an access time a later run sees."""
        if self.confinement != "confined-by-uid":
            return
        from ol.grading.sandbox.access_times import prime, readable_system
        from ol.grading.sandbox.confine import ConfinementError

        system = readable_system()
        problem = prime(system)
        if problem:
            raise ConfinementError(problem)
        self.readable = (*self.readable, *system)

    def run_folder(self, user: int | None) -> str:
        """A fresh temporary folder for one run outside the namespace
        confinement: an unguessable name under runs_root, the run's user's
        alone (the warm process removes it when the run's guard has ended)."""
        import secrets

        folder = self.runs_root / secrets.token_hex(16)
        folder.mkdir(mode=0o700)
        if user is not None:
            os.chown(folder, user, user)
        return str(folder)

    def limits_for(self, request) -> Limits:
        """The role's limits, with the run's processor time; the shared
        check's collector may start COLLECTOR_PROCESSES runs' worth of
        processes (its runs get a run's: ol.grading.sandbox.collector)."""
        limits = self.limits
        if request.cpu_seconds > 0:
            limits = dataclasses.replace(limits, cpu_seconds=request.cpu_seconds)
        if request.task == "collect":   # it collects, then serves every run: the observer's clock bounds that
            from ol.grading.sandbox.collector import COLLECTOR_PROCESSES

            limits = dataclasses.replace(limits, processes=limits.processes * COLLECTOR_PROCESSES,
                                         cpu_seconds=max(self.limits.cpu_seconds, 3 * limits.cpu_seconds))
        return limits

    def run_or_fault(self, request) -> int:
        """run(request); an exception of ours (not of the code under test,
        which run() handles) is written to its notes and exits
        confine.RUN_FAULT."""
        from ol.grading.sandbox.confine import RUN_FAULT

        try:
            return self.run(request)
        except BaseException as error:
            Notes(NOTES_FD).send(internal=traceback_text(error))
            return RUN_FAULT

    @staticmethod
    def for_setup(header: dict, buffers: list) -> Role:
        files = {path: bytes(buffers[index]) for path, index in header.get("files", {}).items()}
        return {"tests": TestsRole, "impl": ImplRole}[header["role"]](header, files)


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """The run's files, readable by the runs' users, modified at the epoch
    (a file's age must not tell a run how far the check has gone) and
    accessed far ahead (ol.grading.sandbox.access_times: no read by a run can move
    the access time that a later run would see)."""
    from ol.grading.sandbox.access_times import FROZEN_ACCESS_NS
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o755)
    for relative, data in files.items():
        path = folder / relative
        if ".." in Path(relative).parts or Path(relative).is_absolute():
            raise ValueError(f"file path {relative!r} leaves the sandbox's folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, 0o644)
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir():
            os.chmod(path, 0o755)
        os.utime(path, ns=(FROZEN_ACCESS_NS, 0))


class TestsRole(Role):
    """Runs test suites against the proxy of the module under test."""

    def __init__(self, setup: dict, files: dict[str, bytes]):
        super().__init__(setup, files)
        import importlib

        import _pytest.main  # noqa: F401  (imported once here, shared by every run)
        import _pytest.runner  # noqa: F401
        import numpy  # noqa: F401
        from ol.grading import proxy

        target = setup["proxy"]["module"]
        package = target.rpartition(".")[0]
        if package:
            importlib.import_module(package)
        module = proxy.build_proxy_module(target, setup["proxy"]["contract"], setup["proxy"]["origin"])
        sys.modules[target] = module
        if package:
            setattr(sys.modules[package], target.rpartition(".")[2], module)
        for name in setup.get("preload", []):
            importlib.import_module(name)
        for name in WARM_MODULES:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        pytest_driver.hypothesis_profile()
        self.config = pytest_driver.pytest_config(self.folder, setup.get("pytest_args", []))
        self.session = pytest_driver.pytest_session(self.config)
        suites = [self.folder / suite for suite in setup["suites"].values()]
        pytest_driver.precompile(self.config, suites)
        pytest_driver.warm_hypothesis(suites)
        self.prepare_runs()
        gc.collect()
        gc.freeze()

    def run(self, request) -> int:
        from ol.grading import proxy

        folder = self.folder / self.setup["suites"][request.suite]
        channel = socket.socket(fileno=CHANNEL_FD)
        if request.task == "pytest":
            proxy.connect(channel)
            return pytest_driver.run_pytest(folder, Notes(NOTES_FD), request.pytest_args,
                                            self.setup.get("pytest_args", []))
        if request.task == "collect":   # the local check: collect once, serve many runs
            from ol.grading.sandbox.collector import serve_collected

            def collect():
                collected = pytest_driver.collect(self.session, folder, Notes(NOTES_FD))
                if proxy.called_unconnected:   # module-level calls need a variant: collect in every run
                    return EXIT_COLLECT, {"problem": "isolate"}
                return collected

            each_run = dataclasses.replace(self.limits, cpu_seconds=request.cpu_seconds or self.limits.cpu_seconds)

            def run_items(items):
                proxy.connect(socket.socket(fileno=CHANNEL_FD))
                return pytest_driver.run_items(items, Notes(NOTES_FD), each_run.cpu_seconds, proxy.begin_test)

            return serve_collected(channel.detach(), collect, run_items, each_run)
        notes = Notes(NOTES_FD)
        proxy.connect(channel)   # a call at import time reaches this run's own variant
        collected = pytest_driver.collect(self.session, folder, notes)
        if isinstance(collected[0], int):
            notes.send(**collected[1])
            return collected[0]
        items, ids, filed = collected
        notes.send(collected=ids, filed=filed)
        return pytest_driver.run_items(items, notes, request.cpu_seconds or self.limits.cpu_seconds, proxy.begin_test)


class ImplRole(Role):
    """Serves one variant of the module under test per run."""

    def __init__(self, setup: dict, files: dict[str, bytes]):
        super().__init__(setup, files)
        import importlib

        import numpy  # noqa: F401  (imported once here, shared by every run)
        from ol.grading import compiled, serve  # noqa: F401

        self.target = setup["target"]
        for name in setup.get("preload", []):
            importlib.import_module(name)
        self.prepare_runs()
        gc.collect()
        gc.freeze()

    def run(self, request) -> int:
        import importlib

        from ol.core.overlay import Source, install_overlay
        from ol.grading.compiled import loaded
        from ol.grading.serve import serve

        from ol.grading.protocol import BASE_MODULE

        channel = socket.socket(fileno=CHANNEL_FD)
        overrides = dict(request.modules)
        base = overrides.pop(BASE_MODULE, None)
        if overrides:  # the student's own needs: every tinyllm module is imported afresh
            for name in [n for n in sys.modules if n == "tinyllm" or n.startswith("tinyllm.")]:
                del sys.modules[name]
            install_overlay({name: Source.from_json(name, entry) for name, entry in {
                **self.setup["modules"], **overrides}.items()})
        try:
            if base is not None:   # a chaff's: imported under the module's own name, then handed to it as `correct`
                install_overlay({self.target: Source.from_json(self.target, base)})
                sys.modules[BASE_MODULE] = importlib.import_module(self.target)
                del sys.modules[self.target]
            source = request.source
            if source is not None:
                install_overlay({self.target: dataclasses.replace(Source.from_json(self.target, source),
                                                                  code=loaded(source) if request.trusted else None)})
            module = importlib.import_module(self.target)
        except BaseException as error:  # the code under test does not import: every call says why
            module = _Broken(self.target, error, request.tracebacks)
        else:
            Notes(NOTES_FD).send(imported=time.monotonic())   # a student kit counts no catch of a variant without it
        serve(channel, module, tracebacks=request.tracebacks,
              run_seconds=request.cpu_seconds or self.limits.cpu_seconds)
        return 0


class _Broken:
    """Stands for a module that raised while importing: every use raises that."""

    def __init__(self, name, error, tracebacks):
        self.__name__, self.error, self.tracebacks = name, error, tracebacks

    def __getattr__(self, name):
        raise ImportError(f"the code under test ({self.__name__}) failed to import: "
                          f"{type(self.error).__name__}: {self.error}") from self.error


class Notes:
    """JSON lines to the observer, on a socket (NOTES_FD) of which the
    observer holds the other end and writes nothing."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, **message) -> None:
        from ol.grading.protocol import note_line

        data = note_line(**message)
        try:
            while data:
                data = data[os.write(self.fd, data):]
        except OSError:
            pass
