"""Bad input at the edges: the reference RoPE (tinyllm.modern.rope) and the C
binding (tinyllm.native.tl_rope_f32) never return wrong numbers quietly.

- A table of bad inputs for the reference: each raises the exception type its
  contract names (course/contracts/py/tinyllm/modern/rope.pyi), with a
  message naming the argument, and raises before numpy gets to warn (a
  RuntimeWarning from casting 1e39 to float32 would mean the check came too
  late).  The limits themselves are valid: they give the float32 formula's
  finite numbers.
- A table of bad inputs for the binding (tl_rope.h and the binding's
  docstring): the same, and nothing is written (not out, not x, not the
  tables), so no C ran.  Among them every overlap of memory the kernel cannot
  honour.
- A property (hypothesis): on the same generated input, float32 and
  C-contiguous so that both take it, apply_rope and tl_rope_f32 both raise
  the same exception type, or both return the same bits.

Both come from the reference tree through ol's import overlay (tests/helpers/reference.py).
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.reference import reference_modules

rope, tensor, native = reference_modules("tinyllm.modern.rope", "tinyllm.autograd.tensor", "tinyllm.native")
Tensor, RopeSpec, apply_rope, rope_cos_sin = tensor.Tensor, rope.RopeSpec, rope.apply_rope, rope.rope_cos_sin
tl_rope_f32 = native.tl_rope_f32

LADDER = (1.0 / 10000 ** (np.arange(0, 8, 2) / 8)).astype(np.float32)  # r = 8
LAST_POSITION = 2**24 - 1
F32_MAX = float(np.finfo(np.float32).max)  # 2**128 - 2**104


def raises_early(call, error, words):
    """call() raises `error` (that type or a subclass) with a message holding
    every one of `words` (the argument first), and no numpy warning came first."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would be raised here, and not be `error`
        with pytest.raises(Exception) as raised:
            call()
    assert isinstance(raised.value, error), f"raised {type(raised.value).__name__}: {raised.value}, not {error.__name__}"
    missing = [word for word in words if word not in str(raised.value)]
    assert not missing, f"the message does not name {missing}: {raised.value}"


# ---- the reference ---------------------------------------------------------------------------


def x_of(*shape, dtype=np.float32):
    return Tensor(np.ones(shape, dtype))


def tables(rows=3, pairs=2, dtype=np.float32):
    """Valid tables [rows, pairs] (for x [rows, 2 * pairs]), then changed by one case."""
    cos, sin = rope_cos_sin(np.arange(rows), LADDER[:pairs])
    return cos.astype(dtype), sin.astype(dtype)


def with_entry(table, value, index=(1, 1)):
    table = table.copy()
    table[index] = value
    return table


def cos_sin_case(positions=(0, 1), inv_freq=LADDER, scaling=1.0):
    return lambda: rope_cos_sin(positions, inv_freq, scaling)


def apply_case(x=None, cos=None, sin=None, layout="half", rotary_dim=None):
    x = x_of(3, 4) if x is None else x
    default_cos, default_sin = tables()
    cos = default_cos if cos is None else cos
    sin = default_sin if sin is None else sin
    return lambda: apply_rope(x, cos, sin, layout, rotary_dim)


def spec_case(inv_freq=LADDER, attention_scaling=1.0, layout="half", rotary_dim=None):
    return lambda: RopeSpec(inv_freq, attention_scaling, layout, rotary_dim)


