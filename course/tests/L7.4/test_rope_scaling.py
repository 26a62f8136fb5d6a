"""L7.4 course tests: RoPE scaling against Hugging Face's numbers and the
properties each rope type must have.  The fourteen tests are the table of the
chapter (course/chapters/L7.4-rope-scaling.md, section 12).

Golden values come from fixtures/L7.4/rope_scaling_hf.npz
(oracle/L7.4/rope_scaling_hf.py, transformers 5.19.0 on torch 2.13.0); the
`rope_scaling_hf` fixture loads them.  Its provenance lists every case with the
inputs HF resolved for it, and the tests call rope_parameters with exactly those.

Each comparison is a scenario, a function of `rope` (the code under test:
rope_parameters, rope_spec), checked through the `expect` fixture
(course/tests/diagnose.py).  When one fails, the same scenario runs on the
known mistakes of course/mutants/L7.4/ (the pitfalls and the misconceptions),
and the message names the one that gives your result, or says where your
result differs without guessing a cause.
"""

import copy
import math
from types import SimpleNamespace

import numpy as np
import pytest
from diagnose import Case, Cases, Expectations, Mistakes, Where, refuses

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

# The chapter section that defines each rope type's rule.
SECTION = {"default": 3, "linear": 4, "dynamic": 5, "yarn": 6, "longrope": 7, "llama3": 8}

# What a scenario may use of the code under test: the student's, or a known mistake's.
STUDENT = SimpleNamespace(rope_parameters=rope_parameters, rope_spec=rope_spec)
MISTAKES = Mistakes("L7.4", "tinyllm/modern/rope_scaling.py", names=tuple(vars(STUDENT)))
PAIRS = Where.tables()  # an inv_freq [r/2]: one entry per pair


@pytest.fixture
def expect():
    """This test's comparisons; a failing one names the known mistake that gives the same result."""
    return Expectations(STUDENT, MISTAKES)


def call(rope, case_inputs):
    """rope.rope_parameters with a case's recorded inputs (a deep copy: it must not change them)."""
    inputs = copy.deepcopy(case_inputs)
    return rope.rope_parameters(inputs["rope_parameters"], inputs["head_dim"], seq_len=inputs["seq_len"],
                                max_position_embeddings=inputs["max_position_embeddings"])


def ladder(base, r):
    """The plain frequencies base ** (-2i / r), float64."""
    return 1.0 / base ** (np.arange(0, r, 2) / r)


def rule(rope_type):
    """A rope type and where the chapter defines it: "yarn, chapter section 6"."""
    return f"{rope_type}, chapter section {SECTION.get(rope_type, 3)}"


# ---- 1. the worked example -------------------------------------------------------------------


def test_hand_example(expect):
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
        def parameters(rope, fields=fields, kwargs=kwargs):
            return rope.rope_parameters({**base, **copy.deepcopy(fields)}, 8, **kwargs)

        what = f"hand example {name} (chapter section {SECTION[name.split()[0]]})"
        # the printed values have 7 significant digits; float32 adds 6e-8 relative (atol 0, rtol 1e-6)
        expect.close(lambda rope, f=parameters: f(rope)[0], want_inv_freq, 0.0, f"{what}: inv_freq", rtol=1e-6,
                     where=PAIRS)
        expect.close(lambda rope, f=parameters: f(rope)[1], want_scaling, 1e-6, f"{what}: attention_scaling")


# ---- 2-6. against Hugging Face --------------------------------------------------------------


def test_inv_freq_golden(rope_scaling_hf, expect):
    cases = Cases()  # every case is compared; a mistake that breaks many is named once
    for case, inputs in rope_scaling_hf.provenance["cases"].items():
        rope_type = inputs["rope_parameters"]["rope_type"]
        cases.check(case, lambda: expect.close(
            lambda rope, inputs=inputs: call(rope, inputs)[0], rope_scaling_hf[f"{case}/inv_freq"], 0.0,
            f"{case} ({rule(rope_type)}, head_dim {inputs['head_dim']}, seq_len {inputs['seq_len']}): inv_freq vs HF",
            rtol=INV_FREQ_RTOL, where=PAIRS, dtype=np.float32))
    cases.report("differ from HF")


def test_attention_scaling_golden(rope_scaling_hf, expect):
    cases = Cases()
    for case, inputs in rope_scaling_hf.provenance["cases"].items():
        rope_type = inputs["rope_parameters"]["rope_type"]
        cases.check(case, lambda: expect.close(
            lambda rope, inputs=inputs: call(rope, inputs)[1], float(rope_scaling_hf[f"{case}/attention_scaling"]),
            0.0, f"{case} ({rule(rope_type)}): attention_scaling vs HF", rtol=SCALING_RTOL))
    cases.report("differ from HF")


def test_layer_types_golden(rope_scaling_hf, expect):
    # Gemma 3's config.json holds one rope_parameters block per layer type; rope_spec(config,
    # layer_type=T) must give what Gemma3RotaryEmbedding builds for T.
    cases = Cases()
    for model, described in rope_scaling_hf.provenance["layer_types"].items():
        config = described["config"]
        for layer_type in sorted(set(config["layer_types"])):
            key = f"{model}:{layer_type}"
            block = config["rope_parameters"][layer_type]

            def spec(rope, layer_type=layer_type):
                return rope.rope_spec(copy.deepcopy(config), layer_type=layer_type)

            what = f"{model}, {layer_type} layers ({rule(block['rope_type'])}, base {block['rope_theta']:g})"
            cases.check(key, lambda spec=spec, key=key, what=what: expect.close(
                lambda rope: spec(rope).inv_freq, rope_scaling_hf[f"{key}/inv_freq"], 0.0,
                f"{what}: inv_freq vs HF", rtol=INV_FREQ_RTOL, where=PAIRS, dtype=np.float32))
            cases.check(f"{key} scaling", lambda spec=spec, key=key, what=what: expect.close(
                lambda rope: spec(rope).attention_scaling, float(rope_scaling_hf[f"{key}/attention_scaling"]), 0.0,
                f"{what}: attention_scaling vs HF", rtol=SCALING_RTOL))
    cases.report("differ from HF")


