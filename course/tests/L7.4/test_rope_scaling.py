"""L7.4 course tests: RoPE scaling against Hugging Face's numbers and the
properties each rope type must have.  The eleven tests are the table of the
chapter (course/chapters/L7.4-rope-scaling.md, section 12).

Golden values come from fixtures/L7.4/rope_scaling_hf.npz
(oracle/L7.4/rope_scaling_hf.py, transformers 5.19.0 on torch 2.13.0); the
`rope_scaling_hf` fixture loads them.  Its provenance lists every case with the
inputs HF resolved for it, and the tests call rope_parameters with exactly those.
"""

import copy
import math

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope_scaling import rope_parameters, rope_spec

# HF computes inv_freq in float32 steps (float32 pow, blend, division); one float64
# computation rounded once to float32 lands up to 4 ulps (4.5e-7 relative) away on
# the fixture's cases.  1e-6 is twice that, and far below any scaling mistake.
INV_FREQ_RTOL = 1e-6
# attention_scaling is the same float64 formula (math.log, math.sqrt) on both sides.
SCALING_RTOL = 1e-12
# L7.3's table tolerance: numpy's float32 cos/sin and torch's MKL differ by up to 2 ulp.
TABLE_ATOL = 2.5e-7
# An inv_freq within INV_FREQ_RTOL moves the float32 angle p * theta by up to
# p * theta * 1e-6; add the float32 rounding of both angles (2 x 6e-8 relative) and
# the 2 ulps by which HF's dynamic forward differs from its own init function.
ANGLE_RTOL = 2e-6


def assert_close(got, expected, *, rtol=0.0, atol=0.0, what, hint):
    """Compare arrays entry by entry (|got - expected| <= atol + rtol |expected|);
    on failure name the worst entry, the two values and what to look at."""
    got = np.asarray(got, np.float64)
    expected = np.asarray(expected, np.float64)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}. {hint}"
    allowed = atol + rtol * np.abs(expected)
    diff = np.abs(got - expected)
    if not np.all(diff <= allowed):  # also catches nan
        excess = np.where(np.isnan(diff), np.inf, diff - allowed)
        worst = np.unravel_index(np.argmax(excess), diff.shape)
        pytest.fail(
            f"{what}: at index {tuple(int(i) for i in worst)} got {got[worst]!r}, expected {expected[worst]!r} "
            f"(|diff| {diff[worst]:.3g} > allowed {allowed[worst]:.3g}; "
            f"{int(np.sum(~(diff <= allowed)))} of {diff.size} entries off).\n  Look at: {hint}"
        )


def call(case_inputs):
    """rope_parameters with a case's recorded inputs (a deep copy: it must not change them)."""
    inputs = copy.deepcopy(case_inputs)
    return rope_parameters(inputs["rope_parameters"], inputs["head_dim"], seq_len=inputs["seq_len"],
                           max_position_embeddings=inputs["max_position_embeddings"])


def ladder(base, r):
    """The plain frequencies base ** (-2i / r), float64."""
    return 1.0 / base ** (np.arange(0, r, 2) / r)


HINTS = {
    "default": "theta_i = rope_theta ** (-2i / r) with r = int(head_dim * partial_rotary_factor)",
    "linear": "linear divides every theta_i BY factor (positions are squeezed, so frequencies shrink)",
    "dynamic": "dynamic: unchanged up to max_position_embeddings; beyond, the ladder of "
               "base * (factor * seq_len / max_position_embeddings - (factor - 1)) ** (r / (r - 2))",
    "yarn": "yarn: a ramp over the pair index from low = floor(pair making beta_fast turns) to high = "
            "ceil(pair making beta_slow turns): theta_i below, theta_i / factor above; s = 0.1 ln(factor) + 1",
    "longrope": "longrope: theta_i / short_factor[i] up to original_max_position_embeddings, "
                "theta_i / long_factor[i] past it; s = sqrt(1 + ln(factor) / ln(original))",
    "llama3": "llama3 bands by WAVELENGTH 2 pi / theta_i: < original/high_freq_factor kept, "
              "> original/low_freq_factor divided by factor, blended in between",
}


# ---- 1. the worked example -------------------------------------------------------------------


