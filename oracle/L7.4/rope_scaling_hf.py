"""Build fixtures/L7.4/rope_scaling_hf.npz: golden RoPE-scaling values from
Hugging Face transformers 5.19.0 on torch 2.13.0 (CPU): inv_freq and
attention_scaling from HF's own rope initialisation functions, and cos/sin
tables from its rotary modules, for linear, dynamic, yarn, longrope and llama3
scaling and plain RoPE.

Run from anywhere (needs the oracle extra: pip install -e '.[oracle]'):

    python oracle/L7.4/rope_scaling_hf.py              # rewrites fixtures/L7.4/rope_scaling_hf.npz
    python oracle/L7.4/rope_scaling_hf.py --out DIR    # writes DIR/rope_scaling_hf.npz instead

Only configs are built (no weights); nothing is downloaded.  Two runs on one
machine give byte-identical files.  The course tests read the file through
course/tests/golden.py, which checks it against the provenance stored inside.

A *model* is one config: a config.json of a real checkpoint (REAL_MODELS, the
rope fields and sizes copied from the Hub) or a small made-up one
(SMALL_MODELS, each built as a LlamaConfig unless it names another class).  A
*case* is a model at one sequence length: "<model>" for seq_len None (what HF
computes when the module is built) and "<model>@<seq_len>" otherwise (what
HF's dynamic and longrope updates compute for a sequence of that length).

Keys, for every case C (CASES below lists them):

  C/inv_freq             f32[r/2]   the inv_freq of ROPE_INIT_FUNCTIONS[rope_type](config,
                                    seq_len=...) (for "default": the model class's own
                                    compute_default_rope_parameters)
  C/attention_scaling    f64[]      the attention factor the same call returns

and for every model M of TABLE_MODELS (tables at a spread of positions up to
131071, from the model's rotary module, as HF's forward computes them):

  tables/M/positions     i64[P]     TABLE_POSITIONS
  tables/M/cos           f32[P, r/2]  forward(x, positions[None]) cos, times attention_scaling;
  tables/M/sin           f32[P, r/2]  HF's tables are cat(half, half): the halves are
                                    checked equal and one is stored.  Positions up to
                                    131071 make dynamic and longrope update to seq_len
                                    131072, as the case "M@131072" records.
and for every Gemma 3 model G of LAYER_TYPE_MODELS and each of its layer types T
(its rope_parameters hold one block per layer type, as transformers 5.19.0 writes them):

  G:T/inv_freq           f32[r/2]   Gemma3RotaryEmbedding's T_inv_freq, built by HF's own
                                    initialisation for that layer type
  G:T/attention_scaling  f64[]      its T_attention_scaling
  __provenance__         0-d str    JSON: generator and command, versions, environment, and
                                    "cases": for each case the model, its config class and
                                    kwargs, and the inputs of rope_parameters as HF resolved
                                    them (rope_parameters dict, head_dim,
                                    max_position_embeddings, seq_len); "tables": for each
                                    table model its case; "layer_types": for each Gemma 3
                                    model its kwargs and the config.json fields of RoPE as
                                    HF resolved them; and every key's shape, dtype, sha256
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import Gemma3TextConfig, LlamaConfig, Phi3Config, PhiConfig, Qwen2Config
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.gemma3 import modeling_gemma3 as gemma3
from transformers.models.llama import modeling_llama as llama
from transformers.models.phi import modeling_phi as phi
from transformers.models.phi3 import modeling_phi3 as phi3
from transformers.models.qwen2 import modeling_qwen2 as qwen2

# Run as a file, not as a package: put oracle/, this script's parent folder, on
# sys.path for the plumbing every oracle shares (oracle/fixture_file.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/L7.4/rope_scaling_hf.npz", generator="oracle/L7.4/rope_scaling_hf.py")

# config class name -> (config class, its rotary module)
CLASSES = {
    "LlamaConfig": (LlamaConfig, llama.LlamaRotaryEmbedding),
    "Qwen2Config": (Qwen2Config, qwen2.Qwen2RotaryEmbedding),
    "Phi3Config": (Phi3Config, phi3.Phi3RotaryEmbedding),
    "PhiConfig": (PhiConfig, phi.PhiRotaryEmbedding),  # its default RoPE honours partial_rotary_factor
}

# Phi-3-mini-128k-instruct's LongRoPE lists (its config.json since the June 2024 update):
# one rescale factor per pair, 48 = head_dim 96 / 2.
PHI3_MINI_128K_LONG = [
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
]
PHI3_MINI_128K_SHORT = [
    1.1, 1.1, 1.1, 1.3000000000000003, 1.3500000000000003, 1.3500000000000003, 1.4000000000000004,
    1.5500000000000005, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.0500000000000007, 2.0500000000000007,
    2.0500000000000007, 2.0500000000000007, 2.0500000000000007, 2.0500000000000007, 2.1000000000000005,
    2.1000000000000005, 2.1500000000000004, 2.25, 2.25, 2.25, 2.25, 2.25, 2.3999999999999995,
    2.4499999999999993, 2.499999999999999, 2.6999999999999984, 2.6999999999999984, 2.7499999999999982,
    2.799999999999998, 2.8999999999999977, 3.049999999999997,
]

# Real checkpoints: the rope fields and sizes of their config.json (layers, vocabulary
# and the like do not touch RoPE, and no weights are built).
REAL_MODELS = {
    "llama3.1-8b": ("LlamaConfig", dict(  # meta-llama/Llama-3.1-8B
        hidden_size=4096, num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
        rope_theta=500000.0,
        rope_scaling={"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    )),
    "llama3.2-1b": ("LlamaConfig", dict(  # meta-llama/Llama-3.2-1B: head_dim 64, factor 32
        hidden_size=2048, num_attention_heads=32, num_key_value_heads=8, head_dim=64,
        max_position_embeddings=131072, rope_theta=500000.0,
        rope_scaling={"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    )),
    "qwen2.5-7b": ("Qwen2Config", dict(  # Qwen/Qwen2.5-7B-Instruct as shipped: no scaling
        hidden_size=3584, num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=32768,
        rope_theta=1000000.0,
    )),
    "qwen2.5-7b-yarn": ("Qwen2Config", dict(  # the same, with the YaRN block its model card adds
        hidden_size=3584, num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=32768,
        rope_theta=1000000.0,
        rope_scaling={"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
    )),
    "phi3-mini-128k": ("Phi3Config", dict(  # microsoft/Phi-3-mini-128k-instruct: head_dim 96
        hidden_size=3072, num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=131072,
        original_max_position_embeddings=4096, rope_theta=10000.0,
        rope_scaling={"long_factor": PHI3_MINI_128K_LONG, "short_factor": PHI3_MINI_128K_SHORT,
                      "type": "longrope"},
    )),
    "phi-2": ("PhiConfig", dict(  # microsoft/phi-2: head_dim 80, 32 of its entries rotate
        hidden_size=2560, num_attention_heads=32, max_position_embeddings=2048, rope_theta=10000.0,
        partial_rotary_factor=0.4,
    )),
}


def small(head_dim, max_position_embeddings, rope_parameters, config="LlamaConfig"):
    """A made-up model: 4 heads of head_dim, only its rope settings matter."""
    kwargs = dict(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                  max_position_embeddings=max_position_embeddings, rope_parameters=rope_parameters)
    if config == "Phi3Config":  # its own top-level field (default 4096) overrides the one in rope_parameters
        kwargs["original_max_position_embeddings"] = rope_parameters["original_max_position_embeddings"]
    return config, kwargs


def made_up_factors(pairs, low, high, seed):
    """A made-up LongRoPE list: `pairs` rescale factors rising from low to high,
    with a little seeded noise (real lists are learned, not smooth)."""
    noise = np.random.default_rng(seed).uniform(0.0, 0.05, pairs)
    return [float(v) for v in np.round(np.geomspace(low, high, pairs) + noise, 6)]


SMALL_MODELS = {
    "default-64": small(64, 4096, {"rope_type": "default", "rope_theta": 10000.0}),
    "linear-64": small(64, 8192, {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}),
    "linear-128": small(128, 16384, {"rope_type": "linear", "rope_theta": 10000.0, "factor": 8.0}),
    "linear-96-partial": small(96, 8192, {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0,
                                          "partial_rotary_factor": 0.5}),
    "dynamic-128": small(128, 4096, {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}),
    "dynamic-64-partial": small(64, 2048, {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 4.0,
                                           "partial_rotary_factor": 0.5}),
    "yarn-64": small(64, 16384, {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                 "original_max_position_embeddings": 4096}),
    "yarn-96-untruncated": small(96, 16384, {
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0, "original_max_position_embeddings": 2048,
        "beta_fast": 16.0, "beta_slow": 2.0, "truncate": False, "attention_factor": 1.25,
    }),
    "yarn-64-mscale": small(64, 163840, {  # DeepSeek's fields; made-up mscales so the ratio is not 1
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "original_max_position_embeddings": 4096,
        "mscale": 1.0, "mscale_all_dim": 0.5,
    }),
    "yarn-80-partial-nofactor": small(80, 16384, {  # factor null: max_position_embeddings / original
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": None, "original_max_position_embeddings": 2048,
        "partial_rotary_factor": 0.8,
    }),
    # The ramp's edges (chapter section 6).  A small base: h = i(beta_slow) = 70.8 passes r - 1 = 63,
    # so the clamp at r - 1 shapes the ramp (low 22; pairs 22 to 31 are blended, none divided).
    "yarn-64-small-base": small(64, 4096, {
        "rope_type": "yarn", "rope_theta": 10.0, "factor": 4.0, "original_max_position_embeddings": 1024,
    }),
    # original <= 2 pi beta_slow: h = -0.16 rounds up to 0 and low = -13 is clamped to 0, so the
    # ramp is widened after the clamp (low 0, high 0.001: pair 0 kept, the others divided).
    "yarn-64-ramp-at-0": small(64, 24, {
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 6,
    }),
    # Null fields as transformers reads them: beta_fast null and beta_slow 0 mean 32 and 1 (its
    # `or`); truncate null turns truncation off (it reads truncate for its truth).
    "yarn-64-beta-null": small(64, 16384, {
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 4096,
        "beta_fast": None, "beta_slow": 0,
    }),
    "yarn-64-truncate-null": small(64, 16384, {
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 4096,
        "truncate": None,
    }),
    "longrope-128-partial": small(128, 131072, {  # Phi-4-mini's shape: 96 of 128 entries rotate
        "rope_type": "longrope", "rope_theta": 10000.0, "factor": 16.0, "original_max_position_embeddings": 4096,
        "partial_rotary_factor": 0.75,
        "short_factor": made_up_factors(48, 1.0, 3.0, seed=7401),
        "long_factor": made_up_factors(48, 1.0, 60.0, seed=7402),
    }, config="Phi3Config"),
    "longrope-64-attention": small(64, 8192, {  # no factor (8192 / 2048), an explicit attention_factor
        "rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 2048,
        "attention_factor": 1.5,
        "short_factor": made_up_factors(32, 1.0, 2.0, seed=7403),
        "long_factor": made_up_factors(32, 1.0, 8.0, seed=7404),
    }, config="Phi3Config"),
    "llama3-80-partial": small(80, 16384, {
        "rope_type": "llama3", "rope_theta": 10000.0, "factor": 4.0, "low_freq_factor": 1.0,
        "high_freq_factor": 2.0, "original_max_position_embeddings": 2048, "partial_rotary_factor": 0.8,
    }),
}

MODELS = {**REAL_MODELS, **SMALL_MODELS}

# model -> the sequence lengths of its cases (None: the length-free case "<model>").
# Dynamic: below, at and above max_position_embeddings; longrope: at and just past
# the original length, where it switches from the short to the long factors.
SEQ_LENS = {
    "dynamic-128": [None, 2048, 4096, 4097, 8192, 16384, 131072],
    "dynamic-64-partial": [1000, 2048, 6000],
    "phi3-mini-128k": [None, 4096, 4097, 131072],
    "longrope-128-partial": [None, 8192],
    "longrope-64-attention": [2048, 2049],
}
CASES = {
    (model if seq_len is None else f"{model}@{seq_len}"): (model, seq_len)
    for model in MODELS for seq_len in SEQ_LENS.get(model, [None])
}

# Tables at every position up to the original contexts, sparsely, then out to 131071.
TABLE_POSITIONS = np.array(
    [0, 1, 2, 3, 7, 100, 1000, 2047, 2048, 4095, 4096, 8191, 8192, 16383, 16384, 32767, 32768,
     65535, 65536, 100000, 131071], dtype=np.int64,
)
# model -> the case its tables belong to (positions up to 131071: seq_len 131072).
TABLE_MODELS = {
    "llama3.1-8b": "llama3.1-8b",
    "qwen2.5-7b-yarn": "qwen2.5-7b-yarn",
    "phi3-mini-128k": "phi3-mini-128k@131072",
    "dynamic-128": "dynamic-128@131072",
    "linear-128": "linear-128",
}


# Gemma 3: one rope_parameters block per layer type (Gemma3TextConfig's own conversion
# from the legacy rope_theta, rope_local_base_freq and rope_scaling fields, as the Hub's
# config.json files still write them).  The 270M model: plain RoPE, base 1e4 on its
# sliding layers and 1e6 on its full ones; the 4B: linear scaling by 8 on the full ones.
# (Gemma3RotaryEmbedding's default rule ignores partial_rotary_factor: no case uses one.)
LAYER_TYPE_MODELS = {
    "gemma3-270m": dict(  # google/gemma-3-270m
        hidden_size=640, num_attention_heads=4, num_key_value_heads=1, head_dim=256, num_hidden_layers=18,
        max_position_embeddings=32768, sliding_window=512, rope_theta=1000000.0, rope_local_base_freq=10000.0,
    ),
    "gemma3-4b": dict(  # google/gemma-3-4b-it's text config
        hidden_size=2560, num_attention_heads=8, num_key_value_heads=4, head_dim=256, num_hidden_layers=34,
        max_position_embeddings=131072, sliding_window=1024, rope_theta=1000000.0, rope_local_base_freq=10000.0,
        rope_scaling={"factor": 8.0, "rope_type": "linear"},
    ),
    "gemma3-made-up": dict(  # made up: the scaling on the sliding layers this time, head_dim 64
        hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64, num_hidden_layers=4,
        max_position_embeddings=8192, sliding_window=128, layer_types=["sliding_attention", "full_attention"] * 2,
        rope_parameters={"sliding_attention": {"rope_type": "linear", "rope_theta": 500.0, "factor": 2.0},
                         "full_attention": {"rope_type": "default", "rope_theta": 50000.0}},
    ),
}


def hf_layer_types(model: str) -> tuple[dict, dict]:
    """({layer type: (inv_freq, attention_scaling)} from Gemma3RotaryEmbedding, the config.json
    fields of RoPE as HF resolved them)."""
    config = Gemma3TextConfig(**copy.deepcopy(LAYER_TYPE_MODELS[model]))
    rotary = gemma3.Gemma3RotaryEmbedding(config)
    values = {t: (getattr(rotary, f"{t}_inv_freq").numpy().copy(), float(getattr(rotary, f"{t}_attention_scaling")))
              for t in sorted(set(config.layer_types))}
    resolved = {"head_dim": config.head_dim, "hidden_size": config.hidden_size,
                "num_attention_heads": config.num_attention_heads,
                "max_position_embeddings": config.max_position_embeddings,
                "layer_types": list(config.layer_types), "rope_parameters": copy.deepcopy(config.rope_parameters)}
    return values, resolved


# ---- HF -----------------------------------------------------------------------


def hf_config(model: str):
    """HF's config object for MODELS[model] (built afresh: HF resolves the dict it is given)."""
    class_name, kwargs = MODELS[model]
    return CLASSES[class_name][0](**copy.deepcopy(kwargs))


