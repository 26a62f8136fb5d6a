"""pytest and Hypothesis as every graded run uses them, and every use of
their private API, in one file to read again on each upgrade of either:

    _pytest.config._prepareconfig, config._do_configure    pytest configured once (pytest_config)
    _pytest.main.Session.from_config                       one session to collect into (pytest_session)
    _pytest.runner.runtestprotocol                         one test run at a time (run_items)
    Function._fixtureinfo, callspec, session._setupstate,  a plain test called directly, with what
    the capture manager, collect_unraisable and             pytest's hooks would do for it (Direct)
    collect_thread_exception
    _pytest.assertion.rewrite._rewrite_test, _read_pyc     asserts rewritten once (precompile)
    hypothesis settings.__init__                           max_examples capped (hypothesis_profile)
    hypothesis ...providers._get_local_constants,          the constants scan done once (warm_hypothesis)
    ...constants_ast.is_local_module_file

The tests' warm process (ol.grading.sandbox.roles) calls the warm-up functions once;
each run calls collect and run_items, or run_pytest for pytest's own report.
What a run says goes through a `notes` object of the caller's (anything with
send(**message)); of the grader it imports only the table of exit statuses
(ol.grading.protocol).
"""

from __future__ import annotations

import dis
import inspect
import os
import signal
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ol.grading.protocol import EXIT_COLLECT, EXIT_EMPTY, EXIT_FAILED, EXIT_PASSED  # noqa: F401  (the table)
from ol.grading.protocol import OverTime, per_test_seconds
GRADING_MAX_EXAMPLES = 20   # per Hypothesis test, in every graded run
FIRST_FAILURE_PAUSE = 0.02   # seconds a run waits after its first failure (run_items)
HYPOTHESIS_PLUGIN = "_hypothesis_pytestplugin"   # the one plugin a graded run loads beside pytest's own (plugins)
NO_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"     # set in a graded run's environment (ol.grading.session.SANDBOX_ENV)
# Imported once in the tests' warm process, so that no run pays for them.
WARM_MODULES = ("numpy.random", "numpy.testing", "numpy.linalg", "hypothesis.strategies", "hypothesis.extra.numpy",
                "math", "cmath", "itertools", "functools", "fractions", "decimal", "random", "collections",
                "dataclasses", "typing", "inspect",
                "encodings.unicode_escape")   # the codec pytest's ids of parametrized tests use


class NoteTaker(Protocol):
    """Where a run writes its notes (ol.grading.sandbox.roles.Notes): information, never a verdict."""

    def send(self, **message) -> None: ...


def collect(session, folder: Path, notes: NoteTaker) -> tuple:
    """The suite's tests: (items in running order, their ids, the same ids in
    the suite's file order), or (exit code, {"problem": ...}): EXIT_COLLECT
    when it does not collect, EXIT_EMPTY when it holds no test."""
    config = session.config
    errors: list[str] = []

    class Collection:
        def pytest_collectreport(self, report):
            if report.failed:
                errors.append(f"{report.nodeid or report.fspath}: {report.longreprtext.strip()[-2000:]}")

    config.pluginmanager.register(Collection(), "ol-collection")
    try:
        items = session.perform_collect([str(folder)])
    except BaseException as error:  # noqa: BLE001 (collection runs the suite's code)
        errors.append(f"{type(error).__name__}: {error}")
        items = []
    finally:
        config.pluginmanager.unregister(name="ol-collection")
    if errors:
        return EXIT_COLLECT, {"problem": "collect", "detail": "\n".join(errors)[-6000:]}
    if not items:
        return EXIT_EMPTY, {"problem": "empty"}
    filed = [str(item.nodeid) for item in items]
    items = running_order(items)
    return items, [str(item.nodeid) for item in items], filed


# A test's cost class (running_order): one call, a loop of calls, many generated examples.
PLAIN, LOOPING, GENERATED = 0, 1, 2