def test_hand_example():
    # Chapter section 10: head_dim 8, rope_theta 1e4, so theta = (1, 0.1, 0.01, 0.001).
    base = {"rope_theta": 10000.0}
    examples = [
        ("linear", {"rope_type": "linear", "factor": 4.0}, {}, [1 / 4, 0.1 / 4, 0.01 / 4, 0.001 / 4], 1.0),
        ("dynamic", {"rope_type": "dynamic", "factor": 2.0}, dict(seq_len=2048, max_position_embeddings=1024),
         [1.0, 0.06933613, 0.004807499, 0.001 / 3], 1.0),
        ("yarn", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}, {},
         [1.0, 0.075, 0.005, 0.00025], 1.138629),
        ("longrope short", {"rope_type": "longrope", "original_max_position_embeddings": 1024,
                            "short_factor": [1, 1, 2, 2], "long_factor": [1, 2, 4, 8]},
         dict(seq_len=1024, max_position_embeddings=4096), [1.0, 0.1, 0.005, 0.0005], 1.095445),
        ("longrope long", {"rope_type": "longrope", "original_max_position_embeddings": 1024,
                           "short_factor": [1, 1, 2, 2], "long_factor": [1, 2, 4, 8]},
         dict(seq_len=1025, max_position_embeddings=4096), [1.0, 0.05, 0.0025, 0.000125], 1.095445),
        ("llama3", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 1024}, {}, [1.0, 0.1, 0.003086762, 0.000125], 1.0),
    ]
    for name, fields, kwargs, want_inv_freq, want_scaling in examples:
        inv_freq, scaling = rope_parameters({**base, **fields}, 8, **kwargs)
        kind = name.split()[0]
        # the printed values have 7 significant digits; float32 adds 6e-8 relative
        assert_close(inv_freq, want_inv_freq, rtol=1e-6, what=f"hand example {name}: inv_freq", hint=HINTS[kind])
        assert abs(scaling - want_scaling) <= 1e-6, (
            f"hand example {name}: attention_scaling {scaling!r}, expected {want_scaling}. {HINTS[kind]}"
        )


# ---- 2-6. against Hugging Face --------------------------------------------------------------


def test_inv_freq_golden(rope_scaling_hf):
    failures = []
    for case, inputs in rope_scaling_hf.provenance["cases"].items():
        inv_freq, _ = call(inputs)
        want = rope_scaling_hf[f"{case}/inv_freq"]
        rope_type = inputs["rope_parameters"]["rope_type"]
        try:
            assert isinstance(inv_freq, np.ndarray) and inv_freq.dtype == np.float32, (
                f"inv_freq must be a float32 numpy array, got {type(inv_freq).__name__} "
                f"{getattr(inv_freq, 'dtype', '')}"
            )
            assert_close(inv_freq, want, rtol=INV_FREQ_RTOL, what=f"{case}: inv_freq vs HF", hint=HINTS[rope_type])
        except (AssertionError, pytest.fail.Exception) as failure:
            failures.append(f"{case} ({rope_type}, head_dim {inputs['head_dim']}, seq_len {inputs['seq_len']}): "
                            f"{str(failure).strip()}")
    assert not failures, f"{len(failures)} cases differ from HF:\n" + "\n".join(failures)


def test_attention_scaling_golden(rope_scaling_hf):
    failures = []
    for case, inputs in rope_scaling_hf.provenance["cases"].items():
        _, scaling = call(inputs)
        want = float(rope_scaling_hf[f"{case}/attention_scaling"])
        rope_type = inputs["rope_parameters"]["rope_type"]
        if not abs(scaling - want) <= SCALING_RTOL * want:
            failures.append(f"{case} ({rope_type}): attention_scaling {scaling!r}, HF {want!r}. {HINTS[rope_type]}")
    assert not failures, f"{len(failures)} cases differ from HF:\n" + "\n".join(failures)


