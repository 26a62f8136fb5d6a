"""Kit tests of ol.student.stubs: contracts become stubs that keep every signature,
docstring and comment, import cleanly, and raise NotImplementedError naming
the module, the function, the student's file and the contract."""

from __future__ import annotations

import ast
import difflib
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from ol.core.catalog import dotted_name, load_catalog
from ol.core.overlay import Source, install_overlay, remove_overlay
from ol.student.stubs import StubError, stub_source
from helpers.reference import reference_mapping

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
PY_MODULES = [m for m in CATALOG.modules if all(f.endswith(".py") for f in m.files)]


def contract_and_stub(module, file):
    contract = module.contract_for(file)
    text = (ROOT / contract).read_text()
    return contract, text, stub_source(text, module.id, file, contract)


def import_stub(module, file: str, stub: str):
    """Import the stub of `file` (one of the module's files) as its real module
    name, with every other tinyllm module from the reference tree (through the
    overlay, in this process): the other files of the module, its needs, and
    infrastructure no student writes, such as tinyllm.native."""
    mapping = reference_mapping()
    name = dotted_name(file)
    mapping[name] = Source.from_text(stub, origin=f"python/{file}")
    saved = {n: sys.modules.pop(n) for n in list(sys.modules) if n == "tinyllm" or n.startswith("tinyllm.")}
    finder = install_overlay(mapping)
    try:
        __import__(name)
        return sys.modules[name]
    finally:
        remove_overlay(finder)
        for n in [n for n in sys.modules if n == "tinyllm" or n.startswith("tinyllm.")]:
            del sys.modules[n]
        sys.modules.update(saved)


def functions(tree):
    """{qualname: FunctionDef} for module-level functions and methods."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            found.update({f"{node.name}.{f.name}": f for f in node.body if isinstance(f, ast.FunctionDef)})
    return found


@pytest.mark.parametrize("module", PY_MODULES, ids=lambda m: m.id)
def test_stub_keeps_signatures_docstrings_and_everything_but_the_bodies(module):
    for file in module.files:
        contract, text, stub = contract_and_stub(module, file)
        before, after = functions(ast.parse(text)), functions(ast.parse(stub))
        assert before.keys() == after.keys()
        for name, node in before.items():
            new = after[name]
            assert ast.dump(node.args) == ast.dump(new.args), f"{name}: arguments changed"
            assert ast.dump(node.returns) == ast.dump(new.returns) if node.returns else new.returns is None
            assert [ast.dump(d) for d in node.decorator_list] == [ast.dump(d) for d in new.decorator_list]
            assert ast.get_docstring(node) == ast.get_docstring(new), f"{name}: docstring changed"
        assert ast.get_docstring(ast.parse(text)) == ast.get_docstring(ast.parse(stub))
        # Only `...` bodies go; every other line of the contract is still there, in order.
        removed = [line[2:] for line in difflib.ndiff(text.splitlines(), stub.splitlines())
                   if line.startswith("- ")]
        for line in removed:
            assert line.strip() == "..." or line.rstrip().endswith(": ..."), f"lost line: {line!r}"


@pytest.mark.parametrize("module", PY_MODULES, ids=lambda m: m.id)
def test_stub_imports_and_every_function_raises_naming_what_to_write(module):
    for file in module.files:
        check_stub_raises(module, file)


def check_stub_raises(module, file):
    contract, text, stub = contract_and_stub(module, file)
    loaded = import_stub(module, file, stub)
    for qualname in functions(ast.parse(stub)):
        owner, _, name = qualname.rpartition(".")
        target = getattr(loaded, owner) if owner else loaded
        attribute = target.__dict__[name] if owner else getattr(target, name)
        function = attribute.fget if isinstance(attribute, property) else getattr(attribute, "__func__", attribute)
        arguments = [None] * (function.__code__.co_argcount)
        with pytest.raises(NotImplementedError) as caught:
            function(*arguments)
        message = str(caught.value)
        assert message == (f"{module.id}: implement {qualname} in python/{file} (contract: {contract})")


def test_the_rope_stub_reads_like_the_contract():
    rope = CATALOG.get("L7.3")
    _, _, stub = contract_and_stub(rope, rope.files[0])
    assert stub.startswith('"""L7.3 Rotary position embeddings')
    assert "# Written by `ol start L7.3` from course/contracts/py/tinyllm/modern/rope.pyi." in stub
    assert "@dataclass(frozen=True, eq=False)\nclass RopeSpec:" in stub
    assert "    inv_freq: np.ndarray\n    attention_scaling: float = 1.0\n" in stub
    assert ('    def __post_init__(self) -> None:\n        """Validate the fields' in stub)
    module = import_stub(rope, rope.files[0], stub)
    with pytest.raises(NotImplementedError, match=r"L7\.3: implement RopeSpec\.__post_init__ in "
                                                  r"python/tinyllm/modern/rope\.py"):
        module.RopeSpec(np.ones(2))


