"""L8.2 Decoding: a key/value cache, and greedy generation.

Generating n tokens one at a time recomputes, without a cache, every earlier
token's keys and values at every step.  A cache keeps them: the prompt runs
once (prefill), then each step runs the one new token, whose query attends
to the cached keys.  The new token sits at position cache.length, and RoPE
must turn it there: its absolute position, not 0.  Chapter:
course/chapters/L8.2-decoding.md.
"""

from __future__ import annotations

import numpy as np


class KVCache:
    """What a model has seen so far: one (K, V) per layer, each [B, KV, length, D]."""

    def __init__(self):
        self.layers = None   # None (nothing seen yet), or the list model.forward returned

    @property
    def length(self) -> int:
        """How many positions are cached: 0, then the prompt's length, then one more per step."""
        return 0 if self.layers is None else self.layers[0][0].shape[2]


def step(model, token_ids, cache: KVCache):
    """Run token_ids [B, S] after everything in `cache`, at positions
    cache.length .. cache.length + S - 1, and append their keys and values
    to it.  Returns the logits [B, S, vocab]."""
    token_ids = np.asarray(token_ids)
    start = cache.length
    logits, cache.layers = model.forward(token_ids, np.arange(start, start + token_ids.shape[1]), cache.layers)
    return logits


def greedy_generate(model, prompt_ids, max_new_tokens: int, *, use_cache: bool = True,
                    eos_token_id: int | None = None) -> list[int]:
    """The max_new_tokens ids that greedy decoding appends to prompt_ids (a
    non-empty sequence of ints): each the argmax of the last position's
    logits (the lowest id among equal ones), stopping early after
    eos_token_id.  use_cache=False reruns the whole sequence at each step:
    slower, and the same ids."""
    ids = [int(i) for i in prompt_ids]
    if not ids:
        raise ValueError("greedy_generate: prompt_ids is empty; give at least one token id")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"greedy_generate: max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    cache = KVCache()
    new: list[int] = []
    pending = ids  # the tokens the model has not seen yet
    while len(new) < max_new_tokens:
        if use_cache:
            logits = step(model, [pending], cache)
        else:
            everything = ids + new
            logits, _ = model.forward([everything], np.arange(len(everything)))
        token = int(np.argmax(logits.data[0, -1]))
        new.append(token)
        pending = [token]
        if token == eos_token_id:
            break
    return new