def test_dynamic_follows_seq_len_golden(rope_scaling_hf):
    cases = rope_scaling_hf.provenance["cases"]
    plain = ladder(10000.0, 128)
    # dynamic-128: factor 2, max_position_embeddings 4096
    for case in ("dynamic-128", "dynamic-128@2048", "dynamic-128@4096"):
        inv_freq, _ = call(cases[case])
        assert_close(inv_freq, plain, rtol=INV_FREQ_RTOL, what=f"{case}: seq_len <= max_position_embeddings",
                     hint="dynamic changes nothing until the sequence is longer than max_position_embeddings: "
                          "use max(seq_len, max_position_embeddings), and max_position_embeddings for None")
    previous = plain
    for case in ("dynamic-128@4097", "dynamic-128@8192", "dynamic-128@16384", "dynamic-128@131072"):
        inv_freq, _ = call(cases[case])
        assert_close(inv_freq, rope_scaling_hf[f"{case}/inv_freq"], rtol=INV_FREQ_RTOL, what=f"{case} vs HF",
                     hint=HINTS["dynamic"])
        seq_len = cases[case]["seq_len"]
        # the slowest pair is divided by exactly factor * seq_len / max - (factor - 1)
        stretch = 2 * seq_len / 4096 - 1
        assert_close(inv_freq[-1], plain[-1] / stretch, rtol=INV_FREQ_RTOL,
                     what=f"{case}: the slowest pair", hint="the base exponent r / (r - 2) makes the slowest "
                     "pair shrink by exactly factor * seq_len / max_position_embeddings - (factor - 1)")
        assert np.all(inv_freq[1:] < previous[1:]), f"{case}: a longer sequence must grow the base further"
        previous = inv_freq


def test_longrope_switches_past_original_length_golden(rope_scaling_hf):
    cases = rope_scaling_hf.provenance["cases"]
    # Phi-3-mini-128k: original_max_position_embeddings 4096
    results = {case: call(cases[case]) for case in
               ("phi3-mini-128k", "phi3-mini-128k@4096", "phi3-mini-128k@4097", "phi3-mini-128k@131072")}
    for case, (inv_freq, scaling) in results.items():
        assert_close(inv_freq, rope_scaling_hf[f"{case}/inv_freq"], rtol=INV_FREQ_RTOL, what=f"{case} vs HF",
                     hint="seq_len None or <= original_max_position_embeddings (4096 is still short): "
                          "short_factor; seq_len > 4096: long_factor")
        assert abs(scaling - 1.1902380714238083) <= 1e-12, (
            f"{case}: attention_scaling {scaling!r}; Phi-3 has no factor, so factor = 131072 / 4096 = 32 "
            "and s = sqrt(1 + ln 32 / ln 4096) = 1.19024, whatever the sequence length"
        )
    short, long = results["phi3-mini-128k@4096"][0], results["phi3-mini-128k@4097"][0]
    assert not np.allclose(short, long), "4096 and 4097 positions must use different factor lists"


def test_tables_golden(rope_scaling_hf):
    cases = rope_scaling_hf.provenance["cases"]
    for model, case in rope_scaling_hf.provenance["tables"].items():
        inputs = cases[case]
        inv_freq, scaling = call(inputs)
        positions = rope_scaling_hf[f"tables/{model}/positions"]
        spec = rope_spec({"head_dim": inputs["head_dim"], "max_position_embeddings": inputs["max_position_embeddings"],
                          "rope_parameters": copy.deepcopy(inputs["rope_parameters"])}, seq_len=inputs["seq_len"])
        cos, sin = spec.cos_sin(positions)  # L7.3's tables from this spec: [P, r/2]
        angle = positions[:, None].astype(np.float64) * np.asarray(inv_freq, np.float64)
        atol = scaling * (TABLE_ATOL + ANGLE_RTOL * angle)  # see ANGLE_RTOL: tight for the slow, scaled pairs
        hint = (f"the spec's inv_freq and attention_scaling ({scaling:.6f}, on BOTH tables) for "
                f"{inputs['rope_parameters']['rope_type']} at seq_len {inputs['seq_len']}")
        assert_close(cos, rope_scaling_hf[f"tables/{model}/cos"], atol=atol, what=f"{model}: cos to position 131071",
                     hint=hint)
        assert_close(sin, rope_scaling_hf[f"tables/{model}/sin"], atol=atol, what=f"{model}: sin to position 131071",
                     hint=hint)


# ---- 7. real checkpoints: config.json as published ---------------------------------------------

