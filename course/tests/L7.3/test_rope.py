"""L7.3 course tests: RoPE against Hugging Face's numbers and the properties a
rotation must have.  The fourteen tests are the table of the chapter
(course/chapters/L7.3-rope.md, section 12, "What the course tests check").

Golden values come from fixtures/L7.3/rope_hf.npz (oracle/L7.3/rope_hf.py,
transformers 5.19.0 on torch 2.13.0); the `rope_hf` fixture loads them.

Each comparison is a scenario, a function of `rope` (the code under test:
rope_cos_sin, apply_rope, RopeSpec), checked through the `expect` fixture
(course/tests/diagnose.py).  When one fails, the same scenario runs on the
known mistakes of course/mutants/L7.3/ (the pitfalls and the misconceptions),
and the message names the one that gives your result, or says where your
result differs without guessing a cause.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from diagnose import Case, Expectations, Mistakes, Where, refuses

from tinyllm.autograd.tensor import Tensor
from tinyllm.maths.rotation import rotate_pairs
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin

# numpy's float32 cos/sin and the MKL routines torch uses differ by up to 2 ulp
# on the same (bit-identical) angles: 2 ulp of a value near 1 is 1.2e-7.
TABLE_ATOL = 2.5e-7

# What a scenario may use of the code under test: the student's, or a known mistake's.
STUDENT = SimpleNamespace(rope_cos_sin=rope_cos_sin, apply_rope=apply_rope, RopeSpec=RopeSpec)
MISTAKES = Mistakes("L7.3", "tinyllm/modern/rope.py", names=tuple(vars(STUDENT)))


@pytest.fixture
def expect():
    """This test's comparisons; a failing one names the known mistake that gives the same result."""
    return Expectations(STUDENT, MISTAKES)


def half_to_interleaved_order(r):
    """perm with x_half[..., i] = x_interleaved[..., perm[i]]: (a0, b0, a1, b1, ...)
    -> (a0, a1, ..., b0, b1, ...), the permutation HF applies to Meta's q/k rows."""
    return np.concatenate([np.arange(0, r, 2), np.arange(1, r, 2)])


def float32_angles(positions, inv_freq):
    return np.asarray(positions, np.float32)[..., None] * np.asarray(inv_freq, np.float32)


def test_hand_example(expect):
    # Chapter section 10, the worked example: r = 4, inv_freq (1, 0.01), position 1, x = (1, 0, 0, 1).
    for k, (name, want) in enumerate({"cos": [0.540302, 0.999950], "sin": [0.841471, 0.010000]}.items()):
        expect.close(lambda rope, k=k: rope.rope_cos_sin(1, [1.0, 0.01])[k], want, 1e-6,
                     f"rope_cos_sin(1, [1, 0.01]) {name}, the {name} of the angles 1 and 0.01", where=Where.tables(1))
    x = np.array([1.0, 0.0, 0.0, 1.0], np.float32)
    expected = {
        "half": [0.540302, -0.010000, 0.841471, 0.999950],
        "interleaved": [0.540302, 0.841471, -0.010000, 0.999950],
    }
    for layout, want in expected.items():
        def rotated(rope, layout=layout):
            cos, sin = rope.rope_cos_sin(1, [1.0, 0.01])
            return rope.apply_rope(Tensor(x), cos, sin, layout=layout).data

        expect.close(rotated, want, 1e-6, f"apply_rope on the hand example (x = (1, 0, 0, 1)), layout={layout!r}",
                     where=Where.heads(1, layout))


def test_cos_sin_table_golden(rope_hf, expect):
    positions, inv_freq = rope_hf["llama/positions"], rope_hf["llama/inv_freq"]
    for k, name in enumerate(("cos", "sin")):
        expect.close(lambda rope, k=k: rope.rope_cos_sin(positions, inv_freq)[k], rope_hf[f"llama/{name}"],
                     TABLE_ATOL, f"{name} vs HF LlamaRotaryEmbedding (positions to 65535)",
                     where=Where.tables(positions), dtype=np.float32)


