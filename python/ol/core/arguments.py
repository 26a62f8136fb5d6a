"""Argument types and flags that more than one `ol` command takes.

Each type raises argparse.ArgumentTypeError with what was expected and what
was given, so argparse prints "ol check: argument --jobs: expected a whole
number >= 1, got '0'" and exits 2.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from ol.core import deps

MAX_TIME_LIMIT = 3600.0   # seconds: a time limit above an hour is a typo, not a slow suite


def module_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("module", metavar="MODULE", help="a module id from the catalog, e.g. L7.3")


def module_args(parser: argparse.ArgumentParser) -> None:
    """MODULE, then --ref-deps or --ref-unstarted (ol.core.deps: where the modules
    MODULE needs come from)."""
    module_arg(parser)
    deps.add_flags(parser)


def module_verb(**switches: str) -> Callable[[argparse.ArgumentParser], None]:
    """The configure of a verb on one module: module_args, then a switch
    --NAME (store_true; underscores become dashes) per keyword, its help
    the value."""
    def configure(parser: argparse.ArgumentParser) -> None:
        module_args(parser)
        for name, help in switches.items():   # noqa: A001 (argparse's word)
            parser.add_argument(f"--{name.replace('_', '-')}", action="store_true", help=help)
    return configure


def whole_number(text: str, least: int = 1, kind: str = "a whole number >= 1", least_said: str = "") -> int:
    """An argument that must be a whole number of at least `least`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {least_said or kind}, got {text}")
    return value


def positive_int(text: str) -> int:
    return whole_number(text)


def seconds(text: str) -> float:
    """A time limit: a number of seconds above 0 and at most MAX_TIME_LIMIT."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= MAX_TIME_LIMIT):
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds above 0 and at most {MAX_TIME_LIMIT:.0f}, got {text}")
    return value


def html_file(text: str) -> str:
    """--html's PATH: empty (the default place) or a name ending in .html."""
    if text and not text.lower().endswith((".html", ".htm")):
        raise argparse.ArgumentTypeError(f"expected a file name ending in .html, got {text!r} "
                                         "(--html alone, after MODULE, writes .ol/reports/MODULE-check.html)")
    return text
