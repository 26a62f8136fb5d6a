"""The order every graded run runs a suite's tests in (pytest_driver.running_order):
a function of the suite's code alone.  Plain tests, then tests that loop, then
Hypothesis tests; within each, the first case of each test function, then the
other cases, each in the suite's own order."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, strategies as st

from ol.grading.pytest_driver import GENERATED, LOOPING, PLAIN, cost_class, running_order


def plain():
    assert 1 + 1 == 2


def looping():
    for n in range(3):
        assert n >= 0


def nested_loop():
    def helper():
        total = 0
        while total < 3:
            total += 1
        return total

    assert helper() == 3


def comprehension():
    assert [n for n in range(3)] == [0, 1, 2]


@given(st.integers())
def generated(n):
    assert n == n


def item(function, case: str = "", path: str = "test_a.py", cls=None):
    """An item as running_order reads it: its test function, names, file and class."""
    name = function.__name__ + (f"[{case}]" if case else "")
    owner = f"{cls.__name__}::" if cls else ""
    return SimpleNamespace(obj=function, name=name, originalname=function.__name__, fspath=path, cls=cls,
                           nodeid=f"{path}::{owner}{name}")


def test_each_kind_of_test_has_its_cost_class():
    assert [cost_class(item(f)) for f in (plain, looping, nested_loop, comprehension, generated)] == \
        [PLAIN, LOOPING, LOOPING, LOOPING, GENERATED]


def test_an_object_that_is_no_function_is_plain():
    class Strange:
        def __getattr__(self, name):
            raise RuntimeError("a suite's own object may raise on any attribute")

    assert cost_class(SimpleNamespace(obj=Strange())) == PLAIN


def test_cheap_before_costly_and_first_cases_before_second_ones_within_each():
    items = [item(generated, "1"), item(generated, "2"), item(looping, "1"), item(looping, "2"), item(plain, "1"),
             item(plain, "2"), item(comprehension), item(plain, "3", path="test_b.py")]
    order = [i.nodeid for i in running_order(items)]
    assert order == [
        "test_a.py::plain[1]", "test_b.py::plain[3]", "test_a.py::plain[2]",        # plain: first cases, then others;
        "test_a.py::looping[1]", "test_a.py::comprehension", "test_a.py::looping[2]",   # looping;
        "test_a.py::generated[1]", "test_a.py::generated[2]",                      # generated last
    ]


def test_the_order_is_the_same_for_the_same_suite():
    items = [item(f, case) for f in (generated, looping, plain) for case in ("x", "y")]
    assert [i.nodeid for i in running_order(items)] == [i.nodeid for i in running_order(list(items))]


def test_a_method_of_each_class_is_a_test_function_of_its_own():
    class TestA:
        pass

    class TestB:
        pass

    items = [item(plain, "1", "test_c.py", TestA), item(plain, "2", "test_c.py", TestA),
             item(plain, "1", "test_c.py", TestB)]
    assert [i.nodeid for i in running_order(items)] == [
        "test_c.py::TestA::plain[1]", "test_c.py::TestB::plain[1]", "test_c.py::TestA::plain[2]"]


def test_pytest_s_own_collection_orders_the_same_as_item_by_item(tmp_path):
    """The file and class of pytest's test functions are read once per parent node; any other item
    (here a conftest's own item inside a class, beside a method of a module function's name) is read
    by itself, as before."""
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n\nclass Check(pytest.Item):\n    def runtest(self):\n        pass\n\n\n"
        "def pytest_pycollect_makeitem(collector, name, obj):\n"
        "    if name.startswith('check_'):\n        return Check.from_parent(collector, name=name)\n")
    (tmp_path / "test_order_of_items.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2])\ndef test_x(n):\n    pass\n\n\n"
        "class TestA:\n    def check_a(self):\n        pass\n\n    def test_x(self):\n        pass\n\n"
        "    class TestInner:\n        def test_x(self):\n            pass\n\n\ndef test_y():\n    pass\n")
    collected = []

    class Collected:
        def pytest_collection_finish(self, session):
            collected.extend(session.items)

    assert pytest.main([str(tmp_path), "--collect-only", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
                       plugins=[Collected()]) == 0
    order = [i.nodeid.split("::", 1)[1] for i in running_order(collected)]
    assert order == ["test_x[1]", "TestA::check_a", "TestA::test_x", "TestA::TestInner::test_x", "test_y", "test_x[2]"]