REFERENCE_BAD = [
    # (id, call, exception, the argument its message names)
    # positions: whole numbers from 0 to 2**24 - 1 of an integer or float dtype
    ("position 2**24", cos_sin_case(2**24), ValueError, "positions"),
    ("position 2**24 + 1 among valid ones", cos_sin_case([0, 2**24 + 1]), ValueError, "positions"),
    ("float position 2**24", cos_sin_case(np.array([2.0**24])), ValueError, "positions"),
    ("float position 1e39", cos_sin_case([1e39]), ValueError, "positions"),
    ("float64 max position", cos_sin_case(np.array([np.finfo(np.float64).max])), ValueError, "positions"),
    ("int64 position 2**62", cos_sin_case(np.array([2**62])), ValueError, "positions"),
    ("uint64 position 2**64 - 1", cos_sin_case(np.array([2**64 - 1], np.uint64)), ValueError, "positions"),
    ("Python int 2**70", cos_sin_case(2**70), ValueError, "positions"),
    ("Python int 2**70 in a list", cos_sin_case([0, 2**70]), ValueError, "positions"),
    ("Python int -2**70", cos_sin_case([5, -(2**70)]), ValueError, "positions"),
    ("negative position", cos_sin_case([0, -1]), ValueError, "positions"),
    ("negative and too large", cos_sin_case(np.array([-1, 2**64 - 1], np.float64)), ValueError, "positions"),
    ("fractional position", cos_sin_case([0.5]), ValueError, "positions"),
    ("nan position", cos_sin_case([0.0, np.nan]), ValueError, "positions"),
    ("inf position", cos_sin_case([np.inf]), ValueError, "positions"),
    ("-inf position", cos_sin_case([-np.inf]), ValueError, "positions"),
    ("float16 inf position", cos_sin_case(np.array([1, np.inf], np.float16)), ValueError, "positions"),
    ("string position", cos_sin_case("3"), TypeError, "positions"),
    ("string positions", cos_sin_case(["0", "1"]), TypeError, "positions"),
    ("bool position", cos_sin_case(True), TypeError, "positions"),
    ("bool positions", cos_sin_case(np.array([True, False])), TypeError, "positions"),
    ("None positions", cos_sin_case(None), TypeError, "positions"),
    ("complex positions", cos_sin_case(np.array([1 + 0j])), TypeError, "positions"),
    ("datetime positions", cos_sin_case(np.array(["2024-01-01"], "datetime64[D]")), TypeError, "positions"),
    ("Fraction positions", cos_sin_case([Fraction(1, 1)]), TypeError, "positions"),
    # inv_freq: non-empty, 1-D, |theta| <= 2**104
    ("inv_freq 1e39", cos_sin_case(inv_freq=[1e39]), ValueError, "inv_freq"),
    ("inv_freq -1e39", cos_sin_case(inv_freq=[1.0, -1e39]), ValueError, "inv_freq"),
    ("inv_freq 2**105", cos_sin_case(inv_freq=[1.0, 2.0**105]), ValueError, "inv_freq"),
    ("inv_freq just above 2**104", cos_sin_case(inv_freq=[np.nextafter(2.0**104, np.inf)]), ValueError, "inv_freq"),
    ("inv_freq float64 max", cos_sin_case(inv_freq=[np.finfo(np.float64).max]), ValueError, "inv_freq"),
    ("inv_freq nan", cos_sin_case(inv_freq=[1.0, np.nan]), ValueError, "inv_freq"),
    ("inv_freq inf", cos_sin_case(inv_freq=[np.inf]), ValueError, "inv_freq"),
    ("inv_freq 2-D", cos_sin_case(inv_freq=LADDER[None]), ValueError, "inv_freq"),
    ("inv_freq 0-d", cos_sin_case(inv_freq=np.float32(0.5)), ValueError, "inv_freq"),
    ("inv_freq empty", cos_sin_case(inv_freq=np.zeros(0)), ValueError, "inv_freq"),
    ("inv_freq strings", cos_sin_case(inv_freq=["a", "b"]), TypeError, "inv_freq"),
    ("inv_freq bools", cos_sin_case(inv_freq=[True, False]), TypeError, "inv_freq"),
    ("inv_freq None", cos_sin_case(inv_freq=[None]), TypeError, "inv_freq"),
    ("inv_freq complex", cos_sin_case(inv_freq=[1j]), TypeError, "inv_freq"),
    ("inv_freq Python int 2**70", cos_sin_case(inv_freq=[2**70]), TypeError, "inv_freq"),
    # attention_scaling: a real number (not a bool) from 2**-126 to float32's largest
    ("scaling 1e39", cos_sin_case(scaling=1e39), ValueError, "attention_scaling"),
    ("scaling 2**128", cos_sin_case(scaling=2.0**128), ValueError, "attention_scaling"),
    ("scaling Python int 2**2000", cos_sin_case(scaling=2**2000), ValueError, "attention_scaling"),
    ("scaling 2**-127", cos_sin_case(scaling=2.0**-127), ValueError, "attention_scaling"),
    ("scaling 1e-50 (float32 0)", cos_sin_case(scaling=1e-50), ValueError, "attention_scaling"),
    ("scaling zero", cos_sin_case(scaling=0.0), ValueError, "attention_scaling"),
    ("scaling negative", cos_sin_case(scaling=-1.0), ValueError, "attention_scaling"),
    ("scaling nan", cos_sin_case(scaling=np.nan), ValueError, "attention_scaling"),
    ("scaling inf", cos_sin_case(scaling=np.inf), ValueError, "attention_scaling"),
    ("scaling True", cos_sin_case(scaling=True), TypeError, "attention_scaling"),
    ("scaling numpy True", cos_sin_case(scaling=np.True_), TypeError, "attention_scaling"),
    ("scaling a string", cos_sin_case(scaling="1.0"), TypeError, "attention_scaling"),
    ("scaling None", cos_sin_case(scaling=None), TypeError, "attention_scaling"),
    ("scaling complex", cos_sin_case(scaling=1 + 0j), TypeError, "attention_scaling"),
    # apply_rope: x
    ("x a numpy array", apply_case(x=np.ones((3, 4), np.float32)), TypeError, "x"),
    ("x 0-d", apply_case(x=Tensor(np.float32(1.0)), cos=tables(1, 1)[0][0], sin=tables(1, 1)[1][0]), ValueError, "x"),
    # apply_rope: the tables
    ("float64 cos 1e39 for float32 x", apply_case(cos=with_entry(tables(dtype=np.float64)[0], 1e39)), ValueError, "cos"),
    ("float64 sin -1e39 for float32 x", apply_case(sin=with_entry(tables(dtype=np.float64)[1], -1e39)), ValueError,
     "sin"),
    ("longdouble cos beyond float64 x", apply_case(x=x_of(3, 4, dtype=np.float64),
     cos=with_entry(tables(dtype=np.longdouble)[0], np.longdouble(2.0) ** 1100)), ValueError, "cos"),
    ("nan in cos", apply_case(cos=with_entry(tables()[0], np.nan)), ValueError, "cos"),
    ("inf in sin", apply_case(sin=with_entry(tables()[1], np.inf)), ValueError, "sin"),
    ("-inf in sin", apply_case(sin=with_entry(tables()[1], -np.inf, (0, 0))), ValueError, "sin"),
    ("int cos", apply_case(cos=tables()[0].astype(int)), TypeError, "cos"),
    ("bool sin", apply_case(sin=tables()[1] > 0), TypeError, "sin"),
    ("object cos", apply_case(cos=tables()[0].astype(object)), TypeError, "cos"),
    ("cos and sin shapes differ", apply_case(sin=tables(2)[1]), ValueError, "cos"),
    ("tables too narrow", apply_case(x=x_of(3, 8)), ValueError, "cos"),
    ("tables too wide", apply_case(x=x_of(3, 4), rotary_dim=2), ValueError, "cos"),
    ("0-d tables", apply_case(cos=np.float32(1.0), sin=np.float32(0.0)), ValueError, "cos"),
    ("tables do not broadcast", apply_case(x=x_of(5, 4)), ValueError, "cos"),
    ("tables enlarge x", apply_case(cos=tables()[0][None].repeat(2, 0), sin=tables()[1][None].repeat(2, 0)),
     ValueError, "cos"),
    # apply_rope: layout and rotary_dim
    ("layout unknown", apply_case(layout="neox"), ValueError, "layout"),
    ("layout capitalised", apply_case(layout="Half"), ValueError, "layout"),
    ("layout a list", apply_case(layout=["half"]), ValueError, "layout"),
    ("layout a tuple", apply_case(layout=("half",)), ValueError, "layout"),
    ("layout None", apply_case(layout=None), ValueError, "layout"),
    ("layout bytes", apply_case(layout=b"half"), ValueError, "layout"),
    ("layout a 0/1 flag", apply_case(layout=0), ValueError, "layout"),
    ("rotary_dim odd", apply_case(x=x_of(3, 8), cos=tables(3, 1)[0], sin=tables(3, 1)[1], rotary_dim=3),
     ValueError, "rotary_dim"),
    ("rotary_dim zero", apply_case(cos=tables()[0][:, :0], sin=tables()[1][:, :0], rotary_dim=0), ValueError,
     "rotary_dim"),
    ("rotary_dim negative", apply_case(rotary_dim=-2), ValueError, "rotary_dim"),
    ("rotary_dim above head_dim", apply_case(cos=tables(3, 3)[0], sin=tables(3, 3)[1], rotary_dim=6), ValueError,
     "rotary_dim"),
    ("odd head_dim, rotary_dim None", apply_case(x=x_of(3, 5)), ValueError, "rotary_dim"),
    ("rotary_dim 4.0", apply_case(rotary_dim=4.0), TypeError, "rotary_dim"),
    ("rotary_dim '4'", apply_case(rotary_dim="4"), TypeError, "rotary_dim"),
    ("rotary_dim True", apply_case(x=x_of(3, 2), cos=tables(3, 1)[0], sin=tables(3, 1)[1], rotary_dim=True),
     TypeError, "rotary_dim"),
    # RopeSpec: every field at construction
    ("spec rotary_dim 8.0", spec_case(rotary_dim=8.0), TypeError, "rotary_dim"),
    ("spec rotary_dim '8'", spec_case(rotary_dim="8"), TypeError, "rotary_dim"),
    ("spec rotary_dim True", spec_case(inv_freq=LADDER[:1], rotary_dim=True), TypeError, "rotary_dim"),
    ("spec rotary_dim mismatch", spec_case(rotary_dim=6), ValueError, "rotary_dim"),
    ("spec inv_freq 1e39", spec_case(inv_freq=[1.0, 1e39]), ValueError, "inv_freq"),
    ("spec inv_freq 2-D", spec_case(inv_freq=LADDER[None]), ValueError, "inv_freq"),
    ("spec scaling True", spec_case(attention_scaling=True), TypeError, "attention_scaling"),
    ("spec scaling 1e39", spec_case(attention_scaling=1e39), ValueError, "attention_scaling"),
    ("spec layout a list", spec_case(layout=["half"]), ValueError, "layout"),
]