SYNTHETIC = '''\
"""A contract with the awkward cases: θ in a docstring, one-line defs, a
docstring-only body, a kept body, `pass`, nested classes, no __future__ import."""

import dataclasses  # a comment that must survive


def angle(theta: float = 0.5, label: str = "θ") -> float: ...
def twice(x): return 2 * x
def documented(x) -> "Box":
    """Only a docstring."""


class Box:
    """A box."""

    size: int  # the size

    def grow(self, by: int = 1) -> "Box":
        pass

    class Inner:
        def value(self) -> int:
            """Inner value."""
            ...

    @property
    def area(self) -> int: ...  # trailing comment
    @staticmethod
    def make() -> "Box": ...
'''


def test_synthetic_contract():
    stub = stub_source(SYNTHETIC, "X1", "pkg/box.py", "course/contracts/py/pkg/box.pyi")
    lines = stub.splitlines()
    assert lines[2] == ""  # the module docstring ends on line 2 and stays first
    assert "from __future__ import annotations" in stub
    assert stub.index("from __future__") < stub.index("import dataclasses")
    assert "import dataclasses  # a comment that must survive" in stub
    assert "    size: int  # the size" in stub
    assert 'def angle(theta: float = 0.5, label: str = "θ") -> float:\n    raise NotImplementedError(' in stub
    assert "def twice(x): return 2 * x" in stub, "a body with real code is the contract's gift: kept"
    assert '    """Only a docstring."""\n    raise NotImplementedError("X1: implement documented' in stub
    assert "raise NotImplementedError(\"X1: implement Box.grow in python/pkg/box.py" in stub
    assert "            \"\"\"Inner value.\"\"\"\n            raise NotImplementedError(\"X1: implement Box.Inner.value" in stub
    assert re.search(r"def area\(self\) -> int:\n        raise NotImplementedError\(.*\)  # trailing comment\n\n"
                     r"    @staticmethod", stub)
    namespace = types.ModuleType("box")
    exec(compile(stub, "box.py", "exec"), namespace.__dict__)
    assert namespace.twice(3) == 6
    for call in (namespace.angle, namespace.Box().grow, namespace.Box.make, namespace.Box.Inner().value,
                 lambda: namespace.Box().area, lambda: namespace.documented(1)):
        with pytest.raises(NotImplementedError, match=r"^X1: implement .* in python/pkg/box\.py "
                                                      r"\(contract: course/contracts/py/pkg/box\.pyi\)$"):
            call()


def test_a_contract_without_docstring_gets_the_note_at_the_top():
    stub = stub_source("def f(): ...\n", "X2", "pkg/f.py")
    assert stub.startswith("# Written by `ol start X2` from course/contracts/py/pkg/f.pyi.")
    assert "from __future__ import annotations" in stub
    with pytest.raises(NotImplementedError, match="X2: implement f in python/pkg/f.py"):
        _call(stub, "f")


def _call(stub: str, name: str):
    namespace: dict = {}
    exec(compile(stub, "stub.py", "exec"), namespace)
    return namespace[name]()


def test_a_broken_contract_is_reported_with_its_path():
    with pytest.raises(StubError, match=r"course/contracts/py/pkg/bad.pyi is not valid Python"):
        stub_source("def f(:\n", "X3", "pkg/bad.py")
