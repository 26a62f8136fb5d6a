"""For each broken version of a module, the one call that tells it from the right one.

Runs inside the course tests' pytest process (ol.grading.pytest_call_recorder), after
every call the course tests made to the module under test was recorded:

    results = find_witnesses(recorder, base_source, [{"id": ..., "source": ...}, ...])
    results["apply_rope:3f2a1b9c04"]
    # {"function": "apply_rope", "call": "apply_rope(x=Tensor float32[1, 2] [[1. 0.]], ...)",
    #  "expected": "out[0, 1] = 0.84147", "got": "out[0, 1] = -0.84147", "where": "out[0, 1]"}
    # or {"none": "no call of the course tests gives a different result"}

The calls a right implementation answers are tried first, then the ones it
refuses, each kind smallest first (the fewest numbers in their arguments,
then the order the tests made them), so a witness is the smallest call the
course tests make on which the two differ: a call a student can copy into a
test.  Each call runs on fresh copies of its arguments on both versions:

    one raises, the other not     a witness (the raise is part of the contract)
    both raise, other classes     a witness
    results differ                a witness, at the first element past
                                  rtol 1e-5 and atol 1e-6 (smaller differences
                                  no test of a float32 module should hold to)
    a Tensor that needs a gradient   the gradients of its input Tensors for one
                                  fixed output gradient, compared the same way

A call that runs past CALL_SECONDS on the broken version and not on the right
one is a witness too (it hangs).  Nothing here knows a module.

Where no recorded call differs, the search goes on among their neighbours:
each recorded call with one number of its arguments changed (an int to one
more or less, 0, 1, 2, 3 or -1; a float to 0, 0.5, 1, 1.5, 2, -1, half or
twice it; in a list, a dict or an object's fields too), the calls in the same
order, at most NEIGHBOURS of them.  A boundary the course tests never probe
(rotary_dim=0, a factor of 1.5) is found there; such a witness names no
course test, since none makes it.
"""

from __future__ import annotations

import dataclasses
import inspect
import signal
import time
import warnings
from itertools import islice

import numpy as np

from ol.grading.call_recording import Call, Raised, Recorder, Side, _tensor_class, load_module

RTOL, ATOL = 1e-5, 1e-6
CALL_SECONDS = 2.0        # one call on one version
VARIANT_SECONDS = 20.0    # every call on one broken version
SHOWN_IN_FULL = 16        # arrays of at most this many numbers are written out
NO_WITNESS = "no call of the course tests, nor one with a number of it changed, gives a different result on it"
NEIGHBOURS = 600          # calls with one number changed, tried where no recorded call tells a version apart


class _TooLong(BaseException):   # not an Exception: no `except Exception` in a mutant swallows it
    pass


def find_witnesses(recorder: Recorder, base_source: str, variants: list[dict],
                   features: list[dict] = (), package: str = "") -> dict[str, dict]:
    """{variant id: a witness (function, call, expected, got, where, feature) or {"none": why}}.
    features: the catalog's (ol.core.catalog.Feature.as_setting), in order; a witness's feature is
    the first whose conditions its call meets ("" for none).  package: the one the module under
    test is in, where the base and each variant are loaded (their relative imports)."""
    base = load_module("ol_witness_base", base_source, package)
    order, expected = _right_outcomes(base, recorder.calls, range(len(recorder.calls)))
    results = {}
    nearby: tuple = ()   # (calls + neighbours, the neighbours' order, their outcomes): made when first needed
    for number, variant in enumerate(variants):
        try:
            module = load_module(f"ol_witness_variant_{number}", variant["source"], package)
        except KeyboardInterrupt:
            raise
        except BaseException as error:   # SystemExit too: a variant's fault is its own, never the search's
            results[variant["id"]] = {"none": f"it does not import: {type(error).__name__}: {str(error)[:200]}"}
            continue
        calls, outcomes = recorder.calls, expected
        found = _first_witness(calls, base, Side(module, calls), order, outcomes)
        if found.get("none") == NO_WITNESS:   # (not when the search ran out of time: that reason stands)
            nearby = nearby or _with_neighbours(recorder.calls, order, base)
            calls, neighbour_order, outcomes = nearby
            found = _first_witness(calls, base, Side(module, calls), neighbour_order, outcomes)
        if "none" not in found:
            index = found.pop("index")
            found["feature"] = _feature(features, calls, index, base, isinstance(outcomes[index][0], Raised),
                                        found["where"])
        results[variant["id"]] = found
    return results


