"""L7.3 course tests: RoPE against Hugging Face's numbers and the properties a
rotation must have.  The fourteen tests are the table of the chapter
(course/chapters/L7.3-rope.md, section 12, "What the course tests check").

Golden values come from fixtures/L7.3/rope_hf.npz (oracle/L7.3/rope_hf.py,
transformers 5.19.0 on torch 2.13.0); the `rope_hf` fixture loads them.
"""

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.maths.rotation import rotate_pairs
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin

# numpy's float32 cos/sin and the MKL routines torch uses differ by up to 2 ulp
# on the same (bit-identical) angles: 2 ulp of a value near 1 is 1.2e-7.
TABLE_ATOL = 2.5e-7


def assert_close(got, expected, atol, what, hint):
    """Compare arrays; on failure name the worst entry, the two values and
    what to look at."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}. {hint}"
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    if not np.all(diff <= atol):  # also catches nan
        worst = np.unravel_index(np.nanargmax(np.where(np.isnan(diff), np.inf, diff)), diff.shape)
        pytest.fail(
            f"{what}: at index {tuple(int(i) for i in worst)} got {got[worst]!r}, expected "
            f"{expected[worst]!r} (|diff| {diff[worst]:.3g} > atol {atol:g}; "
            f"{int(np.sum(~(diff <= atol)))} of {diff.size} entries off).\n  Look at: {hint}"
        )


def half_to_interleaved_order(r):
    """perm with x_half[..., i] = x_interleaved[..., perm[i]]: (a0, b0, a1, b1, ...)
    -> (a0, a1, ..., b0, b1, ...), the permutation HF applies to Meta's q/k rows."""
    return np.concatenate([np.arange(0, r, 2), np.arange(1, r, 2)])


def float32_angles(positions, inv_freq):
    return np.asarray(positions, np.float32)[..., None] * np.asarray(inv_freq, np.float32)


def test_hand_example():
    # Chapter section 10, the worked example: r = 4, inv_freq (1, 0.01), position 1, x = (1, 0, 0, 1).
    cos, sin = rope_cos_sin(1, [1.0, 0.01])
    assert_close(cos, [0.540302, 0.999950], 1e-6, "rope_cos_sin(1, [1, 0.01]) cos", "cos of the angles 1 and 0.01")
    assert_close(sin, [0.841471, 0.010000], 1e-6, "rope_cos_sin(1, [1, 0.01]) sin", "sin of the angles 1 and 0.01")
    x = Tensor(np.array([1.0, 0.0, 0.0, 1.0], np.float32))
    expected = {
        "half": [0.540302, -0.010000, 0.841471, 0.999950],
        "interleaved": [0.540302, 0.841471, -0.010000, 0.999950],
    }
    for layout, want in expected.items():
        got = apply_rope(x, cos, sin, layout=layout)
        assert_close(
            got.data, want, 1e-6, f"apply_rope hand example, layout={layout!r}",
            "which entries form a pair in this layout, and (a, b) -> (a cos - b sin, a sin + b cos)",
        )


def test_cos_sin_table_golden(rope_hf):
    positions, inv_freq = rope_hf["llama/positions"], rope_hf["llama/inv_freq"]
    cos, sin = rope_cos_sin(positions, inv_freq)
    assert cos.dtype == np.float32 and sin.dtype == np.float32, (
        f"rope_cos_sin must return float32 tables, got {cos.dtype} and {sin.dtype}"
    )
    hint = (
        "the angle must be ONE float32 product float32(position) * float32(inv_freq), as HF computes it; "
        "float16 breaks past position 2048, float64 drifts ~1e-3 from HF near 65535"
    )
    assert_close(cos, rope_hf["llama/cos"], TABLE_ATOL, "cos vs HF LlamaRotaryEmbedding (positions to 65535)", hint)
    assert_close(sin, rope_hf["llama/sin"], TABLE_ATOL, "sin vs HF LlamaRotaryEmbedding (positions to 65535)", hint)