def test_the_reference_table_is_long_enough():
    assert len(REFERENCE_BAD) >= 60 and len({case[0] for case in REFERENCE_BAD}) == len(REFERENCE_BAD)


@pytest.mark.parametrize("what, call, error, argument", REFERENCE_BAD, ids=[case[0] for case in REFERENCE_BAD])
def test_the_reference_refuses_bad_input_naming_the_argument(what, call, error, argument):
    raises_early(call, error, [argument])


def test_the_limits_themselves_give_the_float32_formula():
    # position 2**24 - 1, frequencies +-2**104, scalings 2**-126 and float32's largest: finite numbers,
    # the float32 products' cos and sin (to 2 ulp), times the scaling
    positions = np.array([0, 1, 2**23 + 1, LAST_POSITION])
    for inv_freq, scaling in [([2.0**104, -(2.0**104), 1.0, 1e-4], 1.0), (LADDER, 2.0**-126), (LADDER, F32_MAX)]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cos, sin = rope_cos_sin(positions, inv_freq, scaling)
        angles = (positions.astype(np.float32)[:, None] * np.asarray(inv_freq, np.float32)).astype(np.float64)
        assert np.isfinite(cos).all() and np.isfinite(sin).all()
        # a subnormal table entry (scaling 2**-126) rounds to 2**-149, that is 2**-23 of the scaling
        np.testing.assert_allclose(cos / np.float64(scaling), np.cos(angles), atol=2.5e-7 + 1.2e-7, rtol=0)
        np.testing.assert_allclose(sin / np.float64(scaling), np.sin(angles), atol=2.5e-7 + 1.2e-7, rtol=0)
    spec = RopeSpec([2.0**104, 1.0], F32_MAX, "interleaved", np.int64(4))
    assert spec.rotary_dim == 4 and type(spec.rotary_dim) is int