def _right_outcomes(base, calls: list[Call], indexes) -> tuple[list[int], dict]:
    """(the calls in the order a witness is searched, {index: the right version's outcome and its
    gradients}) for calls[indexes]: the calls a right implementation answers first (a witness that
    says "it should return this" teaches more than one about which error to raise), each kind
    smallest first."""
    right, expected = Side(base, calls), {}
    for index in indexes:
        outcome = _timed(right, calls[index])
        if outcome is not None:
            expected[index] = (outcome[0], _gradients(outcome[0], outcome[1], index))
    order = sorted(expected, key=lambda i: (isinstance(expected[i][0], Raised), _size(calls[i]), i))
    return order, expected


def _with_neighbours(calls: list[Call], order: list[int], base) -> tuple[list[Call], list[int], dict]:
    """(the recorded calls and then at most NEIGHBOURS neighbours, the neighbours' order, their outcomes)."""
    every = calls + list(islice(_neighbours(calls, order), NEIGHBOURS))
    return (every, *_right_outcomes(base, every, range(len(calls), len(every))))


def _neighbours(calls: list[Call], order: list[int]):
    """Each call in `order` with one number changed; only calls written out in full, since a
    neighbour names no course test where a student could find the rest."""
    for index in order:
        call = calls[index]
        if _written_out(call, calls):
            for args, kwargs in _one_number_changed(call.args, call.kwargs):
                yield dataclasses.replace(call, args=args, kwargs=kwargs, test="")


def _written_out(call: Call, calls: list[Call]) -> bool:
    """Whether describe() writes every array of the call out in full (its object's too)."""
    def small(snapshot) -> bool:
        kind, body = snapshot[0], snapshot[1]
        if kind in ("array", "tensor"):
            return body.size <= SHOWN_IN_FULL
        if kind in ("tuple", "list"):
            return all(small(v) for v in body)
        if kind == "dict":
            return all(small(k) and small(v) for k, v in body)
        if kind == "dataclass":
            return all(small(v) for _, v in snapshot[2])
        if kind == "object":
            return _written_out(calls[body], calls)
        return True
    return small(call.args) and small(call.kwargs) and (call.kind != "method" or _written_out(calls[call.owner], calls))


def _one_number_changed(args, kwargs):
    """(args, kwargs) snapshots, each with one number (not a bool) changed to one nearby."""
    for changed in _changed(args):
        yield changed, kwargs
    for changed in _changed(kwargs):
        yield args, changed


def _changed(snapshot):
    kind = snapshot[0]
    if kind == "value":
        for near in _nearby(snapshot[1]):
            yield ("value", near)
    elif kind in ("tuple", "list"):
        items = snapshot[1]
        for i, item in enumerate(items):
            for near in _changed(item):
                yield (kind, [*items[:i], near, *items[i + 1:]])
    elif kind == "dict":
        pairs = snapshot[1]
        for i, (key, item) in enumerate(pairs):
            for near in _changed(item):
                yield (kind, [*pairs[:i], (key, near), *pairs[i + 1:]])
    elif kind == "dataclass":
        fields = snapshot[2]
        for i, (name, item) in enumerate(fields):
            for near in _changed(item):
                yield (kind, snapshot[1], [*fields[:i], (name, near), *fields[i + 1:]])


def _nearby(value) -> list:
    """Numbers near `value`, of its own type; none for a bool, a type of its own (an IntEnum), or
    one that cannot hold them (np.uint8(0) - 1)."""
    kind = type(value)
    if kind not in (int, float) and not issubclass(kind, (np.integer, np.floating)):
        return []
    if isinstance(value, (int, np.integer)):
        number = int(value)
        candidates = [number - 1, number + 1, 0, 1, 2, 3, -1]
    else:
        number = float(value)
        if not np.isfinite(number):
            return []
        candidates = [0.0, 0.5, 1.0, 1.5, 2.0, -1.0, number / 2, number * 2]
    near = []
    for candidate in dict.fromkeys(c for c in candidates if c != number):
        try:
            with np.errstate(all="raise"):
                typed = kind(candidate)
        except (OverflowError, ValueError, FloatingPointError):
            continue
        if typed == candidate and (not isinstance(typed, (float, np.floating)) or np.isfinite(typed)):
            near.append(typed)
    return near


