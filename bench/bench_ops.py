"""Benchmark: the backends of the RoPE op (L7.3x) side by side.

    python bench/bench_ops.py [--rounds 9] [--shape 1 32 4096 128]

get_op("rope", backend).forward(x, positions, theta=1e6) on x [1, 32, 4096,
128] (64 MiB in float32), positions [S], for every backend of
tinyllm.ops.registry and for x in float32 and bfloat16.  The contenders of
one dtype alternate in one process (each round runs each once, in a rotated
order); the ratio to the reference backend is taken within each round and the
median over the rounds is printed.  A memory copy of x gives the bandwidth
limit.  forward = tables (rope_cos_sin, the same for every backend) + the
backend's rotation + for bfloat16 the casts to and from float32, so the
stages are timed too.

The machine is shared and noisy: absolute times mean little, the ratios
measured side by side do.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "course" / "reference" / "python"))  # the reference tinyllm, not the student's

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

from tinyllm.modern.rope import rope_cos_sin  # noqa: E402
from tinyllm.modern.rope_tables import rope_inv_freq  # noqa: E402
from tinyllm.ops.registry import backends, get_op  # noqa: E402

THETA = 1_000_000.0
DTYPES = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16}


def measure(contenders: dict, rounds: int) -> dict[str, list[float]]:
    """Seconds per call of each contender, rounds x, alternating them."""
    names = list(contenders)
    for name in names:  # warm up: page in the buffers, load every code path
        contenders[name]()
    times = {name: [] for name in names}
    for round_ in range(rounds):
        for name in names[round_ % len(names):] + names[: round_ % len(names)]:
            start = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--shape", type=int, nargs=4, default=[1, 32, 4096, 128], metavar=("B", "H", "S", "D"))
    args = parser.parse_args()
    B, H, S, D = args.shape
    x32 = np.random.default_rng(0).standard_normal((B, H, S, D)).astype(np.float32)
    positions = np.arange(S)
    ops = {name: get_op("rope", backend=name) for name in backends("rope")}
    reference = backends("rope")[0]
    print(f"RoPE op benchmark: x {[B, H, S, D]}, positions [S], theta {THETA:g}; backends {list(ops)}; "
          f"{args.rounds} rounds, alternated; 'vs {reference}' = median over rounds of the time ratio in each round")

    for dtype_name, dtype in DTYPES.items():
        x = x32.astype(dtype)
        dst = np.empty_like(x)
        cos, sin = rope_cos_sin(positions, rope_inv_freq(D, THETA))
        contenders = {f"forward {name}": (lambda op=op: op.forward(x, positions, theta=THETA)) for name, op in ops.items()}
        contenders["  tables (rope_cos_sin)"] = lambda: rope_cos_sin(positions, rope_inv_freq(D, THETA))
        for name, op in ops.items():
            contenders[f"  rotate {name}"] = lambda op=op: op.rotate(x32, cos, sin)
        if dtype_name != "float32":
            contenders["  casts to/from float32"] = lambda: x.astype(np.float32).astype(dtype)
        contenders["memcpy of x"] = lambda: np.copyto(dst, x)

        outputs = {name: op.forward(x, positions, theta=THETA) for name, op in ops.items()}
        same = {name: outputs[name].tobytes() == outputs[reference].tobytes() for name in ops}
        times = measure(contenders, args.rounds)
        base = times[f"forward {reference}"]
        print(f"\n{dtype_name}: x is {x.nbytes / 2**20:.0f} MiB")
        print(f"{'contender':28s} {'median ms':>10s} {'vs ' + reference:>10s}  same bits as {reference}")
        for name, t in times.items():
            ratio = statistics.median(b / s for b, s in zip(base, t))  # > 1: faster than the reference forward
            backend = name.split()[-1]
            note = {True: "yes", False: "NO"}.get(same.get(backend)) if name.startswith("forward") else ""
            print(f"{name:28s} {statistics.median(t) * 1e3:10.2f} {ratio:10.2f}  {note}")


if __name__ == "__main__":
    main()
