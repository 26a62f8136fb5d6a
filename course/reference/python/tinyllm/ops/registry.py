"""L7.3x The operator registry: one name per operation, several backends behind it.

    from tinyllm.ops.registry import backends, get_op

    rope = get_op("rope")                     # the default backend: the numpy reference
    fast = get_op("rope", backend="native")   # the C kernel tl_rope_f32
    backends("rope")                          # ("numpy", "native")

Every backend of an op keeps the same contract (arguments, shapes, dtypes,
errors) and is tested against the reference backend, so callers choose one by
name and nothing else changes.  REGISTRY says where each backend lives, as
"module:Class"; the module is imported only when that backend is asked for, so
a backend whose library is missing breaks only itself.
"""

from __future__ import annotations

import importlib

# op name -> {backend name -> "module:Class"}; the first backend listed is the reference.
REGISTRY: dict[str, dict[str, str]] = {
    "rope": {
        "numpy": "tinyllm.ops.rope:NumpyRopeOp",  # the reference: numpy, float32 math
        "native": "tinyllm.ops.rope_native:NativeRopeOp",  # the rotation in C (tl_rope_f32, L9.6)
    },
}

# op name -> the backend get_op returns when none is named.
DEFAULT_BACKEND: dict[str, str] = {"rope": "numpy"}


class UnknownOpError(LookupError):
    """No op, or no backend of an op, by that name; the message lists the known ones."""


def ops() -> tuple[str, ...]:
    """The names of every registered op, e.g. ("rope",)."""
    return tuple(REGISTRY)


def backends(op: str) -> tuple[str, ...]:
    """The backends of `op`, the reference first, e.g. ("numpy", "native").
    Raises UnknownOpError for an op that is not registered."""
    return tuple(_backends_of(op))


def get_op(op: str, backend: str | None = None):
    """A new instance of `op`'s backend `backend` (None: DEFAULT_BACKEND[op]).

    Raises TypeError if a name is not a string; UnknownOpError (a LookupError)
    naming the known ops or backends if a name is unknown; ImportError, from
    the backend's module, if that backend cannot be loaded on this machine.
    """
    table = _backends_of(op)
    name = DEFAULT_BACKEND[op] if backend is None else backend
    if not isinstance(name, str):
        raise TypeError(f"get_op: backend must be a string or None, got {type(name).__name__}")
    if name not in table:
        raise UnknownOpError(
            f"get_op: op {op!r} has no backend {name!r}; its backends are {_listing(table)} "
            f"(backend=None gives {DEFAULT_BACKEND[op]!r})"
        )
    module_name, class_name = table[name].split(":")
    return getattr(importlib.import_module(module_name), class_name)()


def _backends_of(op: str) -> dict[str, str]:
    if not isinstance(op, str):
        raise TypeError(f"op must be a string naming an op such as 'rope', got {type(op).__name__}")
    if op not in REGISTRY:
        raise UnknownOpError(f"no op named {op!r}; the registered ops are {_listing(REGISTRY)}")
    return REGISTRY[op]


def _listing(names) -> str:
    return ", ".join(repr(n) for n in names)
