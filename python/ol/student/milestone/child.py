"""The run of a milestone, in a child Python that sees tinyllm through the overlay.

    python -m ol.student.milestone.child REQUEST.json OUT_DIR      (with $OL_OVERLAY set)

REQUEST.json: {"checkpoint": path of the GGUF, "layouts": ["half", ...],
"prompts": [text, ...], "prompt_ids": [[id, ...], ...], "greedy": {"prompt":
index, "tokens": n, "layout": "half"}}.  For each layout it builds the
student's Llama from the checkpoint's weights in that layout and runs every
prompt (the golden ids, so that a tokenizer difference cannot hide a model
difference); with the greedy layout it also generates, with the KV cache.
It writes OUT_DIR/logits.npz ("<layout>/<prompt>": float32 [S, vocab]) and
OUT_DIR/run.json (the tokenizer's own ids for each prompt, the generated ids
and text, timings, the process's peak memory).  ol.student.milestone.compare judges them; this file judges
nothing.  An exception in the student's code ends the run with its
traceback and exit 1; a NotImplementedError (a stub's) also writes
OUT_DIR/stub.json, {"file": the file whose code raised it}, so that the
command can say which module to finish or take back to not started.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> int:
    from ol.core.overlay import install_from_env

    request_path, out = Path(argv[0]), Path(argv[1])
    install_from_env()
    request = json.loads(request_path.read_text(encoding="utf-8"))

    from tinyllm.checkpoints.gguf import GGUFCheckpoint

    started = time.perf_counter()
    checkpoint = GGUFCheckpoint(request["checkpoint"])
    tokenizer = checkpoint.tokenizer()
    run = {"tokenized": [tokenizer.encode(text).ids for text in request["prompts"]], "seconds": {}}
    logits = {}
    for layout in request["layouts"]:
        logits.update(run_layout(checkpoint, tokenizer, layout, request, run))
        gc.collect()  # one model at a time: the last one's weights go before the next is built
    run["seconds"]["total"] = time.perf_counter() - started
    run["peak_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9  # Linux: ru_maxrss in kB
    np.savez(out / "logits.npz", **logits)
    (out / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return 0


def run_layout(checkpoint, tokenizer, layout: str, request: dict, run: dict) -> dict:
    """Build the model with the q/k rows in `layout`, run every prompt (and the
    greedy continuation, for its layout); only numpy arrays leave, so the model
    and its graphs are freed on return."""
    from tinyllm.modern.decoding import greedy_generate
    from tinyllm.modern.llama import Llama

    say(f"  building the model from the checkpoint, q/k rows in the {layout} layout ...")
    model = Llama(checkpoint.config, checkpoint.weights(layout), layout=layout)
    logits = {}
    tic = time.perf_counter()
    for index, ids in enumerate(request["prompt_ids"]):
        out, _ = model.forward(np.asarray([ids]), np.arange(len(ids)))
        logits[f"{layout}/{index}"] = np.array(out.data[0], dtype=np.float32)
    run["seconds"][f"forward {layout}"] = time.perf_counter() - tic
    greedy = request["greedy"]
    if layout == greedy["layout"]:
        say(f"  generating {greedy['tokens']} tokens greedily, with the KV cache ...")
        prompt = request["prompt_ids"][greedy["prompt"]]
        tic = time.perf_counter()
        new = greedy_generate(model, prompt, greedy["tokens"], use_cache=True)
        run["seconds"]["generate"] = time.perf_counter() - tic
        run["greedy_ids"] = [int(i) for i in new]
        run["greedy_text"] = tokenizer.decode(list(prompt) + run["greedy_ids"])
        run["prompt_text"] = tokenizer.decode(list(prompt))
    return logits


def say(line: str) -> None:
    print(line, flush=True)


def raised_in(error: BaseException) -> str:
    """The file of the innermost frame of `error`'s traceback: where it was raised."""
    frame = error.__traceback__
    while frame.tb_next is not None:
        frame = frame.tb_next
    return frame.tb_frame.f_code.co_filename


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except NotImplementedError as error:
        (Path(sys.argv[2]) / "stub.json").write_text(json.dumps({"file": raised_in(error)}), encoding="utf-8")
        raise
