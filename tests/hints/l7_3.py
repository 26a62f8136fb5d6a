"""L7.3's chapter, section 13 (and 14): what its hints and pitfall table say about tests."""

from hints import Hint, Oracle

X4 = "Tensor(np.array([[0.3, -1.2, 0.7, 2.0]], np.float32))"
ONES4 = "Tensor(np.ones((1, 4), np.float32))"
TABLES = "*rope_cos_sin([5], [1.0, 0.01])"
Q4, K4 = "Tensor(np.array([[0.3, -1.2, 0.7, 2.0]]))", "Tensor(np.array([[1.1, 0.4, -0.9, 0.2]]))"
# q at position m, k at n: the score a relative-position check compares at (m, n) and (m + 4, n + 4)
SCORE = f"(lambda m, n: float((apply_rope({Q4}, *rope_cos_sin([m], [1.0, 0.01]), LAYOUT).data * apply_rope({K4}, *rope_cos_sin([n], [1.0, 0.01]), LAYOUT).data).sum()))"

TOLERANCE = {"atol": 1e-6, "rtol": 0.0}   # section 13: float32 outputs at about 1e-6 absolute

ADVICE = (
    "Use positions other than 0 (section 3).",
    "Hypothesis is welcome for shapes, positions and layouts.",
)