def test_cos_sin_attention_scaling_golden(rope_hf):
    scaling = float(rope_hf["yarn/attention_scaling"])
    cos, sin = rope_cos_sin(rope_hf["yarn/positions"], rope_hf["yarn/inv_freq"], scaling)
    hint = f"attention_scaling ({scaling:.6f}) multiplies BOTH cos and sin"
    # HF multiplies the float32 tables by float32(scaling): one more rounding on top of TABLE_ATOL.
    atol = TABLE_ATOL * scaling + 1.2e-7
    assert_close(cos, rope_hf["yarn/cos"], atol, "YaRN cos vs HF", hint)
    assert_close(sin, rope_hf["yarn/sin"], atol, "YaRN sin vs HF", hint)


def test_half_layout_golden(rope_hf):
    # Per-row positions [B, S] (the rows differ, one reaches 65535) give tables
    # [B, S, r/2]; cos[:, None] broadcasts them over the heads of q [B, H, S, D].
    cos, sin = rope_cos_sin(rope_hf["apply/positions"], rope_hf["llama/inv_freq"])
    # |q| < ~5 and the tables agree with HF's to TABLE_ATOL: outputs to ~3e-6.
    for name in ("q", "k"):
        got = apply_rope(Tensor(rope_hf[f"apply/{name}"]), cos[:, None], sin[:, None], layout="half")
        assert got.dtype == np.float32, f"apply_rope must keep x's dtype float32, got {got.dtype}"
        assert_close(
            got.data, rope_hf[f"apply/{name}_out"], 3e-6, f"half layout vs HF apply_rotary_pos_emb ({name})",
            "half layout pairs entry i with entry i + r/2 (HF's rotate_half), not adjacent entries",
        )


def test_interleaved_layout_golden(rope_hf):
    # Meta's layout is x [B, S, H, D]; tables [S, r/2] as cos[:, None] broadcast over H.
    cos, sin = rope_cos_sin(rope_hf["meta/positions"], rope_hf["meta/inv_freq"])
    got = apply_rope(Tensor(rope_hf["meta/x"]), cos[:, None], sin[:, None], layout="interleaved")
    # Meta's torch.polar tables come from another cos/sin routine: 1 ulp apart from ours.
    assert_close(
        got.data, rope_hf["meta/out"], 3e-6, "interleaved layout vs Meta's complex apply_rotary_emb",
        "interleaved pairs are (x[2i], x[2i+1]) and the rotated pair goes back to entries 2i and 2i+1",
    )


def test_partial_rotary_golden(rope_hf):
    r = int(rope_hf["neox/rotary_dim"])
    q = rope_hf["neox/q"]
    cos, sin = rope_cos_sin(rope_hf["neox/positions"], rope_hf["neox/inv_freq"])
    got = apply_rope(Tensor(q), cos[:, None], sin[:, None], layout="half", rotary_dim=r)
    hint = f"only x[..., :{r}] rotates (half pairs within those {r} entries); x[..., {r}:] passes through"
    assert_close(got.data, rope_hf["neox/q_out"], 3e-6, f"GPT-NeoX partial rotary, rotary_dim={r} of {q.shape[-1]}", hint)
    assert np.array_equal(got.data[..., r:], q[..., r:]), f"the tail x[..., {r}:] must pass through unchanged. {hint}"


