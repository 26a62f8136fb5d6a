"""Judging a milestone run against the golden run of transformers.

The tolerance.  tinyllm and transformers both compute SmolLM2 in float32,
but not in the same order: numpy's and torch's matrix products split their
sums differently, and 30 layers carry each rounding (float32 keeps about 7
digits; the logits are of size 10 to 20).  Measured on this checkpoint:
transformers against itself with 1 and with 2 threads differ by up to
3e-5; the reference tinyllm against transformers by up to 1e-4.  A mistake
in the model is far larger: RoPE in the wrong layout, or at the wrong
positions, moves logits by 1 to 10.  LOGIT_ATOL = 1e-3 sits ten times above
the noise and a thousand times below the mistakes.

Greedy text must be the same ids: every step's winning logit leads the
runner-up by at least 0.14 in the golden run (its `greedy/margins`), a
hundred times the tolerance, so no honest float32 difference can flip one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOGIT_ATOL = 1e-3


@dataclass(frozen=True)
class LogitsVerdict:
    """One prompt in one layout."""

    layout: str
    prompt: int
    last_max: float        # max |ours - theirs| over all logits of the last position
    top_max: float         # max |ours - theirs| over the top-K logits of every position
    argmax_agree: int      # positions whose largest logit is at the same id
    positions: int

    @property
    def ok(self) -> bool:
        return self.last_max <= LOGIT_ATOL and self.top_max <= LOGIT_ATOL  # false for nan too


def judge_logits(logits: dict[str, np.ndarray], golden, layouts, prompts: int) -> list[LogitsVerdict]:
    """logits["<layout>/<prompt>"]: [S, V] from the run; golden: the fixture."""
    verdicts = []
    for layout in layouts:
        for index in range(prompts):
            ours = np.asarray(logits[f"{layout}/{index}"], dtype=np.float64)
            top_ids, top_logits = golden[f"{index}/top_ids"], golden[f"{index}/top_logits"]
            if ours.shape != (top_ids.shape[0], golden[f"{index}/last_logits"].shape[0]):
                raise ValueError(f"the run gave logits of shape {ours.shape} for prompt {index}, expected "
                                 f"{(top_ids.shape[0], golden[f'{index}/last_logits'].shape[0])}")
            last = np.abs(ours[-1] - golden[f"{index}/last_logits"])
            top = np.abs(np.take_along_axis(ours, top_ids, axis=1) - top_logits)
            verdicts.append(LogitsVerdict(
                layout=layout, prompt=index,
                last_max=float(np.max(last)) if np.all(np.isfinite(last)) else float("nan"),
                top_max=float(np.max(top)) if np.all(np.isfinite(top)) else float("nan"),
                argmax_agree=int(np.sum(np.argmax(ours, axis=1) == top_ids[:, 0])),
                positions=int(top_ids.shape[0]),
            ))
    return verdicts


def judge_tokenizer(tokenized: list[list[int]], golden, prompts: int) -> list[int]:
    """The prompts the run's tokenizer splits differently from transformers'."""
    return [index for index in range(prompts)
            if list(tokenized[index]) != golden[f"{index}/input_ids"].tolist()]


def first_difference(ours: list[int], theirs: list[int]) -> int | None:
    """The first step at which two generations differ (None: the same ids)."""
    for step, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return step
    return None if len(ours) == len(theirs) else min(len(ours), len(theirs))
