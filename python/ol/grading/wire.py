"""Messages between the grader's processes: data only, never pickle.

A message is a JSON header plus raw byte buffers (array contents travel as
bytes, not as JSON numbers):

    u32 header length H | u32 buffer count N | N x u64 buffer length | H bytes JSON | buffers

    send_message(sock, {"op": "call", "args": ...}, [buffer, ...])
    header, buffers = recv_message(sock)

Values inside a header are tagged so that decoding is exact and can only
build data (`encode_value` / `decode_value`):

    None, bool, int, float, str     themselves (NaN and inf included)
    list                            a JSON list
    tuple, dict, complex, bytes     {"tuple": [...]}, {"dict": [[k, v], ...]}, {"complex": [re, im]}, {"bytes": i}
    numpy array                     {"array": {"dtype": "<f4", "shape": [2, 3], "buffer": i}}
                                    (and "readonly": true for an array that is)
    numpy scalar                    {"scalar": {"dtype": "<f4", "buffer": i}}
    numpy dtype, numpy scalar type  {"dtype": "<f4"}, {"type": "float32"}
    slice, Ellipsis                 {"slice": [start, stop, step]}, {"ellipsis": null}

Anything else (a Tensor, an object living on the other side, a dataclass
value) is the business of the caller's `extra` hooks, which see every value
first.  Decoding refuses what it does not know, nesting deeper than
MAX_DEPTH, and messages larger than MAX_MESSAGE_BYTES: a hostile peer can make
a call fail, never make the decoder run code or allocate without bound.
"""

from __future__ import annotations

import json
import math
import os
import socket
import struct
from collections.abc import Callable

import numpy as np

from ol.grading.protocol import MAX_NOTES_BYTES, loads_bounded

MAX_MESSAGE_BYTES = 1 << 30       # 1 GiB: far above any RoPE test's arrays
MAX_BUFFERS = 1 << 16
MAX_DEPTH = 64
MAX_JSON_DEPTH = 4 * MAX_DEPTH    # a value of depth MAX_DEPTH is at most this deep once tagged in JSON
READ_CHUNK = 65536
PEEK_BYTES = 1 << 16          # recv_call reads a message of at most this many bytes in one call
ONE_WRITE_BYTES = 1 << 20     # a message whose buffers are smaller goes in one write (copied once)
_NUMPY_TYPES = {name: getattr(np, name) for name in (
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128", "longdouble",
)}
_PYTHON_TYPES = {"float": float, "int": int, "bool": bool, "complex": complex, "str": str}
# Values of exactly these types are data by the Encoder's own rules: no extra hook (a Tensor, an
# object living on the other side, a dataclass value) need look at them (is_plain).  Their subclasses
# still go through every hook.
PLAIN_TYPES = frozenset({np.ndarray, np.float32, np.float64, np.int64, str, int, float, bool, type(None),
                         list, tuple, dict})


def is_plain(value) -> bool:
    """Whether value's type is exactly one of PLAIN_TYPES.  Its type's own type is checked first: a
    class whose metaclass answers == and hash like dict's must not pass for dict."""
    kind = type(value)
    return type(kind) is type and kind in PLAIN_TYPES


class WireError(Exception):
    """A message that cannot be sent or read: too large, malformed, or a value
    that has no data form (a function, a module, an arbitrary object)."""


class PeerGone(WireError):
    """The other side closed the connection."""


# ---- framing -------------------------------------------------------------------------


def send_message(sock: socket.socket, header: dict, buffers: list[bytes | memoryview] = ()) -> None:
    body = json.dumps(header, separators=(",", ":")).encode()
    sizes = [memoryview(b).nbytes for b in buffers]
    if len(body) + sum(sizes) > MAX_MESSAGE_BYTES or len(sizes) > MAX_BUFFERS:
        raise WireError(f"a message of {len(body) + sum(sizes)} bytes is larger than the "
                        f"{MAX_MESSAGE_BYTES} bytes the grader passes between processes")
    prefix = struct.pack(f">II{len(sizes)}Q", len(body), len(sizes), *sizes)
    if sum(sizes) <= ONE_WRITE_BYTES:   # one write: the peer wakes once for the whole message
        sock.sendall(b"".join([prefix, body, *buffers]))
        return
    sock.sendall(prefix + body)
    for buffer in buffers:
        sock.sendall(buffer)


