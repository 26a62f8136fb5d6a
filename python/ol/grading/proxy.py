"""The tests' side of a blind run: a module that is only a proxy.

In a graded run the tests import the module under test as usual
(`from tinyllm.modern.rope import apply_rope, RopeSpec`), but what they get
is built from the module's contract (the .pyi), not from any implementation:

    functions   forward each call over the channel (ol.grading.serve) and
                return what came back: arrays, numbers, a local Tensor
    classes     RopeSpec(...) is built on the other side; the local object is
                a handle whose attributes, methods, ==, hash and repr are
                asked of the other side; dataclasses.fields/replace work
    exceptions  raised here with their type (ValueError stays ValueError; a
                class unknown here becomes a subclass of its nearest known base)
    other names a public module attribute (a constant) is asked for on use

A Tensor that comes back is a local Tensor whose backward sends the incoming
gradient over and receives the gradient of each Tensor argument: autograd
crosses the boundary as vector-Jacobian products.  Writes the code under test
made into an argument array (or a Tensor's data) are mirrored into the
caller's own objects.

The channel is connected per run (connect); the module object is built once
and holds no trace of which implementation answers.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import inspect
import signal
import socket
import sys
import weakref
from types import ModuleType

import numpy as np

from ol.grading.protocol import OverTime
from ol.grading.wire import Decoder, Encoder, PeerGone, WireError, is_plain, recv_call, send_message

_channel: socket.socket | None = None
_proxy_module: ModuleType | None = None
called_unconnected = False   # the suite called the code under test while no run was connected
# Arrays the tests passed that the code under test kept hold of: (weak
# reference to the caller's array or Tensor, its number over there, its data
# as last sent).  Before each request, changes the caller made are sent along,
# so the kept copy over there behaves as the caller's own array would.
_kept: list[tuple[weakref.ref, int, np.ndarray]] = []
_test_began = False   # the next request is the first of a test: it starts that test's share over there


class ImplementationGone(RuntimeError):
    """The process of the code under test ended while a test was using it."""


def connect(sock: socket.socket | None) -> None:
    """From now on, every proxy talks to the implementation at the other end of sock."""
    global _channel
    _channel = sock
    _kept.clear()


def begin_test() -> None:
    """A test begins: its first request tells the other side, which counts
    the processor time of that test's calls from there (ol.grading.serve)."""
    global _test_began
    _test_began = True


# ---- requests ------------------------------------------------------------------------


# The signal that ends a test at its share of the run's time (ol.grading.pytest_driver.run_items):
# held while a request is in flight, so that a stopped test never leaves an answer unread.
_HELD_DURING_A_REQUEST = {signal.SIGPROF}
OVER_TIME = f"{OverTime.__module__}.{OverTime.__qualname__}"   # as ol.grading.serve describes it


def request(header: dict, encoder: Encoder | None = None):
    """Send one request and return its decoded value, raising what the code
    under test raised.  One request, one answer, whatever interrupts the
    test: SIGPROF waits until the answer is read (else the next test would
    read this one's)."""
    global called_unconnected
    if _channel is None:
        called_unconnected = True
        raise ImplementationGone(
            "the code under test can be called only inside a test function, not while your test files are "
            "being imported (module level, decorators, parametrize lists): move the call into the test")
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_DURING_A_REQUEST)
    try:
        return _answer(header, encoder)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _answer(header: dict, encoder: Encoder | None):
    global _test_began
    encoder = encoder or _ArgumentEncoder()
    syncs = _changes_to_kept(encoder)
    if syncs:
        header = dict(header, sync=syncs)
    if _test_began:
        header, _test_began = dict(header, test=True), False
    try:
        send_message(_channel, header, encoder.buffers)
        reply, buffers = recv_call(_channel)
    except (PeerGone, OSError) as error:
        raise ImplementationGone(f"the code under test stopped answering: its process ended ({error})") from None
    decoder = _ResultDecoder(buffers, getattr(encoder, "tensors", []))
    if "error" in reply:
        if (reply["error"].get("classes") or [None])[0] == OVER_TIME:   # the calls of this test used its share there
            raise OverTime(str(reply["error"].get("message", "")))
        raise rebuild_exception(reply["error"])
    value = decoder.decode_top(reply.get("value"))
    for number, data in reply.get("mirror", []):
        _mirror(getattr(encoder, "inputs", []), number, decoder.decode_top(data))
    inputs = getattr(encoder, "inputs", [])
    for number, kept in reply.get("kept", []):
        if isinstance(number, int) and 0 <= number < len(inputs):
            _kept.append((weakref.ref(inputs[number]), kept, np.array(_data_of(inputs[number]), copy=True)))
    return value


