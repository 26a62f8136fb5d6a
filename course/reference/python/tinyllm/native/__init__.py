"""L9.6 RoPE in C: the Python binding of tl_rope_f32.

The kernel is tl_rope.c beside this file; its contract, with the formula,
shapes, layouts and return codes, is course/contracts/c/tl_rope.h.
`pip install` compiles it into the shared library `_tinyllm_native` (a
setuptools extension that is loaded with ctypes, never imported), and this
module finds that library wherever pip put it.  Set TINYLLM_NATIVE_LIB to the
path of another build of tl_rope.c (yours, say) to load that one instead.

Everything the C relies on is checked here first: a wrong argument raises
TypeError or ValueError naming it, before any C runs.  The binding refuses
the tables apply_rope refuses (and the same exception types), so the C
never sees a table that the Python reference would not rotate, and it
refuses every overlap of memory the kernel cannot honour.
"""

from __future__ import annotations

import ctypes
import importlib.util
import numbers
import os

import numpy as np

__all__ = ["tl_rope_f32", "LAYOUTS", "LIBRARY_PATH"]

LAYOUTS = {"half": 0, "interleaved": 1}  # TL_ROPE_HALF, TL_ROPE_INTERLEAVED in tl_rope.h
_RETURN_CODES = {1: "TL_ROPE_ERR_NULL", 2: "TL_ROPE_ERR_DIM", 3: "TL_ROPE_ERR_LAYOUT", 4: "TL_ROPE_ERR_ROWS"}
_EXTENSION = "_tinyllm_native"


def _library_path() -> str:
    override = os.environ.get("TINYLLM_NATIVE_LIB")
    if override:
        if not os.path.isfile(override):
            raise ImportError(
                f"TINYLLM_NATIVE_LIB={override!r} is not a file; unset it, or point it at a shared library "
                "built from a tl_rope.c (cc -std=c99 -O3 -ffp-contract=off -fPIC -shared ...)"
            )
        return override
    spec = importlib.util.find_spec(_EXTENSION)
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        raise ImportError(
            f"tinyllm.native: the compiled kernel {_EXTENSION} was not found. It is built by the "
            "package install: run `python -m pip install -e .` from the repository root (this needs a "
            "C compiler, gcc or clang)."
        )
    return spec.origin


def _load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    f32 = np.ctypeslib.ndpointer(dtype=np.float32, flags="C_CONTIGUOUS")
    i64s = ctypes.POINTER(ctypes.c_int64)
    lib.tl_rope_f32.argtypes = [
        f32,  # out       (n, head_dim)
        f32,  # x         (n, head_dim)
        f32,  # cos       (T, r/2)
        f32,  # sin       (T, r/2)
        ctypes.c_int,  # ndim
        i64s,  # row_shape     (ndim,)
        i64s,  # table_stride  (ndim,)
        ctypes.c_int64,  # head_dim
        ctypes.c_int64,  # rotary_dim
        ctypes.c_int,  # layout
        ctypes.c_int,  # inverse
    ]
    lib.tl_rope_f32.restype = ctypes.c_int
    return lib


LIBRARY_PATH = _library_path()
_lib = _load(LIBRARY_PATH)