def test_scores_depend_only_on_relative_position(rope_hf):
    inv_freq = rope_hf["llama/inv_freq"]
    rng = np.random.default_rng(73)
    q = Tensor(rng.standard_normal(64).astype(np.float32))
    k = Tensor(rng.standard_normal(64).astype(np.float32))

    def score(m, n, layout):
        qm = apply_rope(q, *rope_cos_sin(m, inv_freq), layout=layout)
        kn = apply_rope(k, *rope_cos_sin(n, inv_freq), layout=layout)
        return float(np.dot(qm.data.astype(np.float64), kn.data.astype(np.float64)))

    scale = float(np.linalg.norm(q.data) * np.linalg.norm(k.data))
    # float32 angles near position 6000 are exact to ~2.5e-4 rad, so shifted
    # scores agree to ~1e-3 of |q||k|; float16 angles are off by whole radians.
    for layout in ("half", "interleaved"):
        for m, n in [(5, 2), (17, 300), (2049, 2047)]:
            base = score(m, n, layout)
            for shift in (1, 1000, 2501, 3999):
                shifted = score(m + shift, n + shift, layout)
                assert abs(shifted - base) <= 1e-3 * scale, (
                    f"layout={layout!r}: q at {m}, k at {n} scores {base:.6f}, but shifted by {shift} "
                    f"({m + shift}, {n + shift}) scores {shifted:.6f}. A score must depend only on n - m: "
                    "rotate q and k by the same rule, with float32 angles"
                )
        assert abs(score(3, 1, layout) - score(1, 3, layout)) > 1e-3 * scale, (
            "scores for offsets +2 and -2 are equal: the rotation is not applied (or its angle is 0)"
        )


def test_rotation_preserves_length_and_position_zero_is_identity():
    rng = np.random.default_rng(7)
    x = Tensor(rng.standard_normal((2, 3, 5, 12)))
    inv_freq = 1.0 / 10000 ** (np.arange(0, 8, 2) / 8)
    positions = np.array([0, 1, 7, 500, 65535])
    cos, sin = rope_cos_sin(positions, inv_freq)
    for layout in ("half", "interleaved"):
        out = apply_rope(x, cos, sin, layout=layout, rotary_dim=8).data
        pairs_in = [(x.data[..., :4], x.data[..., 4:8]), (x.data[..., 0:8:2], x.data[..., 1:8:2])]
        pairs_out = [(out[..., :4], out[..., 4:8]), (out[..., 0:8:2], out[..., 1:8:2])]
        (a, b), (a2, b2) = pairs_in[layout == "interleaved"], pairs_out[layout == "interleaved"]
        assert_close(
            a2**2 + b2**2, a**2 + b**2, 1e-5, f"length of each pair after rotation, layout={layout!r}",
            "a rotation keeps each pair's length: (a cos - b sin)^2 + (a sin + b cos)^2 = a^2 + b^2",
        )
        assert np.array_equal(out[..., 0, :], x.data[..., 0, :]), (
            f"layout={layout!r}: position 0 must leave x unchanged (cos 0 = 1, sin 0 = 0)"
        )
        assert np.array_equal(out[..., 8:], x.data[..., 8:]), "entries past rotary_dim must pass through"


def test_layouts_are_a_permutation_of_each_other():
    rng = np.random.default_rng(11)
    r, head_dim = 8, 12
    x = rng.standard_normal((3, 4, head_dim)).astype(np.float32)
    cos, sin = rope_cos_sin(np.arange(4) * 97, 1.0 / 10000 ** (np.arange(0, r, 2) / r))
    perm = np.concatenate([half_to_interleaved_order(r), np.arange(r, head_dim)])
    interleaved = apply_rope(Tensor(x), cos, sin, layout="interleaved", rotary_dim=r).data
    half_of_permuted = apply_rope(Tensor(x[..., perm]), cos, sin, layout="half", rotary_dim=r).data
    assert_close(
        half_of_permuted, interleaved[..., perm], 1e-6,
        "half layout on permuted x vs interleaved layout, permuted",
        "reordering (a0, b0, a1, b1, ...) into (a0, a1, ..., b0, b1, ...) turns the interleaved "
        "rotation into the half rotation (HF's conversion of Meta checkpoints)",
    )