def test_layer_type_selection(expect):
    # Nested by layer type only when the keys are layer types the config lists; a flat block
    # serves every layer; a nested block needs layer_type, one of its keys, and a block that is not null.
    nested = {"head_dim": 8, "layer_types": ["sliding_attention", "full_attention"],
              "rope_parameters": {"sliding_attention": {"rope_theta": 100.0},
                                  "full_attention": {"rope_type": "linear", "rope_theta": 1e4, "factor": 4.0}}}
    expect.close(lambda rope: rope.rope_spec(copy.deepcopy(nested), layer_type="sliding_attention").inv_freq,
                 ladder(100.0, 8), 0.0, "the sliding_attention block (base 100)", rtol=1e-6, where=PAIRS)
    expect.close(lambda rope: rope.rope_spec(copy.deepcopy(nested), layer_type="full_attention").inv_freq,
                 ladder(1e4, 8) / 4, 0.0, "the full_attention block (linear, factor 4)", rtol=1e-6, where=PAIRS)
    flat = {"head_dim": 8, "layer_types": ["full_attention"], "rope_parameters": {"rope_theta": 100.0}}
    expect.close(lambda rope: rope.rope_spec(copy.deepcopy(flat), layer_type="sliding_attention").inv_freq,
                 ladder(100.0, 8), 0.0, "a flat block with layer_type given: it serves every layer", rtol=1e-6,
                 where=PAIRS)
    unlisted = {"head_dim": 8, "rope_parameters": {"rope_theta": 100.0, "full_attention": {"rope_theta": 5.0}}}
    expect.close(lambda rope: rope.rope_spec(copy.deepcopy(unlisted), layer_type="full_attention").inv_freq,
                 ladder(100.0, 8), 0.0, "a key that is not among layer_types (none listed) does not nest the block",
                 rtol=1e-6, where=PAIRS)
    for passed, changes in (("no layer_type", {}), ("an unlisted layer_type", {"layer_type": "chunked_attention"})):
        refuses(ValueError, lambda changes=changes: rope_spec(copy.deepcopy(nested), **changes),
                f"rope_spec of a config nested by layer type, with {passed}")
    null_block = copy.deepcopy(nested)
    null_block["rope_parameters"]["full_attention"] = None
    refuses(ValueError, lambda: rope_spec(null_block, layer_type="full_attention"),
            "rope_spec(config, layer_type='full_attention') whose block for that type is null")


def test_yarn_ramp_edges_golden(rope_scaling_hf, expect):
    cases = rope_scaling_hf.provenance["cases"]
    # The edges of YaRN's ramp (chapter section 6), where the order of its steps shows.
    edges = {
        "yarn-64-small-base": "rope_theta 10, original 1024: high = i(beta_slow) = 70.8 rounds up to 71 and "
                              "passes r - 1 = 63, so the ramp runs from pair 22 to 63 (clamped at r - 1, not "
                              "r/2 - 1 = 31): pairs 23 to 31 are blended, none is divided by factor",
        "yarn-64-ramp-at-0": "original 6 <= 2 pi beta_slow: high = -0.16 rounds up to 0 and low = -13 is clamped "
                             "to 0; only then is the zero-width ramp widened to (0, 0.001): pair 0 kept, every "
                             "other pair divided by factor, no NaN",
        "yarn-96-untruncated": "truncate false, beta_fast 16, beta_slow 2: the ramp runs between the fractional "
                               "pair indexes",
    }
    for case, edge in edges.items():
        expect.close(lambda rope, case=case: call(rope, cases[case])[0], rope_scaling_hf[f"{case}/inv_freq"], 0.0,
                     f"{case} ({edge}): inv_freq vs HF", rtol=INV_FREQ_RTOL, where=PAIRS)


def test_dynamic_follows_seq_len_golden(rope_scaling_hf, expect):
    cases = rope_scaling_hf.provenance["cases"]
    plain = ladder(10000.0, 128)
    # dynamic-128: factor 2, max_position_embeddings 4096
    for case in ("dynamic-128", "dynamic-128@2048", "dynamic-128@4096"):
        expect.close(lambda rope, case=case: call(rope, cases[case])[0], plain, 0.0,
                     f"{case} (seq_len {cases[case]['seq_len']}, max_position_embeddings 4096): inv_freq vs the plain "
                     "ladder, which dynamic keeps up to max_position_embeddings", rtol=INV_FREQ_RTOL, where=PAIRS)
    previous = plain
    for case in ("dynamic-128@4097", "dynamic-128@8192", "dynamic-128@16384", "dynamic-128@131072"):
        expect.close(lambda rope, case=case: call(rope, cases[case])[0], rope_scaling_hf[f"{case}/inv_freq"], 0.0,
                     f"{case} ({rule('dynamic')}): inv_freq vs HF", rtol=INV_FREQ_RTOL, where=PAIRS)
        seq_len = cases[case]["seq_len"]
        # the slowest pair is divided by exactly factor * seq_len / max - (factor - 1)
        stretch = 2 * seq_len / 4096 - 1
        expect.close(lambda rope, case=case: call(rope, cases[case])[0][-1], plain[-1] / stretch, 0.0,
                     f"{case}: the slowest pair vs the plain one divided by factor * seq_len / "
                     f"max_position_embeddings - (factor - 1) = {stretch:g}", rtol=INV_FREQ_RTOL)
        inv_freq = call(STUDENT, cases[case])[0]
        assert np.all(inv_freq[1:] < previous[1:]), (
            f"{case}: inv_freq[1:] is not below that of the shorter sequence before it, at pairs "
            f"{np.flatnonzero(~(inv_freq[1:] < previous[1:])) + 1}; a longer sequence must grow the base further"
        )
        previous = inv_freq