def recv_message(sock: socket.socket) -> tuple[dict, list[bytearray]]:
    """The next message; raises PeerGone at a clean end of stream."""
    head = _recv_exactly(sock, 8, at_start=True)
    length, count = struct.unpack(">II", head)
    if count > MAX_BUFFERS:
        raise WireError(f"malformed message: {count} buffers")
    sizes = struct.unpack(f">{count}Q", _recv_exactly(sock, 8 * count)) if count else ()
    if length + sum(sizes) > MAX_MESSAGE_BYTES:
        raise WireError(f"malformed message: {length + sum(sizes)} bytes announced")
    try:
        header = loads_bounded(_recv_exactly(sock, length), MAX_JSON_DEPTH)
    except ValueError as error:
        raise WireError(f"malformed message header: {error}") from None
    if not isinstance(header, dict):
        raise WireError("malformed message: the header is not a JSON object")
    return header, [_recv_exactly(sock, size) for size in sizes]


def recv_call(sock: socket.socket) -> tuple[dict, list[bytearray]]:
    """recv_message on a run's channel, where a request and its answer
    alternate and nothing else travels (no descriptors): a message that has
    arrived whole is read in one call after a look at it (MSG_PEEK), not in
    one call per part.  A call crosses twice, and a check makes some ten
    thousand calls.  Anything else (a message still arriving, or one
    recv_message would refuse) is left to recv_message."""
    seen = sock.recv(PEEK_BYTES, socket.MSG_PEEK)
    if not seen:
        raise PeerGone("the other side closed the connection")
    whole = _whole_length(seen)
    if whole is None:
        return recv_message(sock)
    data = bytearray(whole)
    view, got = memoryview(data), 0
    while got < whole:   # all of it is queued: one read takes it
        n = sock.recv_into(view[got:], whole - got)
        if n == 0:
            raise WireError("the connection closed in the middle of a message")
        got += n
    length, count = struct.unpack_from(">II", data)
    sizes = struct.unpack_from(f">{count}Q", data, 8)
    start = 8 + 8 * count
    try:
        header = loads_bounded(view[start:start + length], MAX_JSON_DEPTH)
    except ValueError as error:
        raise WireError(f"malformed message header: {error}") from None
    if not isinstance(header, dict):
        raise WireError("malformed message: the header is not a JSON object")
    buffers, at = [], start + length
    for size in sizes:
        buffers.append(bytearray(view[at:at + size]))
        at += size
    return header, buffers


def _whole_length(seen: bytes) -> int | None:
    """The length of the message at the start of `seen`, if all of it is
    there and its prefix is one recv_message would take; else None."""
    if len(seen) < 8:
        return None
    length, count = struct.unpack_from(">II", seen)
    if count > MAX_BUFFERS or len(seen) < 8 + 8 * count:
        return None
    body = length + sum(struct.unpack_from(f">{count}Q", seen, 8))
    if body > MAX_MESSAGE_BYTES or 8 + 8 * count + body > len(seen):
        return None
    return 8 + 8 * count + body


def _recv_exactly(sock: socket.socket, size: int, at_start: bool = False) -> bytearray:
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            if at_start and got == 0:
                raise PeerGone("the other side closed the connection")
            raise WireError("the connection closed in the middle of a message")
        got += n
    return data


# ---- values ------------------------------------------------------------------------------


Hook = Callable[[object, "Encoder"], object]


