"""The implementation side of a blind run: one module, served over a socket.

The tests never hold the code under test.  They hold proxies
(ol.grading.proxy) that send each call here as data; this loop runs it on
the real module and sends back what it returned or raised:

    tests' process                          implementation's process
    apply_rope(Tensor(x), cos, sin)  --->   {"op": "call", "fn": {"attr": "apply_rope"}, "args": ...}
                                     <---   {"value": {"tensor": {"data": ..., "call": 7, "index": 0}}}
    y.backward(g)                    --->   {"op": "vjp", "call": 7, "index": 0, "grad": ...}
                                     <---   {"value": [dx, None, None]}

What crosses is data (ol.grading.wire): arrays, numbers, strings and their
containers; a Tensor as its data and requires_grad; an object of a class the
module defines (a RopeSpec) as a handle the tests' proxy calls through; a
dataclass of another tinyllm module (L7.4's RopeSpec from L7.3) by its
fields, both ways (L7.5 is given one).  Nothing of the module's code
(functions, code objects, sources, frames, tracebacks) is ever sent, except
that the course tests, which run against the student's own code, get the
traceback text of an exception raised there (tracebacks=True).

Only public names (no leading underscore) of the module and of its objects
can be reached.  A backward pass replays the recorded call on fresh inputs
and back-propagates the given gradient there, so no graph state is shared
between two backward calls.  Writes into an input array (or a Tensor's data)
are reported with the reply so the proxy can mirror them.

A test's calls share its processor time here as its own code does there:
the first request of each test says so ("test": true), and from then on the
calls of that test may use per_test_seconds(run_seconds) of this process's
processor time (ITIMER_PROF).  Past it the call in progress raises OverTime,
and so does every later call of that test, at once; the next test starts
afresh.  So a test that makes the code under test loop costs that test, not
the run, as a test that loops itself does (ol.grading.pytest_driver.run_items).
"""

from __future__ import annotations

import dataclasses
import signal
import socket
import sys
import traceback
import weakref
from types import ModuleType

import numpy as np

from ol.grading.protocol import OverTime, per_test_seconds
from ol.grading.wire import Decoder, Encoder, PeerGone, WireError, is_plain, recv_call, send_message

MAX_RECORDED_CALLS = 2000   # calls whose Tensors a later backward may replay


class Unreachable(AttributeError):
    """A name the tests may not reach across the boundary."""


def serve(sock: socket.socket, module: ModuleType, *, tracebacks: bool = False, run_seconds: float = 0.0) -> None:
    """Answer the tests' requests on `sock` until they close it.  run_seconds:
    the run's processor-time limit, of which each test's calls get a share
    (0: no share, only the run's own limit)."""
    server = _Server(module, tracebacks, _TestShare(per_test_seconds(run_seconds)) if run_seconds > 0 else None)
    while True:
        try:
            header, buffers = recv_call(sock)
        except PeerGone:
            return
        except WireError as error:
            _reply_error(sock, error, tracebacks=False)
            return
        reply, out = server.handle(header, buffers)
        try:
            send_message(sock, reply, out)
        except (BrokenPipeError, ConnectionResetError):
            return


def _reply_error(sock, error, tracebacks):
    try:
        send_message(sock, {"error": describe_exception(error, tracebacks)})
    except OSError:
        pass


def describe_exception(error: BaseException, with_traceback: bool) -> dict:
    """An exception as data: its class and bases by qualified name, its args
    when they have a data form (else its message), and, if asked, the text
    of its traceback."""
    names = [f"{c.__module__}.{c.__qualname__}" for c in type(error).__mro__ if issubclass(c, BaseException)]
    encoder = Encoder()
    try:
        args = encoder.encode(tuple(error.args))
        if encoder.buffers:
            raise WireError("args with buffers")
    except (WireError, RecursionError):
        args = {"tuple": [str(error)]}
    described = {"classes": names, "args": args, "message": str(error)[:10000]}
    if with_traceback:
        described["traceback"] = "".join(traceback.format_exception(error)[-40:])[-20000:]
    return described