def test_cos_sin_attention_scaling_golden(rope_hf, expect):
    scaling = float(rope_hf["yarn/attention_scaling"])
    positions, inv_freq = rope_hf["yarn/positions"], rope_hf["yarn/inv_freq"]
    # HF multiplies the float32 tables by float32(scaling): one more rounding on top of TABLE_ATOL.
    atol = TABLE_ATOL * scaling + 1.2e-7
    for k, name in enumerate(("cos", "sin")):
        expect.close(lambda rope, k=k: rope.rope_cos_sin(positions, inv_freq, scaling)[k], rope_hf[f"yarn/{name}"],
                     atol, f"YaRN {name} vs HF, attention_scaling {scaling:.6f}", where=Where.tables(positions))


def test_half_layout_golden(rope_hf, expect):
    # Per-row positions [B, S] (the rows differ, one reaches 65535) give tables
    # [B, S, r/2]; cos[:, None] broadcasts them over the heads of q [B, H, S, D].
    positions, inv_freq = rope_hf["apply/positions"], rope_hf["llama/inv_freq"]

    def half(x, table_dtype=np.float32):
        def rotated(rope):
            cos, sin = (t.astype(table_dtype) for t in rope.rope_cos_sin(positions, inv_freq))
            return rope.apply_rope(Tensor(x), cos[:, None], sin[:, None], layout="half").data
        return rotated

    where = Where.heads(positions[:, None, :], "half")
    # |q| < ~5 and the tables agree with HF's to TABLE_ATOL: outputs to ~3e-6.
    for name in ("q", "k"):
        expect.close(half(rope_hf[f"apply/{name}"]), rope_hf[f"apply/{name}_out"], 3e-6,
                     f"half layout vs HF apply_rotary_pos_emb ({name})", where=where, dtype=np.float32)
    # Tables of another float dtype are cast to x's: the output stays float32, and HF's.
    expect.close(half(rope_hf["apply/q"], np.float64), rope_hf["apply/q_out"], 3e-6,
                 "half layout vs HF (q), with the tables passed as float64 (apply_rope casts them to x's dtype)",
                 where=where, dtype=np.float32)


def test_interleaved_layout_golden(rope_hf, expect):
    # Meta's layout is x [B, S, H, D]; tables [S, r/2] as cos[:, None] broadcast over H.
    positions = rope_hf["meta/positions"]

    def interleaved(rope):
        cos, sin = rope.rope_cos_sin(positions, rope_hf["meta/inv_freq"])
        return rope.apply_rope(Tensor(rope_hf["meta/x"]), cos[:, None], sin[:, None], layout="interleaved").data

    # Meta's torch.polar tables come from another cos/sin routine: 1 ulp apart from ours.
    expect.close(interleaved, rope_hf["meta/out"], 3e-6, "interleaved layout vs Meta's complex apply_rotary_emb",
                 where=Where.heads(positions[:, None], "interleaved"))


def test_partial_rotary_golden(rope_hf, expect):
    r = int(rope_hf["neox/rotary_dim"])
    q, positions = rope_hf["neox/q"], rope_hf["neox/positions"]

    def partial(rope):
        cos, sin = rope.rope_cos_sin(positions, rope_hf["neox/inv_freq"])
        return rope.apply_rope(Tensor(q), cos[:, None], sin[:, None], layout="half", rotary_dim=r).data

    expect.close(partial, rope_hf["neox/q_out"], 3e-6, f"GPT-NeoX partial rotary, rotary_dim={r} of {q.shape[-1]}",
                 where=Where.heads(positions[:, None], "half", r))
    expect.equal(lambda rope: partial(rope)[..., r:], q[..., r:],
                 f"the tail x[..., {r}:] past rotary_dim={r}, which must pass through unchanged")