HINTS = [
    Hint("L7.3", "a random vector is better than $(1, 1, 1, 1)$", f"apply_rope({X4}, {TABLES})",
         "        a, b = rot[..., : r // 2], rot[..., r // 2 :] => "
         "        a, b = rot[..., : r // 3], rot[..., r // 2 :]", plain=f"apply_rope({ONES4}, {TABLES})"),
    Hint("L7.3", "in the interleaved layout", f"apply_rope({X4}, {TABLES}, 'interleaved')", "s07",
         plain=f"apply_rope({X4}, {TABLES}, 'half')"),
    Hint("L7.3", "and with partial rotary",
         f"apply_rope(Tensor(np.array([[0.3, -1.2, 0.7, 2.0, 5.0, -3.0]], np.float32)), {TABLES}, 'half', 4)", "s03",
         plain=f"apply_rope({X4}, {TABLES}, 'half', 4)"),
    Hint("L7.3", "that `attention_scaling` multiplies **both** tables", "rope_cos_sin([5], [1.0, 0.01], 1.5)", "s05",
         plain="rope_cos_sin([5], [1.0, 0.01], 1.0)"),
    Hint("L7.3", "an unknown layout", f"apply_rope({X4}, {TABLES}, 'rotate')",
         "    if not isinstance(layout, str) or layout not in LAYOUTS: => "
         "    if not isinstance(layout, str) and layout not in LAYOUTS:",
         plain=f"apply_rope({X4}, {TABLES}, 'interleaved')"),
    Hint("L7.3", "Use positions other than 0", f"apply_rope({X4}, {TABLES})",
         "    a_out = a * cos - b * sin  # [..., r/2] =>    a_out = a * cos + b * sin  # [..., r/2]",
         plain=f"apply_rope({X4}, *rope_cos_sin([0], [1.0, 0.01]))"),
    Hint("L7.3", "a float64 angle is about $10^{-3}$ away near 65535", "rope_cos_sin([65535], [0.7, 0.01])", "m01",
         plain="rope_cos_sin([3], [0.7, 0.01])"),
    Hint("L7.3", "backward with a random upstream `g`",
         f"gradient(lambda x: apply_rope(x, {TABLES}), {X4}, np.array([[0.5, -1.0, 2.0, 0.3]], np.float32))", "s06",
         plain=f"apply_rope({X4}, {TABLES})"),
    Hint("L7.3", "`RopeSpec(inv_freq)` has the defaults (half layout, scaling 1.0",
         "(lambda s: (s.attention_scaling, s.layout, s.rotary_dim))(RopeSpec(np.array([1.0, 0.01])))",
         "    attention_scaling: float = 1.0 =>     attention_scaling: float = 2.0",
         plain="(lambda s: (s.attention_scaling, s.layout, s.rotary_dim))(RopeSpec(np.array([1.0, 0.01]), 1.0, "
               "'half', 4))"),
    Hint("L7.3", "a spec that changes every field at once (interleaved layout, a scaling other than 1, a head wider "
                 "than `rotary_dim`)",
         "RopeSpec(np.array([1.0, 0.01]), 1.25, 'interleaved', 4).apply(Tensor(np.array([[0.3, -1.2, 0.7, 2.0, 5.0, "
         "-3.0]], np.float32)), [7])",
         "        return apply_rope(x, cos, sin, self.layout, self.rotary_dim) => "
         "        return apply_rope(x, cos, sin, self.layout, None)",
         plain=f"RopeSpec(np.array([1.0, 0.01])).apply({X4}, [7])"),
    Hint("L7.3", "a `rotary_dim` that does not match `inv_freq` raises", "RopeSpec(np.array([1.0, 0.01]), rotary_dim=6)",
         "        rotary_dim = 2 * inv_freq.size if self.rotary_dim is None else self.rotary_dim => "
         "        rotary_dim = 2 * inv_freq.size if (self.rotary_dim is None) or True else self.rotary_dim",
         plain="RopeSpec(np.array([1.0, 0.01]), rotary_dim=4)"),
    Hint("L7.3", "change your array after building the spec: the spec's tables stay the same",
         "(lambda a: (lambda s: (a.__setitem__(0, 5.0), s.cos_sin([3]))[1])(RopeSpec(a)))(np.array([1.0, 0.01], "
         "np.float32))",
         '        object.__setattr__(self, "inv_freq", inv_freq) => '
         '        object.__setattr__(self, "XXinv_freqXX", inv_freq)',
         plain="RopeSpec(np.array([1.0, 0.01], np.float32)).cos_sin([3])"),
    Hint("L7.3", "write into `spec.inv_freq`: it raises",
         "(lambda s: s.inv_freq.__setitem__(0, 2.0))(RopeSpec(np.array([1.0, 0.01])))",
         "        inv_freq.setflags(write=False)  # frozen all the way down => "
         "        inv_freq.setflags(write=True)  # frozen all the way down",
         plain="RopeSpec(np.array([1.0, 0.01])).inv_freq"),
    Hint("L7.3", "pass tables that would fit it (`rotary_dim // 2` wide)",
         f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0]), rotary_dim=3)",
         "    if r <= 0 or r % 2 or r > head_dim: =>     if r <= 0 or r % 3 or r > head_dim:",
         plain=f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0, 0.1]), rotary_dim=3)"),
    Hint("L7.3", "oversized `rotary_dim`", f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0, 0.1, 0.01]), rotary_dim=6)",
         "    if r <= 0 or r % 2 or r > head_dim: =>     if r <= 0 or r % 2 and r > head_dim:",
         plain=f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0, 0.1]), rotary_dim=6)"),
    Hint("L7.3", "a position of $2^{24}$", "rope_cos_sin([2**24], [1.0])",
         "    if np.any(positions >= POSITION_LIMIT): =>     if np.any(positions > POSITION_LIMIT):",
         plain="rope_cos_sin([2**24 + 10], [1.0])"),
    Hint("L7.3", "a frequency larger than $2^{104}$", "rope_cos_sin([1], [2.0**105])",
         "INV_FREQ_LIMIT = 2.0**104 => INV_FREQ_LIMIT = 2.0**105", plain="rope_cos_sin([1], [2.0**110])"),
    Hint("L7.3", "frequency $2^{104}$", "rope_cos_sin([1], [2.0**104])",
         "    if not np.all(np.abs(inv_freq) <= INV_FREQ_LIMIT):  # also false for nan => "
         "    if not np.all(np.abs(inv_freq) < INV_FREQ_LIMIT):  # also false for nan",
         plain="rope_cos_sin([1], [1.0])"),
    Hint("L7.3", "a scaling below $2^{-126}$", "rope_cos_sin([1], [1.0], 2.0**-127)",
         "FLOAT32_TINY = 2.0**-126 => FLOAT32_TINY = 2.0**-127", plain="rope_cos_sin([1], [1.0], 0.0)"),
    Hint("L7.3", "scalings $2^{-126}$ and `np.finfo(np.float32).max`", "rope_cos_sin([1], [1.0], 2.0**-126)",
         "    if not FLOAT32_TINY <= attention_scaling <= FLOAT32_MAX:  # also false for nan => "
         "    if not FLOAT32_TINY < attention_scaling <= FLOAT32_MAX:  # also false for nan",
         plain="rope_cos_sin([1], [1.0], 1.0)"),
    Hint("L7.3", "scalings $2^{-126}$ and `np.finfo(np.float32).max`",
         "rope_cos_sin([1], [1.0], float(np.finfo(np.float32).max))",
         "    if not FLOAT32_TINY <= attention_scaling <= FLOAT32_MAX:  # also false for nan => "
         "    if not FLOAT32_TINY <= attention_scaling < FLOAT32_MAX:  # also false for nan",
         plain="rope_cos_sin([1], [1.0], 1.0)"),
    Hint("L7.3", "`True` as a scaling or a `rotary_dim`", "rope_cos_sin([1], [1.0], True)",
         "    if isinstance(attention_scaling, bool) or not isinstance(attention_scaling, numbers.Real): => "
         "    if isinstance(attention_scaling, bool) and not isinstance(attention_scaling, numbers.Real):",
         plain="rope_cos_sin([1], [1.0], 1.0)"),
    Hint("L7.3", "`True` as a scaling or a `rotary_dim`",
         f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0, 0.1]), rotary_dim=True)",
         "    return isinstance(value, numbers.Integral) and not isinstance(value, bool) => "
         "    return isinstance(value, numbers.Integral) or not isinstance(value, bool)",
         plain=f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0, 0.1]), rotary_dim=4)"),
    Hint("L7.3", "the output keeps `x`'s shape **and dtype**", f"apply_rope({X4}, {TABLES}).data",
         "    return cos.astype(x.dtype), sin.astype(x.dtype) =>     return cos.astype(None), sin.astype(x.dtype)",
         plain=f"apply_rope(Tensor(np.array([[0.3, -1.2, 0.7, 2.0]])), {TABLES}).data"),
    Hint("L7.3", '`layout` defaults to `"half"`', f"apply_rope({X4}, {TABLES})",
         'def apply_rope(x: Tensor, cos, sin, layout: str = "half", rotary_dim: int | None = None) -> Tensor: => '
         'def apply_rope(x: Tensor, cos, sin, layout: str = "XXhalfXX", rotary_dim: int | None = None) -> Tensor:',
         plain=f"apply_rope({X4}, {TABLES}, 'half')"),
    Hint("L7.3", "position 0 is valid", "rope_cos_sin([0], [1.0, 0.01])",
         "    if np.any(positions < 0): =>     if np.any(positions <= 0):", plain="rope_cos_sin([5], [1.0, 0.01])"),
    Hint("L7.3", "`inv_freq` that is not 1-D", "rope_cos_sin([1], [[1.0]])",
         "    if inv_freq.ndim != 1 or inv_freq.size == 0: =>     if inv_freq.ndim != 1 and inv_freq.size == 0:",
         plain="rope_cos_sin([1], [1.0])"),
    Hint("L7.3", "fractional", "rope_cos_sin([1.5], [1.0])",
         "    whole = np.isfinite(positions) & (positions == np.trunc(positions)) => "
         "    whole = np.isfinite(positions) | (positions == np.trunc(positions))",
         plain="rope_cos_sin([2.0], [1.0])"),
    Hint("L7.3", "an absolute tolerance around $10^{-6}$, not $10^{-2}$", "rope_cos_sin([65535], [0.7, 0.01])", "m01",
         plain="rope_cos_sin([65535], [0.7, 0.01])", plain_tolerance={"atol": 1e-2, "rtol": 0.0}),
    # ---- the pitfall table (section 14) --------------------------------------------------------
    Hint("L7.3", "so relative-position checks pass", f"apply_rope({X4}, {TABLES})", "s02",
         plain=f"(lambda s: abs(s(5, 3) - s(9, 7)) < 1e-9)({SCORE.replace('LAYOUT', repr('half'))})", section=14),
    Hint("L7.3", "score-only checks miss it", f"apply_rope({X4}, {TABLES}, 'interleaved')", "s07",
         plain=f"{SCORE.replace('LAYOUT', repr('interleaved'))}(5, 3)", section=14),
]


