"""Turn an already-imported module into a variant of itself, in place.

The grader collects the student's tests once, against the reference module,
then forks one worker per mutant.  Tests hold references to the module's
objects (`from tinyllm.modern.rope import apply_rope` binds the function
object), so a worker cannot just import another module: it changes the
objects those references point at.

    transplant(module, variant_source)

executes the variant into a scratch namespace, then for every name:
  - a function that exists in both: its code, defaults and closure cells take
    the variant's (the function object, and every reference to it, stays);
  - a class that exists in both: its methods are swapped the same way and its
    other attributes (dataclass fields and defaults) are replaced;
  - anything else (a constant, a new helper): bound in the module.
The module's set of names and every object identity a test can see stay those
of the reference, so a test cannot tell which variant it is running against.
Only ever done in a forked worker that exits afterwards.
"""

from __future__ import annotations

import builtins
from types import FunctionType, ModuleType


class TransplantError(Exception):
    """The variant cannot be grafted in place (a function's closure changed
    shape); the grader runs it in a fresh interpreter instead."""


def transplant(module: ModuleType, variant_source: str) -> None:
    """Make `module` behave as `variant_source` would, keeping its objects."""
    scratch = {
        "__name__": module.__name__,
        "__file__": getattr(module, "__file__", None),
        "__package__": module.__package__,
        "__spec__": module.__spec__,
        "__loader__": module.__loader__,
        "__builtins__": builtins,
    }
    code = compile(variant_source, getattr(module, "__file__", None) or module.__name__, "exec", dont_inherit=True)
    exec(code, scratch)
    class_map = {  # variant class -> reference class, for closures that name their class
        new: vars(module)[name]
        for name, new in scratch.items()
        if isinstance(new, type) and _own_class(vars(module).get(name), module)
    }
    for name, new in scratch.items():
        if name.startswith("__") and name.endswith("__"):
            continue
        old = vars(module).get(name)
        if isinstance(old, FunctionType) and isinstance(new, FunctionType):
            _swap_function(old, new, class_map)
        elif isinstance(new, type) and new in class_map:
            _swap_class(old, new, class_map)
        else:
            setattr(module, name, new)


def _own_class(value, module: ModuleType) -> bool:
    return isinstance(value, type) and value.__module__ == module.__name__


def _swap_function(old: FunctionType, new: FunctionType, class_map: dict) -> None:
    if old.__code__.co_freevars != new.__code__.co_freevars:
        raise TransplantError(
            f"{old.__qualname__}: closure variables {old.__code__.co_freevars} became {new.__code__.co_freevars}"
        )
    old.__code__ = new.__code__
    old.__defaults__ = new.__defaults__
    old.__kwdefaults__ = new.__kwdefaults__
    for old_cell, new_cell, name in zip(old.__closure__ or (), new.__closure__ or (), old.__code__.co_freevars):
        if name == "__class__":
            continue  # zero-argument super() keeps naming the reference class
        try:
            value = new_cell.cell_contents
        except ValueError:  # an empty cell
            continue
        old_cell.cell_contents = class_map.get(value, value) if isinstance(value, type) else value


def _swap_class(old: type, new: type, class_map: dict) -> None:
    for name, value in vars(new).items():
        if name in ("__dict__", "__weakref__", "__module__", "__qualname__"):
            continue
        current = vars(old).get(name)
        if isinstance(current, FunctionType) and isinstance(value, FunctionType):
            _swap_function(current, value, class_map)
        else:
            type.__setattr__(old, name, value)