def _first_witness(calls: list[Call], base, broken: Side, order: list[int], expected: dict) -> dict:
    spent = 0.0
    for index in order:
        if index not in expected or spent > VARIANT_SECONDS:
            continue
        call = calls[index]
        right, right_gradients = expected[index]
        tic = time.monotonic()
        outcome = _timed(broken, call)
        spent += time.monotonic() - tic
        if outcome is None:
            found = ("", _outcome(right), f"gives no result within {CALL_SECONDS:g} s")
        else:
            got, got_inputs = outcome
            found = _differs(right, got) or _gradients_differ(right_gradients, got, got_inputs, index)
        if found:
            where, want, have = found
            return {"function": _function(call), "call": describe(calls, call, base),
                    "expected": want, "got": have, "where": where, "test": call.test, "index": index}
    return {"none": NO_WITNESS if spent <= VARIANT_SECONDS else
            f"none found within {VARIANT_SECONDS:g} s of calls"}


def _timed(side: Side, call: Call):
    """(outcome, input Tensors) of one call, or None when it ran past CALL_SECONDS."""
    def stop(signum, frame):
        raise _TooLong

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
    try:
        outcome = side.run(call)
    except _TooLong:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if isinstance(outcome[0], Raised) and isinstance(outcome[0].error, _TooLong):
        return None
    return outcome


def _size(call: Call) -> int:
    """How many numbers a call's arguments hold (an object's constructor arguments included)."""
    def count(snapshot) -> int:
        kind, body = snapshot[0], snapshot[1]
        if kind in ("array", "tensor"):
            return int(body.size)
        if kind in ("tuple", "list"):
            return sum(count(v) for v in body)
        if kind == "dict":
            return sum(count(k) + count(v) for k, v in body)
        if kind == "dataclass":
            return sum(count(v) for _, v in snapshot[2])
        return 1
    return count(call.args) + count(call.kwargs)


# ---- which feature of the chapter a call exercises ---------------------------------------


class _Arguments(dict):
    """A call's arguments by name for a feature's `when`; a name it lacks is None."""

    def __missing__(self, key):
        return None


def find(value, key: str):
    """`key`'s value anywhere in nested dicts, lists and objects' fields (None when nowhere)."""
    if isinstance(value, dict):
        if key in value:
            return value[key]
        values = list(value.values())
    elif isinstance(value, (list, tuple)):
        values = list(value)
    elif _fields(value) is not None:
        fields = _fields(value)
        if key in fields:
            return fields[key]
        values = list(fields.values())
    else:
        return None
    for inner in values:
        found = find(inner, key)
        if found is not None:
            return found
    return None


def _feature(features: list[dict], calls: list[Call], index: int, base, raises: bool, where: str) -> str:
    call = calls[index]
    for feature in features:
        if feature.get("calls") and _function(call) not in feature["calls"]:
            continue
        if feature.get("raises") is not None and feature["raises"] != raises:
            continue
        if feature.get("gradient") is not None and feature["gradient"] != where.startswith("the gradient"):
            continue
        if feature.get("when") and not _holds(feature["when"], calls, call, base):
            continue
        return feature["id"]
    return ""


def _holds(when: str, calls: list[Call], call: Call, base) -> bool:
    """The catalog's (trusted) expression over the call's arguments, made afresh on the right version."""
    side = Side(base, calls)
    try:
        target = getattr(side.make(call.owner, []), call.method) if call.kind == "method" \
            else getattr(base, call.name)
        bound = inspect.signature(target).bind(*side.materialize(("tuple", call.args[1]), []),
                                               **side.materialize(call.kwargs, []))
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        if call.kind == "method":
            arguments["self"] = target.__self__
        names = _Arguments({**arguments, "find": find, "np": np, "arguments": arguments})
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return bool(eval(when, {"__builtins__": {"len": len, "isinstance": isinstance, "str": str}}, names))
    except Exception:
        return False


# ---- what differs -----------------------------------------------------------------------