def tl_rope_f32(x, cos, sin, *, layout="half", rotary_dim=None, inverse=False, out=None) -> np.ndarray:
    """Rotate the pairs of x[..., :rotary_dim] by the angles whose cosines and
    sines are cos and sin, in C; x[..., rotary_dim:] is copied unchanged.

    Pair (a, b) becomes (a*cos - b*sin, a*sin + b*cos), or with inverse=True
    (the backward) (a*cos + b*sin, -a*sin + b*cos).  The result equals
    tinyllm.modern.rope.apply_rope(Tensor(x), cos, sin, layout, rotary_dim)
    bit for bit; inverse=True equals it with -sin.

    x: float32, C-contiguous, shape [..., head_dim].
    cos, sin: float32, C-contiguous, finite, the same shape, last axis
        rotary_dim/2, and broadcasting against x[..., :rotary_dim/2] as numpy
        does without growing it: for x [B, H, S, D], tables [S, r/2] or
        [B, 1, S, r/2] or [B, H, S, r/2].  Broadcast tables are never copied:
        the C reads a shared row again.
    layout: the string "half" pairs (x[i], x[i + r/2]) as HF does;
        "interleaved" pairs (x[2i], x[2i+1]) as Meta's Llama code does.
    rotary_dim: r, an int (not a bool), even, 2 <= r <= head_dim; None means
        head_dim.
    inverse: rotate by minus the angle (True or False).
    out: None allocates the result; a writeable float32 C-contiguous array of
        x's shape receives it.  out=x rotates x in place; otherwise out must
        share no memory with x.  out never shares memory with cos or sin: the
        kernel writes out while it still reads the tables (a table row is read
        again for every row of x that shares it).  x, cos and sin may overlap
        one another: they are only read.

    Returns out.

    Raises TypeError (not an array of float32, a bool or float rotary_dim, an
    inverse that is not a bool) or ValueError (shapes, strides, layout,
    rotary_dim's value, nan or inf in the tables, out read-only or
    overlapping) naming the argument, before any C runs: then out is
    untouched.
    """
    _check_array("x", x)
    if x.ndim < 1:
        raise ValueError("tl_rope_f32: x must have a last axis of head entries [..., head_dim], got a 0-d array")
    head_dim = x.shape[-1]
    if not isinstance(layout, str) or layout not in LAYOUTS:  # a list is not even hashable
        raise ValueError(
            f"tl_rope_f32: layout must be 'half' (pairs i, i + r/2: HF) or 'interleaved' "
            f"(pairs 2i, 2i+1: Meta), got {layout!r}"
        )
    r = _rotary_dim(rotary_dim, head_dim)
    if not isinstance(inverse, (bool, np.bool_)):
        raise TypeError(f"tl_rope_f32: inverse must be True or False, got {inverse!r}")
    _check_array("cos", cos)
    _check_array("sin", sin)
    row_shape, table_stride = _table_rows(x.shape, cos.shape, sin.shape, r)
    _check_finite("cos", cos)
    _check_finite("sin", sin)
    out = _output(out, x, cos, sin)
    if x.size == 0:
        return out

    ndim = len(row_shape)
    status = _lib.tl_rope_f32(
        out, x, cos, sin,
        ndim, (ctypes.c_int64 * max(ndim, 1))(*row_shape), (ctypes.c_int64 * max(ndim, 1))(*table_stride),
        head_dim, r, LAYOUTS[layout], int(bool(inverse)),
    )  # fmt: skip
    if status != 0:
        raise RuntimeError(
            f"tl_rope_f32: the C kernel returned {status} ({_RETURN_CODES.get(status, 'not a code of tl_rope.h')}) "
            "on input that passed the Python checks. A stub from `ol start L9.6` returns -1 until you "
            "implement it; a finished kernel must return TL_ROPE_OK (0) for every input that reaches it"
        )
    return out


# ---- validation: each helper names the argument and says what was expected ----


def _check_array(name: str, a) -> None:
    if not isinstance(a, np.ndarray):
        hint = "; pass its .data" if hasattr(a, "data") and isinstance(getattr(a, "data"), np.ndarray) else ""
        raise TypeError(f"tl_rope_f32: {name} must be a numpy.ndarray of float32, got {type(a).__name__}{hint}")
    if a.dtype != np.float32:
        raise TypeError(
            f"tl_rope_f32: {name} must have dtype float32, got {a.dtype}; convert with {name}.astype(np.float32)"
        )
    if not a.flags.c_contiguous:
        raise ValueError(
            f"tl_rope_f32: {name} must be C-contiguous (rows one after another in memory), but it is a "
            f"strided view of shape {a.shape}; pass np.ascontiguousarray({name})"
        )
    if not a.flags.aligned:
        raise ValueError(
            f"tl_rope_f32: {name} starts at an address that is not a multiple of 4 bytes (a float32 view of a "
            f"byte buffer at an odd offset), where C may not read a float; pass {name}.copy()"
        )


def _rotary_dim(rotary_dim, head_dim: int) -> int:
    if rotary_dim is None:
        r = head_dim
    elif isinstance(rotary_dim, numbers.Integral) and not isinstance(rotary_dim, (bool, np.bool_)):
        r = int(rotary_dim)
    else:
        raise TypeError(f"tl_rope_f32: rotary_dim must be an int or None, got {type(rotary_dim).__name__}")
    if r < 2 or r % 2 or r > head_dim:
        raise ValueError(
            f"tl_rope_f32: rotary_dim must be even and in 2..head_dim={head_dim} (x's last axis), got {r}"
            + ("; x's last axis is odd or too short, so pass an even rotary_dim" if rotary_dim is None else "")
        )
    return r


