"""L7.3x course tests, part 2: shared tables (tinyllm.modern.rope_tables).

What each test checks, and why, is the table in section 12 of the chapter
(course/chapters/L7.3x-production-rope.md).  Golden values:
  fixtures/L7.3x/axial_physicsnemo.npz  NVIDIA physicsnemo 2.2.2's own functions and providers
                                        (oracle/L7.3x/axial_physicsnemo.py; `axial_physicsnemo`)
  fixtures/L7.3x/mrope_hf.npz           transformers 5.19.0's Qwen2-VL M-RoPE (`mrope_hf`)
  fixtures/L7.3/rope_hf.npz             HF's Llama and Qwen3 frequencies (`rope_hf`)
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import apply_rope, rope_cos_sin
from tinyllm.modern.rope_tables import (
    AxialRopeTables,
    RopeTables,
    axial_rope_cos_sin,
    multi_axis_rope_cos_sin,
    rope_inv_freq,
)

# numpy's float32 cos/sin and torch's (MKL) differ by up to 2 ulp on the same
# angle: 2 ulp of a value near 1 is 1.2e-7 (fixtures/L7.3/README.md).
TABLE_ATOL = 2.5e-7

CASES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_close(got, want, atol, what, hint):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}. {hint}"
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    if not np.all(diff <= atol):  # also catches nan
        worst = np.unravel_index(np.nanargmax(np.where(np.isnan(diff), np.inf, diff)), diff.shape)
        pytest.fail(f"{what}: at {tuple(int(i) for i in worst)} got {got[worst]!r}, expected {want[worst]!r} "
                    f"(|diff| {diff[worst]:.3g} > atol {atol:.3g}; {int(np.sum(~(diff <= atol)))} of {diff.size} "
                    f"entries off).\n  Look at: {hint}")


def assert_same_bits(got, want, what, hint):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: {got.shape} {got.dtype}, expected {want.shape} {want.dtype}. {hint}")
    assert got.tobytes() == want.tobytes(), f"{what}: same shape, different bits. {hint}"


def golden_table_atol(max_position: int) -> float:
    """How far our float32 tables may be from torch-built ones at positions up to max_position.

    Both compute one float32 product p * f and its cos/sin.  The frequency
    ladders may differ by 1 ulp per frequency (HF takes 1 / theta^(2i/r),
    physicsnemo theta^(-2i/r): two roundings against one); for f <= 1 that is
    <= 2^-23, which moves the angle by <= p * 2^-23, and the product's rounding
    by one ulp of the angle (<= spacing(p)).  Plus 2 ulp of cos/sin (TABLE_ATOL).
    """
    return TABLE_ATOL + max_position * 2.0**-23 + float(np.spacing(np.float32(max_position)))


def output_atol(x, table_atol: float) -> float:
    """A rotated entry a*c - b*s moves by <= 2 max|x| (table error), plus the
    rounding of two products and a sum (a few ulp of max|x|)."""
    x_max = float(np.abs(x).max())
    return 2 * x_max * table_atol + 4 * float(np.spacing(np.float32(x_max)))


# ---- the frequency ladder (section 7) ----


def test_rope_inv_freq_is_hf_ladder(rope_hf):
    assert_same_bits(rope_inv_freq(64, 10000.0), rope_hf["llama/inv_freq"], "rope_inv_freq(64, 1e4) vs HF Llama",
                     "exponent 2i/r in float32, power rounded once to float32, then 1/power in float32")
    ours = rope_inv_freq(128, 1_000_000.0)
    assert ours.dtype == np.float32 and ours.shape == (64,)
    np.testing.assert_array_max_ulp(ours, rope_hf["qwen3/inv_freq"], maxulp=1)  # torch's powf: 1 ulp off once
    assert np.sum(ours != rope_hf["qwen3/inv_freq"]) <= 1
    assert rope_inv_freq(2, 5.0).tolist() == [1.0], "pair 0 always has frequency theta^0 = 1"
    for bad in (0, 3, -2, 2.0, True):
        with pytest.raises((TypeError, ValueError)):
            rope_inv_freq(bad, 10000.0)
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError):
            rope_inv_freq(8, bad)


# ---- the 1D provider (section 7) ----


def test_rope_tables_whole_and_leading_slices():
    inv_freq = rope_inv_freq(16, 10000.0)
    tables = RopeTables(inv_freq, max_seq_len=64)
    cos, sin = tables()
    want_cos, want_sin = rope_cos_sin(np.arange(64), inv_freq)
    assert_same_bits(cos, want_cos, "RopeTables(...)() cos", "the whole table: positions 0..max_seq_len-1")
    assert_same_bits(sin, want_sin, "RopeTables(...)() sin", "the whole table: positions 0..max_seq_len-1")
    for seq_len in (0, 1, 40, 64):
        c, s = tables(seq_len)
        assert c.shape == s.shape == (seq_len, 8)
        assert_same_bits(c, want_cos[:seq_len], f"tables({seq_len}) cos", "the leading seq_len rows")
        assert_same_bits(s, want_sin[:seq_len], f"tables({seq_len}) sin", "the leading seq_len rows")
    c, _ = tables(40)
    assert np.shares_memory(c, cos), "a slice of the shared table, not a copy or a recomputation"
    assert tables(None)[0] is cos and tables()[1] is sin, "built once: every call returns the same arrays"
    assert not cos.flags.writeable and not c.flags.writeable, "shared tables are read-only"
    with pytest.raises(ValueError):
        cos[0, 0] = 2.0
    assert tables.max_seq_len == 64 and tables.inv_freq.dtype == np.float32
    assert inv_freq.flags.writeable, "the caller's inv_freq is left as it was"


def test_rope_tables_attention_scaling():
    inv_freq = rope_inv_freq(8, 10000.0)
    cos, sin = RopeTables(inv_freq, 10, attention_scaling=1.25)(5)
    want_cos, want_sin = rope_cos_sin(np.arange(5), inv_freq, 1.25)
    assert_same_bits(cos, want_cos, "scaled cos", "attention_scaling multiplies both tables, as in rope_cos_sin")
    assert_same_bits(sin, want_sin, "scaled sin", "attention_scaling multiplies both tables, as in rope_cos_sin")


def test_rope_tables_past_max_seq_len_raise_naming_the_limits():
    tables = RopeTables(rope_inv_freq(8, 10000.0), max_seq_len=64)
    with pytest.raises(ValueError) as caught:
        tables(65)
    assert "65" in str(caught.value) and "64" in str(caught.value), (
        f"the error must name the seq_len asked for and max_seq_len, got: {caught.value}")
    for bad, error in ((-1, ValueError), (2.0, TypeError), ("8", TypeError)):
        with pytest.raises(error):
            tables(bad)
    for bad in (0, -3):
        with pytest.raises(ValueError):
            RopeTables(rope_inv_freq(8, 10000.0), max_seq_len=bad)


def test_rope_tables_match_physicsnemo_1d(axial_physicsnemo):
    fx = axial_physicsnemo
    head_dim, max_seq_len, seq_len = int(fx["rope1d/head_dim"]), int(fx["rope1d/max_seq_len"]), int(fx["rope1d/seq_len"])
    tables = RopeTables(rope_inv_freq(head_dim, float(fx["rope1d/theta"])), max_seq_len)
    atol = golden_table_atol(max_seq_len - 1)
    hint = "positions 0..max_seq_len-1, the ladder theta^(-2i/D), one float32 product"
    assert_close(tables()[0], fx["rope1d/cos"], atol, "RopeTables cos vs RotaryEmbedding1DTables", hint)
    assert_close(tables()[1], fx["rope1d/sin"], atol, "RopeTables sin vs RotaryEmbedding1DTables", hint)
    cos, sin = tables(seq_len)
    got = apply_rope(Tensor(fx["rope1d/x"]), cos, sin, layout="interleaved").data  # physicsnemo: adjacent pairs
    assert_close(got, fx["rope1d/out"], output_atol(fx["rope1d/x"], atol),
                 f"rotation with tables({seq_len}) vs physicsnemo apply_rotary_pos_emb", "the leading seq_len rows")


# ---- axial 2D tables (section 8) ----


@pytest.mark.parametrize("case", ["axial_a", "axial_b"])
def test_axial_tables_match_physicsnemo(axial_physicsnemo, case):
    fx = axial_physicsnemo
    (h, w), head_dim, theta = fx[f"{case}/grid"].tolist(), int(fx[f"{case}/head_dim"]), float(fx[f"{case}/theta"])
    cos, sin = axial_rope_cos_sin((h, w), head_dim, theta)
    assert cos.dtype == sin.dtype == np.float32 and cos.shape == (h, w, head_dim // 2)
    atol = golden_table_atol(max(h, w) - 1)
    hint = ("pairs 0..D/4-1 turn with the row index, pairs D/4..D/2-1 with the column index, each axis with "
            "the ladder theta^(-2k/(D/2)); float32 products")
    assert_close(cos, fx[f"{case}/cos"], atol, f"{case} {(h, w)} D={head_dim} theta={theta}: cos", hint)
    assert_close(sin, fx[f"{case}/sin"], atol, f"{case} {(h, w)} D={head_dim} theta={theta}: sin", hint)
    got = apply_rope(Tensor(fx[f"{case}/x"]), cos, sin, layout="interleaved").data  # x [B, heads, h, w, D]
    assert_close(got, fx[f"{case}/out"], output_atol(fx[f"{case}/x"], atol),
                 f"{case}: apply_rope(layout='interleaved') with our tables vs physicsnemo apply_rotary_pos_emb",
                 "physicsnemo pairs adjacent channels (2k, 2k+1): the interleaved layout")


@pytest.mark.parametrize("head_dim", [18, 6, 2, 0, -4])
def test_axial_head_dim_not_a_multiple_of_4_raises(head_dim):
    with pytest.raises(ValueError) as caught:
        axial_rope_cos_sin((4, 4), head_dim)
    assert str(head_dim) in str(caught.value) and "4" in str(caught.value)
    with pytest.raises(ValueError):
        AxialRopeTables(head_dim, (4, 4))


def test_axial_provider_rebuilds_for_a_new_grid(axial_physicsnemo):
    fx = axial_physicsnemo
    provider = AxialRopeTables(16, (5, 7), theta=10000.0)
    cos, sin = provider()
    assert provider.grid_shape == (5, 7) and cos.shape == (5, 7, 8)
    assert_same_bits(cos, axial_rope_cos_sin((5, 7), 16, 10000.0)[0], "provider() cos", "axial_rope_cos_sin")
    again = provider((5, 7))
    assert again[0] is cos and again[1] is sin, "the same grid: the same arrays, nothing rebuilt"
    assert not cos.flags.writeable and not sin.flags.writeable, "shared tables are read-only"

    new_grid = tuple(fx["provider2d/new_grid"].tolist())  # (3, 9), as physicsnemo's forward(latent_hw=...)
    new_cos, new_sin = provider(new_grid)
    assert provider.grid_shape == new_grid and new_cos.shape == (*new_grid, 8)
    atol = golden_table_atol(max(new_grid) - 1)
    hint = "a different grid_shape rebuilds the tables for that grid"
    assert_close(new_cos, fx["provider2d/cos"], atol, "rebuilt cos vs RotaryEmbedding2DTables", hint)
    assert_close(new_sin, fx["provider2d/sin"], atol, "rebuilt sin vs RotaryEmbedding2DTables", hint)
    assert provider()[0] is new_cos, "the rebuilt tables are kept: a call without a grid returns them"


# ---- any number of axes (section 9) ----


@CASES
@given(pairs=st.integers(1, 64), theta=st.sampled_from([100.0, 10000.0, 1_000_000.0]),
       shape=st.sampled_from([(5,), (2, 7), (3, 2, 4)]), seed=st.integers(0, 2**32 - 1),
       frequencies=st.sampled_from(["per_axis", "shared"]))
def test_multi_axis_with_one_axis_is_the_1d_table(pairs, theta, shape, seed, frequencies):
    positions = np.random.default_rng(seed).integers(0, 70000, size=shape)
    cos, sin = multi_axis_rope_cos_sin(positions[None], (pairs,), theta, frequencies=frequencies)
    want_cos, want_sin = rope_cos_sin(positions, rope_inv_freq(2 * pairs, theta))
    hint = "one axis, one section: every pair turns with that axis, on the ladder rope_inv_freq(r, theta)"
    assert_same_bits(cos, want_cos, f"one axis ({frequencies}) cos, positions {shape}", hint)
    assert_same_bits(sin, want_sin, f"one axis ({frequencies}) sin, positions {shape}", hint)


@CASES
@given(h=st.integers(1, 9), w=st.integers(1, 9), quarter=st.integers(1, 16),
       theta=st.sampled_from([100.0, 10000.0]))
def test_multi_axis_with_two_equal_sections_is_the_axial_table(h, w, quarter, theta):
    head_dim = 4 * quarter
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    cos, sin = multi_axis_rope_cos_sin(np.stack([rows, cols]), (quarter, quarter), theta, frequencies="per_axis")
    want_cos, want_sin = axial_rope_cos_sin((h, w), head_dim, theta)
    hint = "two axes (row, column) with head_dim/4 pairs each, each its own ladder: physicsnemo's axial RoPE"
    assert_same_bits(cos, want_cos, f"two equal sections vs axial, grid {(h, w)}, D={head_dim}", hint)
    assert_same_bits(sin, want_sin, f"two equal sections vs axial, grid {(h, w)}, D={head_dim}", hint)


def test_multi_axis_shared_is_qwen2_vl_mrope(mrope_hf):
    fx = mrope_hf
    positions, sections, theta = fx["mrope/position_ids"], tuple(fx["mrope/sections"].tolist()), float(fx["mrope/theta"])
    cos, sin = multi_axis_rope_cos_sin(positions, sections, theta, frequencies="shared")  # [B, S, 64]
    # Our ladder rope_inv_freq(128, 1e6) is 1 ulp from HF's at one frequency (torch's powf): at
    # position p that moves the angle by p * |delta f| and its rounding by one ulp of the angle.
    ours, hf = rope_inv_freq(128, theta).astype(np.float64), fx["mrope/inv_freq"].astype(np.float64)
    top = float(positions.max())
    delta = np.abs(ours - hf)
    table_atol = TABLE_ATOL + np.where(delta > 0, top * delta + np.spacing(np.float32(top * hf)), 0.0).max()
    hint = ("one ladder over all 64 pairs (frequencies='shared'), cut into sections (16, 24, 24): "
            "section a turns with positions[a] (time, row, column)")
    assert_close(cos, fx["mrope/cos"], table_atol, "M-RoPE cos vs Qwen2VLRotaryEmbedding", hint)
    assert_close(sin, fx["mrope/sin"], table_atol, "M-RoPE sin vs Qwen2VLRotaryEmbedding", hint)
    for name in ("q", "k"):
        got = apply_rope(Tensor(fx[f"mrope/{name}"]), cos[:, None], sin[:, None], layout="half").data
        assert_close(got, fx[f"mrope/{name}_out"], output_atol(fx[f"mrope/{name}"], table_atol),
                     f"M-RoPE {name} vs HF qwen2_vl apply_rotary_pos_emb", "Qwen2-VL uses the half layout")
    per_axis, _ = multi_axis_rope_cos_sin(positions, sections, theta, frequencies="per_axis")
    assert np.abs(per_axis - fx["mrope/cos"]).max() > 0.1, "'per_axis' restarts the ladder in every section"


@pytest.mark.parametrize(
    "positions, sections, frequencies",
    [
        pytest.param(np.zeros((2, 5), np.int64), (4,), "per_axis", id="axes-vs-sections"),
        pytest.param(np.zeros((3, 5), np.int64), (4, 4), "shared", id="three-axes-two-sections"),
        pytest.param(np.zeros((2, 5), np.int64), (4, 0), "per_axis", id="empty-section"),
        pytest.param(np.zeros((2, 5), np.int64), (), "per_axis", id="no-sections"),
        pytest.param(np.zeros((2, 5), np.int64), (4, 4), "interleaved", id="unknown-frequencies"),
        pytest.param(-np.ones((2, 5), np.int64), (4, 4), "per_axis", id="negative-position"),
    ],
)
def test_multi_axis_errors(positions, sections, frequencies):
    with pytest.raises(ValueError):
        multi_axis_rope_cos_sin(positions, sections, 10000.0, frequencies=frequencies)