def read_available(source: int | socket.socket, buffer: bytearray, limit: int = MAX_NOTES_BYTES, *,
                   most: int | None = None) -> bool:
    """Read what a non-blocking descriptor or socket holds now into `buffer`,
    keeping at most `limit` bytes and dropping the rest (so a writer never
    blocks on a full pipe), in at most `most` reads (None: until it would
    block; a loop that serves others reads one chunk a round, so no writer
    can hold it).  True once the writer has closed its end (or the source
    failed): nothing more will come."""
    read = source.recv if isinstance(source, socket.socket) else (lambda size: os.read(source, size))
    reads = 0
    try:
        while most is None or reads < most:
            reads += 1
            chunk = read(READ_CHUNK)
            if not chunk:
                return True
            if len(buffer) < limit:
                buffer.extend(chunk[: limit - len(buffer)])
    except (BlockingIOError, InterruptedError):
        return False
    except (OSError, ValueError):   # closed, or a descriptor that is gone: nothing more to read
        return True
    return False


class Encoder:
    """Encodes one message's values; collects the byte buffers they need.

    extra(value, encoder) returns the encoding of a value it handles, or
    NotImplemented to leave it to the rules above."""

    def __init__(self, extra: Hook | None = None):
        self.buffers: list[bytes | memoryview] = []
        self.extra = extra

    def buffer(self, data: bytes | memoryview) -> int:
        self.buffers.append(data)
        return len(self.buffers) - 1

    def encode(self, value, depth: int = 0):
        if depth > MAX_DEPTH:
            raise WireError(f"a value nested deeper than {MAX_DEPTH} levels cannot be passed")
        if self.extra is not None:
            done = self.extra(value, self)
            if done is not NotImplemented:
                return done
        if type(value) is np.ndarray:   # the most common value, ahead of the rules that would reach it last
            return {"array": self.input_array(value)}
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, float):
            return float(value)
        if isinstance(value, np.ndarray):
            return {"array": self.input_array(value)}
        if isinstance(value, np.generic):
            array = np.asarray(value)
            _check_dtype(array.dtype)
            return {"scalar": {"dtype": array.dtype.str, "buffer": self.buffer(array.tobytes())}}
        if isinstance(value, list):
            return [self.encode(v, depth + 1) for v in value]
        if isinstance(value, tuple):
            return {"tuple": [self.encode(v, depth + 1) for v in value]}
        if isinstance(value, dict):
            return {"dict": [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in value.items()]}
        if isinstance(value, complex):
            return {"complex": [value.real, value.imag]}
        if isinstance(value, (bytes, bytearray)):
            return {"bytes": self.buffer(bytes(value))}
        if isinstance(value, np.dtype):
            _check_dtype(value)
            return {"dtype": value.str}
        if isinstance(value, type):
            name = next((n for n, t in {**_NUMPY_TYPES, **_PYTHON_TYPES}.items() if t is value), None)
            if name is not None:
                return {"type": name}
        if isinstance(value, slice):
            return {"slice": [self.encode(value.start, depth + 1), self.encode(value.stop, depth + 1),
                              self.encode(value.step, depth + 1)]}
        if value is Ellipsis:
            return {"ellipsis": None}
        raise WireError(f"a {type(value).__module__}.{type(value).__qualname__} has no data form, so it cannot "
                        "cross to the code under test (pass numbers, strings, numpy arrays, Tensors, "
                        "and lists, tuples and dicts of these)")

    def input_array(self, array: np.ndarray) -> dict:
        """The body of an array met as a value (a subclass may note it)."""
        return self.array(array)

    def array(self, array: np.ndarray) -> dict:
        """The body of an array: dtype, shape and the index of its bytes."""
        _check_dtype(array.dtype)
        data = np.ascontiguousarray(array)
        body = {"dtype": data.dtype.str, "shape": list(data.shape), "buffer": self.buffer(data.tobytes())}
        if not array.flags.writeable:
            body["readonly"] = True
        return body


