"""The calls the course tests make to a module under test, recorded, and
replayed on other versions of it (ol.grading.pytest_call_recorder records them in
the course tests' pytest process; ol.grading.witness_replay and the plugin's own
comparison replay them).

    recorder = Recorder(module, limit)       # wraps the module's public functions and classes
    recorder.install()
    ...                                        # the tests run; recorder.calls fills up
    compare_pair(recorder, {"id", "edit", "chaff", "base"})   # two versions on every call
"""

from __future__ import annotations

import dataclasses
import sys
import types
import warnings
from collections.abc import Callable

import numpy as np

BASE_MODULE = "correct"   # ol.grading.chaffs.BASE_MODULE (this module imports nothing of ol.grading)
RTOL = 1e-6
MAX_MISMATCHES = 5


class Unrecordable(Exception):
    """An argument the recorder cannot copy (a function, a file, ...)."""


# ---- recording ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Call:
    kind: str        # "call" (a function), "init" (a class), "method" (of an object made by "init")
    name: str        # the function's or class's name
    args: tuple      # snapshots
    kwargs: dict
    owner: int = -1  # for "method": the index of the "init" call that made the object
    method: str = ""
    test: str = ""   # the node id of the test that made the call


class Recorder:
    def __init__(self, module: types.ModuleType, limit: int):
        self.module, self.limit = module, limit
        self.calls: list[Call] = []
        self.unrecordable = 0
        self.made: dict[int, int] = {}   # id(object made by a recorded class) -> index of its "init" call
        self.keep: list = []             # those objects, so that their ids stay theirs
        self.test = ""                   # the test running now (pytest_runtest_setup)

    def install(self) -> None:
        name = self.module.__name__
        for attr, value in list(vars(self.module).items()):
            if attr.startswith("_"):
                continue
            if isinstance(value, type) and value.__module__ == name:
                setattr(self.module, attr, self._recording_class(value))
            elif isinstance(value, types.FunctionType) and value.__module__ == name:
                setattr(self.module, attr, self._recording_function(attr, value))

    def _record(self, call: Callable[[], Call]) -> int:
        if len(self.calls) >= self.limit:
            return -1
        try:
            self.calls.append(dataclasses.replace(call(), test=self.test))
        except Unrecordable:
            self.unrecordable += 1
            return -1
        return len(self.calls) - 1

    def _recording_function(self, name: str, function):
        recorder = self

        def recorded(*args, **kwargs):
            recorder._record(lambda: Call("call", name, recorder.snapshot(args), recorder.snapshot(kwargs)))
            return function(*args, **kwargs)

        recorded.__name__, recorded.__qualname__, recorded.__doc__ = function.__name__, function.__qualname__, function.__doc__
        recorded.__module__ = function.__module__
        return recorded

    def _recording_class(self, cls: type) -> type:
        recorder = self
        methods = {}
        for attr in dir(cls):
            value = getattr(cls, attr, None)
            if attr.startswith("_") or not isinstance(value, types.FunctionType):
                continue
            methods[attr] = self._recording_method(attr, value)

        def __init__(self, *args, **kwargs):
            index = recorder._record(lambda: Call("init", cls.__name__, recorder.snapshot(args), recorder.snapshot(kwargs)))
            cls.__init__(self, *args, **kwargs)
            if index >= 0:
                recorder.made[id(self)] = index
                recorder.keep.append(self)

        namespace = {"__init__": __init__, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                     "__doc__": cls.__doc__, **methods}
        return type(cls.__name__, (cls,), namespace)

    def _recording_method(self, name: str, function):
        recorder = self

        def recorded(self, *args, **kwargs):
            owner = recorder.made.get(id(self))
            if owner is not None:
                recorder._record(lambda: Call("method", type(self).__name__, recorder.snapshot(args),
                                              recorder.snapshot(kwargs), owner, name))
            return function(self, *args, **kwargs)

        recorded.__name__, recorded.__qualname__ = function.__name__, function.__qualname__
        return recorded

    def snapshot(self, value):
        """A copy of `value` that later calls cannot change."""
        tensor = _tensor_class()
        if isinstance(value, np.ndarray):
            return ("array", value.copy())
        if tensor is not None and isinstance(value, tensor):
            return ("tensor", np.array(value.data, copy=True), bool(value.requires_grad))
        if id(value) in self.made:
            return ("object", self.made[id(value)])
        if isinstance(value, tuple):
            return ("tuple", [self.snapshot(v) for v in value])
        if isinstance(value, list):
            return ("list", [self.snapshot(v) for v in value])
        if isinstance(value, dict):
            return ("dict", [(self.snapshot(k), self.snapshot(v)) for k, v in value.items()])
        if value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic, np.dtype)):
            return ("value", value)
        if isinstance(value, type) and issubclass(value, np.generic):  # a dtype named by its type: np.float32
            return ("value", value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            # a settings object from another module (L7.5's attention takes L7.3's RopeSpec):
            # made again from its fields at each replay
            return ("dataclass", type(value), [(f.name, self.snapshot(getattr(value, f.name)))
                                               for f in dataclasses.fields(value) if f.init])
        raise Unrecordable(type(value).__name__)


def _tensor_class():
    module = sys.modules.get("tinyllm.autograd.tensor")
    return getattr(module, "Tensor", None)


# ---- replaying on two versions -----------------------------------------------------------------


def load_module(name: str, source: str, package: str = "") -> types.ModuleType:
    """`source` executed as a fresh module called `name` (in sys.modules while it runs), in
    `package` (the module it is a copy of's), so that its relative imports work."""
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    module.__package__ = package
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec", dont_inherit=True), module.__dict__)
    return module


class Raised:
    def __init__(self, error: BaseException):
        self.error = error

    def __str__(self) -> str:
        return f"{type(self.error).__name__}: {str(self.error)[:200]}"


class Side:
    """One version of the module: replays recorded calls on fresh copies of their arguments."""

    def __init__(self, module: types.ModuleType, calls: list[Call]):
        self.module, self.calls = module, calls

    def run(self, call: Call):
        """(the outcome: a value or Raised, the input Tensors that were passed)."""
        tensors: list = []
        try:
            if call.kind == "method":
                target = getattr(self.make(call.owner, tensors), call.method)
            else:
                target = getattr(self.module, call.name)
            args = self.materialize(("tuple", call.args[1]), tensors)
            kwargs = self.materialize(call.kwargs, tensors)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                return target(*args, **kwargs), tensors
        except KeyboardInterrupt:
            raise
        except BaseException as error:   # SystemExit too: what the version does, not the replay's end
            return Raised(error), tensors

    def make(self, index: int, tensors: list):
        init = self.calls[index]
        cls = getattr(self.module, init.name)
        return cls(*self.materialize(("tuple", init.args[1]), tensors), **self.materialize(init.kwargs, tensors))

    def materialize(self, snapshot, tensors: list):
        kind, body = snapshot[0], snapshot[1]
        if kind == "array":
            return body.copy()
        if kind == "tensor":
            tensor = _tensor_class()(body.copy(), requires_grad=snapshot[2])
            tensors.append(tensor)
            return tensor
        if kind == "object":
            return self.make(body, tensors)
        if kind == "tuple":
            return tuple(self.materialize(v, tensors) for v in body)
        if kind == "list":
            return [self.materialize(v, tensors) for v in body]
        if kind == "dict":
            return {self.materialize(k, tensors): self.materialize(v, tensors) for k, v in body}
        if kind == "dataclass":
            return body(**{name: self.materialize(v, tensors) for name, v in snapshot[2]})
        return body


def compare_pair(recorder: Recorder, pair: dict) -> dict:
    """Replay every recorded call on the pair's edit and chaff; count and describe."""
    edit = load_module(f"ol_edit_{pair['id']}", pair["edit"])
    load_module(BASE_MODULE, pair["base"])
    chaff = load_module(f"ol_chaff_{pair['id']}", pair["chaff"])
    sides = Side(edit, recorder.calls), Side(chaff, recorder.calls)
    counts = {"compared": 0, "equal": 0, "both_raised": 0, "one_sided": 0, "mismatches": []}
    for number, call in enumerate(recorder.calls):
        (a, a_inputs), (b, b_inputs) = sides[0].run(call), sides[1].run(call)
        if isinstance(a, Raised) and isinstance(b, Raised):
            counts["both_raised"] += 1
            problem = None if type(a.error).__name__ == type(b.error).__name__ else f"the edit raises {a}, the chaff {b}"
        elif isinstance(a, Raised) or isinstance(b, Raised):
            counts["one_sided"] += 1
            continue
        else:
            counts["compared"] += 1
            problem = difference(a, b) or gradient_difference(a, a_inputs, b, b_inputs, seed=number)
        if problem is None:
            counts["equal"] += 1
        elif len(counts["mismatches"]) < MAX_MISMATCHES:
            counts["mismatches"].append(f"{describe(call)}: {problem}")
    return counts


def difference(a, b, where: str = "the result") -> str | None:
    """None if a (the edit's) and b (the chaff's) agree, else what differs."""
    tensor = _tensor_class()
    if tensor is not None and isinstance(a, tensor) and isinstance(b, tensor):
        if bool(a.requires_grad) != bool(b.requires_grad):
            return f"{where}: requires_grad {a.requires_grad} (edit) vs {b.requires_grad} (chaff)"
        return difference(np.asarray(a.data), np.asarray(b.data), where + " Tensor's data")
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        a_array, b_array = np.asarray(a), np.asarray(b)
        if a_array.shape != b_array.shape or a_array.dtype != b_array.dtype:
            return f"{where}: {a_array.dtype}{list(a_array.shape)} (edit) vs {b_array.dtype}{list(b_array.shape)} (chaff)"
        return _numbers_differ(a_array, b_array, where)
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return f"{where}: {a!r} (edit) vs {b!r} (chaff)"
        return _numbers_differ(np.float64(a), np.float64(b), where)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        if type(a) is not type(b) or len(a) != len(b):
            return f"{where}: {type(a).__name__} of {len(a)} (edit) vs {type(b).__name__} of {len(b)} (chaff)"
        for index, (x, y) in enumerate(zip(a, b)):
            found = difference(x, y, f"{where}[{index}]")
            if found:
                return found
        return None
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b) and not isinstance(a, type):
        if type(a).__name__ != type(b).__name__:
            return f"{where}: a {type(a).__name__} (edit) vs a {type(b).__name__} (chaff)"
        for field in dataclasses.fields(a):
            found = difference(getattr(a, field.name), getattr(b, field.name, None), f"{where}.{field.name}")
            if found:
                return found
        return None
    try:
        equal = bool(a == b)
    except Exception:
        equal = False
    return None if equal else f"{where}: {a!r} (edit) vs {b!r} (chaff)"


