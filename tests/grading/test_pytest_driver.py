"""A plain test is called directly in a graded run (pytest_driver.Direct),
not through pytest's runtestprotocol: its outcome must be the one the
protocol gives it.  The oracle is the protocol itself: the same suite run
by run_items with every test through runtestprotocol, as before Direct."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers.kit import ROOT
from ol.grading.pytest_driver import NO_AUTOLOAD
from ol.grading.session import SANDBOX_ENV

DRIVER = """
import json, sys
from pathlib import Path
from ol.grading import pytest_driver
folder, mode = Path(sys.argv[1]), sys.argv[2]
if mode == "protocol":
    pytest_driver.Direct.READ = ()   # no plugin read: every test through runtestprotocol
config = pytest_driver.pytest_config(folder / ".config", [])
session = pytest_driver.pytest_session(config)
notes = []
class Notes:
    def send(self, **message):
        notes.append(message)
items, ids, filed = pytest_driver.collect(session, folder / "suite", Notes())
direct = pytest_driver.Direct(items)
pytest_driver.run_items(items, Notes())
outcomes = {m.get("passed") or m.get("failed"): "passed" if "passed" in m else "failed"
            for m in notes if "passed" in m or "failed" in m}
print(json.dumps({"outcomes": outcomes, "direct": sorted(i.name for i in items if i in direct)}))
"""

SUITE_A = '''
import os
import sys

import pytest
from hypothesis import given, settings, strategies as st

LOG = []


@pytest.fixture(scope="module")
def shared():
    LOG.append("up")
    yield LOG
    LOG.append("down")


def test_passes():
    assert 1 + 1 == 2


def test_fails():
    assert [1, 2] == [1, 3]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_parametrized(n):
    assert n != 2


@pytest.mark.parametrize("a, b", [(1, 1), (2, 3)], ids=["same", "differ"])
def test_two_parameters(a, b):
    assert a == b


def test_skips_itself():
    pytest.skip("not today")


def test_expects_to_fail():
    pytest.xfail("known")


def test_calls_pytest_fail():
    pytest.fail("no")


def test_exits_python():
    raise SystemExit(0)


def test_returns_a_value():
    return 5


def test_prints_a_lot():
    print("x" * 100000)
    sys.stderr.write("y" * 1000)


def test_reads_pytest_current_test():
    assert os.environ["PYTEST_CURRENT_TEST"].endswith("test_reads_pytest_current_test (call)")


def test_uses_the_module_fixture(shared):
    assert shared[0] == "up"


@pytest.mark.parametrize("n", [1, 2])
def test_uses_the_fixture_too(shared, n):
    assert "down" not in shared


def test_with_tmp_path(tmp_path):
    (tmp_path / "f").write_text("x")


@pytest.mark.skip(reason="marked")
def test_marked_skip():
    assert False


@pytest.mark.xfail
def test_marked_xfail():
    assert False


@pytest.mark.parametrize("n", [1, pytest.param(2, marks=pytest.mark.xfail)])
def test_a_case_marked_xfail(n):
    assert n == 1


@settings(max_examples=5)
def test_settings_without_given():
    pass


@given(st.integers())
def test_generated(n):
    assert n == n


class TestInAClass:
    def test_method(self):
        assert True


async def test_async():
    pass
'''

SUITE_B = '''
import pytest


@pytest.mark.parametrize("n", [0, 1])
def test_other_module(n):
    assert n == 0


def test_other_module_plain():
    pass
'''

SUITE_D = '''
import os


def setup_function():
    os.environ["OL_FUNCTION_SET_UP"] = "1"


def test_after_setup_function():
    assert os.environ.pop("OL_FUNCTION_SET_UP") == "1"
'''

PLAIN = ["test_calls_pytest_fail", "test_exits_python", "test_expects_to_fail", "test_fails",
         "test_other_module[0]", "test_other_module[1]", "test_other_module_plain", "test_parametrized[1]",
         "test_parametrized[2]", "test_parametrized[3]", "test_passes", "test_prints_a_lot",
         "test_reads_pytest_current_test", "test_returns_a_value", "test_skips_itself",
         "test_two_parameters[differ]", "test_two_parameters[same]", "test_a_case_marked_xfail[1]"]


def run(folder: Path, mode: str) -> dict:
    # the plugins of a graded run: pytest's own and Hypothesis's (pytest_driver.plugins), none by entry point
    env = {"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin",
           NO_AUTOLOAD: SANDBOX_ENV[NO_AUTOLOAD]}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(folder), mode], capture_output=True, text=True,
                          cwd=folder, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_suite(folder: Path, conftest: str = "") -> None:
    suite = folder / "suite"
    suite.mkdir(parents=True)
    (folder / ".config").mkdir()
    (suite / "test_a.py").write_text(textwrap.dedent(SUITE_A))
    (suite / "test_b.py").write_text(textwrap.dedent(SUITE_B))
    (suite / "test_d.py").write_text(textwrap.dedent(SUITE_D))
    if conftest:
        (suite / "conftest.py").write_text(textwrap.dedent(conftest))


def test_a_test_called_directly_has_the_outcome_pytests_protocol_gives_it(tmp_path):
    write_suite(tmp_path)
    protocol, direct = run(tmp_path, "protocol"), run(tmp_path, "direct")
    assert protocol["direct"] == []
    assert direct["direct"] == sorted(PLAIN)          # and nothing with a fixture, a mark, a class, Hypothesis
    assert direct["outcomes"] == protocol["outcomes"]
    assert len(protocol["outcomes"]) == 30
    by_name = {test.rpartition("::")[2]: outcome for test, outcome in direct["outcomes"].items()}
    assert [name for name in PLAIN if by_name[name] == "failed"] == [
        "test_calls_pytest_fail", "test_exits_python", "test_fails", "test_other_module[1]",
        "test_parametrized[2]", "test_two_parameters[differ]"]


def test_a_conftest_hook_sends_every_test_through_pytests_protocol(tmp_path):
    write_suite(tmp_path, conftest='''
        def pytest_runtest_setup(item):
            if item.name == "test_passes":
                raise RuntimeError("the conftest refuses this one")
    ''')
    protocol, direct = run(tmp_path, "protocol"), run(tmp_path, "direct")
    assert direct["direct"] == []
    assert direct["outcomes"] == protocol["outcomes"]
    assert [o for t, o in direct["outcomes"].items() if t.endswith("::test_passes")] == ["failed"]


def test_a_test_in_a_package_goes_through_pytests_protocol(tmp_path):
    """A package's setup (its __init__.py's setup_module) runs as pytest sets up its first test."""
    write_suite(tmp_path)
    (tmp_path / "suite" / "__init__.py").write_text(
        "import os\n\ndef setup_module():\n    os.environ['OL_PACKAGE_SET_UP'] = '1'\n")
    (tmp_path / "suite" / "test_c.py").write_text(
        "import os\n\ndef test_the_package_was_set_up():\n    assert os.environ.get('OL_PACKAGE_SET_UP') == '1'\n")
    protocol, direct = run(tmp_path, "protocol"), run(tmp_path, "direct")
    assert direct["direct"] == []
    assert direct["outcomes"] == protocol["outcomes"]
    assert [o for t, o in direct["outcomes"].items() if t.endswith("::test_the_package_was_set_up")] == ["passed"]