def running_order(items: list) -> list:
    """The order every run of a suite runs its tests in: plain tests, then
    tests that loop, then Hypothesis tests (cost_class); within each, the
    first case of each test function (each parametrized function once), then
    the other cases, each in the suite's own order.  A function of the
    suite's code alone, the same in every run whatever any run did
    (README.md: no channel the grader opens itself).  A run stops at its
    first catch, so a costly test is paid by every mutant caught after it:
    for the model answer of L7.3 the Hypothesis test is two thirds of the
    suite's time, and with it last no mutant's run reaches it (with only
    the first cases before it, 24 did)."""
    from _pytest.python import Function

    seen: set = set()
    loops: dict = {}   # id of a code object -> (it, whether it loops): a parametrized function's cases share one
    owners: dict = {}   # id of a parent node -> (it, the file and class of its pytest functions)
    keyed = []
    for item in items:
        function = getattr(item, "originalname", None) or item.name
        owner = (*_file_and_class(item, owners, Function), function)
        keyed.append(((cost_class(item, loops), owner in seen), item))
        seen.add(owner)
    return [item for _, item in sorted(keyed, key=lambda pair: pair[0])]   # stable: the suite's order within a key


def _file_and_class(item, owners: dict, function_type: type) -> tuple:
    """(the test's file, the __qualname__ of its class or None): item.fspath,
    a path object made for the asking, and item.cls, a walk from the item up
    to the session for a test of a module.  For pytest's own test functions
    both are their parent's, so they are asked once per parent node (the
    cases of one function share it); any other item is asked itself."""
    if type(item) is not function_type:
        return getattr(item, "fspath", None), getattr(getattr(item, "cls", None), "__qualname__", None)
    parent = item.parent
    if id(parent) not in owners:
        owners[id(parent)] = (parent, (getattr(item, "fspath", None), getattr(item.cls, "__qualname__", None)))
    return owners[id(parent)][1]


def cost_class(item, loops: dict | None = None) -> int:
    """GENERATED for a Hypothesis test (up to GRADING_MAX_EXAMPLES examples),
    LOOPING for a test function whose own code holds a loop, else PLAIN.
    Read from the test function's code object; never calls it.  loops:
    what _loops said of each code object already read, by its id (a code
    object's hash reads all of it)."""
    function = getattr(item, "obj", None)
    try:
        if getattr(function, "is_hypothesis_test", False) is True:
            return GENERATED
        code = inspect.unwrap(function).__code__
    except Exception:  # noqa: BLE001 (the suite's own objects: whatever they do, the test is PLAIN)
        return PLAIN
    if not isinstance(code, types.CodeType):
        return PLAIN
    if loops is None:
        loops = {}
    if id(code) not in loops:
        loops[id(code)] = (code, _loops(code))   # the code object kept: its id is not reused meanwhile
    return LOOPING if loops[id(code)][1] else PLAIN


# 3.11 jumps back with JUMP_BACKWARD and POP_JUMP_BACKWARD_IF_*; 3.12 with JUMP_BACKWARD alone
_BACKWARDS = {op for name, op in dis.opmap.items() if "BACKWARD" in name}


def _loops(code: types.CodeType, depth: int = 0) -> bool:
    """Whether the code jumps backwards (a for or while loop), in itself or in
    a function or comprehension it defines (each a code object of its own)."""
    if not _BACKWARDS.isdisjoint(code.co_code[::2]):
        return True
    return depth < 8 and any(_loops(const, depth + 1) for const in code.co_consts if isinstance(const, types.CodeType))


def run_items(items: list, notes: NoteTaker, run_seconds: float = 0.0,
              on_test: Callable[[], None] = lambda: None) -> int:
    """Run every test, in this order, each one's outcome in the notes
    (running, then passed or failed): whoever reads them decides when it has
    heard enough.  Exit 0 all passed, 1 a test failed.

    With run_seconds (the run's processor-time limit, the same in every run),
    a test that uses per_test_seconds(run_seconds) of processor time is stopped
    there (OverTime, on SIGPROF), failed and noted "overtime", and the tests
    after it still run: one test that loops forever on a correct
    implementation costs that test, not the rest of the suite.  A test that
    stops the alarm, or loops inside a C function, still meets the run's own
    limit.  on_test() is called as each test begins (the proxy starts that
    test's share on the implementation's side).

    After its first failure a run waits FIRST_FAILURE_PAUSE: the observer
    stops most runs at their first failure, and a stop that lands while the
    run waits spares the processor the tests the run would have gone on
    with.  Every run waits the same way, whatever any other run did."""
    from _pytest.runner import runtestprotocol

    share = per_test_seconds(run_seconds) if run_seconds > 0 else 0.0
    direct = Direct(items)

    def over_time(signum, frame):
        raise OverTime(f"this test used {share:g} s of processor time, its share of the run's {run_seconds:g} s "
                       "(look for a loop that does not end); the tests after it still run")

    if share:
        signal.signal(signal.SIGPROF, over_time)
    failed = False
    for index, item in enumerate(items):
        notes.send(running=item.nodeid)
        following = items[index + 1] if index + 1 < len(items) else None
        raised = OverTime.raised
        on_test()
        try:
            if share:
                signal.setitimer(signal.ITIMER_PROF, share)
            try:
                item_failed = direct.run(item, following) if item in direct else \
                    any(r.failed for r in runtestprotocol(item, nextitem=following, log=False))
            finally:
                if share:
                    signal.setitimer(signal.ITIMER_PROF, 0)
        except BaseException:  # pytest.exit(), an OverTime between a test's phases, or worse: the suite ends
            notes.send(failed=item.nodeid)
            return EXIT_FAILED
        if OverTime.raised > raised:
            notes.send(overtime=item.nodeid)
        notes.send(**{"failed" if item_failed else "passed": item.nodeid})
        if item_failed and not failed:
            time.sleep(FIRST_FAILURE_PAUSE)
        failed = failed or item_failed
    notes.send(ended=time.monotonic())
    return EXIT_FAILED if failed else EXIT_PASSED