def test_longrope_switches_past_original_length_golden(rope_scaling_hf, expect):
    cases = rope_scaling_hf.provenance["cases"]
    # Phi-3-mini-128k: original_max_position_embeddings 4096, no factor: factor = 131072 / 4096 = 32
    for case in ("phi3-mini-128k", "phi3-mini-128k@4096", "phi3-mini-128k@4097", "phi3-mini-128k@131072"):
        seq_len = cases[case]["seq_len"]
        expect.close(lambda rope, case=case: call(rope, cases[case])[0], rope_scaling_hf[f"{case}/inv_freq"], 0.0,
                     f"{case} (seq_len {seq_len}; original_max_position_embeddings 4096): inv_freq vs HF",
                     rtol=INV_FREQ_RTOL, where=PAIRS)
        expect.close(lambda rope, case=case: call(rope, cases[case])[1], 1.1902380714238083, 1e-12,
                     f"{case}: attention_scaling vs sqrt(1 + ln 32 / ln 4096) = 1.19024, which does not depend on "
                     "seq_len")
    short, long = call(STUDENT, cases["phi3-mini-128k@4096"])[0], call(STUDENT, cases["phi3-mini-128k@4097"])[0]
    assert not np.allclose(short, long), (
        "inv_freq at seq_len 4096 and at 4097 are the same; past original_max_position_embeddings (4096) "
        "another factor list applies"
    )


def test_tables_golden(rope_scaling_hf, expect):
    cases = rope_scaling_hf.provenance["cases"]
    for model, case in rope_scaling_hf.provenance["tables"].items():
        inputs = cases[case]
        inv_freq, scaling = call(STUDENT, inputs)
        positions = rope_scaling_hf[f"tables/{model}/positions"]
        config = {"head_dim": inputs["head_dim"], "max_position_embeddings": inputs["max_position_embeddings"],
                  "rope_parameters": inputs["rope_parameters"]}
        angle = positions[:, None].astype(np.float64) * np.asarray(inv_freq, np.float64)
        atol = scaling * (TABLE_ATOL + ANGLE_RTOL * angle)  # see ANGLE_RTOL: tight for the slow, scaled pairs
        for k, name in enumerate(("cos", "sin")):
            # L7.3's tables from this spec: [P, r/2]
            expect.close(
                lambda rope, config=config, k=k: rope.rope_spec(copy.deepcopy(config), seq_len=inputs["seq_len"])
                .cos_sin(positions)[k], rope_scaling_hf[f"tables/{model}/{name}"], atol,
                f"{model} ({rule(inputs['rope_parameters']['rope_type'])}, seq_len {inputs['seq_len']}): "
                f"rope_spec(...).cos_sin {name} to position 131071 vs HF", where=Where.tables(positions))


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


@pytest.mark.parametrize("name, config, seq_len, case, head_dim, note", [
    pytest.param("Llama 3.1 8B", LLAMA_3_1_8B, None, "llama3.1-8b", 128,
                 "rope_scaling with rope_type llama3, rope_theta at the top level", id="llama3.1-8b"),
    pytest.param("Qwen2.5 7B + YaRN", QWEN_2_5_7B_YARN, None, "qwen2.5-7b-yarn", 128,
                 "rope_scaling with \"type\": \"yarn\" (the legacy key for rope_type); head_dim 3584 // 28",
                 id="qwen2.5-7b-yarn"),
    pytest.param("Phi-3-mini-128k, short", PHI_3_MINI_128K, None, "phi3-mini-128k", 96,
                 "longrope, original_max_position_embeddings at the top level of config.json; no seq_len",
                 id="phi3-mini-128k-short"),
    pytest.param("Phi-3-mini-128k, long", PHI_3_MINI_128K, 131072, "phi3-mini-128k@131072", 96,
                 "longrope, original_max_position_embeddings 4096 at the top level; seq_len 131072",
                 id="phi3-mini-128k-long"),
])
def test_real_model_configs(rope_scaling_hf, expect, name, config, seq_len, case, head_dim, note):
    def spec(rope):
        return rope.rope_spec(copy.deepcopy(config), seq_len=seq_len)

    given = f"{name} ({note})"
    expect.equal(lambda rope: (spec(rope).layout, spec(rope).rotary_dim), ("half", head_dim),
                 f"{given}: the spec's (layout, rotary_dim): HF's rotate_half layout, and the whole head")
    expect.close(lambda rope: spec(rope).inv_freq, rope_scaling_hf[f"{case}/inv_freq"], 0.0,
                 f"{given}: spec.inv_freq vs HF", rtol=INV_FREQ_RTOL, where=PAIRS)
    want_scaling = float(rope_scaling_hf[f"{case}/attention_scaling"])
    expect.close(lambda rope: spec(rope).attention_scaling, want_scaling, 0.0,
                 f"{given}: spec.attention_scaling vs HF", rtol=SCALING_RTOL)
    model = case.split("@")[0]
    if model in rope_scaling_hf.provenance["tables"] and rope_scaling_hf.provenance["tables"][model] == case:
        positions = rope_scaling_hf[f"tables/{model}/positions"]
        angle = positions[:, None] * spec(STUDENT).inv_freq.astype(np.float64)
        atol = want_scaling * (TABLE_ATOL + ANGLE_RTOL * angle)
        for k, table in enumerate(("cos", "sin")):
            expect.close(lambda rope, k=k: spec(rope).cos_sin(positions)[k], rope_scaling_hf[f"tables/{model}/{table}"],
                         atol, f"{given}: {table} vs HF", where=Where.tables(positions))
    untouched = copy.deepcopy(config)
    rope_spec(config, seq_len=seq_len)
    assert config == untouched, f"{name}: rope_spec changed the config dict it was given"