LLAMA_3_1_8B = {  # meta-llama/Llama-3.1-8B, config.json
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 131072,
    "mlp_bias": False, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0", "use_cache": True, "vocab_size": 128256,
}
QWEN_2_5_7B_YARN = {  # Qwen/Qwen2.5-7B-Instruct, config.json with the rope_scaling its model card adds
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
    "intermediate_size": 18944, "max_position_embeddings": 32768, "max_window_layers": 28,
    "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 152064,
    "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
}
PHI_3_MINI_128K = {  # microsoft/Phi-3-mini-128k-instruct, config.json
    "architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 32000, "hidden_act": "silu", "hidden_size": 3072,
    "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072,
    "model_type": "phi3", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "original_max_position_embeddings": 4096, "pad_token_id": 32000, "resid_pdrop": 0.0,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "long_factor": [
            1.0700000524520874, 1.1200000047683716, 1.149999976158142, 1.4199999570846558, 1.5699999332427979,
            1.7999999523162842, 2.129999876022339, 2.129999876022339, 3.009999990463257, 5.910000324249268,
            6.950000286102295, 9.070000648498535, 9.930000305175781, 10.710000038146973, 11.130000114440918,
            14.609999656677246, 15.409998893737793, 19.809999465942383, 37.279998779296875, 38.279998779296875,
            38.599998474121094, 40.12000274658203, 46.20000457763672, 50.940006256103516, 53.66000747680664,
            54.9373893737793, 56.89738845825195, 57.28738784790039, 59.98738479614258, 60.86738586425781,
            60.887386322021484, 61.71739196777344, 62.91739273071289, 62.957393646240234, 63.41739273071289,
            63.8173942565918, 63.83739471435547, 63.897396087646484, 63.93739700317383, 64.06739807128906,
            64.11434936523438, 64.12435150146484, 64.15435028076172, 64.19435119628906, 64.24435424804688,
            64.57435607910156, 64.69000244140625, 64.76000213623047,
        ],
        "short_factor": [
            1.1, 1.1, 1.1, 1.3000000000000003, 1.3500000000000003, 1.3500000000000003, 1.4000000000000004,
            1.5500000000000005, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
            2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
            2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
            2.000000000000001, 2.000000000000001, 2.000000000000001, 2.0500000000000007, 2.0500000000000007,
            2.0500000000000007, 2.0500000000000007, 2.0500000000000007, 2.0500000000000007, 2.1000000000000005,
            2.1000000000000005, 2.1500000000000004, 2.25, 2.25, 2.25, 2.25, 2.25, 2.3999999999999995,
            2.4499999999999993, 2.499999999999999, 2.6999999999999984, 2.6999999999999984, 2.7499999999999982,
            2.799999999999998, 2.8999999999999977, 3.049999999999997,
        ],
        "type": "longrope",
    },
    "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.40.2", "use_cache": True, "vocab_size": 32064,
}