class Direct:
    """The tests of a run that are called directly rather than through
    runtestprotocol, which costs about 1.5 ms a test in a fresh run: its
    hooks touch some 300 pages of memory that every run copies.

    A test is called directly when pytest's protocol can do nothing for it
    but call it: a plain function (no class, not async, no Hypothesis, not
    in a package), no fixture but its own direct parameters, no mark but
    parametrize, in a session whose per-test hooks are all pytest's own or
    those of the plugins read below (no conftest hook, no other plugin).  Its outcome is
    the one those hooks give it: passed when it returns, skipped on
    pytest.skip or pytest.xfail, failed on any other exception, pytest.exit
    and KeyboardInterrupt propagate; around the call, what those hooks do
    for such a test (the capture, PYTEST_CURRENT_TEST, sys.last_*, the
    unraisable and thread exceptions, tearing down what the next test does
    not share) is done here."""

    # the plugins whose per-test hooks do nothing for such a test beyond what run() does
    READ = ("_pytest.", HYPOTHESIS_PLUGIN)
    HOOKS = ("pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown", "pytest_runtest_makereport",
             "pytest_pyfunc_call", "pytest_fixture_setup", "pytest_fixture_post_finalizer")
    # attributes of Hypothesis decorators that its plugin fails a test without @given for
    HYPOTHESIS_ONLY = ("hypothesis_explicit_examples", "_hypothesis_internal_use_seed",
                       "_hypothesis_internal_settings_applied", "_hypothesis_internal_use_reproduce_failure",
                       "is_hypothesis_strategy_function")

    def __init__(self, items: list):
        self.judged: dict[int, bool] = {}   # id(item) -> called directly; each judged as it comes to run
        config = items[0].config if items else None
        self.usable = config is not None and all(
            self._read(impl.plugin) for name in self.HOOKS for impl in getattr(config.hook, name).get_hookimpls())
        if self.usable:
            from _pytest.outcomes import Exit, Skipped, XFailed
            from _pytest.python import Function, Package, async_fail, get_direct_param_fixture_func
            from _pytest.threadexception import collect_thread_exception
            from _pytest.unraisableexception import collect_unraisable

            self.function_class, self.package_class = Function, Package
            self.direct_parameter, self.async_fail = get_direct_param_fixture_func, async_fail
            self.propagated, self.not_failed = (Exit, KeyboardInterrupt), (Skipped, XFailed)
            self.config, self.capture = config, config.pluginmanager.get_plugin("capturemanager")
            self.leftovers = (collect_unraisable, collect_thread_exception)
            try:   # what the Hypothesis plugin says on its first call of any test
                from hypothesis import core

                core.running_under_pytest = True
                core.pytest_shows_exceptiongroups = True
            except ImportError:
                pass

    def __contains__(self, item) -> bool:
        if not self.usable:
            return False
        key = id(item)
        if key not in self.judged:
            self.judged[key] = self._plain(item)
        return self.judged[key]

    def _read(self, plugin) -> bool:
        module = plugin.__name__ if isinstance(plugin, types.ModuleType) else type(plugin).__module__
        return any(module == name or (name.endswith(".") and module.startswith(name)) for name in self.READ)

    @staticmethod
    def _params(item) -> dict:
        return item.callspec.params if hasattr(item, "callspec") else {}

    def _plain(self, item) -> bool:
        try:
            function = item.obj
            if type(item) is not self.function_class or item.cls is not None or inspect.iscoroutinefunction(function) \
                    or inspect.isasyncgenfunction(function) or getattr(function, "is_hypothesis_test", False) \
                    or any(hasattr(function, name) for name in self.HYPOTHESIS_ONLY):
                return False
            if any(mark.name != "parametrize" for mark in item.iter_markers()):
                return False
            if any(isinstance(node, self.package_class) for node in item.listchain()):
                return False   # a package's setup imports its __init__.py and calls its setup_module
            params, definitions = self._params(item), item._fixtureinfo.name2fixturedefs
            return all(name in params and [d.func for d in definitions.get(name, ())] == [self.direct_parameter]
                       for name in item.fixturenames)
        except Exception:  # noqa: BLE001 (the suite's own objects: anything odd goes through pytest)
            return False

    def run(self, item, following) -> bool:
        """Call the test as pytest would; whether it failed."""
        failed = self._phase(item, "setup", lambda: None)
        if not failed:
            failed = self._phase(item, "call", lambda: self._call(item))
        failed = self._phase(item, "teardown", lambda: item.session._setupstate.teardown_exact(following)) or failed
        os.environ.pop("PYTEST_CURRENT_TEST", None)
        return failed

    def _call(self, item) -> None:
        """_pytest.python.pytest_pyfunc_call, for a test whose every argument is a direct parameter."""
        params = self._params(item)
        result = item.obj(**{name: params[name] for name in item._fixtureinfo.argnames})
        if hasattr(result, "__await__") or hasattr(result, "__aiter__"):
            self.async_fail(item.nodeid)
        elif result is not None:   # a warning, as pytest gives it
            import warnings

            from _pytest.warning_types import PytestReturnNotNoneWarning

            warnings.warn(PytestReturnNotNoneWarning(f"Test functions should return None, but {item.nodeid} "
                                                     f"returned {type(result)!r}."))

    def _phase(self, item, when: str, body) -> bool:
        """One phase of pytest's protocol (_pytest.runner's hooks, then the
        unraisable and thread exceptions' hooks, inside the capture's): whether it failed."""
        os.environ["PYTEST_CURRENT_TEST"] = f"{item.nodeid} ({when})".replace("\x00", "(null)")
        if when == "call":
            for name in ("last_type", "last_value", "last_traceback", "last_exc"):
                if hasattr(sys, name):
                    delattr(sys, name)
        capturing = self.capture is not None and self.capture.is_globally_capturing()
        if capturing:
            self.capture.resume_global_capture()
        try:
            try:
                body()
                for collect in self.leftovers:
                    collect(self.config)
            finally:
                if capturing:
                    self.capture.suspend_global_capture(in_=False)
                    self.capture.read_global_capture()
        except self.propagated:
            raise
        except self.not_failed:
            return False
        except BaseException as error:  # noqa: BLE001 (pytest's CallInfo: any other exception fails the phase)
            if when == "call" and isinstance(error, Exception):
                sys.last_type, sys.last_value, sys.last_traceback = type(error), error, error.__traceback__
                if sys.version_info >= (3, 12):
                    sys.last_exc = error
            return True
        return False


