"""L8.2 Decoding: a key/value cache, and greedy generation.

A model generates one token at a time.  Without a cache every step reruns
the whole sequence; with one, the prompt runs once (prefill) and each step
runs only the new token, whose query attends to the keys and values kept
from before.  That token sits at position cache.length, and RoPE must turn
it there: its absolute position in the sequence, never 0.  Chapter:
course/chapters/L8.2-decoding.md.
"""

from __future__ import annotations

import numpy as np

from tinyllm.autograd.tensor import Tensor


class KVCache:
    """What a model has seen: one (K, V) per layer, each [B, KV, length, D].

    KVCache() is empty: layers is None and length is 0.
    """

    layers: list | None

    def __init__(self) -> None:
        ...

    @property
    def length(self) -> int:
        """How many positions are cached: 0 when empty; the prompt's length
        after the prefill; one more after each step."""
        ...


def step(model, token_ids, cache: KVCache) -> Tensor:
    """Run token_ids after everything in the cache, and add them to it.

    model: anything with L7.9's forward(token_ids, positions, past) ->
        (logits, present), such as a Llama.
    token_ids: integers [B, S] (a nested list or an array): the prompt for
        the prefill, then one new token per step.
    The tokens sit at positions cache.length .. cache.length + S - 1; after
    the call cache.layers is the model's `present` and cache.length has grown
    by S.  Returns the logits [B, S, vocab].
    """
    ...


def greedy_generate(model, prompt_ids, max_new_tokens: int, *, use_cache: bool = True,
                    eos_token_id: int | None = None) -> list[int]:
    """The token ids greedy decoding appends to a prompt.

    prompt_ids: a non-empty sequence of ints (one sequence, no batch).
    max_new_tokens: an int >= 0 (not a bool): how many ids to generate.
    Each new id is the argmax of the last position's logits (the lowest id
    among equal ones, as np.argmax gives), and is fed back for the next.
    eos_token_id: generation stops right after this id is generated (it is
    included); None never stops early.
    use_cache: True runs the prompt once, then one token per step with a
    KVCache (step); False reruns the whole sequence, positions 0 .. n - 1,
    at every step.  Both give the same ids.

    Returns a list of Python ints, at most max_new_tokens long.

    Raises ValueError: prompt_ids is empty; max_new_tokens is not an int >= 0.
    """
    ...
