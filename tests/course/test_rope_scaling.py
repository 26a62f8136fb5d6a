"""Kit tests of L7.4 (RoPE scaling), beside `ol verify L7.4` (tests/instructor/test_verify.py),
its calibration suites (tests/end_to_end/test_calibration.py) and chapter checks
(tests/course/test_chapters.py):

- oracle/L7.4/rope_scaling_hf.py regenerates fixtures/L7.4/rope_scaling_hf.npz
  exactly: every array and the provenance, the machine's environment aside;
  the file is small, records the pinned versions, documents its keys, and
  every case records the inputs the course tests call rope_parameters with;
- the config.json literals typed in the course test (Llama 3.1 8B, Qwen2.5 7B
  + YaRN, Phi-3-mini-128k) agree with the ones the oracle gives transformers,
  so a typo in either shows up here and not as a mysterious golden failure;
- grafted variants get the verdicts of fresh interpreters for L7.4, whose
  rules sit in a module-level table of functions (RULES);
- a student's path through `./ol start / tests / check / diff L7.4 --ref-deps`
  in a copy of the checkout.

Needs the oracle extra (torch, transformers); CI installs it, so nothing here skips.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from helpers.fixture_checks import assert_regenerates_exactly, run_oracle
from helpers.kit import ROOT, copy_checkout, explain, run_ol

sys.path.insert(0, str(ROOT / "course" / "tests"))
from golden import load_fixture  # noqa: E402

FIXTURE = ROOT / "fixtures" / "L7.4" / "rope_scaling_hf.npz"
ORACLE = ROOT / "oracle" / "L7.4" / "rope_scaling_hf.py"
COURSE_TEST = ROOT / "course" / "tests" / "L7.4" / "test_rope_scaling.py"
REFERENCE = ROOT / "course" / "reference" / "python" / "tinyllm" / "modern" / "rope_scaling.py"
MODEL_ANSWER = ROOT / "course" / "reference" / "python" / "tests" / "l7-4-rope-scaling"


# ---- the fixture -----------------------------------------------------------------------------


@pytest.mark.slow
def test_oracle_regenerates_the_committed_fixture_exactly(tmp_path):
    run_oracle(ORACLE, tmp_path, ROOT)  # about 5 s
    assert_regenerates_exactly(FIXTURE, tmp_path / FIXTURE.name, "python oracle/L7.4/rope_scaling_hf.py")


def test_fixture_is_small_pinned_and_documented():
    assert FIXTURE.stat().st_size < 500_000, f"{FIXTURE} is {FIXTURE.stat().st_size} bytes"
    fx = load_fixture(FIXTURE)
    versions = fx.provenance["versions"]
    assert versions["transformers"] == "5.19.0" and versions["torch"].split("+")[0] == "2.13.0"
    cases, tables = fx.provenance["cases"], fx.provenance["tables"]
    assert len(cases) >= 20
    documented = re.compile(r"^(?:[^/]+/(?:inv_freq|attention_scaling)|tables/[^/]+/(?:positions|cos|sin))$")
    assert [key for key in fx if not documented.match(key)] == [], "keys the oracle's docstring does not describe"
    layer_cases = [f"{model}:{layer_type}" for model, record in fx.provenance["layer_types"].items()
                   for layer_type in ("full_attention", "sliding_attention")]
    assert sorted(key.rsplit("/", 1)[0] for key in fx if key.endswith("/inv_freq")) == sorted([*cases, *layer_cases])
    for case, inputs in cases.items():
        assert set(inputs) >= {"rope_parameters", "head_dim", "max_position_embeddings", "seq_len"}, case
    rope_types = [inputs["rope_parameters"]["rope_type"] for inputs in cases.values()]
    for rope_type in ("default", "linear", "dynamic", "yarn", "longrope", "llama3"):
        assert rope_types.count(rope_type) >= 2, rope_type
    assert {inputs["head_dim"] for inputs in cases.values()} >= {64, 80, 96, 128}
    assert any(inputs["rope_parameters"].get("partial_rotary_factor", 1.0) < 1 for inputs in cases.values())
    for model, case in tables.items():
        assert fx[f"tables/{model}/positions"].max() == 131071
        assert fx[f"tables/{model}/cos"].shape == (len(fx[f"tables/{model}/positions"]), fx[f"{case}/inv_freq"].size)
    docstring = ast.get_docstring(ast.parse(ORACLE.read_text()))
    for pattern in ("C/inv_freq", "C/attention_scaling", "tables/M/positions", "tables/M/cos", "tables/M/sin"):
        assert pattern in docstring, f"the oracle's docstring does not describe {pattern}"


# ---- the real configs are typed twice ----------------------------------------------------------


def literals(path: Path) -> dict[str, object]:
    """Module-level NAME = <literal> assignments of a file (lists, dicts, numbers)."""
    found = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass  # not a plain literal
    return found


def oracle_model_kwargs(name: str) -> dict:
    """The keyword arguments the oracle builds REAL_MODELS[name] from, with the factor lists filled in."""
    tree = ast.parse(ORACLE.read_text())
    lists = literals(ORACLE)
    real = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", None) == "REAL_MODELS")
    for key, value in zip(real.keys, real.values):
        if ast.literal_eval(key) == name:
            call = value.elts[1]  # ("LlamaConfig", dict(...))
            kwargs = {}
            for keyword in call.keywords:
                try:
                    kwargs[keyword.arg] = ast.literal_eval(keyword.value)
                except ValueError:  # rope_scaling naming the factor lists
                    block = {}
                    for k, v in zip(keyword.value.keys, keyword.value.values):
                        block[ast.literal_eval(k)] = lists[v.id] if isinstance(v, ast.Name) else ast.literal_eval(v)
                    kwargs[keyword.arg] = block
            return kwargs
    raise KeyError(name)


@pytest.mark.parametrize("literal, model", [("LLAMA_3_1_8B", "llama3.1-8b"), ("QWEN_2_5_7B_YARN", "qwen2.5-7b-yarn"),
                                            ("PHI_3_MINI_128K", "phi3-mini-128k")])
def test_course_test_configs_agree_with_the_oracles(literal, model):
    config = literals(COURSE_TEST)[literal]
    kwargs = oracle_model_kwargs(model)
    for key, value in kwargs.items():
        assert config[key] == value, f"{literal}[{key!r}] differs from the oracle's {model}"


# ---- the student's path -------------------------------------------------------------------------


@pytest.mark.slow
def test_student_path_with_ref_deps(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def ol(*args):
        return run_ol(checkout, *args, cwd=elsewhere, timeout=600)

    student = checkout / "python/tinyllm/modern/rope_scaling.py"
    folder = checkout / "python/tests/l7-4-rope-scaling"
    r = ol("start", "L7.4", "--ref-deps")
    assert r.returncode == 0, explain(r)
    assert 'raise NotImplementedError("L7.4: implement rope_parameters in python/tinyllm/modern/rope_scaling.py' \
        in student.read_text()
    for printed in ("course/chapters/L7.4-rope-scaling.md", "course/tests/L7.4", "python/tests/l7-4-rope-scaling", "R5"):
        assert printed in r.stdout, explain(r)
    assert not (checkout / "python/tinyllm/modern/rope.py").exists(), "--ref-deps takes L7.3 from the reference"

    r = ol("tests", "L7.4", "--ref-deps")
    assert r.returncode == 1 and "NotImplementedError" in r.stdout, explain(r)
    r = ol("diff", "L7.4", "--ref-deps")
    assert r.returncode != 0 and "refused" in r.stderr, explain(r)

    shutil.copy2(REFERENCE, student)
    r = ol("tests", "L7.4", "--ref-deps")
    collected = re.search(r"collected (\d+) items", r.stdout)
    assert r.returncode == 0 and collected and f"all {collected[1]} passed" in r.stdout, explain(r)
    r = ol("tests", "L7.4", "--ref-deps", "--mine")
    assert r.returncode == 0 and "1 passed" in r.stdout, f"the starter test passes on correct code\n{explain(r)}"

    for test in folder.glob("*.py"):
        test.unlink()
    for test in MODEL_ANSWER.glob("*.py"):
        shutil.copy2(test, folder / test.name)
    r = ol("check", "L7.4", "--ref-deps", "--json")
    assert r.returncode == 0, explain(r)
    data = json.loads(r.stdout)
    assert data["passed"] is True and data["score"] == 1.0 and data["killed"] == data["counted"], explain(r)
    assert data["threshold"] == 0.8 and len(data["pitfalls"]) == 8 and data["survivors"] == []

    r = ol("diff", "L7.4", "--ref-deps")
    assert r.returncode == 0 and "identical to the reference" in r.stdout, explain(r)
    r = ol("list")
    assert re.search(r"^L7\.4\s+R5\s+checked", r.stdout, re.M), explain(r)
