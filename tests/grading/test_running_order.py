"""The order every graded run runs a suite's tests in (pytest_driver.running_order):
a function of the suite's code alone.  Plain tests, then tests that loop, then
Hypothesis tests; within each, the first case of each test function, then the
other cases, each in the suite's own order."""

from __future__ import annotations

from types import SimpleNamespace

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


MODULES: dict[str, SimpleNamespace] = {}   # path -> the one collector node of that file, as pytest has


def item(function, case: str = "", path: str = "test_a.py"):
    """A pytest item as running_order reads it: its test function, names, file and parent node."""
    name = function.__name__ + (f"[{case}]" if case else "")
    parent = MODULES.setdefault(path, SimpleNamespace(path=path))
    return SimpleNamespace(obj=function, name=name, originalname=function.__name__, path=path, parent=parent,
                           cls=None, nodeid=f"{path}::{name}")


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

    def in_class(cls, case):
        parent = MODULES.setdefault(f"test_c.py::{cls.__name__}", SimpleNamespace(path="test_c.py"))
        return SimpleNamespace(obj=plain, name=f"test_x[{case}]", originalname="test_x", path="test_c.py",
                               parent=parent, cls=cls, nodeid=f"test_c.py::{cls.__name__}::test_x[{case}]")

    items = [in_class(TestA, 1), in_class(TestA, 2), in_class(TestB, 1)]
    assert [i.nodeid for i in running_order(items)] == [
        "test_c.py::TestA::test_x[1]", "test_c.py::TestB::test_x[1]", "test_c.py::TestA::test_x[2]"]