def test_interleaved_matches_rotate_pairs():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 16))
    positions = np.array([[0, 3, 9, 2047, 4096, 65535], [1, 2, 3, 4, 5, 6]])
    inv_freq = 1.0 / 10000 ** (np.arange(0, 16, 2) / 16)
    cos, sin = rope_cos_sin(positions, inv_freq)
    got = apply_rope(Tensor(x), cos, sin, layout="interleaved").data
    a, b = rotate_pairs(x[..., 0::2], x[..., 1::2], float32_angles(positions, inv_freq).astype(np.float64))
    want = np.stack([a, b], axis=-1).reshape(x.shape)
    # float32 tables vs float64 cos/sin of the same angles: 6e-8 per entry.
    assert_close(
        got, want, 1e-6, "interleaved apply_rope vs M00.2 rotate_pairs on pairs (x[2i], x[2i+1])",
        "the rotation of a pair is the M00.2 one: (a cos - b sin, a sin + b cos)",
    )


@pytest.mark.parametrize("layout, rotary_dim", [("half", None), ("interleaved", None), ("half", 6), ("interleaved", 6)])
def test_gradcheck_both_layouts_and_partial(layout, rotary_dim, central_difference):
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((2, 3, 10))
    weights = rng.standard_normal((2, 3, 10))  # loss = sum(weights * apply_rope(x))
    r = rotary_dim or 10
    cos, sin = rope_cos_sin(np.array([4, 1000, 65535]), 1.0 / 10000 ** (np.arange(0, r, 2) / r))

    def loss(values):
        return float(np.sum(weights * apply_rope(Tensor(values), cos, sin, layout, rotary_dim).data))

    x = Tensor(x0, requires_grad=True)
    (apply_rope(x, cos, sin, layout, rotary_dim) * weights).sum().backward()
    assert x.grad is not None, "x.grad is None: apply_rope must keep x in the autograd graph"
    assert_close(
        x.grad, central_difference(loss, x0), 1e-6, f"d loss / d x (autograd vs central differences), {layout=}, {rotary_dim=}",
        "every entry of a pair must come from x through Tensor ops (indexing, *, -, concat, stack), "
        "never from x.data or a numpy copy",
    )


def test_gradient_is_the_inverse_rotation():
    rng = np.random.default_rng(9)
    x0 = rng.standard_normal((2, 4, 5, 12))
    upstream = rng.standard_normal((2, 4, 5, 12))
    positions = rng.integers(0, 65536, size=(2, 5))
    cos, sin = rope_cos_sin(positions, 1.0 / 10000 ** (np.arange(0, 8, 2) / 8))
    cos, sin = cos[:, None], sin[:, None]
    for layout in ("half", "interleaved"):
        x = Tensor(x0, requires_grad=True)
        apply_rope(x, cos, sin, layout, rotary_dim=8).backward(upstream)
        back_rotated = apply_rope(Tensor(upstream), cos, -sin, layout, rotary_dim=8).data
        assert_close(
            x.grad, back_rotated, 1e-12, f"x.grad vs the upstream gradient rotated by minus the angle, {layout=}",
            "the backward of a rotation is its transpose, the rotation by -p*theta: apply_rope(g, cos, -sin)",
        )
        round_trip = apply_rope(apply_rope(Tensor(x0), cos, sin, layout, 8), cos, -sin, layout, 8).data
        # float32 tables have cos^2 + sin^2 = 1 only to ~1e-7
        assert_close(round_trip, x0, 1e-6, f"rotating by +angle then -angle, {layout=}", "R(-a) R(a) = I")