def _data_of(value) -> np.ndarray:
    tensor_class = _tensor_class()
    return np.asarray(value.data) if tensor_class is not None and isinstance(value, tensor_class) else value


def _changes_to_kept(encoder: Encoder) -> list:
    """[[kept number, data], ...] for the kept arrays the caller changed since."""
    syncs = []
    for index, (ref, number, sent) in enumerate(_kept):
        value = ref()
        if value is None:
            continue
        now = _data_of(value)
        if now.shape != sent.shape or not np.array_equal(now, sent, equal_nan=now.dtype.kind in "fc"):
            syncs.append([number, {"array": encoder.array(np.array(now))}])
            _kept[index] = (ref, number, np.array(now, copy=True))
    return syncs


def call(ref: dict, args: tuple, kwargs: dict):
    encoder = _ArgumentEncoder()
    header = {"op": "call", "fn": ref, "args": encoder.encode(tuple(args)), "kwargs": encoder.encode(dict(kwargs))}
    return request(header, encoder)


def _mirror(inputs: list, number: int, new: np.ndarray) -> None:
    """Copy what the code under test wrote into input `number` into the
    caller's own array (or Tensor's data)."""
    if not (isinstance(number, int) and 0 <= number < len(inputs)):
        return
    target = inputs[number]
    tensor_class = _tensor_class()
    if tensor_class is not None and isinstance(target, tensor_class):
        if target.data.shape == new.shape and target.data.dtype == new.dtype and target.data.flags.writeable:
            target.data[...] = new
        else:
            target.data = new
    elif isinstance(target, np.ndarray) and target.flags.writeable and target.shape == new.shape:
        target[...] = new


class _ArgumentEncoder(Encoder):
    """Arguments going to the code under test: local Tensors as data (and
    noted, for their gradients), remote objects as their handles."""

    def __init__(self):
        super().__init__(self._extra)
        self.inputs: list = []    # arrays and Tensors, in encoding order
        self.tensors: list = []   # Tensors, in encoding order

    def input_array(self, array):
        self.inputs.append(array)
        return self.array(array)

    def _extra(self, value, encoder):
        if is_plain(value):   # no Tensor, handle or dataclass (an array is still noted: input_array)
            return NotImplemented
        tensor_class = _tensor_class()
        if tensor_class is not None and isinstance(value, tensor_class):
            self.inputs.append(value)
            self.tensors.append(value)
            return {"tensor": {"data": self.array(np.asarray(value.data)), "requires_grad": bool(value.requires_grad)}}
        handle = _handle_of(value)
        if handle is not None:
            return {"remote": {"handle": handle}}
        if dataclasses.is_dataclass(value) and not isinstance(value, type) \
                and type(value).__module__.startswith("tinyllm."):
            # a value of another tinyllm module (L7.3's RopeSpec given to L7.5): by its fields
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
            return {"value": {"class": f"{type(value).__module__}.{type(value).__qualname__}",
                              "fields": encoder.encode(fields)}}
        return NotImplemented


