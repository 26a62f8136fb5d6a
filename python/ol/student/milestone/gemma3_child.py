"""The run of MS-L7G, in a child Python that sees tinyllm through the overlay.

    python -m ol.student.milestone.gemma3_child REQUEST.json OUT_DIR      (with $OL_OVERLAY set)

REQUEST.json: {"checkpoint": path of the GGUF (None: assembled from the chunk
packages into the course's cache), "input_ids": [...], "chunks":
[[start, stop], ...], "positions": [...], "ids": [[...], ...] (per kept
position, the vocabulary ids to keep), "greedy": {"tokens": n, "ids": [[...],
...] (per step, the ids to keep)}}.  It builds the student's Gemma3 from the
checkpoint, runs the prompt chunk by chunk through the cache (each call after
the cache the one before handed on, so a prompt longer than the window passes
through the local layers' trimmed caches), keeps the logits of the requested
ids at the kept positions, then generates greedily with the cache, keeping
each step's logits of the requested ids.  It writes OUT_DIR/logits.npz
("prompt": f32[P, K], "greedy": f32[T, K']) and OUT_DIR/run.json (the
generated ids and text, timings, peak memory).  ol.student.milestone.gemma3_run
judges them; this file judges nothing.  An exception in the student's code
ends the run with its traceback and exit 1; a NotImplementedError (a stub's)
also writes OUT_DIR/stub.json, as ol.student.milestone.child does.
"""

from __future__ import annotations

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

    from tinyllm.autograd.tensor import Tensor
    from tinyllm.checkpoints.gemma3_gguf import Gemma3Checkpoint, gemma3_270m_path
    from tinyllm.modern.gemma3 import Gemma3

    def detached(past):
        """The cache as plain Tensors: the graph of the calls before is let go."""
        return [(Tensor(k.data), Tensor(v.data)) for k, v in past]

    run = {"seconds": {}}
    tic = time.perf_counter()
    say("  building Gemma 3 270M from the checkpoint ...")
    checkpoint = Gemma3Checkpoint(request.get("checkpoint") or gemma3_270m_path())  # assembled once, in the cache
    model = Gemma3(checkpoint.config, checkpoint.weights())
    run["seconds"]["load"] = time.perf_counter() - tic

    ids, positions, keep = request["input_ids"], request["positions"], request["ids"]
    prompt = np.zeros((len(positions), len(keep[0])), dtype=np.float32)
    past, tic = None, time.perf_counter()
    for start, stop in request["chunks"]:
        say(f"  the prompt's tokens {start} to {stop - 1}" + ("" if past is None else ", after the cache"))
        logits, past = model.forward(np.asarray([ids[start:stop]]), np.arange(start, stop), past)
        for row, position in enumerate(positions):
            if start <= position < stop:
                prompt[row] = logits.data[0, position - start, keep[row]]
        last, past = np.array(logits.data[0, -1]), detached(past)
        del logits
    run["seconds"]["prompt"] = time.perf_counter() - tic

    greedy = request["greedy"]
    say(f"  generating {greedy['tokens']} tokens greedily, with the cache ...")
    steps = np.zeros((greedy["tokens"], len(greedy["ids"][0])), dtype=np.float32)
    new, tic = [], time.perf_counter()
    for step in range(greedy["tokens"]):
        steps[step] = last[greedy["ids"][step]]
        new.append(int(np.argmax(last)))
        logits, past = model.forward(np.asarray([[new[-1]]]), [len(ids) + step], past)
        last, past = np.array(logits.data[0, -1]), detached(past)
    run["seconds"]["generate"] = time.perf_counter() - tic
    run["greedy_ids"] = new
    run["greedy_text"] = checkpoint.decode(new)
    run["peak_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9  # Linux: ru_maxrss in kB
    np.savez(out / "logits.npz", prompt=prompt, greedy=steps)
    (out / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return 0


def say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except NotImplementedError as error:   # a stub's: the command names the module to finish or take back
        from ol.student.milestone.child import raised_in

        (Path(sys.argv[2]) / "stub.json").write_text(json.dumps({"file": raised_in(error)}), encoding="utf-8")
        raise
