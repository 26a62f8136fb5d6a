"""Kit tests of the modules SmolLM2 is built from: L0.3 (nn ops), L7.5
(attention), L7.9 (the Llama), L8.2 (decoding), beside `ol verify`
(tests/instructor/test_verify.py), the calibration of L7.5 (tests/end_to_end/test_calibration.py)
and the milestone (tests/course/test_smollm2.py):

- their oracles regenerate the committed fixtures exactly, and the fixtures
  are small and record the pinned versions;
- an L7.3 RopeSpec crosses the grader's proxy by its fields, and is rebuilt
  with its own checks on the implementation's side (L7.5's attention takes
  one; before, the proxy refused it);
- L8.2's chapter pitfall, positions restarting at 0, planted in decoding.py,
  fails the course tests and is named by their diagnosis;
- the chapters name their course tests (and L7.5's its pitfalls beside the
  tests that catch them), print worked examples the reference reproduces,
  and L7.3's and L7.4's point to them.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib

import numpy as np
import pytest

from helpers.fixture_checks import assert_regenerates_exactly, run_oracle
from helpers.kit import ROOT
from helpers.reference import reference_modules, served_through_the_proxy
from ol.core.runner import run_course_tests
from ol.grading.wire import Encoder, WireError

sys.path.insert(0, str(ROOT / "course" / "tests"))
from golden import load_fixture  # noqa: E402

tensor, nn, rope, attention, llama = reference_modules(
    "tinyllm.autograd.tensor", "tinyllm.autograd.nn", "tinyllm.modern.rope", "tinyllm.modern.attention",
    "tinyllm.modern.llama")
Tensor = tensor.Tensor
FIXTURES = {"L0.3": "nn_torch", "L7.5": "attention_hf", "L7.9": "llama_hf"}
CHAPTERS = {"L0.3": "L0.3-nn-ops", "L7.5": "L7.5-attention", "L7.9": "L7.9-llama", "L8.2": "L8.2-decoding"}


def chapter(name: str) -> str:
    return (ROOT / "course" / "chapters" / f"{name}.md").read_text(encoding="utf-8")


# ---- fixtures ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("module", FIXTURES)
def test_oracles_regenerate_their_fixtures_exactly(module, tmp_path):
    name = FIXTURES[module]
    run_oracle(ROOT / "oracle" / module / f"{name}.py", tmp_path, ROOT)
    assert_regenerates_exactly(ROOT / "fixtures" / module / f"{name}.npz", tmp_path / f"{name}.npz",
                               f"python oracle/{module}/{name}.py")


# Every key of each fixture, as its oracle's docstring describes them.
DOCUMENTED = {
    "L0.3": r"(linear|softmax0?|silu|rms_norm|embedding)/(x|out|g|dx|dweight|weight|eps|axis|ids)",
    "L7.5": r"(gqa|offset|cache|mqa|mha|yarn)/(x|wq|wk|wv|wo|positions|inv_freq|attention_scaling|out|k|v"
            r"|prefill_x|prefill_positions|prefill_out)",
    "L7.9": r"(tied|untied)/(weights/[\w.]+|input_ids|logits|layer0_in|layer0_out|mlp_in|mlp_out"
            r"|greedy_prompt|greedy)",
}


@pytest.mark.parametrize("module", FIXTURES)
def test_fixtures_are_small_pinned_and_documented(module):
    path = ROOT / "fixtures" / module / f"{FIXTURES[module]}.npz"
    assert path.stat().st_size < 250_000
    fx = load_fixture(path)
    versions = fx.provenance["versions"]
    assert versions["transformers"] == "5.19.0" and versions["torch"].split("+")[0] == "2.13.0"
    assert [key for key in fx if not re.fullmatch(DOCUMENTED[module], key)] == []
    docstring = ast.get_docstring(ast.parse((ROOT / "oracle" / module / f"{FIXTURES[module]}.py").read_text()))
    for part in {key.split("/")[1] for key in fx}:
        assert part in docstring, f"the oracle's docstring does not describe {part}"


# ---- a RopeSpec through the grader's proxy -----------------------------------------------------------


@pytest.fixture
def remote_attention():
    """The proxy module of attention.py, connected to the reference served from a thread."""
    contract = ROOT / "course/contracts/py/tinyllm/modern/attention.pyi"
    with served_through_the_proxy("tinyllm.modern.attention", contract, attention) as module:
        yield module


def test_a_rope_spec_crosses_the_proxy_by_its_fields(remote_attention):
    spec = rope.RopeSpec(np.array([0.9], np.float32), attention_scaling=1.2, layout="interleaved")
    with pytest.raises(WireError):  # the data encoder alone knows no RopeSpec: the proxy's carries it
        Encoder().encode(spec)
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s) for s in ((1, 3, 4), (4, 4), (2, 4), (2, 4), (4, 4))]
    local = [Tensor(a, requires_grad=True) for a in arrays]
    far = [Tensor(a, requires_grad=True) for a in arrays]
    want, (want_k, _) = attention.attention(*local[:5], spec, [3, 4, 5], 2, 1)
    got, (got_k, _) = remote_attention.attention(*far[:5], spec, [3, 4, 5], 2, 1)
    np.testing.assert_array_equal(got.data, want.data)
    np.testing.assert_array_equal(got_k.data, want_k.data)
    g = rng.standard_normal(want.shape)
    want.backward(g)
    got.backward(g)
    for a, b in zip(local, far):
        np.testing.assert_allclose(b.grad, a.grad, rtol=1e-12, atol=0)


def test_a_rope_spec_is_rebuilt_with_its_own_checks(remote_attention):
    # A forged spec whose rotary_dim disagrees with its frequencies (one the tests' RopeSpec
    # would never build): the implementation's RopeSpec refuses it while the call is decoded
    # over there, and the call fails with its message.
    class Forged:
        pass

    spec = rope.RopeSpec(np.array([0.9], np.float32))
    forged = object.__new__(rope.RopeSpec)
    for field, value in (("inv_freq", spec.inv_freq), ("attention_scaling", 1.0), ("layout", "half"),
                         ("rotary_dim", 4)):
        object.__setattr__(forged, field, value)
    x = Tensor(np.ones((1, 2, 4)))
    w = [Tensor(np.ones(s)) for s in ((4, 4), (2, 4), (2, 4), (4, 4))]
    with pytest.raises(Exception, match=r"RopeSpec: rotary_dim=4 does not match inv_freq") as refused:
        remote_attention.attention(x, *w, forged, [0, 1], 2, 1)
    assert type(refused.value).__name__ == "WireError"  # a malformed argument, as the wire reports it
    with pytest.raises(WireError):  # an object of no tinyllm module has no data form
        remote_attention.attention(x, *w, Forged(), [0, 1], 2, 1)


# ---- L8.2's pitfall ----------------------------------------------------------------------------


def test_positions_restarting_at_0_fail_the_decoding_tests_and_are_named():
    with open(ROOT / "course/mutants/L8.2/misconceptions.toml", "rb") as file:
        (edit,) = [m for m in tomllib.load(file)["misconception"] if m["id"] == "m01"][0]["edit"]
    reference = (ROOT / "course/reference/python/tinyllm/modern/decoding.py").read_text()
    assert reference.count(edit["old"]) == 1
    planted = reference.replace(edit["old"], edit["new"])
    run = run_course_tests(ROOT, "L8.2", implementation="reference", capture=True,
                           sources={"tinyllm.modern.decoding": planted})
    assert run.exit_code == 1
    assert "test_step_positions_continue_from_the_cache" in run.failed and "test_greedy_golden" in run.failed
    assert "restarting the positions at 0 in every step" in run.output and "(misconception m01)" in run.output


# ---- chapters ------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", CHAPTERS)
def test_chapters_name_their_course_tests(module):
    text = chapter(CHAPTERS[module])
    folder = ROOT / "course" / "tests" / module
    names = sorted({node.name for path in folder.glob("test_*.py") for node in ast.parse(path.read_text()).body
                    if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")})
    assert names and f"course/tests/{module}/" in text
    missing = [name for name in names if f"`{name}`" not in text]
    assert not missing, f"{CHAPTERS[module]}.md does not name {missing}"


def test_l7_5_chapter_names_each_pitfall_beside_the_tests_that_catch_it():
    text = chapter("L7.5-attention")
    with open(ROOT / "course/mutants/L7.5/pitfalls.toml", "rb") as file:
        pitfalls = tomllib.load(file)["pitfall"]
    assert len(pitfalls) == 6
    for pitfall in pitfalls:
        row = next(line for line in text.splitlines() if line.startswith(f"| {pitfall['id']} |"))
        assert all(f"`{test}`" in row for test in pitfall["caught_by"]), row


def test_worked_examples_are_what_the_reference_computes():
    # L7.5, section 10
    eye = Tensor(np.eye(2, dtype=np.float32))
    out, (k, v) = attention.attention(Tensor(np.array([[[1, 0], [0, 1]]], np.float32)), eye, eye, eye, eye,
                                      rope.RopeSpec(np.array([np.pi / 2], np.float32)), np.arange(2), 1, 1)
    printed = re.search(r"out\s+: \(([\d.]+), ([\d.]+)\), \(([\d.]+), ([\d.]+)\)", chapter("L7.5-attention"))
    np.testing.assert_allclose(out.data[0].ravel(), [float(g) for g in printed.groups()], atol=6e-7)
    np.testing.assert_allclose(k.data[0, 0], [[1, 0], [-1, 0]], atol=1e-6)
    # L0.3, section 9
    text = chapter("L0.3-nn-ops")
    y = tensor.Tensor(np.array([0.0, np.log(3), -np.inf]), requires_grad=True)
    soft = nn.softmax(y)
    soft.backward(np.array([1.0, 0.0, 5.0]))
    np.testing.assert_allclose(soft.data, [0.25, 0.75, 0.0], atol=1e-15)
    np.testing.assert_allclose(y.grad, [0.1875, -0.1875, 0.0], atol=1e-15)
    assert "(0.1875,\\ -0.1875,\\ 0)" in text
    normed = nn.rms_norm(Tensor(np.array([3.0, 4.0])), Tensor(np.array([1.0, 2.0])), 1e-300)
    assert "(0.848528,\\ 2.262742)" in text
    np.testing.assert_allclose(normed.data, [0.848528, 2.262742], atol=6e-7)
    # L7.9, section 9: an empty stack and a tied head of E = (1 0; 0 1; 1 1) score token 2 as (1, 1, 2)
    config = dict(hidden_size=2, num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1, head_dim=2,
                  rms_norm_eps=1e-30, vocab_size=3, tie_word_embeddings=True)
    zeros = {f"model.layers.0.{part}": np.zeros((2, 2)) for part in llama.LAYER_WEIGHTS}
    zeros["model.layers.0.input_layernorm.weight"] = zeros["model.layers.0.post_attention_layernorm.weight"] = np.ones(2)
    weights = {"model.embed_tokens.weight": np.array([[1.0, 0], [0, 1], [1, 1]]), "model.norm.weight": np.ones(2),
               **zeros}
    logits, _ = llama.Llama(config, weights).forward([[2]], [0])
    np.testing.assert_allclose(logits.data[0, 0], [1, 1, 2], atol=1e-12)
    assert "(1,\\ 1,\\ 2)" in chapter("L7.9-llama")


def test_l7_3_and_l7_4_chapters_point_to_the_new_chapters():
    for used_by in ("L7.3-rope", "L7.4-rope-scaling"):
        text = chapter(used_by)
        for name in ("L7.5-attention", "L7.9-llama", "L8.2-decoding", "MS-L7-smollm2"):
            assert f"course/chapters/{name}.md" in text, f"{used_by}.md does not point to {name}.md"
            assert (ROOT / "course" / "chapters" / f"{name}.md").exists()
