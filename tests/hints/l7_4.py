"""L7.4's chapter, section 13: what its hints say about tests."""

from hints import Hint, Oracle

YARN = "{'rope_type': 'yarn', 'rope_theta': 1e4, 'factor': 4.0, 'original_max_position_embeddings': 4096"
LONGROPE = ("{'rope_type': 'longrope', 'rope_theta': 1e4, 'original_max_position_embeddings': 2048, "
            "'short_factor': [1.0, 1.5, 2.0, 2.5], 'long_factor': [1.0, 3.0, 9.0, 27.0]")
LLAMA3_1 = ("{'rope_type': 'llama3', 'rope_theta': 5e5, 'factor': 8.0, 'low_freq_factor': 1.0, "
            "'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192}")
HAND_YARN = "{'rope_type': 'yarn', 'rope_theta': 1e4, 'factor': 4.0, 'original_max_position_embeddings': 1024}"

TOLERANCE = {"atol": 0.0, "rtol": 1e-6}   # section 13: inv_freq at rtol 1e-6, atol 0

ADVICE = (
    "Write the oracle once and parametrize over blocks, comparing at `rtol=1e-6`.",
    "Hypothesis over `factor`, $\\beta$s, $L$ and $b$ is a good way to reach the ramp's edges.",
)

HINTS = [
    Hint("L7.4", "a block without `rope_type` is plain RoPE", "rope_parameters({'rope_theta': 1e4}, 16)",
         '    rope_type = _given(p, "rope_type", "default") =>     rope_type = _given(p, "rope_type", "XXdefaultXX")',
         plain="rope_parameters({'rope_type': 'default', 'rope_theta': 1e4}, 16)"),
    Hint("L7.4", "a single pair ($r = 2$) is valid", "rope_parameters({'rope_theta': 1e4}, 2)",
         "    if partial_rotary_factor > 1 or r < 2 or r % 2: =>     if partial_rotary_factor > 1 or r <= 2 or r % 2:",
         plain="rope_parameters({'rope_theta': 1e4}, 16)"),
    Hint("L7.4", "`factor` 1, and a factor below 1, are valid",
         "rope_parameters({'rope_type': 'linear', 'rope_theta': 1e4, 'factor': 1.0}, 16)",
         "        if p.get(name) is not None and not p[name] > 0: => "
         "        if p.get(name) is not None and not p[name] > 1:",
         plain="rope_parameters({'rope_type': 'linear', 'rope_theta': 1e4, 'factor': 2.0}, 16)"),
    Hint("L7.4", "check $s$ for every type — 1.0 for default, linear, dynamic and llama3",
         f"rope_parameters({LLAMA3_1}, 128)[1]",
         "    return np.where(wavelength > original / low, theta / factor, kept_or_blended), 1.0  # long: / factor => "
         "    return np.where(wavelength > original / low, theta / factor, kept_or_blended), 2.0  # long: / factor",
         plain=f"rope_parameters({LLAMA3_1}, 128)[0]"),
    Hint("L7.4", "below $M$", "rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, 'factor': 2.0}, 16, "
                              "seq_len=1000, max_position_embeddings=4096)", "p08",
         plain="rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, 'factor': 2.0}, 16, seq_len=8192, "
               "max_position_embeddings=4096)"),
    Hint("L7.4", "two pairs ($r = 4$) are valid", "rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, "
                                                  "'factor': 2.0}, 4, seq_len=8192, max_position_embeddings=4096)",
         "    if r < 4: =>     if r <= 4:",
         plain="rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, 'factor': 2.0}, 16, seq_len=8192, "
               "max_position_embeddings=4096)"),
    Hint("L7.4", "with `truncate` false", f"rope_parameters({YARN}, 'truncate': False}}, 64)",
         '    if p.get("truncate", True):  # HF reads it for its truth: absent is true, None (like false) is not => '
         '    if p.get("XXtruncateXX", True):  # HF reads it for its truth: absent is true, None (like false) is not',
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "with other $\\beta$s", f"rope_parameters({YARN}, 'beta_fast': 16.0, 'beta_slow': 2.0}}, 64)",
         '    low = _pair_making(p.get("beta_fast") or 32, r, base, original)  # absent, None or 0: 32, as HF\'s `or` => '
         '    low = _pair_making(p.get("XXbeta_fastXX") or 32, r, base, original)  # absent, None or 0: 32, as HF\'s `or`',
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "with an explicit `attention_factor`", f"rope_parameters({YARN}, 'attention_factor': 1.25}}, 64)",
         '    attention = p.get("attention_factor")\n    if attention is None:\n        mscale => '
         '    attention = p.get("XXattention_factorXX")\n    if attention is None:\n        mscale',
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "only one given", f"rope_parameters({YARN}, 'factor': 40.0, 'mscale': 0.8}}, 64)",
         "        if mscale and mscale_all_dim:  # DeepSeek: a ratio of two temperatures => "
         "        if mscale or mscale_all_dim:  # DeepSeek: a ratio of two temperatures",
         plain=f"rope_parameters({YARN}, 'factor': 40.0, 'mscale': 1.0, 'mscale_all_dim': 0.5}}, 64)"),
    Hint("L7.4", "with `factor` absent or `None` (then from `max_position_embeddings`)",
         "rope_parameters({'rope_type': 'yarn', 'rope_theta': 1e4, 'original_max_position_embeddings': 2048}, 64, "
         "max_position_embeddings=8192)",
         '    return max_len / p["original_max_position_embeddings"] => '
         '    return max_len * p["original_max_position_embeddings"]',
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "with `factor` 1 and 0.5 (s = 1) and 2", f"rope_parameters({YARN}, 'factor': 2.0}}, 64)",
         "    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0 => "
         "    return 1.0 if factor <= 2 else 0.1 * mscale * math.log(factor) + 1.0",
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "a short $L$ where $\\ell$ would be negative",
         "rope_parameters({'rope_type': 'yarn', 'rope_theta': 1e4, 'factor': 4.0, "
         "'original_max_position_embeddings': 100}, 16)",
         "    low, high = max(low, 0), min(high, r - 1) =>     low, high = max(low, 1), min(high, r - 1)",
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "a base small enough that $h$ passes $r - 1$",
         "rope_parameters({'rope_type': 'yarn', 'rope_theta': 10.0, 'factor': 4.0, "
         "'original_max_position_embeddings': 1024}, 64)",
         "    low, high = max(low, 0), min(high, r - 1) =>     low, high = max(low, 0), min(high, r + 1)",
         # what the chapter used to suggest, "a long L with a large beta_fast": h depends on beta_slow alone
         plain="rope_parameters({'rope_type': 'yarn', 'rope_theta': 1e4, 'factor': 4.0, "
               "'original_max_position_embeddings': 1000000, 'beta_fast': 1000.0}, 64)"),
    Hint("L7.4", "a base small enough that $h$ passes $r - 1$",
         "rope_parameters({'rope_type': 'yarn', 'rope_theta': 10.0, 'factor': 4.0, "
         "'original_max_position_embeddings': 1024}, 64)", "m07", plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "a zero-width ramp (`beta_fast` equal to `beta_slow` with `truncate` false)",
         f"rope_parameters({YARN}, 'beta_fast': 5.0, 'beta_slow': 5.0, 'truncate': False}}, 32)",
         "        high += 0.001  # a ramp of width 0 would divide by 0 => "
         "        high -= 0.001  # a ramp of width 0 would divide by 0",
         plain=f"rope_parameters({YARN}, 'beta_fast': 16.0, 'beta_slow': 2.0, 'truncate': False}}, 32)"),
    Hint("L7.4", "one the clamp makes zero-wide",
         "rope_parameters({'rope_type': 'yarn', 'rope_theta': 1e4, 'factor': 4.0, "
         "'original_max_position_embeddings': 6}, 64)", "m08", plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "exactly $L$", f"rope_parameters({LONGROPE}, 'factor': 4.0}}, 8, seq_len=2048)", "p04",
         plain=f"rope_parameters({LONGROPE}, 'factor': 4.0}}, 8, seq_len=100000)"),
    Hint("L7.4", "absent (from $M$), 1 and below 1 (s = 1) and 2", f"rope_parameters({LONGROPE}, 'factor': 2.0}}, 8)",
         "        attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original)) => "
         "        attention = 1.0 if factor <= 2 else math.sqrt(1 + math.log(factor) / math.log(original))",
         plain=f"rope_parameters({LONGROPE}, 'factor': 16.0}}, 8)"),
    Hint("L7.4", "with an explicit `attention_factor`",
         f"rope_parameters({LONGROPE}, 'factor': 2.0, 'attention_factor': 1.5}}, 8)",
         '    attention = p.get("attention_factor")\n    if attention is None:\n        attention = 1.0 if => '
         '    attention = p.get("XXattention_factorXX")\n    if attention is None:\n        attention = 1.0 if',
         plain=f"rope_parameters({LONGROPE}, 'factor': 2.0}}, 8)"),
    Hint("L7.4", "with partial rotary", f"rope_parameters({LONGROPE}, 'factor': 2.0, 'partial_rotary_factor': 0.5}}, 16)",
         "    r = int(head_dim * partial_rotary_factor) =>     r = int(head_dim / partial_rotary_factor)",
         plain=f"rope_parameters({LONGROPE}, 'factor': 2.0}}, 8)"),
    Hint("L7.4", "section 3's block where float32 steps drift",
         "rope_parameters({'rope_type': 'llama3', 'rope_theta': 1e4, 'factor': 40.0, 'low_freq_factor': 2.0, "
         "'high_freq_factor': 3.0, 'original_max_position_embeddings': 8192}, 128)", "m09",
         plain=f"rope_parameters({LLAMA3_1}, 128)"),
    Hint("L7.4", "no block, `null` block, empty block", "rope_spec({'head_dim': 64, 'rope_parameters': {}})",
         '    params = dict(_block_of(config.get("rope_parameters") or config.get("rope_scaling") or {}, config, layer_type)) => '
         '    params = dict(_block_of(config.get("rope_parameters") or config.get("rope_scaling") and {}, config, layer_type))',
         plain="rope_spec({'head_dim': 64, 'rope_parameters': {'rope_type': 'linear', 'factor': 2.0}})"),
    Hint("L7.4", "`rope_parameters` and `rope_scaling`",
         "rope_spec({'head_dim': 64, 'rope_scaling': {'rope_type': 'linear', 'factor': 2.0}})",
         '    params = dict(_block_of(config.get("rope_parameters") or config.get("rope_scaling") or {}, config, layer_type)) => '
         '    params = dict(_block_of(config.get("rope_parameters") or config.get("XXrope_scalingXX") or {}, config, layer_type))',
         plain="rope_spec({'head_dim': 64, 'rope_parameters': {'rope_type': 'linear', 'factor': 2.0}})"),
    Hint("L7.4", 'the legacy `"type"` and its precedence',
         "rope_spec({'head_dim': 64, 'rope_scaling': {'type': 'linear', 'factor': 2.0}})",
         '    params["rope_type"] = _given(params, "rope_type", params.get("type")) => '
         '    params["rope_type"] = _given(params, "rope_type", params.get("XXtypeXX"))',
         plain="rope_spec({'head_dim': 64, 'rope_scaling': {'rope_type': 'linear', 'factor': 2.0}})"),
    Hint("L7.4", 'the legacy `"type"` and its precedence',
         "rope_spec({'head_dim': 64, 'rope_scaling': {'rope_type': 'linear', 'type': 'dynamic', 'factor': 2.0}})",
         '    params["rope_type"] = _given(params, "rope_type", params.get("type")) => '
         '    params["rope_type"] = _given(params, "XXrope_typeXX", params.get("type"))',
         plain="rope_spec({'head_dim': 64, 'rope_scaling': {'type': 'linear', 'factor': 2.0}})"),
    Hint("L7.4", "the top-level fields and the block's precedence over them",
         "rope_spec({'head_dim': 64, 'rope_theta': 1e6, 'rope_parameters': {'rope_theta': 500.0}})",
         "        params[name] = _given(params, name, _given(config, name, default)) => "
         "        params[name] = _given(params, None, _given(config, name, default))",
         plain="rope_spec({'head_dim': 64, 'rope_theta': 500.0})"),
    Hint("L7.4", "the default base 10000", "rope_spec({'head_dim': 64})",
         'TOP_LEVEL_DEFAULTS = {"rope_theta": 10000.0, "partial_rotary_factor": None, '
         '"original_max_position_embeddings": None} => TOP_LEVEL_DEFAULTS = {"rope_theta": 10001.0, '
         '"partial_rotary_factor": None, "original_max_position_embeddings": None}',
         plain="rope_spec({'head_dim': 64, 'rope_theta': 10000.0})"),
    Hint("L7.4", "a `hidden_size` that `num_attention_heads` does not divide tells `//` from `/` only with "
                 "`partial_rotary_factor` below 1",
         "rope_spec({'hidden_size': 64, 'num_attention_heads': 3, 'partial_rotary_factor': 0.8})",
         "        head_dim = hidden_size // heads =>         head_dim = hidden_size / heads",
         plain="rope_spec({'hidden_size': 68, 'num_attention_heads': 3})"),
    Hint("L7.4", "`seq_len` and `max_position_embeddings` reaching the rule (a dynamic config",
         "rope_spec({'head_dim': 32, 'max_position_embeddings': 2048, 'rope_scaling': {'rope_type': 'dynamic', "
         "'factor': 2.0}}, seq_len=8192)",
         # mutmut writes the call it changes back with its own indentation
         'rope_parameters(\n        params, head_dim, seq_len=seq_len, max_position_embeddings=config.get('
         '"max_position_embeddings")\n    ) => rope_parameters(\n    params, head_dim, seq_len=None, '
         'max_position_embeddings=config.get("max_position_embeddings")\n)',
         plain="rope_spec({'head_dim': 64, 'rope_parameters': {'rope_type': 'linear', 'factor': 2.0}})"),
    Hint("L7.4", "the spec's four fields",
         "rope_spec({'head_dim': 64, 'max_position_embeddings': 8192, 'rope_scaling': {'type': 'yarn', "
         "'factor': 4.0, 'original_max_position_embeddings': 2048}}).attention_scaling",
         "    return RopeSpec(inv_freq, attention_scaling)  # layout \"half\": HF's rotate_half, RopeSpec's default => "
         "    return RopeSpec(inv_freq, )  # layout \"half\": HF's rotate_half, RopeSpec's default",
         plain="rope_spec({'head_dim': 64, 'max_position_embeddings': 8192, 'rope_scaling': {'type': 'yarn', "
               "'factor': 4.0, 'original_max_position_embeddings': 2048}}).inv_freq"),
    Hint("L7.4", "a missing `low_freq_factor` in an otherwise valid llama3 block, not an empty dict",
         "rope_parameters({'rope_type': 'llama3', 'rope_theta': 5e5, 'factor': 8.0, 'high_freq_factor': 4.0, "
         "'original_max_position_embeddings': 8192}, 128)",
         '    rope_type = _given(p, "rope_type", "default") =>     rope_type = _given(p, "XXrope_typeXX", "default")',
         plain="rope_parameters({'rope_type': 'llama3'}, 128)"),
    Hint("L7.4", "for each field a rule reads, `None` gives what absent gives",
         "rope_parameters({'rope_type': None, 'rope_theta': 1e4}, 16)", "m10",
         plain="rope_parameters({'rope_theta': 1e4}, 16)"),
    Hint("L7.4", "use head sizes with enough pairs ($r \\ge 16$) besides the hand example: its four pairs leave no "
                 "pair past the end of YaRN's ramp", f"rope_parameters({HAND_YARN}, 16)",
         "    ramp = np.clip((np.arange(r // 2) - low) / (high - low), 0, 1)  # [r/2]: 0 keep ... 1 divide => "
         "    ramp = np.clip((np.arange(r // 2) - low) / (high - low), 0, None)  # [r/2]: 0 keep ... 1 divide",
         plain=f"rope_parameters({HAND_YARN}, 8)"),
]