def run_pytest(folder: Path, notes: NoteTaker, extra: list[str], base: list[str]) -> int:
    """pytest's own run with its terminal report (short tracebacks), and every
    test's outcome; the exit code is pytest's."""
    import pytest

    outcomes: dict[str, str] = {}
    failures: dict[str, str] = {}   # node id -> what pytest's short test summary says of its first failure

    class Outcomes:
        def pytest_runtest_logreport(self, report):
            if report.when == "call" or report.outcome != "passed":
                if report.outcome != "passed" or report.nodeid not in outcomes:
                    outcomes[report.nodeid] = "error" if report.when != "call" and report.failed else report.outcome
            if report.failed and report.nodeid not in failures:
                failures[report.nodeid] = first_failure(report.longrepr)[:2000]

        def pytest_collectreport(self, report):
            if report.failed:
                outcomes[report.nodeid or "collection"] = "error"

    output = Path(os.environ.get("TMPDIR", "/tmp")) / "pytest-report.txt"
    with open(output, "w") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        code = pytest.main([str(folder), "--tb=short", "-rfE", "--color=no", "-p", "no:cacheprovider",
                            *plugins(), *base, *extra], plugins=[Outcomes()])
        sys.stdout.flush()
    notes.send(outcomes=outcomes, failures=failures, output=output.read_text(errors="replace")[-60000:])
    return int(code)