def test_scores_depend_only_on_relative_position(rope_hf, expect):
    inv_freq = rope_hf["llama/inv_freq"]
    rng = np.random.default_rng(73)
    q = Tensor(rng.standard_normal(64).astype(np.float32))
    k = Tensor(rng.standard_normal(64).astype(np.float32))

    def score(rope, m, n, layout):
        qm = rope.apply_rope(q, *rope.rope_cos_sin(m, inv_freq), layout=layout)
        kn = rope.apply_rope(k, *rope.rope_cos_sin(n, inv_freq), layout=layout)
        return float(np.dot(qm.data.astype(np.float64), kn.data.astype(np.float64)))

    scale = float(np.linalg.norm(q.data) * np.linalg.norm(k.data))
    shifts = (1, 1000, 2501, 3999)
    # float32 angles near position 6000 are exact to ~2.5e-4 rad, so shifted
    # scores agree to ~1e-3 of |q||k|; float16 angles are off by whole radians.
    for layout in ("half", "interleaved"):
        for m, n in [(5, 2), (17, 300), (2049, 2047)]:
            expect.close(
                lambda rope, m=m, n=n, layout=layout: np.array([score(rope, m + s, n + s, layout) for s in shifts]),
                lambda rope, m=m, n=n, layout=layout: np.full(len(shifts), score(rope, m, n, layout)),
                1e-3 * scale,
                f"layout={layout!r}: the score of q at {m} and k at {n}, with both shifted by the same amount, vs "
                f"unshifted (a score must depend only on n - m; 1e-3 is of |q||k| = {scale:.4g})",
                where=Where.items("shift", shifts),
            )
        plus, minus = score(STUDENT, 3, 1, layout), score(STUDENT, 1, 3, layout)
        assert abs(plus - minus) > 1e-3 * scale, (
            f"layout={layout!r}: the scores for offsets -2 (q at 3, k at 1) and +2 (q at 1, k at 3) are equal, "
            f"{plus:.6f} and {minus:.6f}; pairs turned by non-zero angles give different scores for +2 and -2"
        )


def test_rotation_preserves_length_and_position_zero_is_identity(expect):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 5, 12))
    inv_freq = 1.0 / 10000 ** (np.arange(0, 8, 2) / 8)
    positions = np.array([0, 1, 7, 500, 65535])  # along x's axis -2
    pairs = {"half": lambda v: (v[..., :4], v[..., 4:8]), "interleaved": lambda v: (v[..., 0:8:2], v[..., 1:8:2])}
    for layout, pair in pairs.items():
        def rotated(rope, layout=layout):
            return rope.apply_rope(Tensor(x), *rope.rope_cos_sin(positions, inv_freq), layout=layout, rotary_dim=8).data

        a, b = pair(x)
        expect.close(lambda rope, pair=pair: sum(v**2 for v in pair(rotated(rope))), a**2 + b**2, 1e-5,
                     f"the squared length of each pair, after vs before rotation, layout={layout!r} (a rotation "
                     "keeps it: (a cos - b sin)^2 + (a sin + b cos)^2 = a^2 + b^2)", where=Where.tables(positions))
        expect.equal(lambda rope: rotated(rope)[..., 0, :], x[..., 0, :],
                     f"layout={layout!r}: x at position 0, which must come out unchanged (cos 0 = 1, sin 0 = 0)",
                     where=Where.heads(0, layout, 8))
        expect.equal(lambda rope: rotated(rope)[..., 8:], x[..., 8:],
                     f"layout={layout!r}: the entries past rotary_dim=8, which must pass through unchanged")


def test_layouts_are_a_permutation_of_each_other(expect):
    rng = np.random.default_rng(11)
    r, head_dim = 8, 12
    x = rng.standard_normal((3, 4, head_dim)).astype(np.float32)
    positions = np.arange(4) * 97  # along x's axis -2
    inv_freq = 1.0 / 10000 ** (np.arange(0, r, 2) / r)
    perm = np.concatenate([half_to_interleaved_order(r), np.arange(r, head_dim)])

    def rotated(rope, v, layout):
        return rope.apply_rope(Tensor(v), *rope.rope_cos_sin(positions, inv_freq), layout=layout, rotary_dim=r).data

    expect.close(
        lambda rope: rotated(rope, x[..., perm], "half"), lambda rope: rotated(rope, x, "interleaved")[..., perm], 1e-6,
        "half layout on permuted x vs interleaved layout, permuted: reordering (a0, b0, a1, b1, ...) into "
        "(a0, a1, ..., b0, b1, ...) turns one rotation into the other (HF's conversion of Meta checkpoints)",
        where=Where.heads(positions, "half", r),
    )