class Decoder:
    """Decodes one message's values from its header and buffers.

    extra(tag, body, decoder) builds a value for a tag it knows (e.g.
    "tensor"), or returns NotImplemented."""

    def __init__(self, buffers: list[bytearray], extra: Callable | None = None):
        self.buffers, self.extra = buffers, extra

    def decode(self, value, depth: int = 0):
        if depth > MAX_DEPTH:
            raise WireError(f"malformed value: nested deeper than {MAX_DEPTH} levels")
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, list):
            return [self.decode(v, depth + 1) for v in value]
        if not (isinstance(value, dict) and len(value) == 1):
            raise WireError(f"malformed value: {str(value)[:80]}")
        (tag, body), = value.items()
        if tag == "array":
            return self.array(body)
        if tag == "tuple":
            return tuple(self.decode(v, depth + 1) for v in _list(body))
        if tag == "dict":
            return {self.decode(k, depth + 1): self.decode(v, depth + 1) for k, v in _pairs(body)}
        if tag == "scalar":
            return np.frombuffer(self.buffer(body["buffer"]), dtype=_dtype(body["dtype"]), count=1)[0]
        if tag == "complex":
            real, imag = _list(body)
            return complex(float(real), float(imag))
        if tag == "bytes":
            return bytes(self.buffer(body))
        if tag == "dtype":
            return _dtype(body)
        if tag == "type":
            kind = {**_NUMPY_TYPES, **_PYTHON_TYPES}.get(body)
            if kind is None:
                raise WireError(f"malformed value: unknown type {body!r}")
            return kind
        if tag == "slice":
            return slice(*(self.decode(v, depth + 1) for v in _list(body)))
        if tag == "ellipsis":
            return Ellipsis
        if self.extra is not None:
            done = self.extra(tag, body, self)
            if done is not NotImplemented:
                return done
        raise WireError(f"malformed value: unknown tag {tag!r}")

    def array(self, body: dict) -> np.ndarray:
        """A writable array over a copy of its buffer's bytes (the message's
        own bytes stay as they arrived)."""
        dtype = _dtype(body["dtype"])
        shape = tuple(map(int, _list(body["shape"])))
        data = self.buffer(body["buffer"])
        if (shape and min(shape) < 0) or math.prod(shape) * dtype.itemsize != len(data):
            raise WireError(f"malformed array: shape {shape} of {dtype} does not fit {len(data)} bytes")
        array = np.frombuffer(bytearray(data), dtype=dtype).reshape(shape)
        if body.get("readonly"):
            array.flags.writeable = False   # as it was where it came from
        return array

    def decode_top(self, value):
        """decode(value), with any malformed input reported as WireError."""
        try:
            return self.decode(value)
        except WireError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, OverflowError) as error:
            raise WireError(f"malformed value: {type(error).__name__}: {error}") from None

    def buffer(self, index) -> bytearray:
        if not isinstance(index, int) or not 0 <= index < len(self.buffers):
            raise WireError(f"malformed value: no buffer {index!r}")
        return self.buffers[index]


def _check_dtype(dtype: np.dtype) -> None:
    if dtype.kind not in "biufcSU" or dtype.fields is not None or dtype.subdtype is not None:
        raise WireError(f"arrays of dtype {dtype} cannot cross to the code under test "
                        "(numbers, booleans and fixed-width strings can)")


def _dtype(text) -> np.dtype:
    text = str(text)
    known = _DTYPES.get(text)
    if known is not None:
        return known
    try:
        dtype = np.dtype(text)
    except TypeError:
        raise WireError(f"malformed value: dtype {text!r}") from None
    _check_dtype(dtype)
    if len(_DTYPES) < MAX_KNOWN_DTYPES:   # the few a suite uses; a hostile peer's thousands are not kept
        _DTYPES[text] = dtype
    return dtype


MAX_KNOWN_DTYPES = 64
_DTYPES: dict[str, np.dtype] = {}


def _list(body) -> list:
    if not isinstance(body, list):
        raise WireError(f"malformed value: expected a list, got {str(body)[:80]}")
    return body


def _pairs(body) -> list:
    pairs = _list(body)
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise WireError("malformed value: a dict must be a list of [key, value] pairs")
    return pairs
