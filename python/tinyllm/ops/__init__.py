"""Operators with interchangeable backends (L7.3x).

    from tinyllm.ops import backends, get_op
    rope = get_op("rope")                 # or get_op("rope", backend="native")
    y = rope.forward(x, positions)        # x's dtype; rope.forward_fp32 gives float32

The registry is tinyllm.ops.registry; its public names are served from here
as well, looked up on first use, so this package imports even before the
registry is written.
"""

_REGISTRY_NAMES = ("get_op", "backends", "ops", "UnknownOpError")


def __getattr__(name: str):
    if name in _REGISTRY_NAMES:
        from tinyllm.ops import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'tinyllm.ops' has no attribute {name!r}")