def test_positions_past_2_24_would_collide_in_float32():
    # why the limit: 2**24 + 1 and 2**24 are one float32, 2**24 - 1 and 2**24 - 2 are not
    assert np.float32(2**24 + 1) == np.float32(2**24)
    assert np.float32(LAST_POSITION) != np.float32(LAST_POSITION - 1)
    cos, _ = rope_cos_sin([LAST_POSITION - 1, LAST_POSITION], [1.0])
    assert cos[0, 0] != cos[1, 0]


def test_rope_spec_keeps_a_read_only_float32_copy():
    mine = LADDER.astype(np.float64)
    spec = RopeSpec(mine)
    mine[:] = 0.0
    assert spec.inv_freq is not mine and spec.inv_freq.dtype == np.float32
    np.testing.assert_array_equal(spec.inv_freq, LADDER)
    with pytest.raises(ValueError, match="read-only"):
        spec.inv_freq[0] = 1.0


# ---- the binding -----------------------------------------------------------------------------


def binding_args():
    """Valid arguments: x [2, 3, 4, 8], tables [4, 4] (one row per position)."""
    cos, sin = tables(4, 4)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 8)).astype(np.float32)
    return dict(x=x, cos=cos, sin=sin)


def misaligned(shape):
    """A float32 array that is C-contiguous but starts 1 byte past a float boundary."""
    raw = np.zeros(int(np.prod(shape)) * 4 + 1, np.uint8)
    return np.frombuffer(raw.data, np.float32, int(np.prod(shape)), offset=1).reshape(shape)


