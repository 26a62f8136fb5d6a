"""L7.7's chapter, sections 13 and 14: what its hints and pitfall table say about tests.

The calls feed float64 inputs, as section 13 says to, so the chapter's
tolerance (atol 1e-9) is the one at which results differ.  Every call is 4
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


TOLERANCE = {"atol": 1e-9, "rtol": 0.0}   # section 13: float64 inputs, compared at atol 1e-9

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
          "times $\\cos + \\mathrm{i} \\sin$ from the spec's own tables, `cos, sin = spec.cos_sin(positions)`, "
          "widened to float64",
          "with `attention_scaling` 1.3 on outputs of size 40 that grows past $2 \\cdot 10^{-6}$",
          "Feed the implementation **float64** inputs",
          "they agree to better than $10^{-11}$, and `atol` $10^{-9}$ catches any real mistake"),
    check='''
def check(implementation):
    """The model answer's float64 oracle (the spec's own tables) against sliding_attention: every call
    of the course tests' golden cases, each layer type with the spec and window layer_settings gives
    it, the cache of each call handed to the next, inputs widened to float64; and issue 30's layer
    (scaling 1.3, outputs of size 40, far positions) in both layouts.  out, K and V at atol 1e-9; an
    oracle with tables of its own is more than 2e-6 away on the large one."""
    answer = model_answer("L7.7")
    fx = fixture("fixtures/L7.7/sliding_window_hf.npz")
    types = ("sliding_attention", "full_attention")
    specs = {t: RopeSpec(fx[f"{t}/inv_freq"]) for t in types}
    problems = []

    def compare(what, q, k, v, spec, positions, window, past, want_past, scale):
        out, past = implementation.sliding_attention(Tensor(q), Tensor(k), Tensor(v), spec, positions,
                                                     window, past, scale)
        want = answer.oracle(q, k, v, positions, window, want_past, scale, spec=spec)
        for name, got, expected in zip(("out", "K", "V"), (out.data, past[0].data, past[1].data), want):
            error = np.abs(got - expected).max() if got.shape == expected.shape else float("inf")
            if not error <= 1e-9:
                problems.append(f"{what}: {name} is {error:.2e} from the oracle, more than atol 1e-9")
        return out, past, want

    for case in ("prompt", "offset", "mqa", "cache"):
        for layer_type in types:
            spec, window = implementation.layer_settings(layer_type, specs, 4)
            past = want_past = None
            c = 0
            while f"{case}/{c}/positions" in fx:
                q, k, v = (fx[f"{case}/{c}/{layer_type}/{n}"].astype(np.float64) for n in ("q", "k", "v"))
                _, past, want = compare(f"{case} call {c}, {layer_type}", q, k, v, spec, fx[f"{case}/{c}/positions"],
                                        window, past, want_past, 16**-0.5)
                want_past = want[1:]
                c += 1
    rng = np.random.default_rng(0)
    big = [scale * rng.standard_normal(shape)                                  # q, k and v: outputs of size 40
           for scale, shape in ((2, (1, 4, 6, 8)), (2, (1, 2, 6, 8)), (10, (1, 2, 6, 8)))]
    ladder = (1.0 / 10000 ** (np.arange(0, 8, 2) / 8)).astype(np.float32)
    for layout in ("half", "interleaved"):
        spec = RopeSpec(ladder, 1.3, layout)
        out, _, _ = compare(f"issue 30's layer, {layout}", *big, spec, np.arange(50, 56), 3, None, None, None)
        angle = (np.arange(50, 56, dtype=np.float32)[:, None] * ladder).astype(np.float64)

        class OwnTables:   # what the chapter warns against: float64 tables of the same float32 angles
            inv_freq, attention_scaling, rotary_dim = ladder, 1.3, 8

            def cos_sin(self, positions):
                return np.cos(angle) * 1.3, np.sin(angle) * 1.3

        OwnTables.layout = layout
        own = answer.oracle(*big, np.arange(50, 56), 3, None, None, spec=OwnTables())[0]
        if not np.abs(out.data - own).max() > 2e-6:
            problems.append(f"issue 30's layer, {layout}: an oracle with its own tables is only "
                            f"{np.abs(out.data - own).max():.1e} away, not past 2e-6 as the chapter says")
    return problems
''')