class _TestShare:
    """The processor time one test's calls may use here.  SIGPROF raises
    OverTime only while a request is answered (`calling`: never while
    arrays are synced or a reply is sent), and again every AGAIN seconds if
    the code under test swallows it; once it fired, the test's later calls
    raise it at once."""

    AGAIN = 0.05

    def __init__(self, seconds: float):
        self.seconds, self.calling, self.spent = seconds, False, False
        signal.signal(signal.SIGPROF, self._fired)

    def begin(self) -> None:
        self.spent = False
        signal.setitimer(signal.ITIMER_PROF, self.seconds)

    def _fired(self, signum, frame) -> None:
        self.spent = True
        if self.calling:
            signal.setitimer(signal.ITIMER_PROF, self.AGAIN)
            raise self.over()

    def over(self) -> OverTime:
        return OverTime(f"this test's calls used {self.seconds:g} s of the code under test's processor time, "
                        "the share of one test (look for a call on a very large input, or very many calls); "
                        "the tests after it still run")


class _Server:
    def __init__(self, module: ModuleType, tracebacks: bool, share: _TestShare | None = None):
        self.module, self.tracebacks, self.share = module, tracebacks, share
        self.objects: list = []                # handle -> object
        self.handles: dict[int, int] = {}      # id(object) -> handle
        self.calls: dict[int, tuple] = {}      # call id -> (function, raw header, raw buffers)
        self.next_call = 0
        self.kept: dict[int, np.ndarray] = {}  # arrays the tests passed in that the code under test holds

    def handle(self, header: dict, buffers: list[bytearray]) -> tuple[dict, list]:
        """One request: its reply and the reply's buffers.  Arrays the tests
        passed earlier and the code under test kept are brought up to date
        first ("sync"); arrays passed now that it keeps are named in the
        reply ("kept"), so the tests can send their later changes."""
        decoder = _ArgumentDecoder(self, buffers)
        share = self.share
        try:
            if share is not None and header.get("test"):
                share.begin()
            self._sync(header.get("sync", []), buffers)   # what the tests sent is taken, whatever follows
            if share is not None:
                if share.spent:
                    raise share.over()
                share.calling = True
            try:
                reply, out = self._answer(header, buffers, decoder)
            finally:
                if share is not None:
                    share.calling = False
        except BaseException as error:  # everything the code under test raises goes back to the tests
            if isinstance(error, KeyboardInterrupt):
                raise
            return {"error": describe_exception(error, self.tracebacks and not isinstance(error, (WireError, Unreachable)))}, []
        kept = decoder.still_held()
        if kept:
            reply["kept"] = [[number, self._keep(array)] for number, array in kept]
        return reply, out

    def _answer(self, header: dict, buffers: list[bytearray], decoder) -> tuple[dict, list]:
        op = header.get("op")
        if op == "call":
            function = self.resolve(header.get("fn"))
            args = decoder.decode_top(header.get("args", {"tuple": []}))
            kwargs = decoder.decode_top(header.get("kwargs", {"dict": []}))
            if not isinstance(args, tuple) or not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
                raise WireError("malformed call")
            value = function(*args, **kwargs)
            call = self.next_call
            self.next_call += 1
            reply = self._reply(value, call, decoder)
            if self._differentiable:  # a Tensor that needs grad went back: keep what replays it
                self.calls[call] = (function, header, buffers)   # decoding copied: these are as they arrived
                self.calls.pop(call - MAX_RECORDED_CALLS, None)
            return reply
        if op == "vjp":
            return self._reply(self.vjp(header, buffers), None, decoder)
        target = self.resolve(header.get("of"))
        if op == "getattr":
            name = self.public(header.get("name"))
            try:
                return self._reply(getattr(target, name), None, decoder)
            except WireError:
                raise Unreachable(f"{name!r} cannot be reached from the tests: it is neither data nor a function "
                              "or class of the code under test") from None
        if op == "setattr":
            setattr(target, self.public(header.get("name")), decoder.decode_top(header.get("value")))
            return self._reply(None, None, decoder)
        if op == "delattr":
            delattr(target, self.public(header.get("name")))
            return self._reply(None, None, decoder)
        if op in ("repr", "str"):
            return self._reply((repr if op == "repr" else str)(target), None, decoder)
        if op == "eq":
            return self._reply(bool(target == decoder.decode_top(header.get("other"))), None, decoder)
        if op == "hash":
            return self._reply(hash(target), None, decoder)
        raise WireError(f"unknown request {op!r}")

    def _keep(self, array: np.ndarray) -> int:
        """A number for an input array the code under test kept hold of."""
        for number, held in self.kept.items():
            if held is array:
                return number
        number = len(self.kept)
        self.kept[number] = array
        return number

    def _sync(self, syncs: list, buffers: list[bytearray]) -> None:
        """Write the tests' later changes into arrays the code under test kept."""
        for number, body in syncs:
            target = self.kept.get(number)
            new = Decoder(buffers).decode_top(body)
            if isinstance(target, np.ndarray) and isinstance(new, np.ndarray) and target.shape == new.shape:
                if target.flags.writeable:
                    target[...] = new

    # ---- what the tests may name -------------------------------------------------------

    def resolve(self, ref):
        """{"module": null} is the module; {"attr": name} one of its public
        names; {"handle": n} an object handed out earlier; {"method": [n,
        name]} a public attribute of that object."""
        if not isinstance(ref, dict) or len(ref) != 1:
            raise WireError(f"malformed reference {str(ref)[:80]}")
        (kind, value), = ref.items()
        if kind == "module":
            return self.module
        if kind == "attr":
            return getattr(self.module, self.public(value))
        if kind == "handle" and isinstance(value, int) and 0 <= value < len(self.objects):
            return self.objects[value]
        if kind == "method" and isinstance(value, list) and len(value) == 2:
            return getattr(self.resolve({"handle": value[0]}), self.public(value[1]))
        raise WireError(f"malformed reference {str(ref)[:80]}")

    @staticmethod
    def public(name) -> str:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise Unreachable(f"{name!r} is not a public name of the code under test: tests may reach only "
                          "public (not underscore) names of the module and of its objects")
        return name

    def handle_for(self, value) -> int:
        known = self.handles.get(id(value))
        if known is None:   # the object first, so that an interrupt never leaves a handle to nothing
            self.objects.append(value)
            known = self.handles[id(value)] = len(self.objects) - 1
        return known

    def owned(self, value) -> bool:
        """Defined by the module itself: its functions, classes and their objects."""
        name = self.module.__name__
        if isinstance(value, type):
            return value.__module__ == name
        if callable(value) and getattr(value, "__module__", None) == name and hasattr(value, "__qualname__"):
            return True
        bound = getattr(value, "__self__", None)
        if bound is not None and callable(value) and type(bound).__module__ == name:
            return True
        return type(value).__module__ == name and not isinstance(value, ModuleType)

    # ---- replies -----------------------------------------------------------------------

    def _reply(self, value, call, decoder) -> tuple[dict, list]:
        encoder = Encoder(lambda v, e: self._encode_extra(v, e, call))
        self._tensor_index, self._differentiable = 0, False
        reply = {"value": encoder.encode(value)}
        mirror = decoder.changed_inputs(encoder)
        if mirror:
            reply["mirror"] = mirror
        return reply, encoder.buffers

    def _encode_extra(self, value, encoder, call):
        if is_plain(value):   # no Tensor, object of the module or dataclass
            return NotImplemented
        tensor_class = _tensor_class()
        if tensor_class is not None and isinstance(value, tensor_class):
            body = {"data": encoder.array(np.asarray(value.data)), "requires_grad": bool(value.requires_grad)}
            if call is not None and body["requires_grad"]:
                body.update(call=call, index=self._tensor_index)
                self._differentiable = True
            self._tensor_index += 1
            return {"tensor": body}
        if isinstance(value, (np.ndarray, np.generic, int, float, str, bool, complex, bytes, list, tuple, dict)) or value is None:
            return NotImplemented
        if self.owned(value):
            kind = "class" if isinstance(value, type) else "object" if not callable(value) else "callable"
            body = {"handle": self.handle_for(value), "kind": kind, "class": type(value).__qualname__}
            if isinstance(value, type):
                body["class"] = value.__qualname__
            return {"remote": body}
        if dataclasses.is_dataclass(value) and not isinstance(value, type) and type(value).__module__.startswith("tinyllm."):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
            return {"value": {"class": f"{type(value).__module__}.{type(value).__qualname__}",
                              "fields": encoder.encode(fields)}}
        return NotImplemented

    # ---- backward ----------------------------------------------------------------------

    def vjp(self, header: dict, buffers: list[bytearray]):
        """Gradients of the recorded call's inputs (one per Tensor argument, in
        argument order; None where none flows) for the given output gradient."""
        call, index = header.get("call"), header.get("index")
        if call not in self.calls or not isinstance(index, int):
            raise WireError(f"no recorded call {call!r} (backward on a result of an earlier run?)")
        function, recorded, raw = self.calls[call]
        replay = _ArgumentDecoder(self, [bytearray(b) for b in raw])
        args = replay.decode_top(recorded.get("args", {"tuple": []}))
        kwargs = replay.decode_top(recorded.get("kwargs", {"dict": []}))
        grad = Decoder(buffers).decode_top(header.get("grad"))
        outputs = _tensors_in(function(*args, **kwargs))
        if not 0 <= index < len(outputs):
            raise WireError(f"the replayed call gave {len(outputs)} Tensors, not {index + 1}")
        outputs[index].backward(grad)
        return [None if t.grad is None else np.asarray(t.grad) for t in replay.tensors]