def read_only(a):
    a = a.copy()
    a.flags.writeable = False
    return a


def overlapping_out_and_x(args):
    buffer = np.zeros(args["x"].size + 8, np.float32)
    return dict(x=buffer[: args["x"].size].reshape(args["x"].shape), out=buffer[8:].reshape(args["x"].shape))


def out_over_table(name):
    def changes(args):
        out = np.zeros_like(args["x"])
        table = out.reshape(-1)[3 : 3 + args[name].size].reshape(args[name].shape)  # out's memory, moved 3 floats
        table[...] = args[name]
        return {name: table, "out": out}
    return changes


def table_inside_x_with_out_x(name):
    def changes(args):
        x = args["x"].copy()
        table = x.reshape(-1)[5 : 5 + args[name].size].reshape(args[name].shape)
        return {"x": x, name: table, "out": x}
    return changes


BINDING_BAD = [
    # (id, changes to binding_args() (a dict, or a function of them), exception, words the message names)
    # x
    ("x float64", dict(x=np.ones((2, 3, 4, 8))), TypeError, ["x", "float32"]),
    ("x float16", dict(x=np.ones((2, 3, 4, 8), np.float16)), TypeError, ["x", "float32"]),
    ("x int32", dict(x=np.ones((2, 3, 4, 8), np.int32)), TypeError, ["x", "float32"]),
    ("x complex64", dict(x=np.ones((2, 3, 4, 8), np.complex64)), TypeError, ["x", "float32"]),
    ("x big-endian float32", dict(x=np.ones((2, 3, 4, 8), ">f4")), TypeError, ["x", "float32"]),
    ("x a memoryview", dict(x=memoryview(np.ones((2, 3, 4, 8), np.float32))), TypeError, ["x", "ndarray"]),
    ("x a list", dict(x=[1.0, 2.0]), TypeError, ["x"]),
    ("x None", dict(x=None), TypeError, ["x"]),
    ("x strided", dict(x=np.ones((2, 3, 4, 16), np.float32)[..., ::2]), ValueError, ["x", "contiguous"]),
    ("x Fortran order", dict(x=np.asfortranarray(np.ones((4, 8), np.float32))), ValueError, ["x", "contiguous"]),
    ("x reversed", dict(x=np.ones((4, 8), np.float32)[::-1]), ValueError, ["x", "contiguous"]),
    ("x misaligned", dict(x=misaligned((2, 3, 4, 8))), ValueError, ["x", "copy"]),
    ("x 0-d", dict(x=np.ones((), np.float32)), ValueError, ["x"]),
    ("x head_dim 0", dict(x=np.ones((4, 0), np.float32)), ValueError, ["rotary_dim"]),
    # the tables
    ("cos float64", dict(cos=np.ones((4, 4))), TypeError, ["cos", "float32"]),
    ("sin int", dict(sin=np.ones((4, 4), np.int32)), TypeError, ["sin", "float32"]),
    ("cos a list", dict(cos=[[1.0] * 4] * 4), TypeError, ["cos"]),
    ("sin strided", dict(sin=np.ones((4, 8), np.float32)[:, ::2]), ValueError, ["sin", "contiguous"]),
    ("cos misaligned", dict(cos=misaligned((4, 4))), ValueError, ["cos", "copy"]),
    ("sin shape", dict(sin=np.ones((3, 4), np.float32)), ValueError, ["sin", "same shape"]),
    ("tables last axis", dict(cos=np.ones((4, 8), np.float32), sin=np.ones((4, 8), np.float32)), ValueError,
     ["cos", "r/2"]),
    ("tables 0-d", dict(cos=np.ones((), np.float32), sin=np.ones((), np.float32)), ValueError, ["cos", "r/2"]),
    ("tables length", dict(cos=np.ones((5, 4), np.float32), sin=np.ones((5, 4), np.float32)), ValueError,
     ["cos", "broadcast"]),
    ("tables grow x", dict(cos=np.ones((1, 1, 1, 4, 4), np.float32), sin=np.ones((1, 1, 1, 4, 4), np.float32)),
     ValueError, ["cos", "broadcast"]),
    ("nan in cos", lambda a: dict(cos=with_entry(a["cos"], np.nan)), ValueError, ["cos", "finite"]),
    ("inf in sin", lambda a: dict(sin=with_entry(a["sin"], np.inf)), ValueError, ["sin", "finite"]),
    ("-inf in sin", lambda a: dict(sin=with_entry(a["sin"], -np.inf, (3, 3))), ValueError, ["sin", "finite"]),
    ("nan in cos, x empty", lambda a: dict(x=np.ones((0, 8), np.float32), cos=with_entry(a["cos"][:1], np.nan, (0, 0)),
                                           sin=a["sin"][:1]), ValueError, ["cos", "finite"]),
    # layout, rotary_dim, inverse
    ("layout unknown", dict(layout="neox"), ValueError, ["layout", "half", "interleaved"]),
    ("layout capitalised", dict(layout="HALF"), ValueError, ["layout"]),
    ("layout a list", dict(layout=["half"]), ValueError, ["layout", "half", "interleaved"]),
    ("layout None", dict(layout=None), ValueError, ["layout"]),
    ("layout the C's 0", dict(layout=0), ValueError, ["layout"]),
    ("rotary_dim odd", dict(rotary_dim=5), ValueError, ["rotary_dim", "even"]),
    ("rotary_dim too big", dict(rotary_dim=10), ValueError, ["rotary_dim", "head_dim"]),
    ("rotary_dim zero", dict(rotary_dim=0), ValueError, ["rotary_dim"]),
    ("rotary_dim negative", dict(rotary_dim=-8), ValueError, ["rotary_dim"]),
    ("rotary_dim float", dict(rotary_dim=8.0), TypeError, ["rotary_dim"]),
    ("rotary_dim numpy float", dict(rotary_dim=np.float64(8.0)), TypeError, ["rotary_dim"]),
    ("rotary_dim a string", dict(rotary_dim="8"), TypeError, ["rotary_dim"]),
    ("rotary_dim True", dict(rotary_dim=True), TypeError, ["rotary_dim"]),
    ("inverse a string", dict(inverse="yes"), TypeError, ["inverse"]),
    ("inverse 1", dict(inverse=1), TypeError, ["inverse"]),
    ("inverse None", dict(inverse=None), TypeError, ["inverse"]),
    # out, and every overlap of memory the kernel cannot honour
    ("out float64", dict(out=np.ones((2, 3, 4, 8))), TypeError, ["out", "float32"]),
    ("out a list", dict(out=[0.0] * 8), TypeError, ["out"]),
    ("out shape", dict(out=np.ones((2, 3, 4, 9), np.float32)), ValueError, ["out", "shape"]),
    ("out strided", dict(out=np.ones((2, 3, 4, 16), np.float32)[..., ::2]), ValueError, ["out", "contiguous"]),
    ("out misaligned", dict(out=misaligned((2, 3, 4, 8))), ValueError, ["out", "copy"]),
    ("out read-only", lambda a: dict(out=read_only(a["x"])), ValueError, ["out", "read-only"]),
    ("out=x, x read-only", lambda a: dict(x=read_only(a["x"]), out="x"), ValueError, ["out", "read-only"]),
    ("out overlapping x", overlapping_out_and_x, ValueError, ["out", "overlaps x"]),
    ("out overlapping cos", out_over_table("cos"), ValueError, ["out", "overlaps cos"]),
    ("out overlapping sin", out_over_table("sin"), ValueError, ["out", "overlaps sin"]),
    ("cos inside x with out=x", table_inside_x_with_out_x("cos"), ValueError, ["out", "overlaps cos"]),
    ("sin inside x with out=x", table_inside_x_with_out_x("sin"), ValueError, ["out", "overlaps sin"]),
]


