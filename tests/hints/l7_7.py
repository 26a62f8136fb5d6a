"""L7.7's chapter, sections 13 and 14: what its hints and pitfall table say about tests.

The calls feed float64 inputs, as section 13 says to, so the chapter's
tolerance (atol 2e-6) is the one at which results differ.  Every call is 4
query heads of size 4 on 2 key/value heads, one row, with the spec of a
two-pair ladder.
"""

from hints import Hint, Oracle

SPEC = "RopeSpec(np.array([1.0, 0.1], np.float32))"


def heads(seq: int, seed: int) -> str:
    """q [1, 4, seq, 4], k and v [1, 2, seq, 4] as Tensors of float64, each from its own seed."""
    shapes = ((1, 4, seq, 4), (1, 2, seq, 4), (1, 2, seq, 4))
    return ", ".join(f"Tensor(np.random.default_rng({seed + i}).standard_normal({shape}))"
                     for i, shape in enumerate(shapes))


def call(window, positions: str = "np.arange(5)") -> str:
    """sliding_attention on 5 new tokens at `positions`, no cache: (out, (K, V))."""
    return f"sliding_attention({heads(5, 7)}, {SPEC}, {positions}, {window})"


def cached(window: int, first: int, then: int) -> str:
    """The output of a second call of `then` tokens, given the cache of a first call of `first` tokens."""
    return (f"(lambda past: sliding_attention({heads(then, 20)}, {SPEC}, np.arange({first}, {first + then}), {window}, "
            f"past[1])[0])(sliding_attention({heads(first, 7)}, {SPEC}, np.arange({first}), {window}))")


def settings(layer_type: str, same_spec: bool = False) -> str:
    """layer_settings of one layer type, the two types' specs different unless same_spec."""
    full = "np.array([1.0], np.float32)" if same_spec else "np.array([0.5], np.float32)"
    return (f"layer_settings({layer_type!r}, {{'sliding_attention': RopeSpec(np.array([1.0], np.float32)), "
            f"'full_attention': RopeSpec({full})}}, 4)")


TOLERANCE = {"atol": 2e-6, "rtol": 0.0}   # section 13: float64 inputs, compared at atol 2e-6

ADVICE = ()

HINTS = [
    # ---- section 13's hints --------------------------------------------------------------------
    Hint("L7.7", "A window never smaller than what a call sees tests nothing of the window", f"{call(2)}[0]",
         "w01", plain=f"{call(5)}[0]"),
    Hint("L7.7", "positions from 0 with no cache cannot see pitfall w02", f"{call(2, 'np.arange(7, 12)')}[0]",
         "w02", plain=f"{call(2)}[0]"),
    Hint("L7.7", "A cache test that stops before the window is full cannot see w05", cached(3, 5, 2), "w05",
         plain=cached(8, 3, 2)),
    Hint("L7.7", "`layer_settings` must be asked about both layer types with two different specs",
         settings("full_attention"), "w03", plain=settings("sliding_attention")),
    Hint("L7.7", "`layer_settings` must be asked about both layer types with two different specs",
         settings("full_attention"), "w04", plain=settings("full_attention", same_spec=True)),
    # ---- the pitfall table (section 14) says the same of w01, w02 and w05 --------------------
    Hint("L7.7", "nothing changes until the sequence is longer than the window", f"{call(3)}[0]", "w01",
         plain=f"{call(5)}[0]", section=14),
    Hint("L7.7", "right while the cache holds every key from position 0; wrong once it has dropped one, or at an "
                 "offset", f"{call(3, 'np.arange(7, 12)')}[0]", "w02", plain=f"{call(3)}[0]", section=14),
    Hint("L7.7", "prompts are right at any length", cached(3, 5, 2), "w05", plain=f"{call(3)}[0]", section=14),
]

ORACLE = Oracle(
    says=("**Your oracle: sections 3 to 8, written out plainly in numpy float64.**",
          "Feed the implementation **float64** inputs",
          "`atol` $2 \\cdot 10^{-6}$ catches any real mistake"),
    check='''
def check(implementation):
    """The model answer's float64 oracle against sliding_attention on every call of the course tests'
    golden cases, each layer type with the spec and window layer_settings gives it, the cache of
    each call handed to the next, inputs widened to float64: out, K and V at atol 2e-6."""
    oracle = model_answer("L7.7").oracle
    fx = fixture("fixtures/L7.7/sliding_window_hf.npz")
    types = ("sliding_attention", "full_attention")
    specs = {t: RopeSpec(fx[f"{t}/inv_freq"]) for t in types}
    problems = []
    for case in ("prompt", "offset", "mqa", "cache"):
        for layer_type in types:
            spec, window = implementation.layer_settings(layer_type, specs, 4)
            past = want_past = None
            c = 0
            while f"{case}/{c}/positions" in fx:
                q, k, v = (fx[f"{case}/{c}/{layer_type}/{n}"].astype(np.float64) for n in ("q", "k", "v"))
                positions = fx[f"{case}/{c}/positions"]
                out, past = implementation.sliding_attention(Tensor(q), Tensor(k), Tensor(v), spec, positions,
                                                             window, past, 16**-0.5)
                want = oracle(q, k, v, positions, window, want_past, 16**-0.5, inv_freq=fx[f"{layer_type}/inv_freq"])
                for what, got, expected in zip(("out", "K", "V"), (out.data, past[0].data, past[1].data), want):
                    error = np.abs(got - expected).max() if got.shape == expected.shape else float("inf")
                    if not error <= 2e-6:
                        problems.append(f"{case} call {c}, {layer_type}: {what} is {error:.2e} from the oracle")
                want_past = want[1:]
                c += 1
    return problems
''')