def _tensor_class():
    module = sys.modules.get("tinyllm.autograd.tensor")
    return getattr(module, "Tensor", None)


def _tensors_in(value) -> list:
    """Tensors in a result, in the order the encoder visits them."""
    tensor_class = _tensor_class()
    found = []

    def walk(v):
        if tensor_class is not None and isinstance(v, tensor_class):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            for item in v:
                walk(item)
        elif isinstance(v, dict):
            for key, item in v.items():
                walk(key), walk(item)

    walk(value)
    return found


class _ArgumentDecoder(Decoder):
    """Decodes the tests' arguments: Tensors become the module's own Tensors,
    handles the objects they name; remembers every array and Tensor built, to
    report writes into them."""

    def __init__(self, server: _Server, buffers):
        super().__init__(buffers, self._extra)
        self.server = server
        self.inputs: list = []      # arrays and Tensors, in decoding order
        self.before: list = []      # their data as it arrived (_Snapshot; for a Tensor, with its data array)
        self.tensors: list = []
        self.watched: list = []     # (input number, weak reference to its array)

    def array(self, body):
        array = super().array(body)
        self.watched.append((len(self.inputs), weakref.ref(array)))
        self.inputs.append(array)
        self.before.append(_Snapshot(array))
        return array

    def _extra(self, tag, body, decoder):
        if tag == "tensor":
            tensor_class = _tensor_class()
            if tensor_class is None:
                raise WireError("a Tensor was passed, but the code under test has no tinyllm.autograd.tensor")
            data = Decoder.array(self, body["data"])
            tensor = tensor_class(data, requires_grad=bool(body.get("requires_grad")))
            self.watched.append((len(self.inputs), weakref.ref(data)))
            self.tensors.append(tensor)
            self.inputs.append(tensor)
            self.before.append((data, _Snapshot(data)))
            return tensor
        if tag == "remote":
            return self.server.resolve({"handle": body.get("handle")})
        if tag == "value":
            return self._dataclass_value(body)
        return NotImplemented

    def _dataclass_value(self, body):
        """A dataclass of another tinyllm module this side has imported (L7.3's
        RopeSpec, given to L7.5), built from its fields: its own checks run."""
        module_name, _, qualname = str(body.get("class")).rpartition(".")
        cls = getattr(sys.modules.get(module_name), qualname, None)
        if not (module_name.startswith("tinyllm.") and isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise WireError(f"the tests passed a {body.get('class')}, which the code under test cannot rebuild")
        fields = self.decode(body.get("fields"))
        if not isinstance(fields, dict) or not all(isinstance(k, str) for k in fields):
            raise WireError("malformed dataclass value")
        return cls(**fields)

    def still_held(self) -> list[tuple[int, np.ndarray]]:
        """(input number, array) of each input array that lives on once the
        request is answered: the code under test kept it (or a view of it)."""
        self.inputs, self.before, self.tensors = [], [], []
        return [(number, array) for number, ref in self.watched if (array := ref()) is not None]

    def changed_inputs(self, encoder: Encoder) -> list:
        """[[input number, new data], ...] for every input written to."""
        changed = []
        for number, (value, before) in enumerate(zip(self.inputs, self.before)):
            if isinstance(before, tuple):  # a Tensor: its data array may be replaced or written into
                original, snapshot = before
                now = np.asarray(value.data)
                if now is not original or snapshot.differs(now):
                    changed.append([number, {"array": encoder.array(now)}])
            elif before.differs(value):
                changed.append([number, {"array": encoder.array(value)}])
        return changed


class _Snapshot:
    """An input array as it arrived: its shape, dtype and bytes.  A write
    that changes any bit (a -0.0 over a 0.0, another NaN) is a change, as it
    would be to the caller's own array."""

    __slots__ = ("shape", "dtype", "data")

    def __init__(self, array: np.ndarray):
        self.shape, self.dtype, self.data = array.shape, array.dtype, array.tobytes()

    def differs(self, array: np.ndarray) -> bool:
        return array.shape != self.shape or array.dtype != self.dtype or array.tobytes() != self.data