def binding_call(changes):
    """The arguments of one case: binding_args() with the changes, out="x" meaning out=x."""
    args = binding_args()
    args.update(changes(args) if callable(changes) else changes)
    if isinstance(args.get("out"), str):
        args["out"] = args["x"]
    keywords = {k: args[k] for k in ("layout", "rotary_dim", "inverse", "out") if k in args}
    return args["x"], args["cos"], args["sin"], keywords


def test_the_binding_table_is_long_enough():
    assert len(BINDING_BAD) >= 40 and len({case[0] for case in BINDING_BAD}) == len(BINDING_BAD)


@pytest.mark.parametrize("what, changes, error, words", BINDING_BAD, ids=[case[0] for case in BINDING_BAD])
def test_the_binding_refuses_bad_input_before_any_c_runs(what, changes, error, words):
    x, cos, sin, keywords = binding_call(changes)
    arrays = [a for a in (x, cos, sin, keywords.get("out")) if isinstance(a, np.ndarray)]
    before = [a.tobytes() for a in arrays]
    raises_early(lambda: tl_rope_f32(x, cos, sin, **keywords), error, words)
    assert [a.tobytes() for a in arrays] == before, f"{what}: an argument changed, so something ran before the checks"


def test_the_overlaps_the_kernel_honours_are_accepted():
    args = binding_args()
    want = tl_rope_f32(args["x"], args["cos"], args["sin"])
    y = args["x"].copy()
    assert tl_rope_f32(y, args["cos"], args["sin"], out=y) is y  # out=x: in place
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))
    # x, cos and sin share one buffer (they are only read), out is apart
    buffer = np.concatenate([args["x"].ravel(), args["cos"].ravel(), args["sin"].ravel()])
    n, t = args["x"].size, args["cos"].size
    x, cos, sin = buffer[:n].reshape(args["x"].shape), buffer[n : n + t].reshape(4, 4), buffer[n + t :].reshape(4, 4)
    np.testing.assert_array_equal(tl_rope_f32(x, cos, sin).view(np.uint32), want.view(np.uint32))
    same = tl_rope_f32(args["x"], args["cos"], args["cos"])  # one array as both tables
    np.testing.assert_array_equal(same, apply_rope(Tensor(args["x"]), args["cos"], args["cos"]).data)