def test_rope_spec_fields():
    inv_freq = (1.0 / 10000 ** (np.arange(0, 6, 2) / 6)).astype(np.float32)
    spec = RopeSpec(inv_freq)
    assert (spec.attention_scaling, spec.layout, spec.rotary_dim) == (1.0, "half", 6), (
        "RopeSpec(inv_freq) defaults: attention_scaling 1.0, layout 'half', rotary_dim 2 * len(inv_freq)"
    )
    rng = np.random.default_rng(2)
    x = Tensor(rng.standard_normal((2, 3, 5, 10)).astype(np.float32))
    positions = np.array([0, 1, 2, 700, 40000])
    for scaling, layout in [(1.0, "half"), (1.3, "interleaved")]:
        spec = RopeSpec(inv_freq, scaling, layout, 6)
        assert (spec.attention_scaling, spec.layout, spec.rotary_dim) == (scaling, layout, 6)
        cos, sin = rope_cos_sin(positions, inv_freq, scaling)
        assert np.array_equal(spec.cos_sin(positions)[0], cos) and np.array_equal(spec.cos_sin(positions)[1], sin), (
            "spec.cos_sin(positions) must be rope_cos_sin(positions, spec.inv_freq, spec.attention_scaling)"
        )
        want = apply_rope(x, cos, sin, layout=layout, rotary_dim=6).data
        assert np.array_equal(spec.apply(x, positions).data, want), (
            f"spec.apply(x, positions) must be apply_rope(x, cos, sin, {layout!r}, 6) with the spec's tables"
        )
    with pytest.raises(ValueError):
        RopeSpec(inv_freq, 1.0, "half", 8)  # 3 frequencies rotate 6 entries, not 8
    with pytest.raises(ValueError):
        RopeSpec(inv_freq, 1.0, "adjacent", None)
    with pytest.raises(TypeError):
        RopeSpec(inv_freq, 1.0, "half", 6.0)  # the right number, not an int: refused at construction
    # The spec keeps its own read-only float32 copy: changing the caller's array changes nothing.
    mine = inv_freq.astype(np.float64)
    spec = RopeSpec(mine)
    before = spec.cos_sin(positions)
    mine[:] = 0.0
    assert spec.inv_freq.dtype == np.float32 and np.array_equal(spec.inv_freq, inv_freq), (
        "RopeSpec must keep a float32 copy of inv_freq, not the caller's array"
    )
    assert all(np.array_equal(a, b) for a, b in zip(spec.cos_sin(positions), before))
    with pytest.raises(ValueError):
        spec.inv_freq[0] = 1.0  # numpy refuses to write a read-only array


def _x(*shape):
    return Tensor(np.ones(shape, np.float32))


def _tables(rows=3):
    """cos, sin of shape [rows, 2]: tables for r = 4."""
    return rope_cos_sin(np.arange(rows), [1.0, 0.1])