# ---- 8. partial rotary -------------------------------------------------------------------------


def test_partial_rotary(rope_scaling_hf, expect):
    # phi-2: head_dim 2560 // 32 = 80, partial_rotary_factor 0.4: 32 entries rotate, 48 pass through
    phi_2 = {"hidden_size": 2560, "num_attention_heads": 32, "max_position_embeddings": 2048,
             "partial_rotary_factor": 0.4, "rope_theta": 10000.0, "rope_scaling": None}
    given = "phi-2 (head_dim 80, partial_rotary_factor 0.4)"
    expect.equal(lambda rope: rope.rope_spec(copy.deepcopy(phi_2)).rotary_dim, 32,
                 f"{given}: spec.rotary_dim, int(head_dim * partial_rotary_factor)")
    expect.close(lambda rope: rope.rope_spec(copy.deepcopy(phi_2)).inv_freq, rope_scaling_hf["phi-2/inv_freq"], 0.0,
                 f"{given}: spec.inv_freq vs HF", rtol=INV_FREQ_RTOL, where=PAIRS)
    x = np.random.default_rng(74).standard_normal((2, 5, 80)).astype(np.float32)  # [H, S, head_dim]
    expect.equal(lambda rope: rope.rope_spec(copy.deepcopy(phi_2)).apply(Tensor(x), np.arange(5) * 300).data[..., 32:],
                 x[..., 32:], f"{given}: spec.apply(x, positions)[..., 32:], which must pass through the rotation")
    for case, inputs in rope_scaling_hf.provenance["cases"].items():
        factor = inputs["rope_parameters"].get("partial_rotary_factor", 1.0)
        if factor < 1:
            r = int(inputs["head_dim"] * factor)
            expect.equal(lambda rope, inputs=inputs: call(rope, inputs)[0].shape, (r // 2,),
                         f"{case}: inv_freq's shape, one frequency per rotating pair (r/2 = {r // 2}: head_dim "
                         f"{inputs['head_dim']} * partial_rotary_factor {factor} = {r} rotating entries)")


# ---- 9. what each rope type does to the ladder ---------------------------------------------------


def test_scaling_properties(expect):
    base, r = 10000.0, 64
    theta = ladder(base, r)

    def parameters(fields, head_dim=r, **kwargs):
        return lambda rope: rope.rope_parameters(copy.deepcopy(fields), head_dim, **kwargs)

    # linear: every pair divided by factor
    linear = parameters({"rope_type": "linear", "rope_theta": base, "factor": 4.0})
    expect.close(lambda rope: linear(rope)[0], theta / 4, 0.0, f"linear factor 4 vs theta_i / 4 ({rule('linear')})",
                 rtol=1e-6, where=PAIRS)
    expect.equal(lambda rope: linear(rope)[1], 1.0, "linear: attention_scaling")
    # yarn: the fast pairs keep theta, the slow ones are divided by factor, between them a blend
    yarn = parameters({"rope_type": "yarn", "rope_theta": base, "factor": 8.0, "original_max_position_embeddings": 4096})
    expect.close(lambda rope: yarn(rope)[0][:10], theta[:10], 0.0,
                 f"yarn factor 8: the 10 fastest pairs vs theta_i, which they keep ({rule('yarn')})", rtol=1e-6,
                 where=PAIRS)
    expect.close(lambda rope: yarn(rope)[0][-8:], theta[-8:] / 8, 0.0,
                 f"yarn factor 8: the 8 slowest pairs vs theta_i / 8 ({rule('yarn')})", rtol=1e-6, where=PAIRS)
    inv_freq, scaling = yarn(STUDENT)
    outside = np.flatnonzero(~((theta / 8 * (1 - 1e-6) <= inv_freq) & (inv_freq <= theta * (1 + 1e-6))))
    assert outside.size == 0, f"yarn factor 8: pairs {outside} lie outside [theta_i / 8, theta_i] ({rule('yarn')})"
    expect.close(lambda rope: yarn(rope)[1], 0.1 * math.log(8) + 1, 1e-12, "yarn factor 8: s vs 0.1 ln 8 + 1")
    # llama3 (Llama 3.1's fields): wavelengths < 2048 kept, > 8192 divided by 8
    llama3 = parameters({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, 128)
    theta = ladder(500000.0, 128)
    wavelength = 2 * math.pi / theta
    keep, divide = wavelength < 2048, wavelength > 8192
    assert (keep.sum(), divide.sum()) == (29, 29), "test setup: Llama 3.1 keeps 29, divides 29, blends 6"
    expect.close(lambda rope: llama3(rope)[0][keep], theta[keep], 0.0,
                 f"llama3: the pairs of wavelength < 2048 vs theta_i, which they keep ({rule('llama3')})", rtol=1e-6,
                 where=PAIRS)
    expect.close(lambda rope: llama3(rope)[0][divide], theta[divide] / 8, 0.0,
                 f"llama3: the pairs of wavelength > 8192 (pairs 35 to 63) vs theta_i / 8 ({rule('llama3')})", rtol=1e-6)
    inv_freq = llama3(STUDENT)[0]
    middle = ~keep & ~divide
    assert np.all((theta[middle] / 8 < inv_freq[middle]) & (inv_freq[middle] < theta[middle])), (
        f"llama3: the 6 blended pairs {np.flatnonzero(middle)} are {inv_freq[middle]}, not all strictly between "
        f"theta_i / 8 and theta_i ({rule('llama3')})"
    )
    # longrope: theta_i / ext_i, and s depends only on factor and the original length
    ext = np.linspace(1.0, 5.0, 16)
    longrope = parameters({"rope_type": "longrope", "rope_theta": base, "factor": 8.0,
                           "original_max_position_embeddings": 2048, "short_factor": list(ext),
                           "long_factor": list(ext * 2)}, 32, seq_len=2048)
    expect.close(lambda rope: longrope(rope)[0], ladder(base, 32) / ext, 0.0,
                 f"longrope at seq_len 2048 = original vs theta_i / short_factor_i ({rule('longrope')})", rtol=1e-6,
                 where=PAIRS)
    expect.close(lambda rope: longrope(rope)[1], math.sqrt(1 + math.log(8) / math.log(2048)), 1e-12,
                 "longrope factor 8, original 2048: s vs sqrt(1 + ln 8 / ln 2048)")


def test_computed_in_float64(expect):
    # Llama 3 with factor 40 and the band 2 .. 3 over 8192 positions (chapter section 3): near the
    # band's long edge the blend weight smooth is close to 0, so theta' = theta (smooth + (1 - smooth) / 40)
    # multiplies the rounding error of smooth by about 40.  The rule evaluated in float64 and rounded
    # once is the answer; float32 steps land up to 4e-6 away here (Hugging Face's own: 2.9e-6).
    block = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 40.0, "low_freq_factor": 2.0,
             "high_freq_factor": 3.0, "original_max_position_embeddings": 8192}
    theta = ladder(10000.0, 128)
    wavelength = 2 * math.pi / theta
    smooth = (8192 / wavelength - 2.0) / (3.0 - 2.0)
    blended = (1 - smooth) * theta / 40 + smooth * theta
    want = np.where(wavelength < 8192 / 3.0, theta, np.where(wavelength > 8192 / 2.0, theta / 40, blended))
    expect.close(lambda rope: rope.rope_parameters(copy.deepcopy(block), 128)[0], want, 0.0,
                 f"llama3 factor 40, low_freq_factor 2, high_freq_factor 3, original 8192, head_dim 128: inv_freq vs "
                 f"the rule in float64, rounded once ({rule('llama3')}; float32 steps drift here)",
                 rtol=INV_FREQ_RTOL, where=PAIRS)


# ---- 10. reading config.json --------------------------------------------------------------------


def test_rope_spec_reads_config(expect):
    plain = ladder(10000.0, 64)

    def spec(config):
        return lambda rope: rope.rope_spec(copy.deepcopy(config))

    # no rope block at all, rope_scaling null, or an empty rope_parameters: plain RoPE, base 10000 by default
    for config in ({"head_dim": 64}, {"head_dim": 64, "rope_scaling": None},
                   {"hidden_size": 256, "num_attention_heads": 4, "rope_parameters": {}}):
        expect.close(lambda rope, f=spec(config): f(rope).inv_freq, plain, 0.0,
                     f"rope_spec({config}).inv_freq vs the plain ladder of base 10000 over 64 entries", rtol=1e-6,
                     where=PAIRS)
        expect.equal(lambda rope, f=spec(config): (f(rope).attention_scaling, f(rope).layout, f(rope).rotary_dim),
                     (1.0, "half", 64), f"rope_spec({config}): (attention_scaling, layout, rotary_dim)")
    # transformers 5's rope_parameters (rope_theta inside) and the older rope_scaling + top-level rope_theta
    new = {"head_dim": 64, "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0}}
    old = {"head_dim": 64, "rope_theta": 500.0, "rope_scaling": {"type": "linear", "factor": 2.0}}
    for config in (new, old):
        expect.close(lambda rope, f=spec(config): f(rope).inv_freq, ladder(500.0, 64) / 2, 0.0,
                     f"rope_spec({config}).inv_freq vs linear factor 2 on base 500", rtol=1e-6, where=PAIRS)
    # a rope_theta inside the block wins over one at the top level
    both = {"head_dim": 64, "rope_theta": 1.0e6, "rope_parameters": {"rope_type": "default", "rope_theta": 500.0}}
    expect.close(lambda rope: spec(both)(rope).inv_freq, ladder(500.0, 64), 0.0,
                 f"rope_spec({both}).inv_freq vs the plain ladder of base 500, the block's own rope_theta", rtol=1e-6,
                 where=PAIRS)
    # a block with both keys: rope_type wins over the legacy "type"
    legacy = {"head_dim": 64, "rope_scaling": {"rope_type": "linear", "type": "dynamic", "factor": 2.0}}
    expect.close(lambda rope: spec(legacy)(rope).inv_freq, plain / 2, 0.0,
                 f"rope_spec({legacy}).inv_freq vs linear factor 2: rope_type wins over type", rtol=1e-6, where=PAIRS)
    # head_dim = hidden_size // num_attention_heads: 64 // 3 = 21, and 21 * 0.8 = 16.8 rotates 16 entries
    # (64 / 3 * 0.8 = 17.07 would give 17, an odd rotary dim)
    uneven = {"hidden_size": 64, "num_attention_heads": 3, "partial_rotary_factor": 0.8}
    expect.close(lambda rope: spec(uneven)(rope).inv_freq, ladder(10000.0, 16), 0.0,
                 f"rope_spec({uneven}).inv_freq vs the plain ladder over r = int((64 // 3) * 0.8) = 16 entries",
                 rtol=1e-6, where=PAIRS)


# ---- 11. missing, null and empty fields ----------------------------------------------------------

YARN_64 = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 4096}
LINEAR_2 = {"type": "linear", "factor": 2.0}


def null_case(case_id, passed, scenario, want, rule_said):
    """A test_missing_null_and_empty case: scenario(rope, golden) must give `want` (a value, or a
    function of the golden data) to 1e-6 relative.  passed: what it passes; rule_said: the rule."""
    def check(expect, golden):
        expect.close(lambda rope: scenario(rope, golden), want(golden) if callable(want) else want, 0.0,
                     f"{passed} ({rule_said}, chapter section 11)", rtol=INV_FREQ_RTOL, where=PAIRS)

    return pytest.param(Case(passed, check), id=case_id)


def golden_inputs(case, **changed):
    """A golden case's recorded inputs, as a scenario of rope and the golden data, with fields of its
    rope_parameters block replaced (a value of `...` removes the field)."""
    def scenario(rope, golden):
        inputs = copy.deepcopy(golden.provenance["cases"][case])
        block = inputs["rope_parameters"]
        for name, value in changed.items():
            if value is ...:
                block.pop(name, None)
            else:
                block[name] = value
        return call(rope, inputs)[0]

    return scenario


def spec_inv_freq(config):
    return lambda rope, golden: rope.rope_spec(copy.deepcopy(config)).inv_freq


# Each case: a field absent, null or empty, and what the chapter's rule makes of it.
NULL_CASES = [
    null_case("rope_type-null", "rope_parameters({'rope_type': None, 'rope_theta': 1e4}, 64)",
              lambda rope, golden: rope.rope_parameters({"rope_type": None, "rope_theta": 1e4}, 64)[0],
              ladder(1e4, 64), "a null rope_type is no rope_type: plain RoPE"),
    null_case("partial_rotary_factor-null", "rope_parameters({'rope_type': 'linear', 'rope_theta': 1e4, 'factor': 2.0, "
              "'partial_rotary_factor': None}, 64)",
              lambda rope, golden: rope.rope_parameters({"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0,
                                                         "partial_rotary_factor": None}, 64)[0],
              ladder(1e4, 64) / 2, "a null partial_rotary_factor is 1.0: every entry rotates"),
    null_case("yarn-factor-null", "rope_parameters(yarn-80-partial-nofactor's block, factor None, 80, "
              "max_position_embeddings=16384)", golden_inputs("yarn-80-partial-nofactor", factor=None),
              lambda golden: golden["yarn-80-partial-nofactor/inv_freq"],
              "a null factor is an absent one: max_position_embeddings / original, as HF computes it"),
    null_case("yarn-factor-absent", "rope_parameters(yarn-80-partial-nofactor's block without factor, 80, "
              "max_position_embeddings=16384)", golden_inputs("yarn-80-partial-nofactor", factor=...),
              lambda golden: golden["yarn-80-partial-nofactor/inv_freq"],
              "an absent factor: max_position_embeddings / original, as HF computes it for a null one"),
    null_case("yarn-beta-null-or-0", "rope_parameters(yarn block with beta_fast None and beta_slow 0, 64)",
              golden_inputs("yarn-64-beta-null"), lambda golden: golden["yarn-64-beta-null/inv_freq"],
              "beta_fast and beta_slow absent, null or 0 are 32 and 1, as HF's `or` reads them"),
    null_case("yarn-truncate-null", "rope_parameters(yarn block with truncate None, 64)",
              golden_inputs("yarn-64-truncate-null"), lambda golden: golden["yarn-64-truncate-null/inv_freq"],
              "truncate is the one field HF reads for its truth: null, like false, turns truncation off; vs HF"),
    null_case("yarn-attention_factor-and-mscale-null", "rope_parameters(yarn factor 4 with attention_factor None, "
              "mscale None and mscale_all_dim 0.5, 64)[1]",
              lambda rope, golden: rope.rope_parameters({**YARN_64, "attention_factor": None, "mscale": None,
                                                         "mscale_all_dim": 0.5}, 64)[1],
              0.1 * math.log(4.0) + 1, "null attention_factor and mscale are absent: s = 0.1 ln 4 + 1"),
    null_case("block-rope_theta-null", "rope_spec({'head_dim': 64, 'rope_theta': 500.0, 'rope_parameters': "
              "{'rope_type': 'linear', 'factor': 2.0, 'rope_theta': None}}).inv_freq",
              spec_inv_freq({"head_dim": 64, "rope_theta": 500.0,
                             "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": None}}),
              ladder(500.0, 64) / 2, "the block's null rope_theta is filled in from the top level, 500"),
    null_case("top-level-rope_theta-null", "rope_spec({'head_dim': 64, 'rope_theta': None, 'rope_scaling': "
              "{'type': 'linear', 'factor': 2.0}}).inv_freq",
              spec_inv_freq({"head_dim": 64, "rope_theta": None, "rope_scaling": LINEAR_2}),
              ladder(1e4, 64) / 2, "a null rope_theta everywhere is none: the default base 10000"),
    null_case("rope_type-null-beside-type", "rope_spec({'head_dim': 64, 'rope_scaling': {'rope_type': None, "
              "'type': 'linear', 'factor': 2.0}}).inv_freq",
              spec_inv_freq({"head_dim": 64, "rope_scaling": {"rope_type": None, **LINEAR_2}}),
              ladder(1e4, 64) / 2, "a null rope_type is not given, so the legacy type names the rule"),
    null_case("rope_parameters-empty", "rope_spec({'head_dim': 64, 'rope_parameters': {}, 'rope_scaling': "
              "{'type': 'linear', 'factor': 2.0}}).inv_freq",
              spec_inv_freq({"head_dim": 64, "rope_parameters": {}, "rope_scaling": LINEAR_2}),
              ladder(1e4, 64) / 2, "an empty rope_parameters is no block: rope_scaling is read"),
    null_case("rope_parameters-null", "rope_spec({'head_dim': 64, 'rope_parameters': None, 'rope_scaling': "
              "{'type': 'linear', 'factor': 2.0}}).inv_freq",
              spec_inv_freq({"head_dim": 64, "rope_parameters": None, "rope_scaling": LINEAR_2}),
              ladder(1e4, 64) / 2, "a null rope_parameters is no block: rope_scaling is read"),
    null_case("empty-block-top-level-rope_theta", "rope_spec({'head_dim': 64, 'rope_theta': 500.0, "
              "'rope_parameters': {}}).inv_freq",
              spec_inv_freq({"head_dim": 64, "rope_theta": 500.0, "rope_parameters": {}}),
              ladder(500.0, 64), "an empty block is plain RoPE with the top-level rope_theta"),
    null_case("head_dim-null", "rope_spec({'head_dim': None, 'hidden_size': 256, 'num_attention_heads': 4}).inv_freq",
              spec_inv_freq({"head_dim": None, "hidden_size": 256, "num_attention_heads": 4}),
              ladder(1e4, 64), "a null head_dim is derived: 256 // 4 = 64"),
    null_case("top-level-partial_rotary_factor-null", "rope_spec({'head_dim': 64, 'partial_rotary_factor': None}).inv_freq",
              spec_inv_freq({"head_dim": 64, "partial_rotary_factor": None}),
              ladder(1e4, 64), "a null partial_rotary_factor at the top level is none: every entry rotates"),
]