# ---- the reference and the binding on the same generated input --------------------------------

LAYOUTS = ["half", "interleaved"]
BAD_LAYOUTS = ["neox", "HALF", None, ["half"], 1]
BAD_ROTARY_DIMS = [0, 1, 3, -2, 10, True, 4.0, "4"]
SPECIAL = [np.nan, np.inf, -np.inf, 3e38, -0.0, 1e-45]  # the first three are refused, the others are numbers


@st.composite
def shared_inputs(draw):
    """float32, C-contiguous x and tables, as both take them.  Each argument is
    wrong now and then (about one time in four), so that valid input, single
    faults and several faults at once all come up: tables that do not fit,
    nan, inf or huge entries, a sin of another shape, odd head_dims, and
    layouts and rotary_dims of any kind."""

    def now_and_then(one_in=4):
        return draw(st.integers(1, one_in)) == 1

    lead = draw(st.lists(st.integers(0, 3), max_size=3))
    head_dim = 2 * draw(st.integers(0, 5)) + (1 if now_and_then(8) else 0)
    layout = draw(st.sampled_from(BAD_LAYOUTS if now_and_then() else LAYOUTS))
    valid_rotary_dims = [None] + list(range(2, head_dim + 1, 2))
    rotary_dim = draw(st.sampled_from(BAD_ROTARY_DIMS if now_and_then() else valid_rotary_dims))
    pairs = (rotary_dim if type(rotary_dim) is int and rotary_dim > 1 else head_dim) // 2
    if now_and_then():  # tables of any shape
        table_lead, pairs = draw(st.lists(st.integers(0, 3), max_size=4)), draw(st.integers(0, 5))
    else:  # tables that fit x, some leading axes broadcast (1) or dropped
        table_lead = [n if draw(st.booleans()) else 1 for n in lead][draw(st.integers(0, len(lead))) :]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal(tuple(lead) + (head_dim,)).astype(np.float32)
    angles = rng.uniform(-4, 4, tuple(table_lead) + (pairs,)).astype(np.float32)
    cos, sin = np.cos(angles), np.sin(angles)
    for table in (cos, sin):
        if table.size and now_and_then():
            table.flat[draw(st.integers(0, table.size - 1))] = draw(st.sampled_from(SPECIAL))
    if sin.ndim and now_and_then(8):
        sin = np.ascontiguousarray(sin[..., : max(sin.shape[-1] - 1, 0)])
    return x, cos, sin, layout, rotary_dim


