"""L7.3x The operator registry: one name per operation, several backends behind it.

    from tinyllm.ops.registry import backends, get_op

    rope = get_op("rope")                     # the default backend: the numpy reference
    fast = get_op("rope", backend="native")   # the C kernel tl_rope_f32
    backends("rope")                          # ("numpy", "native")

Every backend of an op keeps the same contract and is tested against the
reference backend, so a caller chooses one by name and nothing else changes.
REGISTRY (given, below) says where each backend lives, as "module:Class".
Import a backend's module only when that backend is asked for
(importlib.import_module), so a backend whose library is missing breaks only
itself.  Chapter: course/chapters/L7.3x-production-rope.md, section 2.
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
    """The names of every registered op, in REGISTRY's order, e.g. ("rope",)."""
    ...


def backends(op: str) -> tuple[str, ...]:
    """The backends of `op` in REGISTRY's order (the reference first), e.g.
    ("numpy", "native").

    Raises:
        TypeError: op is not a string.
        UnknownOpError: no op by that name; the message names it and lists the
            registered ops.
    """
    ...


def get_op(op: str, backend: str | None = None):
    """A new instance of the class that REGISTRY names for (op, backend);
    backend=None means DEFAULT_BACKEND[op].

    Raises:
        TypeError: op or backend is not a string (backend may be None).
        UnknownOpError: no op by that name (the message lists the registered
            ops), or the op has no such backend (the message names it and lists
            the op's backends).
        ImportError: from the backend's module, if it cannot be loaded here
            (e.g. the native library was not built).
    """
    ...