@pytest.mark.parametrize("case", NULL_CASES)
def test_missing_null_and_empty(case, expect, rope_scaling_hf):
    case(expect, rope_scaling_hf)


# ---- 12. bad input --------------------------------------------------------------------------------

LLAMA3 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
LONGROPE = {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 4096,
            "factor": 32.0, "short_factor": [1.0] * 32, "long_factor": [2.0] * 32}


def without(fields, name):
    return {k: v for k, v in fields.items() if k != name}


def refused(case_id, passed, call_it):
    """A test_validation case: call_it() must raise ValueError; `passed` says what it passes."""
    return pytest.param(Case(passed, lambda expect: refuses(ValueError, call_it, passed)), id=case_id)


def accepted(case_id, passed, parameters, head_dim, want, **arguments):
    """A test_validation case at the edge of a rule: rope_parameters(parameters, head_dim,
    **arguments) must return the inv_freq `want` (to 1e-6 relative)."""
    def check(expect):
        try:
            rope_parameters(copy.deepcopy(parameters), head_dim, **arguments)
        except Exception as error:
            pytest.fail(f"{passed}\n  is valid input and should return inv_freq {want}, but raised "
                        f"{type(error).__name__}: {error}")
        expect.close(lambda rope: rope.rope_parameters(copy.deepcopy(parameters), head_dim, **arguments)[0], want,
                     0.0, f"{passed}: inv_freq", rtol=1e-6, where=PAIRS)

    return pytest.param(Case(passed, check), id=case_id)