def outcome(call):
    """The array a call returns, or the type of TypeError or ValueError it raises.
    (Finite tables as large as 3e38 are valid, and may overflow a product to
    inf in both: float32 arithmetic, which numpy reports with a warning.)"""
    with np.errstate(over="ignore", under="ignore"):
        try:
            return call()
        except (TypeError, ValueError) as error:
            return type(error)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shared_inputs())
def test_the_reference_and_the_binding_refuse_alike_or_agree_bit_for_bit(case):
    x, cos, sin, layout, rotary_dim = case
    where = f"x {x.shape}, cos {cos.shape}, sin {sin.shape}, layout={layout!r}, rotary_dim={rotary_dim!r}"
    ours = outcome(lambda: apply_rope(Tensor(x), cos, sin, layout, rotary_dim).data)
    theirs = outcome(lambda: tl_rope_f32(x, cos, sin, layout=layout, rotary_dim=rotary_dim))
    accepted = isinstance(ours, np.ndarray), isinstance(theirs, np.ndarray)
    if accepted == (True, True):
        assert ours.tobytes() == theirs.tobytes(), f"apply_rope and tl_rope_f32 accept, with different bits: {where}"
    else:
        said = [f"returns {o.dtype}{list(o.shape)}" if a else f"raises {o.__name__}" for o, a in zip((ours, theirs), accepted)]
        assert accepted == (False, False) and ours is theirs, f"apply_rope {said[0]}, tl_rope_f32 {said[1]}: {where}"