def first_failure(longrepr) -> str:
    """What pytest's short test summary says of a failure: the exception and
    its message; for a failure with none (a fixture that is not found), its
    first "E" line ("fixture 'mocker' not found") rather than the file and
    line it starts with."""
    message = getattr(getattr(longrepr, "reprcrash", None), "message", None)
    if message:
        return str(message)
    text = str(longrepr)
    return next((line[1:].strip() for line in text.splitlines() if line.startswith("E ") and line[1:].strip()), text)


# ---- warm-up -------------------------------------------------------------------------------


def hypothesis_profile() -> None:
    """Deterministic, database-free Hypothesis with no shrinking: the same
    examples for every variant, and a failing example stops at once.  Every
    test gets at most GRADING_MAX_EXAMPLES examples, whatever its own
    settings ask: a suite heavy in Hypothesis grades about as fast as a
    plain one of the same strength."""
    try:
        from hypothesis import Phase, settings
    except ImportError:
        return
    settings.register_profile("ol-check", derandomize=True, database=None, deadline=None, print_blob=False,
                              phases=(Phase.explicit, Phase.generate), max_examples=GRADING_MAX_EXAMPLES)
    settings.load_profile("ol-check")
    own_init = settings.__init__

    def capped(self, parent=None, **kwargs):
        if "max_examples" in kwargs:
            kwargs["max_examples"] = min(kwargs["max_examples"], GRADING_MAX_EXAMPLES)
        own_init(self, parent, **kwargs)

    settings.__init__ = capped


def warm_hypothesis(folders: list[Path] = ()) -> None:
    """Hypothesis scans every loaded module for constants when a suite with a
    Hypothesis test is collected; doing it here spares each run the scan of
    all but the suite's own modules.  Whether each file of `folders` is
    the user's code (which the scan of a run asks of the suite's modules) is
    answered here too: a question of its path alone, kept in Hypothesis's
    own cache."""
    try:
        from hypothesis.internal.conjecture.providers import _get_local_constants
    except ImportError:
        return
    _get_local_constants()
    try:
        from hypothesis.internal.constants_ast import is_local_module_file
    except ImportError:
        return
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            is_local_module_file(str(path))


def plugins() -> list[str]:
    """The plugins a graded run loads by name: Hypothesis's, where Hypothesis
    is installed, and no other, for its sandbox loads none by its package's
    entry point (NO_AUTOLOAD, set in ol.grading.session.SANDBOX_ENV).
    Where pytest does load them so, it loads Hypothesis's too, and naming
    it again would be an error."""
    import importlib.util

    if not os.environ.get(NO_AUTOLOAD):
        return []
    return ["-p", HYPOTHESIS_PLUGIN] if importlib.util.find_spec(HYPOTHESIS_PLUGIN) else []


def pytest_config(folder: Path, args: list[str]):
    """pytest configured once (plugins loaded, options parsed) on an empty
    folder; each run collects its suite with it."""
    from _pytest.config import _prepareconfig

    empty = folder / ".empty"
    empty.mkdir(exist_ok=True)
    config = _prepareconfig([str(empty), "-p", "no:terminal", *plugins(), *args])
    config.option.tbstyle = "no"   # a verdict needs no traceback: formatting one costs more than most tests
    config._do_configure()
    return config


def pytest_session(config):
    """The session every run collects into, started here (no test code has
    run yet: only pytest's and its plugins' own session start)."""
    from _pytest.main import Session

    session = Session.from_config(config)
    config.hook.pytest_sessionstart(session=session)
    return session


def precompile(config, folders: list[Path]) -> None:
    """pytest rewrites the asserts of test files as it imports them; doing it
    here (it reads and compiles, runs nothing) spares each run the work.  The
    compiled code lives on in the patched _read_pyc's closure."""
    from _pytest.assertion import rewrite

    compiled = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            try:
                compiled[str(path)] = rewrite._rewrite_test(path, config)[1]
            except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
                continue  # the run reports it when it imports the file (the static check left out the deep ones)
    original = rewrite._read_pyc

    def read_pyc(source, pyc, trace=lambda message: None):
        return compiled.get(str(source)) or original(source, pyc, trace)

    rewrite._read_pyc = read_pyc
