"""L9.6 course tests: tl_rope_f32 in C against the Python reference of L7.3.

The contract is course/contracts/c/tl_rope.h; tinyllm.native is the ctypes
binding that checks the arguments and calls the C.  Given the same float32
cos and sin tables, the C must equal apply_rope bit for bit: the same
products and sums in float32, in the same order, with no fused multiply-add.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import apply_rope, rope_cos_sin
from tinyllm.native import tl_rope_f32

LAYOUTS = ("half", "interleaved")


def assert_same_bits(got, want, what, hint):
    """Bitwise equality of two float32 arrays (nan payloads and -0.0 included);
    on failure name the first differing entry, both values and what to look at."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}. {hint}"
    assert got.dtype == want.dtype == np.float32, f"{what}: dtypes {got.dtype} and {want.dtype}, expected float32"
    differ = got.view(np.uint32) != want.view(np.uint32)
    if differ.any():
        first = tuple(int(i) for i in np.argwhere(differ)[0])
        pytest.fail(
            f"{what}: {int(differ.sum())} of {differ.size} entries differ; the first at index {first}: "
            f"got {got[first]!r}, expected {want[first]!r}.\n  Look at: {hint}"
        )


def inv_freq_for(r, base=10000.0):
    return (1.0 / base ** (np.arange(0, r, 2, dtype=np.float32) / np.float32(r))).astype(np.float32)


def reference(x, cos, sin, layout, rotary_dim=None):
    return apply_rope(Tensor(x), cos, sin, layout=layout, rotary_dim=rotary_dim).data


# ---- the worked example of the L7.3 chapter, section 10 ----


def test_hand_example():
    cos, sin = rope_cos_sin(1, [1.0, 0.01])
    x = np.array([1.0, 0.0, 0.0, 1.0], np.float32)
    expected = {
        "half": [0.540302, -0.010000, 0.841471, 0.999950],
        "interleaved": [0.540302, 0.841471, -0.010000, 0.999950],
    }
    for layout, want in expected.items():
        got = tl_rope_f32(x, cos, sin, layout=layout)
        np.testing.assert_allclose(
            got, want, atol=1e-6,
            err_msg=f"layout={layout!r}: which entries form a pair, and (a, b) -> (a cos - b sin, a sin + b cos)",
        )  # fmt: skip


# ---- against the Python reference, over shapes, layouts, rotary_dim and positions ----

# How the tables broadcast over x's leading axes, as in apply_rope:
#   shared       x [B, H, S, D],  tables [S, r/2]         one position per sequence slot
#   per_batch    x [B, H, S, D],  tables [B, 1, S, r/2]   each sequence its own positions
#   per_row      x [B, H, S, D],  tables [B, H, S, r/2]   a table row for every row
#   token_major  x [S, H, D],     tables [S, 1, r/2]      vLLM's layout: a token's heads share its row
#   one_vector   x [D],           tables [r/2]
BROADCASTS = ("shared", "per_batch", "per_row", "token_major", "one_vector")


@st.composite
def rope_cases(draw):
    layout = draw(st.sampled_from(LAYOUTS))
    head_dim = draw(st.integers(2, 48))
    r = 2 * draw(st.integers(1, head_dim // 2))
    rotary_dim = None if r == head_dim and draw(st.booleans()) else r
    broadcast = draw(st.sampled_from(BROADCASTS))
    B, H, S = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 6))
    max_position = draw(st.sampled_from([1, 2048, 65535]))
    base = draw(st.sampled_from([10000.0, 500000.0, 1e6]))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def positions(shape):
        p = rng.integers(0, max_position + 1, size=shape)
        p.flat[-1] = max_position  # always include the largest position
        return p

    if broadcast == "shared":
        x_shape, pos, expand = (B, H, S, head_dim), positions((S,)), lambda t: t
    elif broadcast == "per_batch":
        x_shape, pos, expand = (B, H, S, head_dim), positions((B, S)), lambda t: t[:, None]
    elif broadcast == "per_row":
        x_shape, pos, expand = (B, H, S, head_dim), positions((B, H, S)), lambda t: t
    elif broadcast == "token_major":
        x_shape, pos, expand = (S, H, head_dim), positions((S,)), lambda t: t[:, None]
    else:
        x_shape, pos, expand = (head_dim,), positions(()), lambda t: t
    cos, sin = rope_cos_sin(pos, inv_freq_for(r, base))
    x = (rng.standard_normal(x_shape) * scale).astype(np.float32)
    return x, expand(cos), expand(sin), layout, rotary_dim