def _table_rows(x_shape, cos_shape, sin_shape, r: int) -> tuple[list[int], list[int]]:
    """Check the tables against x and describe, for the C, which table row
    rotates which row of x: row_shape (x's leading axes, merged where possible)
    and table_stride (table rows per step along each, 0 where it broadcasts)."""
    if cos_shape != sin_shape:
        raise ValueError(f"tl_rope_f32: cos {cos_shape} and sin {sin_shape} must have the same shape")
    lead = x_shape[:-1]
    target = lead + (r // 2,)
    if cos_shape[-1:] != (r // 2,):
        raise ValueError(
            f"tl_rope_f32: cos and sin must have r/2 = {r // 2} entries in their last axis (one per pair), "
            f"got shape {cos_shape}; build them with rope_cos_sin(positions, inv_freq) with len(inv_freq) = r/2"
        )
    table_lead = cos_shape[:-1]
    grows = len(table_lead) > len(lead)
    padded = (1,) * (len(lead) - len(table_lead)) + table_lead
    if grows or any(t not in (1, n) for t, n in zip(padded, lead)):
        raise ValueError(
            f"tl_rope_f32: cos and sin of shape {cos_shape} do not broadcast to x[..., :r/2] of shape {target} "
            "without growing it; "
            "for x [B, H, S, D] use tables [S, r/2], or per-row tables [B, S, r/2] as cos[:, None]"
        )
    # The table is row-major over `padded`; along an axis it broadcasts over, it does not move.
    strides, step = [], 1
    for t, n in zip(reversed(padded), reversed(lead)):
        strides.append(step if t == n else 0)
        step *= t
    strides.reverse()
    # Merge neighbouring axes the C can walk as one (fewer, longer axes), and drop axes of length 1.
    row_shape, table_stride = [], []
    for n, s in zip(lead, strides):
        if n == 1:
            continue
        if row_shape and table_stride[-1] == s * n:
            row_shape[-1] *= n
            table_stride[-1] = s
        else:
            row_shape.append(n)
            table_stride.append(s)
    return row_shape, table_stride


def _check_finite(name: str, table: np.ndarray) -> None:
    """nan or inf in a table: apply_rope refuses it, so the binding does too."""
    if not np.isfinite(table).all():  # one pass over the table, not over x
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(table))[0])
        raise ValueError(
            f"tl_rope_f32: {name} must be finite (cosines or sines of angles, times attention_scaling), but "
            f"{name}{list(where)} is {table[where]}; apply_rope refuses such tables too. Build them with "
            "rope_cos_sin, whose positions, inv_freq and attention_scaling keep every entry finite"
        )


def _output(out, x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """The array the C writes into, once it is certain the kernel can honour it.

    The kernel reads x, cos and sin while it writes out, row after row.  out=x
    is the one overlap it honours (each pair is read before it is written).
    Every array here is C-contiguous, so each covers one interval of memory
    and np.shares_memory's exact answer costs a comparison of bounds."""
    if out is None:
        return np.empty_like(x)
    _check_array("out", out)
    if out.shape != x.shape:
        raise ValueError(f"tl_rope_f32: out must have x's shape {x.shape}, got {out.shape}")
    if not out.flags.writeable:
        raise ValueError("tl_rope_f32: out is read-only; pass a writeable array (or out=None to allocate one)")
    in_place = out.ctypes.data == x.ctypes.data
    if not in_place and np.shares_memory(out, x):
        raise ValueError(
            "tl_rope_f32: out overlaps x without being x itself; pass out=x to rotate in place, "
            "or an array that shares no memory with x"
        )
    for name, table in (("cos", cos), ("sin", sin)):
        if np.shares_memory(out, table):
            raise ValueError(
                f"tl_rope_f32: out{' (which is x)' if in_place else ''} overlaps {name}: the kernel would "
                f"overwrite table rows it has yet to read, and rotate later rows by the wrong angles. Pass "
                f"{name}.copy(), or an out that shares no memory with cos and sin"
            )
    return out