def hf_init(model: str, seq_len: int | None) -> tuple[np.ndarray, float]:
    """(inv_freq, attention_factor) from HF's own rope initialisation for this model."""
    config = hf_config(model)
    rope_type = config.rope_parameters["rope_type"]
    if rope_type == "default":
        init = CLASSES[MODELS[model][0]][1].compute_default_rope_parameters
    else:
        init = ROPE_INIT_FUNCTIONS[rope_type]
    inv_freq, attention = init(config, seq_len=seq_len)
    assert inv_freq.dtype == torch.float32, inv_freq.dtype
    return inv_freq.numpy().copy(), float(attention)


def resolved_inputs(model: str, seq_len: int | None) -> dict:
    """The inputs of tinyllm's rope_parameters for this case, as HF resolved the config:
    its rope_parameters dict, head_dim (hidden_size // num_attention_heads unless given),
    max_position_embeddings and seq_len."""
    config = hf_config(model)
    return {
        "rope_parameters": dict(config.rope_parameters),
        "head_dim": getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads,
        "max_position_embeddings": config.max_position_embeddings,
        "seq_len": seq_len,
    }


def hf_tables(model: str, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """cos, sin [P, r/2] from the model's rotary module at positions [P], and the
    inv_freq it used (dynamic and longrope update it for the sequence length)."""
    config = hf_config(model)
    rope = CLASSES[MODELS[model][0]][1](config)
    cos, sin = rope(torch.zeros(1, dtype=torch.float32), torch.from_numpy(positions)[None])  # [1, P, r]
    half = cos.shape[-1] // 2
    for name, table in (("cos", cos), ("sin", sin)):
        assert table.dtype == torch.float32, f"{name} came back as {table.dtype}, expected float32"
        assert torch.equal(table[..., :half], table[..., half:]), f"{model} {name}: the halves differ"
    return cos[0, :, :half].numpy().copy(), sin[0, :, :half].numpy().copy(), rope.inv_freq.numpy().copy()


# ---- provenance and writing -------------------------------------------------------


def build() -> dict[str, np.ndarray]:
    """Every array, plus __provenance__ describing them."""
    # The fixture records what the oracle extra's pins compute: exit on any other version.
    fixture_file.check_versions(FIXTURE, {"torch": torch.__version__, "transformers": transformers.__version__})
    # HF warns about a null factor and about Phi-3's top-level original length: both are
    # real config.json shapes, chosen on purpose.
    transformers.logging.set_verbosity_error()
    arrays, cases, tables = {}, {}, {}
    with torch.no_grad():
        for case, (model, seq_len) in CASES.items():
            inv_freq, attention = hf_init(model, seq_len)
            arrays[f"{case}/inv_freq"] = inv_freq
            arrays[f"{case}/attention_scaling"] = np.array(attention, dtype=np.float64)
            class_name, kwargs = MODELS[model]
            cases[case] = {"model": model, "class": class_name, "kwargs": kwargs,
                           **resolved_inputs(model, seq_len)}
        for model, case in TABLE_MODELS.items():
            cos, sin, used_inv_freq = hf_tables(model, TABLE_POSITIONS)
            # the module used its case's inv_freq: to 2 ulp for dynamic, whose forward
            # computes the grown base in float32 where its init function uses float64
            np.testing.assert_allclose(used_inv_freq, arrays[f"{case}/inv_freq"], rtol=3e-7, atol=0)
            arrays[f"tables/{model}/positions"] = TABLE_POSITIONS
            arrays[f"tables/{model}/cos"] = cos
            arrays[f"tables/{model}/sin"] = sin
            tables[model] = case
        layer_types = {}
        for model, kwargs in LAYER_TYPE_MODELS.items():
            values, resolved = hf_layer_types(model)
            for layer_type, (inv_freq, attention) in values.items():
                arrays[f"{model}:{layer_type}/inv_freq"] = inv_freq
                arrays[f"{model}:{layer_type}/attention_scaling"] = np.array(attention, dtype=np.float64)
            layer_types[model] = {"class": "Gemma3TextConfig", "kwargs": kwargs, "config": resolved}
    return fixture_file.with_provenance(arrays, {
        **FIXTURE.header(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        # Recorded for the record; torch's float32 pow, cos and sin come from this CPU's
        # vector libraries (see fixtures/L7.3/README.md).
        "environment": fixture_file.environment(),
        "cases": cases,
        "tables": tables,
        "layer_types": layer_types,
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