CASES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@CASES
@given(rope_cases())
def test_matches_the_python_reference_bitwise(case):
    x, cos, sin, layout, rotary_dim = case
    assert_same_bits(
        tl_rope_f32(x, cos, sin, layout=layout, rotary_dim=rotary_dim),
        reference(x, cos, sin, layout, rotary_dim),
        f"tl_rope_f32 vs apply_rope, x {x.shape}, tables {cos.shape}, layout={layout!r}, rotary_dim={rotary_dim}",
        "the pairs of the layout; out = a*c - b*s and a*s + b*c in float32 in that order, without fma "
        "(-ffp-contract=off); which table row each row of x uses (row_shape, table_stride)",
    )


@CASES
@given(rope_cases())
def test_inverse_is_the_rotation_by_minus_the_angle(case):
    x, cos, sin, layout, rotary_dim = case
    assert_same_bits(
        tl_rope_f32(x, cos, sin, layout=layout, rotary_dim=rotary_dim, inverse=True),
        reference(x, cos, -sin, layout, rotary_dim),
        f"tl_rope_f32(inverse=True) vs apply_rope with -sin, x {x.shape}, layout={layout!r}",
        "the inverse (the backward) rotates by minus the angle: (a*c + b*s, -a*s + b*c)",
    )


@CASES
@given(rope_cases())
def test_inverse_of_forward_recovers_x(case):
    x, cos, sin, layout, rotary_dim = case
    y = tl_rope_f32(x, cos, sin, layout=layout, rotary_dim=rotary_dim)
    back = tl_rope_f32(y, cos, sin, layout=layout, rotary_dim=rotary_dim, inverse=True)
    np.testing.assert_allclose(
        back, x, rtol=1e-5, atol=1e-6 * float(np.abs(x).max(initial=0.0)),
        err_msg="rotating forward then back must give x again: is the inverse the same pairs with -sin?",
    )  # fmt: skip


# ---- properties a caller relies on ----


def test_partial_rotary_copies_the_tail_exactly():
    # The tail holds values arithmetic would change: nan with a payload, -0.0, inf, a subnormal.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 5, 16)).astype(np.float32)
    specials = np.array([0x7FC00123, 0x80000000, 0x7F800000, 0x00000001], np.uint32).view(np.float32)
    x[..., 12:] = specials
    cos, sin = rope_cos_sin(np.arange(5) * 1000, inv_freq_for(12))
    for layout in LAYOUTS:
        got = tl_rope_f32(x, cos, sin, layout=layout, rotary_dim=12)
        assert_same_bits(got[..., 12:], x[..., 12:], f"the tail x[..., 12:], layout={layout!r}",
                         "entries rotary_dim..head_dim-1 are copied, not rotated and not skipped")  # fmt: skip
        assert_same_bits(got, reference(x, cos, sin, layout, 12), f"partial rotary, layout={layout!r}",
                         "only the first rotary_dim entries of each row rotate")  # fmt: skip


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("inverse", [False, True])
def test_in_place_equals_out_of_place(layout, inverse):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 7, 64)).astype(np.float32)
    cos, sin = rope_cos_sin(rng.integers(0, 65536, (2, 7)), inv_freq_for(48))
    cos, sin = cos[:, None], sin[:, None]
    fresh = tl_rope_f32(x, cos, sin, layout=layout, rotary_dim=48, inverse=inverse)
    given_out = np.full_like(x, np.nan)
    returned = tl_rope_f32(x, cos, sin, layout=layout, rotary_dim=48, inverse=inverse, out=given_out)
    assert returned is given_out, "with out=..., tl_rope_f32 returns that array"
    y = x.copy()
    returned = tl_rope_f32(y, cos, sin, layout=layout, rotary_dim=48, inverse=inverse, out=y)
    assert returned is y, "with out=x, tl_rope_f32 rotates x in place and returns it"
    for got, what in ((given_out, "out=given array"), (y, "out=x (in place)")):
        assert_same_bits(got, fresh, f"{what} vs out=None, layout={layout!r}",
                         "each pair must be read before it is written; the tail must survive in place")  # fmt: skip