ORACLE = Oracle(
    says=("**Your oracle: the rules of sections 3 to 9, written out in numpy float64**",
          "`inv_freq` at `rtol=1e-6` (and `atol=0`)", "`attention_scaling` at a relative `1e-12`"),
    check='''
def check(implementation):
    """The model answer's float64 oracle against rope_parameters on every case of the course tests'
    golden fixture: inv_freq at rtol 1e-6 (atol 0), attention_scaling at a relative 1e-12."""
    oracle = model_answer("L7.4").oracle
    fx = fixture("fixtures/L7.4/rope_scaling_hf.npz")
    problems = []
    for case, inputs in fx.provenance["cases"].items():
        arguments = (inputs["head_dim"], inputs["seq_len"], inputs["max_position_embeddings"])
        want, want_s = oracle(copy.deepcopy(inputs["rope_parameters"]), *arguments)
        got, s = implementation.rope_parameters(copy.deepcopy(inputs["rope_parameters"]), inputs["head_dim"],
                                                seq_len=inputs["seq_len"],
                                                max_position_embeddings=inputs["max_position_embeddings"])
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=0):
            problems.append(f"{case}: inv_freq more than rtol 1e-6 from the oracle")
        if not math.isclose(s, want_s, rel_tol=1e-12):
            problems.append(f"{case}: attention_scaling {s!r}, the oracle {want_s!r}")
    return problems
''')