ORACLE = Oracle(
    says=("**Your oracle: complex multiplication in numpy float64.**",
          "make the oracle's angle the way Hugging Face does — `np.float32(p) * np.float32(theta)`, then convert "
          "to float64 for cos and sin",
          "compare float32 outputs with an absolute tolerance around $10^{-6}$"),
    check='''
def check(implementation):
    """The model answer's oracle (complex multiplication, angles as HF makes them) against
    apply_rope on every input of the course tests' golden cases, at atol 1e-6."""
    oracle = model_answer("L7.3").oracle
    fx = fixture("fixtures/L7.3/rope_hf.npz")
    problems = []

    def compare(what, x, positions, inv_freq, layout="half", rotary_dim=None, scaling=1.0):
        cos, sin = implementation.rope_cos_sin(positions, inv_freq, scaling)
        got = implementation.apply_rope(Tensor(x), cos[:, None], sin[:, None], layout, rotary_dim).data
        error = np.abs(got - oracle(x, positions[:, None], inv_freq, layout, rotary_dim, scaling)).max()
        if not error <= 1e-6:
            problems.append(f"{what}: {error:.2e} from the oracle, more than 1e-6")

    for name in ("q", "k"):
        compare(f"apply/{name}", fx[f"apply/{name}"], fx["apply/positions"], fx["llama/inv_freq"])
        compare(f"qwen3/{name}", fx[f"qwen3/{name}"], fx["qwen3/apply_positions"], fx["qwen3/inv_freq"])
    compare("apply/q at YaRN's scaling", fx["apply/q"], fx["apply/positions"], fx["llama/inv_freq"],
            scaling=float(fx["yarn/attention_scaling"]))
    compare("meta (interleaved)", fx["meta/x"], fx["meta/positions"], fx["meta/inv_freq"], "interleaved")
    compare("neox (partial rotary)", fx["neox/q"], fx["neox/positions"], fx["neox/inv_freq"],
            rotary_dim=int(fx["neox/rotary_dim"]))
    return problems
''')