class _ResultDecoder(Decoder):
    """Values coming back: Tensors become local Tensors wired for backward,
    handles become proxies, dataclass values become local dataclasses."""

    def __init__(self, buffers, arguments: list):
        super().__init__(buffers, self._extra)
        self.arguments = arguments   # the call's Tensor arguments: the parents of its Tensor results

    def _extra(self, tag, body, decoder):
        if tag == "tensor":
            return self._tensor(body)
        if tag == "remote":
            return _remote(body)
        if tag == "value":
            return self._dataclass_value(body)
        return NotImplemented

    def _tensor(self, body):
        tensor_class = _tensor_class()
        data = self.array(body["data"])
        requires_grad = bool(body.get("requires_grad"))
        parents = tuple(t for t in self.arguments if t.requires_grad)
        if not requires_grad or "call" not in body:
            return tensor_class(data, requires_grad=requires_grad)
        if not parents:  # a leaf the other side created with requires_grad: nothing flows back
            return tensor_class(data, requires_grad=True)
        arguments, call, index = self.arguments, body["call"], body["index"]

        def backward(grad):
            encoder = Encoder()
            grads = request({"op": "vjp", "call": call, "index": index, "grad": encoder.encode(np.asarray(grad))}, encoder)
            by_argument = {id(t): g for t, g in zip(arguments, grads)}
            return tuple(by_argument.get(id(p)) for p in parents)

        return tensor_class.from_op(data, parents, backward, op="rope-remote")

    def _dataclass_value(self, body):
        module_name, _, qualname = str(body.get("class")).rpartition(".")
        module = sys.modules.get(module_name)
        cls = getattr(module, qualname, None) if module is not None else None
        if not (module_name.startswith("tinyllm.") and dataclasses.is_dataclass(cls)):
            raise WireError(f"the code under test returned a {body.get('class')}, which the tests cannot rebuild")
        return cls(**self.decode(body["fields"]))


def _tensor_class():
    module = sys.modules.get("tinyllm.autograd.tensor")
    return getattr(module, "Tensor", None)


# ---- remote objects --------------------------------------------------------------------

_by_handle: dict[int, object] = {}


def _handle_of(value):
    if isinstance(type(value), _RemoteClass):
        return object.__getattribute__(value, "_ol_handle")
    if isinstance(value, _RemoteCallable):
        return value._ol_handle
    return None


def _remote(body: dict):
    handle, kind, name = body.get("handle"), body.get("kind"), body.get("class")
    if handle in _by_handle:
        return _by_handle[handle]
    if kind == "object":
        cls = getattr(_proxy_module, name, None) if _proxy_module is not None else None
        if not isinstance(cls, _RemoteClass):
            cls = _RemoteClass(str(name), (), {"__module__": getattr(_proxy_module, "__name__", "remote")})
        value = object.__new__(cls)
        object.__setattr__(value, "_ol_handle", handle)
    else:
        value = _RemoteCallable(handle, str(name))
    _by_handle[handle] = value
    return value


class _RemoteCallable:
    """A function, method or class of the code under test, called over there."""

    __slots__ = ("_ol_handle", "__name__")

    def __init__(self, handle: int, name: str):
        self._ol_handle, self.__name__ = handle, name

    def __call__(self, *args, **kwargs):
        return call({"handle": self._ol_handle}, args, kwargs)

    def __repr__(self):
        return f"<{self.__name__} of the code under test>"