@pytest.mark.parametrize("name, config, seq_len, case, head_dim, hint", [
    ("Llama 3.1 8B", LLAMA_3_1_8B, None, "llama3.1-8b", 128,
     "rope_scaling with rope_type llama3; rope_theta at the top level"),
    ("Qwen2.5 7B + YaRN", QWEN_2_5_7B_YARN, None, "qwen2.5-7b-yarn", 128,
     "rope_scaling says \"type\": \"yarn\" (the legacy key for rope_type); head_dim = 3584 // 28"),
    ("Phi-3-mini-128k, short", PHI_3_MINI_128K, None, "phi3-mini-128k", 96,
     "longrope with original_max_position_embeddings at the TOP level of config.json; no seq_len: short_factor"),
    ("Phi-3-mini-128k, long", PHI_3_MINI_128K, 131072, "phi3-mini-128k@131072", 96,
     "seq_len 131072 > original 4096: long_factor"),
])
def test_real_model_configs(rope_scaling_hf, name, config, seq_len, case, head_dim, hint):
    untouched = copy.deepcopy(config)
    spec = rope_spec(config, seq_len=seq_len)
    assert config == untouched, f"{name}: rope_spec changed the config dict it was given"
    assert (spec.layout, spec.rotary_dim) == ("half", head_dim), (
        f"{name}: spec layout {spec.layout!r}, rotary_dim {spec.rotary_dim}; expected 'half' (HF's rotate_half) "
        f"and the whole head, {head_dim}"
    )
    assert_close(spec.inv_freq, rope_scaling_hf[f"{case}/inv_freq"], rtol=INV_FREQ_RTOL,
                 what=f"{name}: spec.inv_freq vs HF", hint=hint)
    want_scaling = float(rope_scaling_hf[f"{case}/attention_scaling"])
    assert abs(spec.attention_scaling - want_scaling) <= SCALING_RTOL * want_scaling, (
        f"{name}: spec.attention_scaling {spec.attention_scaling!r}, HF {want_scaling!r}. {hint}"
    )
    model = case.split("@")[0]
    if model in rope_scaling_hf.provenance["tables"] and rope_scaling_hf.provenance["tables"][model] == case:
        positions = rope_scaling_hf[f"tables/{model}/positions"]
        cos, sin = spec.cos_sin(positions)
        angle = positions[:, None] * spec.inv_freq.astype(np.float64)
        atol = want_scaling * (TABLE_ATOL + ANGLE_RTOL * angle)
        assert_close(cos, rope_scaling_hf[f"tables/{model}/cos"], atol=atol, what=f"{name}: cos", hint=hint)
        assert_close(sin, rope_scaling_hf[f"tables/{model}/sin"], atol=atol, what=f"{name}: sin", hint=hint)


# ---- 8. partial rotary -------------------------------------------------------------------------


def test_partial_rotary(rope_scaling_hf):
    # phi-2: head_dim 2560 // 32 = 80, partial_rotary_factor 0.4: 32 entries rotate, 48 pass through
    phi_2 = {"hidden_size": 2560, "num_attention_heads": 32, "max_position_embeddings": 2048,
             "partial_rotary_factor": 0.4, "rope_theta": 10000.0, "rope_scaling": None}
    spec = rope_spec(phi_2)
    hint = "r = int(head_dim * partial_rotary_factor) = 32: 16 frequencies theta_i = base ** (-2i / 32)"
    assert spec.rotary_dim == 32, f"phi-2: rotary_dim {spec.rotary_dim}, expected 32. {hint}"
    assert_close(spec.inv_freq, rope_scaling_hf["phi-2/inv_freq"], rtol=INV_FREQ_RTOL, what="phi-2 inv_freq vs HF",
                 hint=hint)
    x = np.random.default_rng(74).standard_normal((2, 5, 80)).astype(np.float32)  # [H, S, head_dim]
    out = spec.apply(Tensor(x), np.arange(5) * 300).data
    assert np.array_equal(out[..., 32:], x[..., 32:]), "phi-2: entries 32..79 must pass through the rotation"
    for case, inputs in rope_scaling_hf.provenance["cases"].items():
        factor = inputs["rope_parameters"].get("partial_rotary_factor", 1.0)
        if factor < 1:
            inv_freq, _ = call(inputs)
            r = int(inputs["head_dim"] * factor)
            assert inv_freq.shape == (r // 2,), (
                f"{case}: {inv_freq.shape[0]} frequencies, expected r/2 = {r // 2} "
                f"(head_dim {inputs['head_dim']} * partial_rotary_factor {factor})"
            )


# ---- 9. what each rope type does to the ladder ---------------------------------------------------


