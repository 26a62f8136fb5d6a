"""The import hook that decides where each tinyllm module comes from.

Course tests import `tinyllm.modern.rope`; the runner decides whether that
is the student's file, the reference's, or a text held in memory (a fresh
stub, a pitfall mutant).  Nothing is copied or edited: an overlay maps exact
module names to sources and sits first on `sys.meta_path`; every name it
does not map falls through to the normal import system.

    install_overlay({
        "tinyllm.autograd.tensor": Source.from_path("course/reference/python/tinyllm/autograd/tensor.py"),
        "tinyllm.modern.rope": Source.from_text(mutant_text, origin="python/tinyllm/modern/rope.py"),
    })

A module loaded from text is a normal module: `__file__` is its origin,
tracebacks (and pytest's) show its lines from the text, not from whatever
file may sit at the origin path.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import linecache
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    """Where one module's code comes from: a file (`path`) or a text (`text`,
    shown as if it lived at `origin`)."""

    path: str | None = None
    text: str | None = None
    origin: str | None = None
    code: object = None        # the text compiled at origin, when the caller has it (ol.grading.compiled)

    def __post_init__(self) -> None:
        if (self.path is None) == (self.text is None):
            raise ValueError("Source needs exactly one of path= or text=")

    @classmethod
    def from_path(cls, path: str | Path) -> Source:
        return cls(path=str(path))

    @classmethod
    def from_text(cls, text: str, origin: str | Path | None = None, code: object = None) -> Source:
        return cls(text=text, origin=None if origin is None else str(origin), code=code)

    def to_json(self) -> dict:
        """The form the pytest plugin reads from $OL_OVERLAY."""
        if self.path is not None:
            return {"path": self.path}
        return {"source": self.text, "origin": self.origin}

    @classmethod
    def from_json(cls, name: str, entry: Mapping) -> Source:
        if "path" in entry:
            return cls.from_path(entry["path"])
        if "source" in entry:
            return cls.from_text(entry["source"], entry.get("origin"))
        raise ValueError(f"overlay entry for {name!r} needs 'path' or 'source', got keys {sorted(entry)}")


class OverlayFinder(importlib.abc.MetaPathFinder):
    """A meta-path finder for exactly the module names in its mapping."""

    def __init__(self, mapping: Mapping[str, Source]):
        self.mapping = dict(mapping)

    def find_spec(self, fullname, path=None, target=None):
        source = self.mapping.get(fullname)
        if source is None:
            return None  # not ours: the normal import system finds it
        if source.path is not None:
            file = Path(source.path)
            is_package = file.name == "__init__.py"
            return importlib.util.spec_from_file_location(
                fullname, str(file),
                submodule_search_locations=[str(file.parent)] if is_package else None,
            )
        origin = source.origin or f"<ol overlay: {fullname}>"
        loader = _TextLoader(fullname, source.text, origin, source.code)
        spec = importlib.machinery.ModuleSpec(
            fullname, loader, origin=origin, is_package=loader.is_package(fullname)
        )
        spec.has_location = source.origin is not None  # sets __file__ to the origin
        if spec.submodule_search_locations is not None and source.origin is not None:
            spec.submodule_search_locations.append(str(Path(source.origin).parent))
        return spec

    def __repr__(self) -> str:
        return f"OverlayFinder({sorted(self.mapping)})"


class _TextLoader(importlib.abc.InspectLoader):
    """Loads a module from a string; `get_source` lets linecache, inspect and
    pytest show its lines."""

    def __init__(self, fullname: str, text: str, origin: str, code: object = None):
        self.fullname, self.text, self.origin, self.code = fullname, text, origin, code

    def get_source(self, fullname: str) -> str:
        return self.text

    def get_code(self, fullname: str):
        if self.code is not None:
            return self.code
        return compile(self.text, self.origin, "exec", dont_inherit=True)

    def is_package(self, fullname: str) -> bool:
        return Path(self.origin).name == "__init__.py"

    def exec_module(self, module) -> None:
        # Tracebacks read lines through linecache by file name; a real file at
        # the origin path (the student's own file, say) must not be shown in
        # place of this text.  An entry without mtime is never re-checked.
        linecache.cache[self.origin] = (len(self.text), None, self.text.splitlines(keepends=True), self.origin)
        exec(self.get_code(module.__name__), module.__dict__)


def install_overlay(mapping: Mapping[str, Source]) -> OverlayFinder:
    """Put an overlay for `mapping` first on sys.meta_path and return it.

    Modules in the mapping that were already imported are dropped from
    sys.modules, so the next import takes them from the overlay.
    """
    finder = OverlayFinder(mapping)
    for name in finder.mapping:
        sys.modules.pop(name, None)
    sys.meta_path.insert(0, finder)
    return finder


def remove_overlay(finder: OverlayFinder) -> None:
    """Take `finder` off sys.meta_path and forget the modules it loaded."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    for name in finder.mapping:
        sys.modules.pop(name, None)


OVERLAY_ENV = "OL_OVERLAY"


def install_from_env(variable: str = OVERLAY_ENV) -> OverlayFinder | None:
    """Install the overlay described by the JSON file that $OL_OVERLAY names
    ({module name: {"path": FILE} or {"source": TEXT, "origin": PATH}}, as
    ol.core.runner.serving writes it); None, and nothing installed, without it."""
    path = os.environ.get(variable)
    if not path:
        return None
    with open(path, encoding="utf-8") as file:
        entries = json.load(file)
    return install_overlay({name: Source.from_json(name, entry) for name, entry in entries.items()})