def test_interleaved_matches_rotate_pairs(expect):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 16))
    positions = np.array([[0, 3, 9, 2047, 4096, 65535], [1, 2, 3, 4, 5, 6]])
    inv_freq = 1.0 / 10000 ** (np.arange(0, 16, 2) / 16)
    a, b = rotate_pairs(x[..., 0::2], x[..., 1::2], float32_angles(positions, inv_freq).astype(np.float64))
    want = np.stack([a, b], axis=-1).reshape(x.shape)
    # float32 tables vs float64 cos/sin of the same angles: 6e-8 per entry.
    expect.close(
        lambda rope: rope.apply_rope(Tensor(x), *rope.rope_cos_sin(positions, inv_freq), layout="interleaved").data,
        want, 1e-6, "interleaved apply_rope vs M00.2 rotate_pairs on the pairs (x[2i], x[2i+1])",
        where=Where.heads(positions, "interleaved"),
    )


@pytest.mark.parametrize("layout, rotary_dim", [("half", None), ("interleaved", None), ("half", 6), ("interleaved", 6)])
def test_gradcheck_both_layouts_and_partial(layout, rotary_dim, central_difference, expect):
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((2, 3, 10))
    weights = rng.standard_normal((2, 3, 10))  # loss = sum(weights * apply_rope(x))
    r = rotary_dim or 10
    positions = np.array([4, 1000, 65535])  # along x's axis -2

    def tables(rope):
        return rope.rope_cos_sin(positions, 1.0 / 10000 ** (np.arange(0, r, 2) / r))

    def autograd(rope):
        x = Tensor(x0, requires_grad=True)
        (rope.apply_rope(x, *tables(rope), layout, rotary_dim) * weights).sum().backward()
        return x.grad

    def numerical(rope):
        cos, sin = tables(rope)
        return central_difference(
            lambda values: float(np.sum(weights * rope.apply_rope(Tensor(values), cos, sin, layout, rotary_dim).data)), x0)

    expect.close(autograd, numerical, 1e-6,
                 f"x.grad (d loss / d x by autograd) vs central differences, {layout=}, {rotary_dim=}",
                 where=Where.heads(positions, layout, rotary_dim))


def test_gradient_is_the_inverse_rotation(expect):
    rng = np.random.default_rng(9)
    x0 = rng.standard_normal((2, 4, 5, 12))
    upstream = rng.standard_normal((2, 4, 5, 12))
    positions = rng.integers(0, 65536, size=(2, 5))

    def tables(rope):
        cos, sin = rope.rope_cos_sin(positions, 1.0 / 10000 ** (np.arange(0, 8, 2) / 8))
        return cos[:, None], sin[:, None]

    for layout in ("half", "interleaved"):
        def gradient(rope, layout=layout):
            x = Tensor(x0, requires_grad=True)
            rope.apply_rope(x, *tables(rope), layout, rotary_dim=8).backward(upstream)
            return x.grad

        def back_rotated(rope, layout=layout):
            cos, sin = tables(rope)
            return rope.apply_rope(Tensor(upstream), cos, -sin, layout, rotary_dim=8).data

        def round_trip(rope, layout=layout):
            cos, sin = tables(rope)
            there = rope.apply_rope(Tensor(x0), cos, sin, layout, 8)
            return rope.apply_rope(there, cos, -sin, layout, 8).data

        where = Where.heads(positions[:, None], layout, 8)
        expect.close(gradient, back_rotated, 1e-12,
                     f"x.grad vs the upstream gradient rotated by minus the angle, apply_rope(g, cos, -sin), {layout=} "
                     "(the backward of a rotation is its transpose, the rotation by -p*theta)", where=where)
        # float32 tables have cos^2 + sin^2 = 1 only to ~1e-7
        expect.close(round_trip, x0, 1e-6, f"x rotated by +angle then by -angle (R(-a) R(a) = I), {layout=}",
                     where=where)


def fields(spec):
    return spec.attention_scaling, spec.layout, spec.rotary_dim


