"""Kit tests of ol.core.arguments: a bad value names the argument and what was expected."""

from __future__ import annotations

import argparse

import pytest

from ol.core.arguments import MAX_TIME_LIMIT, module_verb, positive_int, seconds, whole_number
from ol.core.deps import MINE, REFERENCE, UNSTARTED, policy_of


@pytest.mark.parametrize(("parse", "text", "said"), [
    (positive_int, "0", "expected a whole number >= 1, got 0"),
    (positive_int, "two", "expected a whole number >= 1, got 'two'"),
    (seconds, "0", f"above 0 and at most {MAX_TIME_LIMIT:.0f}, got 0"),
    (seconds, "inf", f"above 0 and at most {MAX_TIME_LIMIT:.0f}, got inf"),
    (seconds, "soon", "expected a number of seconds, got 'soon'"),
    (lambda text: whole_number(text, 256, "a whole number of MiB", "at least 256 MiB"), "100",
     "expected at least 256 MiB, got 100"),
])
def test_a_bad_value_says_what_was_expected(parse, text, said):
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        parse(text)
    assert str(raised.value).endswith(said), str(raised.value)


def test_good_values_pass_through():
    assert (positive_int("3"), seconds("2.5"), seconds(str(MAX_TIME_LIMIT))) == (3, 2.5, MAX_TIME_LIMIT)


def test_a_module_verb_takes_the_module_ref_deps_and_its_switches(capsys):
    parser = argparse.ArgumentParser(prog="ol diff")
    module_verb(code_only="compare the code alone")(parser)
    args = parser.parse_args(["L7.3", "--ref-deps", "--code-only"])
    assert (args.module, args.ref_deps, args.code_only) == ("L7.3", True, True)
    assert policy_of(args) == REFERENCE
    assert policy_of(parser.parse_args(["L7.3", "--ref-unstarted"])) == UNSTARTED
    assert policy_of(parser.parse_args(["L7.3"])) == MINE
    assert parser.parse_args(["L7.3"]).code_only is False
    with pytest.raises(SystemExit):
        parser.parse_args(["L7.3", "--mine"])
    assert "unrecognized arguments: --mine" in capsys.readouterr().err
    with pytest.raises(SystemExit):   # one meaning at a time
        parser.parse_args(["L7.3", "--ref-deps", "--ref-unstarted"])
    assert "not allowed with argument" in capsys.readouterr().err