def _differs(right, got, where: str = "out"):
    """None, or (where, what the right version gives there, what the broken one gives)."""
    if isinstance(right, Raised) or isinstance(got, Raised):
        if isinstance(right, Raised) and isinstance(got, Raised):
            if type(right.error).__name__ == type(got.error).__name__:
                return None
        return (where if not isinstance(right, Raised) and not isinstance(got, Raised) else "",
                _outcome(right), _outcome(got))
    tensor = _tensor_class()
    if tensor is not None and isinstance(right, tensor) and isinstance(got, tensor):
        if bool(right.requires_grad) != bool(got.requires_grad):
            return (f"{where}.requires_grad", str(bool(right.requires_grad)), str(bool(got.requires_grad)))
        return _differs(np.asarray(right.data), np.asarray(got.data), where)
    if isinstance(right, (np.ndarray, np.generic)) or isinstance(got, (np.ndarray, np.generic)):
        return _arrays_differ(right, got, where)
    if isinstance(right, float) or isinstance(got, float):
        if isinstance(right, (int, float)) and isinstance(got, (int, float)):
            return _arrays_differ(np.float64(right), np.float64(got), where)
        return (where, _short(right), _short(got))
    if isinstance(right, (tuple, list)) and isinstance(got, (tuple, list)):
        if type(right) is not type(got) or len(right) != len(got):
            return (where, _short(right), _short(got))
        for index, (a, b) in enumerate(zip(right, got)):
            found = _differs(a, b, f"{where}[{index}]")
            if found:
                return found
        return None
    if isinstance(right, dict) and isinstance(got, dict):
        if set(right) != set(got):
            return (f"{where}'s keys", _short(sorted(map(str, right))), _short(sorted(map(str, got))))
        for key in right:
            found = _differs(right[key], got[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    fields_right, fields_got = _fields(right), _fields(got)
    if fields_right is not None and fields_got is not None:
        if type(right).__name__ != type(got).__name__ or list(fields_right) != list(fields_got):
            return (where, f"a {type(right).__name__}", f"a {type(got).__name__}")
        for name in fields_right:
            found = _differs(fields_right[name], fields_got[name], f"{where}.{name}")
            if found:
                return found
        return None
    try:
        equal = bool(right == got)
    except Exception:
        equal = False
    return None if equal else (where, _short(right), _short(got))


def _fields(value) -> dict | None:
    """An object's public state: a dataclass's fields, else its public attributes; None for other values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if hasattr(value, "__dict__") and not isinstance(value, type) and type(value).__module__.startswith("ol_witness"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    return None


def _arrays_differ(right, got, where: str):
    a, b = np.asarray(right), np.asarray(got)
    if a.shape != b.shape or a.dtype != b.dtype:
        return (f"{where}'s dtype and shape", f"{a.dtype}{list(a.shape)}", f"{b.dtype}{list(b.shape)}")
    if a.dtype.kind in "fc":
        with np.errstate(all="ignore"):
            close = np.isclose(b, a, rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        close = a == b
    if np.all(close):
        return None
    at = np.unravel_index(int(np.argmax(~close)), close.shape) if close.ndim else ()
    place = f"{where}[{', '.join(map(str, at))}]" if at else where
    return (place, _number(a[at]), _number(b[at]))


def _output_gradient(result, seed: int) -> np.ndarray:
    data = np.asarray(result.data)
    return np.random.default_rng(seed).standard_normal(data.shape).astype(data.dtype)


def _backward(result, inputs: list, seed: int) -> list | str:
    """The input Tensors' gradients for one fixed random output gradient, or what went wrong."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            result.backward(_output_gradient(result, seed))
        except Exception as error:
            return f"raises {type(error).__name__}"
    return [None if x.grad is None else np.array(x.grad, copy=True) for x in inputs]


def _gradients(result, inputs: list, seed: int) -> list | None:
    """The right version's input gradients (None: its result needs none)."""
    tensor = _tensor_class()
    if tensor is None or not (isinstance(result, tensor) and result.requires_grad):
        return None
    found = _backward(result, inputs, seed)
    return None if isinstance(found, str) else found


def _gradients_differ(right: list | None, got, got_inputs: list, seed: int):
    if right is None:
        return None
    grad = _output_gradient(got, seed)
    found = _backward(got, got_inputs, seed)
    if isinstance(found, str):
        return ("the backward pass", "gives a gradient", found)
    for index, (x, y) in enumerate(zip(right, found)):
        where = f"the gradient of input Tensor {index} (for the output gradient {_array(grad)})"
        if (x is None) != (y is None):
            return (where, "none" if x is None else "a gradient", "none" if y is None else "a gradient")
        if x is not None:
            differs = _arrays_differ(x, y, f"the gradient of input Tensor {index}")
            if differs:
                return (differs[0] + f" (for the output gradient {_array(grad)})", differs[1], differs[2])
    return None


# ---- words --------------------------------------------------------------------------------


def _outcome(value) -> str:
    """`raises ValueError`, or `returns` and the result's shape (its values are beside the point here)."""
    if isinstance(value, Raised):
        return f"raises {type(value.error).__name__}"
    return f"returns {_short(value, values=False)}"


def _number(value) -> str:
    return _nested(np.asarray(value).item())


def _short(value, values: bool = True) -> str:
    tensor = _tensor_class()
    if tensor is not None and isinstance(value, tensor):
        return f"Tensor({_array(np.asarray(value.data), values)})"
    if isinstance(value, np.ndarray):
        return _array(value, values)
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_short(v, values) for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, Raised):
        return _outcome(value)
    if _fields(value) is not None:
        return f"a {type(value).__name__}"
    return repr(value)[:80]


def _array(array: np.ndarray, values: bool = True) -> str:
    """`np.array([[1.0, 0.5]], float32)` when it holds at most SHOWN_IN_FULL numbers, else `<float32[2, 3]>`."""
    if array.size > SHOWN_IN_FULL or not values:
        return f"<{array.dtype}{list(array.shape)}>"
    return f"np.array({_nested(array.tolist())}, {array.dtype})"


def _nested(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_nested(v) for v in value) + "]"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return "np.nan" if value != value else ("np.inf" if value > 0 else "-np.inf")
        text = f"{value:.6g}"
        return text if any(c in text for c in ".e") else text + ".0"
    return repr(value)


def _snapshot(snapshot, calls: list[Call], base) -> str:
    kind, body = snapshot[0], snapshot[1]
    if kind == "array":
        return _array(body)
    if kind == "tensor":
        return f"Tensor({_array(body)}{', requires_grad=True' if snapshot[2] else ''})"
    if kind == "object":
        return describe(calls, calls[body], base)
    if kind in ("tuple", "list"):
        inner = ", ".join(_snapshot(v, calls, base) for v in body)
        return f"({inner}{',' if len(body) == 1 else ''})" if kind == "tuple" else f"[{inner}]"
    if kind == "dict":
        return "{" + ", ".join(f"{_snapshot(k, calls, base)}: {_snapshot(v, calls, base)}" for k, v in body) + "}"
    if kind == "dataclass":
        return f"{body.__name__}(" + ", ".join(f"{n}={_snapshot(v, calls, base)}" for n, v in snapshot[2]) + ")"
    if isinstance(body, type):
        return f"np.{body.__name__}"
    if isinstance(body, np.dtype):
        return f"np.{body.name}"
    return repr(body)


def _function(call: Call) -> str:
    return f"{call.name}.{call.method}" if call.kind == "method" else call.name


def describe(calls: list[Call], call: Call, base) -> str:
    """`apply_rope(x=Tensor float32[1, 2] [[1., 0.]], cos=..., layout='half')`: each argument named by the
    right version's signature, small arrays in full."""
    args = [_snapshot(v, calls, base) for v in call.args[1]]
    kwargs = {_snapshot(k, calls, base).strip("'"): _snapshot(v, calls, base) for k, v in call.kwargs[1]}
    target = getattr(base, call.name, None)
    if call.kind == "method":
        target = getattr(target, call.method, None)
    try:
        names = [p for p in inspect.signature(target).parameters if p != "self"]
    except (TypeError, ValueError):
        names = []
    named = [f"{names[i]}={a}" if i < len(names) else a for i, a in enumerate(args)]
    named += [f"{k}={v}" for k, v in kwargs.items()]
    if call.kind == "method":
        return f"{describe(calls, calls[call.owner], base)}.{call.method}({', '.join(named)})"
    return f"{call.name}({', '.join(named)})"