class _RemoteClass(type):
    """Metaclass of the proxy classes: class attributes (a dataclass field's
    default, say) are asked of the real class."""

    def __getattr__(cls, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return request({"op": "getattr", "of": {"attr": cls.__name__}, "name": name})


class _RemoteInstance:
    """Base of the proxy classes: an object that lives on the other side."""

    __slots__ = ("_ol_handle",)

    def __new__(cls, *args, **kwargs):
        return call({"attr": cls.__name__}, args, kwargs)

    def __init__(self, *args, **kwargs):
        pass  # built over there by __new__

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return request({"op": "getattr", "of": self._ref(), "name": name})

    def __setattr__(self, name, value):
        encoder = _ArgumentEncoder()
        request({"op": "setattr", "of": self._ref(), "name": name, "value": encoder.encode(value)}, encoder)

    def __delattr__(self, name):
        request({"op": "delattr", "of": self._ref(), "name": name})

    def __repr__(self):
        return request({"op": "repr", "of": self._ref()})

    def __str__(self):
        return request({"op": "str", "of": self._ref()})

    def __eq__(self, other):
        encoder = _ArgumentEncoder()
        try:
            encoded = encoder.encode(other)
        except WireError:
            return NotImplemented
        return request({"op": "eq", "of": self._ref(), "other": encoded}, encoder)

    def __hash__(self):
        return request({"op": "hash", "of": self._ref()})

    def _ref(self) -> dict:
        return {"handle": object.__getattribute__(self, "_ol_handle")}


def _method(name: str, contract_function):
    def forward(self, *args, **kwargs):
        return call({"method": [object.__getattribute__(self, "_ol_handle"), name]}, args, kwargs)

    return functools.wraps(contract_function)(forward)


def _proxy_class(contract_class: type, module_name: str) -> type:
    namespace = {"__module__": module_name, "__qualname__": contract_class.__qualname__,
                 "__doc__": contract_class.__doc__, "__slots__": ()}
    for name, member in vars(contract_class).items():
        if name.startswith("_"):
            continue
        if inspect.isfunction(member):
            namespace[name] = _method(name, member)
        elif isinstance(member, property):
            namespace[name] = property(lambda self, _n=name: _RemoteInstance.__getattr__(self, _n))
    for name in ("__dataclass_fields__", "__dataclass_params__", "__match_args__"):
        if name in vars(contract_class):
            namespace[name] = vars(contract_class)[name]
    cls = _RemoteClass(contract_class.__name__, (_RemoteInstance,), namespace)
    try:
        cls.__signature__ = inspect.signature(contract_class)
    except (TypeError, ValueError):
        pass
    return cls


def _function(name: str, contract_function):
    def forward(*args, **kwargs):
        return call({"attr": name}, args, kwargs)

    return functools.wraps(contract_function)(forward)


def build_proxy_module(name: str, contract_source: str, contract_origin: str) -> ModuleType:
    """The module `name` as the tests see it: the public names of its contract
    (the .pyi text), each forwarding to the connected implementation."""
    global _proxy_module
    contract = ModuleType(f"_ol_contract.{name}")
    sys.modules[contract.__name__] = contract   # dataclasses look their module up while building a class
    try:
        exec(compile(contract_source, contract_origin, "exec", dont_inherit=True), contract.__dict__)
    finally:
        del sys.modules[contract.__name__]
    module = ModuleType(name, contract.__doc__)
    module.__package__ = name.rpartition(".")[0]
    for attr, value in vars(contract).items():
        if attr.startswith("_") or getattr(value, "__module__", None) != contract.__name__:
            continue  # imports of the contract (np, Tensor) are not the module's names
        if isinstance(value, type) and issubclass(value, BaseException):
            value.__module__ = name
            setattr(module, attr, value)   # raised here, by rebuild_exception
        elif isinstance(value, type):
            setattr(module, attr, _proxy_class(value, name))
        elif inspect.isfunction(value):
            setattr(module, attr, _function(attr, value))

    def __getattr__(attr):
        if attr.startswith("_"):
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        return request({"op": "getattr", "of": {"module": None}, "name": attr})

    module.__getattr__ = __getattr__
    _proxy_module = module
    return module


# ---- exceptions ------------------------------------------------------------------------

_made: dict[tuple[str, type], type] = {}


def rebuild_exception(described: dict) -> BaseException:
    """The exception the code under test raised, as a local exception of the
    same class (or, for a class unknown here, of a look-alike subclass of its
    nearest known base).  Its traceback text, when sent, is added as a note."""
    names = [str(n) for n in described.get("classes", [])] or ["builtins.Exception"]
    base = next(filter(None, map(_known_exception, names)), Exception)
    if not issubclass(base, Exception):
        base = Exception  # SystemExit or KeyboardInterrupt over there is a plain failure here
    cls = _known_exception(names[0])
    if cls is None or not issubclass(cls, Exception):
        module, _, qualname = names[0].rpartition(".")
        key = (names[0], base)
        if key not in _made:
            _made[key] = type(qualname.rpartition(".")[2] or "RemoteError", (base,), {"__module__": module})
        cls = _made[key]
    try:
        args = Decoder([]).decode_top(described.get("args", {"tuple": []}))
        error = cls(*args) if isinstance(args, tuple) else cls(str(described.get("message", "")))
    except Exception:
        error = cls(str(described.get("message", "")))
    if described.get("traceback"):
        error.add_note("Raised in the code under test (another process):\n" + str(described["traceback"]).rstrip())
    return error


def _known_exception(qualified: str) -> type | None:
    module_name, _, qualname = qualified.rpartition(".")
    if module_name == "builtins":
        found = getattr(builtins, qualname, None)
    elif _proxy_module is not None and module_name == _proxy_module.__name__:
        found = vars(_proxy_module).get(qualname)
    elif module_name in ("dataclasses", "numpy.exceptions", "numpy.linalg") or module_name.startswith("tinyllm."):
        module = sys.modules.get(module_name)
        found = getattr(module, qualname, None) if module is not None else None
    else:
        found = None
    return found if isinstance(found, type) and issubclass(found, BaseException) else None