@pytest.mark.parametrize(
    "call, error",
    [
        pytest.param(lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=3), ValueError, id="odd-rotary_dim"),
        pytest.param(lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=0), ValueError, id="zero-rotary_dim"),
        pytest.param(lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=-2), ValueError, id="negative-rotary_dim"),
        pytest.param(lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=6), ValueError, id="oversized-rotary_dim"),
        pytest.param(lambda: apply_rope(_x(3, 5), *_tables()), ValueError, id="odd-head_dim"),
        pytest.param(lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=2.0), TypeError, id="float-rotary_dim"),
        pytest.param(lambda: apply_rope(_x(3, 4), _tables()[0], _tables(2)[1]), ValueError, id="cos-sin-shapes-differ"),
        pytest.param(lambda: apply_rope(_x(3, 6), *_tables()), ValueError, id="tables-too-narrow"),
        pytest.param(lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=2), ValueError, id="tables-too-wide"),
        pytest.param(lambda: apply_rope(_x(5, 4), *_tables()), ValueError, id="tables-not-broadcastable"),
        pytest.param(lambda: apply_rope(_x(3, 4), *(t[None].repeat(2, 0) for t in _tables())),
                     ValueError, id="tables-would-enlarge-x"),
        pytest.param(lambda: apply_rope(_x(3, 4), _tables()[0] * np.nan, _tables()[1]), ValueError, id="nan-cos"),
        pytest.param(lambda: apply_rope(_x(3, 4), _tables()[0], np.full((3, 2), np.inf, np.float32)), ValueError, id="inf-sin"),
        pytest.param(lambda: apply_rope(_x(3, 4), *_tables(), layout="adjacent"), ValueError, id="unknown-layout"),
        pytest.param(lambda: apply_rope(np.ones((3, 4), np.float32), *_tables()), TypeError, id="x-not-a-Tensor"),
        pytest.param(lambda: rope_cos_sin([0, -1, 2], [1.0]), ValueError, id="negative-position"),
        pytest.param(lambda: rope_cos_sin([0.0, 1.5], [1.0]), ValueError, id="fractional-position"),
        pytest.param(lambda: rope_cos_sin([0.0, np.nan], [1.0]), ValueError, id="nan-position"),
        pytest.param(lambda: rope_cos_sin(["0", "1"], [1.0]), TypeError, id="string-positions"),
        pytest.param(lambda: rope_cos_sin([0, 1], [[1.0, 0.1]]), ValueError, id="inv_freq-2d"),
        pytest.param(lambda: rope_cos_sin([0, 1], []), ValueError, id="inv_freq-empty"),
        pytest.param(lambda: rope_cos_sin([0, 1], [1.0], attention_scaling=0.0), ValueError, id="zero-scaling"),
        # float32's limits (chapter section 6): numbers it cannot carry are refused, not turned into inf or nan
        pytest.param(lambda: rope_cos_sin([0, 2**24], [1.0]), ValueError, id="position-2**24"),
        pytest.param(lambda: rope_cos_sin([1e39], [1.0]), ValueError, id="position-1e39"),
        pytest.param(lambda: rope_cos_sin(2**70, [1.0]), ValueError, id="position-beyond-int64"),
        pytest.param(lambda: rope_cos_sin([0, 1], [1.0, 2.0**105]), ValueError, id="inv_freq-above-2**104"),
        pytest.param(lambda: rope_cos_sin([0, 1], [1e39]), ValueError, id="inv_freq-1e39"),
        pytest.param(lambda: rope_cos_sin([0, 1], [1.0], attention_scaling=1e39), ValueError, id="scaling-1e39"),
        pytest.param(lambda: rope_cos_sin([0, 1], [1.0], attention_scaling=2.0**-127), ValueError,
                     id="scaling-below-2**-126"),
        pytest.param(lambda: apply_rope(_x(3, 4), np.full((3, 2), 1e39), _tables()[1]), ValueError,
                     id="float64-cos-beyond-float32-x"),
        pytest.param(lambda: rope_cos_sin([0, 1], [1.0], attention_scaling=True), TypeError, id="bool-scaling"),
        pytest.param(lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=True), TypeError, id="bool-rotary_dim"),
        pytest.param(lambda: apply_rope(_x(3, 4), *_tables(), layout=["half"]), ValueError, id="layout-a-list"),
    ],
)
def test_validation(call, error):
    with pytest.raises(error):
        call()
    # Accepted on the way: integral float positions, and every valid shape above.
    cos, sin = rope_cos_sin(np.array([0.0, 2.0]), [1.0])
    assert cos.shape == (2, 1) and np.isclose(cos[1, 0], np.cos(2.0), atol=1e-6)
    # ... and the limits themselves, with the tables the float32 formula gives (finite, HF's numbers)
    last = 2**24 - 1
    for inv_freq, scaling in [([2.0**104, 1.0], 1.0), ([1.0], 2.0**-126), ([1.0], float(np.finfo(np.float32).max))]:
        cos, sin = rope_cos_sin([0, last], inv_freq, scaling)
        angles = float32_angles([0, last], inv_freq).astype(np.float64)
        where = f"rope_cos_sin([0, 2**24 - 1], {inv_freq}, {scaling}), divided by attention_scaling"
        hint = "the limits are valid input: one float32 product per angle, then cos and sin, times the scaling"
        # 2.5e-7 of numpy's float32 cos/sin, and up to 1.2e-7 more where the scaled table is subnormal
        assert_close(cos / np.float64(scaling), np.cos(angles), 4e-7, where, hint)
        assert_close(sin / np.float64(scaling), np.sin(angles), 4e-7, where, hint)