def _numbers_differ(a: np.ndarray, b: np.ndarray, where: str) -> str | None:
    if a.dtype.kind not in "fc":
        return None if np.array_equal(a, b) else f"{where}: the values differ"
    with np.errstate(all="ignore"):
        close = np.isclose(a, b, rtol=RTOL, atol=0.0, equal_nan=True) | (a == b)
    if np.all(close):
        return None
    worst = np.unravel_index(np.argmax(~close), close.shape) if close.ndim else ()
    return (f"{where}: {int(np.sum(~close))} of {close.size} values differ by more than {RTOL:g} relative, "
            f"e.g. {a[worst]!r} (edit) vs {b[worst]!r} (chaff)")


def gradient_difference(a, a_inputs: list, b, b_inputs: list, seed: int) -> str | None:
    """For a result Tensor that needs a gradient: the input Tensors' gradients
    for one fixed random output gradient must agree."""
    tensor = _tensor_class()
    if tensor is None or not (isinstance(a, tensor) and a.requires_grad):
        return None
    grad = np.random.default_rng(seed).standard_normal(np.shape(a.data)).astype(np.asarray(a.data).dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            a.backward(grad.copy())
            b.backward(grad.copy())
        except Exception as error:
            return f"backward raised {type(error).__name__}: {error}"
    for index, (x, y) in enumerate(zip(a_inputs, b_inputs)):
        gx, gy = x.grad, y.grad
        if (gx is None) != (gy is None):
            return f"the gradient of input Tensor {index}: {'none' if gx is None else 'some'} (edit) vs " \
                   f"{'none' if gy is None else 'some'} (chaff)"
        if gx is not None:
            found = difference(np.asarray(gx), np.asarray(gy), f"the gradient of input Tensor {index}")
            if found:
                return found
    return None


def describe(call: Call) -> str:
    """`apply_rope(Tensor float32[2, 3, 8], array float32[3, 4], ..., layout='half')` (values abridged)."""
    def short(snapshot) -> str:
        kind, body = snapshot[0], snapshot[1]
        if kind == "array":
            return f"array {body.dtype}{list(body.shape)}"
        if kind == "tensor":
            return f"Tensor {body.dtype}{list(body.shape)}"
        if kind == "object":
            return "an object it made"
        if kind in ("tuple", "list"):
            inner = ", ".join(short(v) for v in body[:4]) + (", ..." if len(body) > 4 else "")
            return f"({inner})" if kind == "tuple" else f"[{inner}]"
        if kind == "dataclass":
            return f"{body.__name__}(...)"
        if kind == "dict":
            return "{" + ", ".join(f"{short(k)}: {short(v)}" for k, v in body[:6]) + (", ..." if len(body) > 6 else "") + "}"
        return repr(body)[:60]

    args = [short(v) for v in call.args[1]] + [f"{short(k)[1:-1]}={short(v)}" for k, v in call.kwargs[1]]
    name = f"{call.name}(...).{call.method}" if call.kind == "method" else call.name
    return f"{name}({', '.join(args)})"