def test_rope_spec_fields(expect):
    inv_freq = (1.0 / 10000 ** (np.arange(0, 6, 2) / 6)).astype(np.float32)
    expect.equal(lambda rope: fields(rope.RopeSpec(inv_freq)), (1.0, "half", 6),
                 "RopeSpec(inv_freq) (attention_scaling, layout, rotary_dim), whose defaults are 1.0, 'half' "
                 "and 2 * len(inv_freq)")
    rng = np.random.default_rng(2)
    x = Tensor(rng.standard_normal((2, 3, 5, 10)).astype(np.float32))
    positions = np.array([0, 1, 2, 700, 40000])
    for scaling, layout in [(1.0, "half"), (1.3, "interleaved")]:
        given = f"RopeSpec(inv_freq, {scaling}, {layout!r}, 6)"
        expect.equal(lambda rope, s=scaling, l=layout: fields(rope.RopeSpec(inv_freq, s, l, 6)), (scaling, layout, 6),
                     f"{given} (attention_scaling, layout, rotary_dim)")
        expect.equal(lambda rope, s=scaling, l=layout: rope.RopeSpec(inv_freq, s, l, 6).cos_sin(positions),
                     lambda rope, s=scaling: rope.rope_cos_sin(positions, inv_freq, s),
                     f"{given}.cos_sin(positions) vs rope_cos_sin(positions, spec.inv_freq, spec.attention_scaling)")
        expect.equal(lambda rope, s=scaling, l=layout: rope.RopeSpec(inv_freq, s, l, 6).apply(x, positions).data,
                     lambda rope, s=scaling, l=layout: rope.apply_rope(x, *rope.rope_cos_sin(positions, inv_freq, s),
                                                                      layout=l, rotary_dim=6).data,
                     f"{given}.apply(x, positions) vs apply_rope(x, cos, sin, {layout!r}, 6) with the spec's tables")
    refuses(ValueError, lambda: RopeSpec(inv_freq, 1.0, "half", 8),
            "RopeSpec(3 frequencies, 1.0, 'half', rotary_dim=8): 3 frequencies rotate 6 entries, not 8")
    refuses(ValueError, lambda: RopeSpec(inv_freq, 1.0, "adjacent", None), "RopeSpec(inv_freq, 1.0, 'adjacent', None)")
    refuses(TypeError, lambda: RopeSpec(inv_freq, 1.0, "half", 6.0),
            "RopeSpec(3 frequencies, 1.0, 'half', rotary_dim=6.0): the right number, not an int, refused at construction")
    # The spec keeps its own read-only float32 copy: changing the caller's array changes nothing.
    mine = inv_freq.astype(np.float64)
    spec = RopeSpec(mine)
    held, before = np.array(spec.inv_freq), spec.cos_sin(positions)
    assert held.dtype == np.float32 and np.array_equal(held, inv_freq), (
        f"RopeSpec(inv_freq as float64).inv_freq is {held!r}; expected inv_freq as float32, {inv_freq!r}"
    )
    mine[:] = 0.0
    assert np.array_equal(spec.inv_freq, held), (
        f"spec.inv_freq changed from {held!r} to {np.asarray(spec.inv_freq)!r} when the caller zeroed the array "
        "it built the spec from: the spec must keep a copy of its own"
    )
    assert all(np.array_equal(a, b) for a, b in zip(spec.cos_sin(positions), before)), (
        "spec.cos_sin(positions) changed when the caller zeroed the array it built the spec from"
    )
    refuses(ValueError, lambda: spec.inv_freq.__setitem__(0, 1.0),
            "spec.inv_freq[0] = 1.0: numpy refuses to write a read-only array")


def _x(*shape):
    return Tensor(np.ones(shape, np.float32))


def _tables(rows=3):
    """cos, sin of shape [rows, 2]: tables for r = 4."""
    return rope_cos_sin(np.arange(rows), [1.0, 0.1])


def refused(case_id, error, passed, call):
    """A test_validation case: call() must raise `error`; `passed` says what it passes."""
    return pytest.param(Case(passed, lambda expect: refuses(error, call, passed)), id=case_id)


def accepted(case_id, passed, positions, inv_freq, scaling, atol):
    """A test_validation case: rope_cos_sin(positions, inv_freq, scaling) (as
    `passed` writes it) must return the tables of the float32 angles, each
    divided by the scaling within atol."""

    def check(expect):
        try:
            rope_cos_sin(positions, inv_freq, scaling)
        except Exception as error:
            pytest.fail(f"{passed}\n  is valid input and should return finite tables, but raised "
                        f"{type(error).__name__}: {error}")
        angles = float32_angles(positions, inv_freq).astype(np.float64)
        for k, (name, formula) in enumerate([("cos", np.cos), ("sin", np.sin)]):
            expect.close(lambda rope, k=k: rope.rope_cos_sin(positions, inv_freq, scaling)[k] / np.float64(scaling),
                         formula(angles), atol, f"{passed}: {name} divided by attention_scaling, vs the {name} of "
                         "the float32 angles", where=Where.tables(positions))

    return pytest.param(Case(passed, check), id=case_id)