# Each case: what it passes, and what it must raise (or, for the valid edges, return).
CASES = [
    refused("unknown-rope_type", "rope_parameters({'rope_type': 'ntk', 'rope_theta': 1e4}, 64)",
            lambda: rope_parameters({"rope_type": "ntk", "rope_theta": 1e4}, 64)),
    refused("no-rope_theta", "rope_parameters({'rope_type': 'default'}, 64)",
            lambda: rope_parameters({"rope_type": "default"}, 64)),
    refused("linear-no-factor", "rope_parameters({'rope_type': 'linear', 'rope_theta': 1e4}, 64)",
            lambda: rope_parameters({"rope_type": "linear", "rope_theta": 1e4}, 64)),
    refused("linear-factor-null", "rope_parameters({'rope_type': 'linear', 'rope_theta': 1e4, 'factor': None}, 64)",
            lambda: rope_parameters({"rope_type": "linear", "rope_theta": 1e4, "factor": None}, 64)),
    refused("factor-zero", "rope_parameters({'rope_type': 'linear', 'rope_theta': 1e4, 'factor': 0.0}, 64)",
            lambda: rope_parameters({"rope_type": "linear", "rope_theta": 1e4, "factor": 0.0}, 64)),
    refused("factor-negative", "rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, 'factor': -2.0}, 64, "
            "max_position_embeddings=4096)",
            lambda: rope_parameters({"rope_type": "dynamic", "rope_theta": 1e4, "factor": -2.0}, 64,
                                    max_position_embeddings=4096)),
    refused("rope_theta-zero", "rope_parameters({'rope_type': 'default', 'rope_theta': 0.0}, 64)",
            lambda: rope_parameters({"rope_type": "default", "rope_theta": 0.0}, 64)),
    refused("dynamic-single-pair", "rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, 'factor': 2.0}, 2, "
            "max_position_embeddings=4096): r = 2, and dynamic's exponent r / (r - 2) needs r >= 4",
            lambda: rope_parameters({"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}, 2,
                                    max_position_embeddings=4096)),
    refused("dynamic-no-max_position_embeddings", "rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, "
            "'factor': 2.0}, 64, seq_len=8192), without max_position_embeddings",
            lambda: rope_parameters({"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}, 64, seq_len=8192)),
    refused("yarn-no-original", "rope_parameters({'rope_type': 'yarn', 'rope_theta': 1e4, 'factor': 4.0}, 64), "
            "without original_max_position_embeddings",
            lambda: rope_parameters({"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0}, 64)),
    refused("yarn-no-factor-no-max_position_embeddings", "rope_parameters({'rope_type': 'yarn', 'rope_theta': 1e4, "
            "'original_max_position_embeddings': 4096}, 64): no factor, and no max_position_embeddings to derive it",
            lambda: rope_parameters({"rope_type": "yarn", "rope_theta": 1e4, "original_max_position_embeddings": 4096},
                                    64)),
    refused("llama3-no-low_freq_factor", "rope_parameters(Llama 3.1's llama3 block without low_freq_factor, 128)",
            lambda: rope_parameters(without(LLAMA3, "low_freq_factor"), 128)),
    refused("llama3-low_freq_factor-null", "rope_parameters(Llama 3.1's llama3 block with low_freq_factor None, 128)",
            lambda: rope_parameters({**LLAMA3, "low_freq_factor": None}, 128)),
    refused("llama3-low-equals-high", "rope_parameters(llama3 block with low_freq_factor 4.0 = high_freq_factor, 128)",
            lambda: rope_parameters({**LLAMA3, "low_freq_factor": 4.0}, 128)),
    refused("llama3-low-above-high", "rope_parameters(llama3 block with low_freq_factor 5.0 > high_freq_factor 4.0, "
            "128)", lambda: rope_parameters({**LLAMA3, "low_freq_factor": 5.0}, 128)),
    refused("longrope-no-long_factor", "rope_parameters(longrope block without long_factor, 64)",
            lambda: rope_parameters(without(LONGROPE, "long_factor"), 64)),
    refused("short_factor-too-short", "rope_parameters(longrope block with 31 short factors, 64): 32 pairs",
            lambda: rope_parameters({**LONGROPE, "short_factor": [1.0] * 31}, 64)),
    refused("long_factor-too-long", "rope_parameters(longrope block with 64 long factors, 64): 32 pairs",
            lambda: rope_parameters({**LONGROPE, "long_factor": [2.0] * 64}, 64)),
    refused("longrope-lists-for-the-whole-head", "rope_parameters(longrope block with 32 factors each and "
            "partial_rotary_factor 0.5, 64): 16 rotating pairs",
            lambda: rope_parameters({**LONGROPE, "partial_rotary_factor": 0.5}, 64)),
    refused("partial_rotary_factor-above-1", "rope_parameters({'rope_theta': 1e4, 'partial_rotary_factor': 1.5}, 64)",
            lambda: rope_parameters({"rope_theta": 1e4, "partial_rotary_factor": 1.5}, 64)),
    refused("odd-rotary-dim", "rope_parameters({'rope_theta': 1e4, 'partial_rotary_factor': 0.4}, 64): "
            "int(64 * 0.4) = 25 rotating entries",
            lambda: rope_parameters({"rope_theta": 1e4, "partial_rotary_factor": 0.4}, 64)),
    refused("rotary-dim-0", "rope_parameters({'rope_theta': 1e4, 'partial_rotary_factor': 0.01}, 64): "
            "int(64 * 0.01) = 0 rotating entries",
            lambda: rope_parameters({"rope_theta": 1e4, "partial_rotary_factor": 0.01}, 64)),
    refused("config-without-head_dim", "rope_spec({'rope_theta': 1e4, 'hidden_size': 4096}): no head_dim, and no "
            "num_attention_heads to derive it",
            lambda: rope_spec({"rope_theta": 1e4, "hidden_size": 4096})),
    refused("config-hidden_size-null", "rope_spec({'hidden_size': None, 'num_attention_heads': 32}): no head_dim, and a "
            "null hidden_size to derive it from",
            lambda: rope_spec({"hidden_size": None, "num_attention_heads": 32})),
    # Valid input, at the edges of the rules
    accepted("accepts-a-single-pair", "rope_parameters({'rope_theta': 1e4}, 2)", {"rope_theta": 1e4}, 2, [1.0]),
    accepted("accepts-dynamic-two-pairs", "rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, 'factor': 2.0}, "
             "4, max_position_embeddings=4096): r = 4, no seq_len", {"rope_type": "dynamic", "rope_theta": 1e4,
                                                                    "factor": 2.0}, 4, ladder(1e4, 4),
             max_position_embeddings=4096),
    accepted("accepts-linear-factor-1", "rope_parameters({'rope_type': 'linear', 'rope_theta': 1e4, 'factor': 1.0}, "
             "8)", {"rope_type": "linear", "rope_theta": 1e4, "factor": 1.0}, 8, ladder(1e4, 8)),
]


@pytest.mark.parametrize("case", CASES)
def test_validation(case, expect):
    case(expect)