def test_x_cos_and_sin_are_only_read():
    # tl_rope.h: x, cos and sin are only read, so they may share memory, even overlap one another.
    # Here the tables are two overlapping windows of x's own memory; out is apart.
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (3, 5, 16)).astype(np.float32)
    memory = x.reshape(-1)
    cos, sin = memory[7:37].reshape(5, 6), memory[20:50].reshape(5, 6)  # [S, r/2] with r = 12
    kept, own_cos, own_sin = x.copy(), cos.copy(), sin.copy()  # the same numbers in memory of their own
    for layout in LAYOUTS:
        for inverse in (False, True):
            got = tl_rope_f32(x, cos, sin, layout=layout, rotary_dim=12, inverse=inverse)
            assert_same_bits(x, kept, f"x after tl_rope_f32(layout={layout!r}, inverse={inverse})",
                             "the kernel writes out only: never x, not even as scratch space")  # fmt: skip
            want = reference(kept, own_cos, -own_sin if inverse else own_sin, layout, 12)
            assert_same_bits(got, want, f"tables in x's memory, layout={layout!r}, inverse={inverse}",
                             "read x, cos and sin as they are; write only out")  # fmt: skip


def test_a_row_of_a_batch_equals_that_row_alone():
    rng = np.random.default_rng(5)
    B, H, S, D = 3, 4, 9, 32
    x = rng.standard_normal((B, H, S, D)).astype(np.float32)
    cos, sin = rope_cos_sin(rng.integers(0, 65536, (B, S)), inv_freq_for(D))
    for layout in LAYOUTS:
        batch = tl_rope_f32(x, cos[:, None], sin[:, None], layout=layout)
        for b, h, s in [(0, 0, 0), (2, 3, 8), (1, 2, 4), (2, 0, 5)]:
            alone = tl_rope_f32(x[b, h, s].copy(), cos[b, s].copy(), sin[b, s].copy(), layout=layout)
            assert_same_bits(batch[b, h, s], alone, f"row (b, h, s) = {(b, h, s)} in the batch vs alone",
                             "a row's result may depend only on that row and its table row")  # fmt: skip
        for b in range(B):
            one = tl_rope_f32(x[b : b + 1].copy(), cos[b : b + 1, None].copy(), sin[b : b + 1, None].copy(),
                              layout=layout)  # fmt: skip
            assert_same_bits(batch[b : b + 1], one, f"sequence {b} in the batch vs alone",
                             "which table row rotates which row of x: row_shape and table_stride")  # fmt: skip


def test_the_two_layouts_pair_different_entries():
    # A fixture that tells the layouts apart (head_dim >= 4, position > 0): they must differ.
    x = np.arange(1, 9, dtype=np.float32)
    cos, sin = rope_cos_sin(3, inv_freq_for(8))
    half, inter = (tl_rope_f32(x, cos, sin, layout=layout) for layout in LAYOUTS)
    assert not np.array_equal(half, inter), "half and interleaved layouts gave the same output: is layout ignored?"