LAST = 2**24 - 1  # the largest valid position
TABLE = "cos and sin [3, 2]"  # _tables(): for r = 4, three positions


# Each case: what it passes, and what it must raise (or, for the valid edges, return).
CASES = [
    refused("odd-rotary_dim", ValueError, f"apply_rope(x [3, 4], {TABLE}, rotary_dim=3): an odd rotary_dim",
            lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=3)),
    refused("zero-rotary_dim", ValueError, f"apply_rope(x [3, 4], {TABLE}, rotary_dim=0)",
            lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=0)),
    refused("negative-rotary_dim", ValueError, f"apply_rope(x [3, 4], {TABLE}, rotary_dim=-2)",
            lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=-2)),
    refused("oversized-rotary_dim", ValueError, f"apply_rope(x [3, 4], {TABLE}, rotary_dim=6): larger than head_dim 4",
            lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=6)),
    refused("odd-head_dim", ValueError, f"apply_rope(x [3, 5], {TABLE}): rotary_dim None with an odd head_dim",
            lambda: apply_rope(_x(3, 5), *_tables())),
    refused("float-rotary_dim", TypeError, f"apply_rope(x [3, 4], {TABLE}, rotary_dim=2.0): a float, not an int",
            lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=2.0)),
    refused("cos-sin-shapes-differ", ValueError, "apply_rope(x [3, 4], cos [3, 2], sin [2, 2])",
            lambda: apply_rope(_x(3, 4), _tables()[0], _tables(2)[1])),
    refused("tables-too-narrow", ValueError, f"apply_rope(x [3, 6], {TABLE}): tables 2 wide where r/2 = 3",
            lambda: apply_rope(_x(3, 6), *_tables())),
    refused("tables-too-wide", ValueError, f"apply_rope(x [3, 4], {TABLE}, rotary_dim=2): tables 2 wide where r/2 = 1",
            lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=2)),
    refused("tables-not-broadcastable", ValueError, f"apply_rope(x [5, 4], {TABLE}): 3 table rows for 5 rows of x",
            lambda: apply_rope(_x(5, 4), *_tables())),
    refused("tables-would-enlarge-x", ValueError, "apply_rope(x [3, 4], cos and sin [2, 3, 2]): tables that would "
            "broadcast x up to [2, 3, 2]", lambda: apply_rope(_x(3, 4), *(t[None].repeat(2, 0) for t in _tables()))),
    refused("nan-cos", ValueError, "apply_rope(x [3, 4], cos [3, 2] all nan, sin [3, 2])",
            lambda: apply_rope(_x(3, 4), _tables()[0] * np.nan, _tables()[1])),
    refused("inf-sin", ValueError, "apply_rope(x [3, 4], cos [3, 2], sin [3, 2] all inf)",
            lambda: apply_rope(_x(3, 4), _tables()[0], np.full((3, 2), np.inf, np.float32))),
    refused("unknown-layout", ValueError, f"apply_rope(x [3, 4], {TABLE}, layout='adjacent')",
            lambda: apply_rope(_x(3, 4), *_tables(), layout="adjacent")),
    refused("x-not-a-Tensor", TypeError, f"apply_rope(a numpy array [3, 4], {TABLE}): x not a Tensor",
            lambda: apply_rope(np.ones((3, 4), np.float32), *_tables())),
    refused("negative-position", ValueError, "rope_cos_sin([0, -1, 2], [1.0])",
            lambda: rope_cos_sin([0, -1, 2], [1.0])),
    refused("fractional-position", ValueError, "rope_cos_sin([0.0, 1.5], [1.0])",
            lambda: rope_cos_sin([0.0, 1.5], [1.0])),
    refused("nan-position", ValueError, "rope_cos_sin([0.0, nan], [1.0])",
            lambda: rope_cos_sin([0.0, np.nan], [1.0])),
    refused("string-positions", TypeError, "rope_cos_sin(['0', '1'], [1.0])",
            lambda: rope_cos_sin(["0", "1"], [1.0])),
    refused("inv_freq-2d", ValueError, "rope_cos_sin([0, 1], [[1.0, 0.1]]): inv_freq of shape (1, 2)",
            lambda: rope_cos_sin([0, 1], [[1.0, 0.1]])),
    refused("inv_freq-empty", ValueError, "rope_cos_sin([0, 1], [])",
            lambda: rope_cos_sin([0, 1], [])),
    refused("zero-scaling", ValueError, "rope_cos_sin([0, 1], [1.0], attention_scaling=0.0)",
            lambda: rope_cos_sin([0, 1], [1.0], attention_scaling=0.0)),
    # float32's limits (chapter section 6): numbers it cannot carry are refused, not turned into inf or nan
    refused("position-2**24", ValueError, "rope_cos_sin([0, 2**24], [1.0]): a position of 2**24",
            lambda: rope_cos_sin([0, 2**24], [1.0])),
    refused("position-1e39", ValueError, "rope_cos_sin([1e39], [1.0])",
            lambda: rope_cos_sin([1e39], [1.0])),
    refused("position-beyond-int64", ValueError, "rope_cos_sin(2**70, [1.0]): a Python int beyond int64",
            lambda: rope_cos_sin(2**70, [1.0])),
    refused("inv_freq-above-2**104", ValueError, "rope_cos_sin([0, 1], [1.0, 2.0**105])",
            lambda: rope_cos_sin([0, 1], [1.0, 2.0**105])),
    refused("inv_freq-1e39", ValueError, "rope_cos_sin([0, 1], [1e39])",
            lambda: rope_cos_sin([0, 1], [1e39])),
    refused("scaling-1e39", ValueError, "rope_cos_sin([0, 1], [1.0], attention_scaling=1e39)",
            lambda: rope_cos_sin([0, 1], [1.0], attention_scaling=1e39)),
    refused("scaling-below-2**-126", ValueError, "rope_cos_sin([0, 1], [1.0], attention_scaling=2.0**-127)",
            lambda: rope_cos_sin([0, 1], [1.0], attention_scaling=2.0**-127)),
    refused("float64-cos-beyond-float32-x", ValueError, "apply_rope(float32 x [3, 4], float64 cos [3, 2] all 1e39, "
            "sin [3, 2]): a table beyond float32's range", lambda: apply_rope(_x(3, 4), np.full((3, 2), 1e39), _tables()[1])),
    refused("bool-scaling", TypeError, "rope_cos_sin([0, 1], [1.0], attention_scaling=True)",
            lambda: rope_cos_sin([0, 1], [1.0], attention_scaling=True)),
    refused("bool-rotary_dim", TypeError, f"apply_rope(x [3, 4], {TABLE}, rotary_dim=True)",
            lambda: apply_rope(_x(3, 4), *_tables(), rotary_dim=True)),
    refused("layout-a-list", ValueError, f"apply_rope(x [3, 4], {TABLE}, layout=['half'])",
            lambda: apply_rope(_x(3, 4), *_tables(), layout=["half"])),
    # Valid input, at the edges: whole numbers held by floats, and float32's limits themselves (section 6)
    # give finite tables.  2.5e-7 of numpy's float32 cos/sin, and up to 1.2e-7 more where a scaled table
    # is subnormal.
    accepted("accepts-float-positions", "rope_cos_sin(np.array([0.0, 2.0]), [1.0])",
             np.array([0.0, 2.0]), [1.0], 1.0, 1e-6),
    accepted("accepts-inv_freq-2**104", "rope_cos_sin([0, 2**24 - 1], [2.0**104, 1.0])",
             [0, LAST], [2.0**104, 1.0], 1.0, 4e-7),
    accepted("accepts-scaling-2**-126", "rope_cos_sin([0, 2**24 - 1], [1.0], attention_scaling=2.0**-126)",
             [0, LAST], [1.0], 2.0**-126, 4e-7),
    accepted("accepts-scaling-float32-max", "rope_cos_sin([0, 2**24 - 1], [1.0], attention_scaling=float32's largest)",
             [0, LAST], [1.0], float(np.finfo(np.float32).max), 4e-7),
]


@pytest.mark.parametrize("case", CASES)
def test_validation(case, expect):
    case(expect)