def test_scaling_properties():
    base, r = 10000.0, 64
    theta = ladder(base, r)
    # linear: every pair divided by factor
    inv_freq, scaling = rope_parameters({"rope_type": "linear", "rope_theta": base, "factor": 4.0}, r)
    assert_close(inv_freq, theta / 4, rtol=1e-6, what="linear factor 4", hint=HINTS["linear"])
    assert scaling == 1.0, f"linear: attention_scaling {scaling!r}, expected 1.0"
    # yarn: the fast pairs keep theta, the slow ones are divided by factor, between them a blend
    inv_freq, scaling = rope_parameters(
        {"rope_type": "yarn", "rope_theta": base, "factor": 8.0, "original_max_position_embeddings": 4096}, r)
    assert_close(inv_freq[:10], theta[:10], rtol=1e-6, what="yarn: fast pairs", hint=HINTS["yarn"])
    assert_close(inv_freq[-8:], theta[-8:] / 8, rtol=1e-6, what="yarn: slow pairs", hint=HINTS["yarn"])
    assert np.all((theta / 8 * (1 - 1e-6) <= inv_freq) & (inv_freq <= theta * (1 + 1e-6))), (
        f"yarn: every pair between theta_i / factor and theta_i. {HINTS['yarn']}"
    )
    assert abs(scaling - (0.1 * math.log(8) + 1)) <= 1e-12, f"yarn s: {scaling!r}. {HINTS['yarn']}"
    # llama3 (Llama 3.1's fields): wavelengths < 2048 kept, > 8192 divided by 8
    inv_freq, _ = rope_parameters({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                   "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                   "original_max_position_embeddings": 8192}, 128)
    theta = ladder(500000.0, 128)
    wavelength = 2 * math.pi / theta
    keep, divide = wavelength < 2048, wavelength > 8192
    assert (keep.sum(), divide.sum()) == (29, 29), "test setup: Llama 3.1 keeps 29, divides 29, blends 6"
    assert_close(inv_freq[keep], theta[keep], rtol=1e-6, what="llama3: short wavelengths", hint=HINTS["llama3"])
    assert_close(inv_freq[divide], theta[divide] / 8, rtol=1e-6, what="llama3: long wavelengths",
                 hint=HINTS["llama3"])
    middle = ~keep & ~divide
    assert np.all((theta[middle] / 8 < inv_freq[middle]) & (inv_freq[middle] < theta[middle])), (
        f"llama3: the 6 blended pairs lie strictly between theta_i / 8 and theta_i. {HINTS['llama3']}"
    )
    # longrope: theta_i / ext_i, and s depends only on factor and the original length
    ext = np.linspace(1.0, 5.0, 16)
    inv_freq, scaling = rope_parameters({"rope_type": "longrope", "rope_theta": base, "factor": 8.0,
                                         "original_max_position_embeddings": 2048, "short_factor": list(ext),
                                         "long_factor": list(ext * 2)}, 32, seq_len=2048)
    assert_close(inv_freq, ladder(base, 32) / ext, rtol=1e-6, what="longrope short", hint=HINTS["longrope"])
    assert abs(scaling - math.sqrt(1 + math.log(8) / math.log(2048))) <= 1e-12, (
        f"longrope s {scaling!r}. {HINTS['longrope']}"
    )


# ---- 10. reading config.json --------------------------------------------------------------------


def test_rope_spec_reads_config():
    plain = ladder(10000.0, 64)
    # no rope block at all, rope_scaling null, or an empty rope_parameters: plain RoPE, base 10000 by default
    for config in ({"head_dim": 64}, {"head_dim": 64, "rope_scaling": None},
                   {"hidden_size": 256, "num_attention_heads": 4, "rope_parameters": {}}):
        spec = rope_spec(config)
        assert_close(spec.inv_freq, plain, rtol=1e-6, what=f"rope_spec({config})",
                     hint="no rope block means plain RoPE; rope_theta defaults to 10000.0; "
                          "head_dim defaults to hidden_size // num_attention_heads")
        assert (spec.attention_scaling, spec.layout, spec.rotary_dim) == (1.0, "half", 64)
    # transformers 5's rope_parameters (rope_theta inside) and the older rope_scaling + top-level rope_theta
    new = {"head_dim": 64, "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0}}
    old = {"head_dim": 64, "rope_theta": 500.0, "rope_scaling": {"type": "linear", "factor": 2.0}}
    for config in (new, old):
        spec = rope_spec(config)
        assert_close(spec.inv_freq, ladder(500.0, 64) / 2, rtol=1e-6, what=f"rope_spec({config})",
                     hint="read rope_parameters, else rope_scaling; \"type\" is the old name of rope_type; "
                          "rope_theta may sit at the top level")
    # a rope_theta inside the block wins over one at the top level
    spec = rope_spec({"head_dim": 64, "rope_theta": 1.0e6, "rope_parameters": {"rope_type": "default",
                                                                               "rope_theta": 500.0}})
    assert_close(spec.inv_freq, ladder(500.0, 64), rtol=1e-6, what="rope_theta in the block and at the top",
                 hint="the block's own fields come first; the top level only fills what it lacks")


# ---- 11. bad input --------------------------------------------------------------------------------

LLAMA3 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
LONGROPE = {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 4096,
            "factor": 32.0, "short_factor": [1.0] * 32, "long_factor": [2.0] * 32}


def without(fields, name):
    return {k: v for k, v in fields.items() if k != name}


@pytest.mark.parametrize("call_it", [
    pytest.param(lambda: rope_parameters({"rope_type": "ntk", "rope_theta": 1e4}, 64), id="unknown-rope_type"),
    pytest.param(lambda: rope_parameters({"rope_type": "default"}, 64), id="no-rope_theta"),
    pytest.param(lambda: rope_parameters({"rope_type": "linear", "rope_theta": 1e4}, 64), id="linear-no-factor"),
    pytest.param(lambda: rope_parameters({"rope_type": "linear", "rope_theta": 1e4, "factor": 0.0}, 64),
                 id="factor-zero"),
    pytest.param(lambda: rope_parameters({"rope_type": "dynamic", "rope_theta": 1e4, "factor": -2.0}, 64,
                                         max_position_embeddings=4096), id="factor-negative"),
    pytest.param(lambda: rope_parameters({"rope_type": "default", "rope_theta": 0.0}, 64), id="rope_theta-zero"),
    pytest.param(lambda: rope_parameters({"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}, 64,
                                         seq_len=8192), id="dynamic-no-max_position_embeddings"),
    pytest.param(lambda: rope_parameters({"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0}, 64),
                 id="yarn-no-original"),
    pytest.param(lambda: rope_parameters({"rope_type": "yarn", "rope_theta": 1e4,
                                          "original_max_position_embeddings": 4096}, 64),
                 id="yarn-no-factor-no-max_position_embeddings"),
    pytest.param(lambda: rope_parameters(without(LLAMA3, "low_freq_factor"), 128), id="llama3-no-low_freq_factor"),
    pytest.param(lambda: rope_parameters({**LLAMA3, "low_freq_factor": 4.0}, 128), id="llama3-low-equals-high"),
    pytest.param(lambda: rope_parameters({**LLAMA3, "low_freq_factor": 5.0}, 128), id="llama3-low-above-high"),
    pytest.param(lambda: rope_parameters(without(LONGROPE, "long_factor"), 64), id="longrope-no-long_factor"),
    pytest.param(lambda: rope_parameters({**LONGROPE, "short_factor": [1.0] * 31}, 64), id="short_factor-too-short"),
    pytest.param(lambda: rope_parameters({**LONGROPE, "long_factor": [2.0] * 64}, 64), id="long_factor-too-long"),
    pytest.param(lambda: rope_parameters({**LONGROPE, "partial_rotary_factor": 0.5}, 64),
                 id="longrope-lists-for-the-whole-head"),
    pytest.param(lambda: rope_parameters({"rope_theta": 1e4, "partial_rotary_factor": 1.5}, 64),
                 id="partial_rotary_factor-above-1"),
    pytest.param(lambda: rope_parameters({"rope_theta": 1e4, "partial_rotary_factor": 0.4}, 64),
                 id="odd-rotary-dim"),
    pytest.param(lambda: rope_parameters({"rope_theta": 1e4, "partial_rotary_factor": 0.01}, 64),
                 id="rotary-dim-0"),
    pytest.param(lambda: rope_spec({"rope_theta": 1e4, "hidden_size": 4096}), id="config-without-head_dim"),
])
def test_validation(call_it):
    with pytest.raises(ValueError):
        call_it()
    # Accepted on the way: the edges of each rule.
    inv_freq, _ = rope_parameters({"rope_theta": 1e4}, 2)  # a single pair
    assert inv_freq.shape == (1,) and inv_freq[0] == 1.0
    inv_freq, _ = rope_parameters({"rope_type": "linear", "rope_theta": 1e4, "factor": 1.0}, 8)  # factor 1: plain
    assert_close(inv_freq, ladder(1e4, 8), rtol=1e-6, what="linear factor 1", hint=HINTS["linear"])
