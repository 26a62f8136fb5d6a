"""The boundary between a graded suite and the code it tests (ol.grading.wire,
proxy, serve): what crosses is data, and the proxy behaves like the module.

The implementation side is served from a thread of this process over a
socket pair, on the reference rope.py; every expectation is the reference
called directly (or a float64 oracle for gradients), so the proxy must be
indistinguishable from it by behaviour, and reveal nothing else.
"""

from __future__ import annotations

import dataclasses
import socket
import threading

import numpy as np
import pytest

from helpers.kit import ROOT
from helpers.reference import reference_modules, served_through_the_proxy
from ol.grading import proxy
from ol.grading.serve import serve
from ol.grading.wire import Decoder, Encoder, PeerGone, WireError, recv_call, recv_message, send_message

rope, tensor = reference_modules("tinyllm.modern.rope", "tinyllm.autograd.tensor")
Tensor = tensor.Tensor
CONTRACT = ROOT / "course/contracts/py/tinyllm/modern/rope.pyi"
LADDER = (1.0 / 10000 ** (np.arange(0, 8, 2) / 8)).astype(np.float32)


@pytest.fixture
def remote():
    """The proxy module of rope.py, connected to the reference served from a thread."""
    with served_through_the_proxy("tinyllm.modern.rope", CONTRACT, rope) as module:
        yield module


# ---- data crosses as data ------------------------------------------------------------


@pytest.mark.parametrize("value", [
    None, True, 0, -3, 2**80, 1.5, float("inf"), "half", [1, [2.0, "x"]], (1, (2,)), {"a": 1, 2: (3,)},
    1 + 2j, b"\x00\xff", np.float32(1.25), np.int64(7), np.dtype("float16"), np.float32, slice(1, None, 2),
    Ellipsis, np.arange(12, dtype=np.float32).reshape(3, 4), np.array([True, False]), np.array(["half", "x"]),
])
def test_values_round_trip_exactly(value):
    encoder = Encoder()
    header = encoder.encode(value)
    back = Decoder([bytearray(bytes(b)) for b in encoder.buffers]).decode_top(header)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and np.array_equal(back, value) and back.flags.writeable
    else:
        assert type(back) is type(value) and (back == value or (value is Ellipsis and back is Ellipsis))


@pytest.mark.parametrize("value", [lambda: 1, object(), np.array([object()]), socket, ValueError])
def test_what_has_no_data_form_is_refused(value):
    with pytest.raises(WireError, match="cannot cross|has no data form"):
        Encoder().encode(value)


@pytest.mark.parametrize("header", [
    {"array": {"dtype": "<f4", "shape": [2, 2], "buffer": 0}},   # 4 entries, 8 bytes
    {"array": {"dtype": "|O", "shape": [1], "buffer": 0}},
    {"tuple": "not a list"},
    {"unknown": 1},
    {"dict": [[[1, 2], 3]]},                                     # an unhashable key
    {"bytes": 5},
])
def test_malformed_values_raise_wire_error(header):
    with pytest.raises(WireError):
        Decoder([bytearray(8)]).decode_top(header)


@pytest.mark.parametrize("receive", [recv_message, recv_call])
def test_frames_refuse_oversized_announcements(receive):
    ours, theirs = socket.socketpair()
    ours.sendall((2**31).to_bytes(4, "big") + (0).to_bytes(4, "big"))
    with pytest.raises(WireError, match="announced"):
        receive(theirs)
    ours.close(), theirs.close()


@pytest.mark.parametrize("receive", [recv_message, recv_call])
def test_a_message_and_its_buffers_arrive_whole(receive):
    """2.4 MB: recv_call takes a message far larger than its look (PEEK_BYTES) as recv_message does."""
    ours, theirs = socket.socketpair()
    big = np.random.default_rng(0).standard_normal(300_000)
    encoder = Encoder()
    sender = threading.Thread(target=send_message, args=(ours, {"v": encoder.encode(big)}, encoder.buffers))
    sender.start()
    header, buffers = receive(theirs)
    sender.join()
    assert np.array_equal(Decoder(buffers).decode_top(header["v"]), big)
    ours.close(), theirs.close()


class _CountingSocket:
    """A socket whose reads are counted."""

    def __init__(self, sock):
        self.sock, self.reads = sock, 0

    def recv(self, *args):
        self.reads += 1
        return self.sock.recv(*args)

    def recv_into(self, *args):
        self.reads += 1
        return self.sock.recv_into(*args)


def test_a_call_reads_a_message_in_two_reads_and_not_past_it():
    """On a run's channel a message that has arrived whole is read with a
    look and one read, whatever its parts; the message queued behind it is
    left whole for the next read."""
    ours, theirs = socket.socketpair()
    sent = []
    for value in ([np.arange(3.0), np.ones((2, 2), np.float32), "x"], (np.int64(7), b"\x00\xff")):
        encoder = Encoder()
        sent.append(value)
        send_message(ours, {"v": encoder.encode(value)}, encoder.buffers)
    counting = _CountingSocket(theirs)
    for value in sent:
        counting.reads = 0
        header, buffers = recv_call(counting)
        got = Decoder(buffers).decode_top(header["v"])
        assert counting.reads == 2, counting.reads
        assert type(got) is type(value) and all(
            np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(got, value))
    ours.close()
    with pytest.raises(PeerGone):
        recv_call(theirs)
    theirs.close()


# ---- the proxy behaves like the module -------------------------------------------------


def test_calls_return_what_the_module_returns(remote):
    positions = np.array([0, 1, 17, 65535])
    got = remote.rope_cos_sin(positions, LADDER, 1.25)
    want = rope.rope_cos_sin(positions, LADDER, 1.25)
    assert isinstance(got, tuple) and all(g.dtype == np.float32 for g in got)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    x = np.random.default_rng(1).standard_normal((2, 4, 8)).astype(np.float32)   # [B, S, D]; tables [S, 4]
    out = remote.apply_rope(Tensor(x), *want, layout="interleaved")
    assert isinstance(out, Tensor) and out.dtype == np.float32
    assert np.array_equal(out.data, rope.apply_rope(Tensor(x), *want, layout="interleaved").data)


def test_exceptions_keep_their_type_and_message(remote):
    with pytest.raises(ValueError, match="must be >= 0") as raised:
        remote.rope_cos_sin([-1], LADDER)
    with pytest.raises(ValueError, match="must be >= 0"):
        rope.rope_cos_sin([-1], LADDER)
    assert type(raised.value) is ValueError
    with pytest.raises(TypeError):
        remote.apply_rope(np.zeros(4), *rope.rope_cos_sin(0, LADDER[:2]))
    with pytest.raises(TypeError):
        remote.rope_cos_sin(1, LADDER, bogus=1)


def test_a_class_unknown_here_becomes_a_subclass_of_its_nearest_known_base():
    error = proxy.rebuild_exception({"classes": ["student.RopeError", "builtins.ValueError", "builtins.Exception"],
                                     "args": {"tuple": ["bad layout"]}})
    assert isinstance(error, ValueError) and type(error).__name__ == "RopeError" and str(error) == "bad layout"
    quit_ = proxy.rebuild_exception({"classes": ["builtins.SystemExit", "builtins.BaseException"], "args": {"tuple": [0]}})
    assert isinstance(quit_, Exception), "SystemExit over there is a plain failure here, not an exit"


def test_gradients_cross_as_vector_jacobian_products(remote):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 8))
    cos, sin = rope.rope_cos_sin(np.array([0, 5, 70000]), LADDER)
    g = rng.standard_normal((3, 8))
    partial = rope.rope_cos_sin(np.array([0, 5, 70000]), LADDER[:3])   # rotary_dim 6 of 8
    here = Tensor(x, requires_grad=True)
    remote.apply_rope(here, *partial, "half", 6).backward(g)
    local = Tensor(x, requires_grad=True)
    rope.apply_rope(local, *partial, "half", 6).backward(g)
    np.testing.assert_allclose(here.grad, local.grad, rtol=0, atol=1e-12)
    # a loss built on a result, then a second call and backward: gradients add up in the leaf
    twice, once = Tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    for leaf, apply in ((twice, remote.apply_rope), (once, rope.apply_rope)):
        (apply(leaf, cos, sin) * 2.0).sum().backward()
        apply(leaf, cos, sin).backward(g)
    np.testing.assert_allclose(twice.grad, once.grad, rtol=0, atol=1e-12)


def test_no_gradient_flows_where_the_module_gives_none(remote):
    x = Tensor(np.ones((2, 4)))   # requires_grad=False: the result is a plain Tensor
    out = remote.apply_rope(x, *rope.rope_cos_sin([0, 1], LADDER[:2]))
    assert not out.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        out.backward(np.ones((2, 4)))


def test_writes_into_an_argument_are_mirrored():
    class Writer:
        __name__ = "writer"

        @staticmethod
        def scale(values, tensor_in):
            values *= 2
            tensor_in.data[0] = 7.0
            return None

    Writer.scale.__module__ = "writer"
    module = type(rope)("writer")
    module.scale = Writer.scale
    ours, theirs = socket.socketpair()
    server = threading.Thread(target=serve, args=(theirs, module), daemon=True)
    server.start()
    proxy.connect(ours)
    try:
        values, t = np.arange(3.0), Tensor(np.zeros(2))
        assert proxy.call({"attr": "scale"}, (values, t), {}) is None
        assert values.tolist() == [0.0, 2.0, 4.0] and t.data.tolist() == [7.0, 0.0]
    finally:
        proxy.connect(None)
        ours.close()
        server.join(timeout=5)
        theirs.close()


def test_a_write_that_changes_any_bit_is_mirrored():
    """-0.0 over 0.0 compares equal, but the caller's own array would hold it."""
    def flip(values):
        values[0] = -0.0

    flip.__module__ = "flipper"
    module = type(rope)("flipper")
    module.flip = flip
    close = _served(module)
    try:
        values = np.zeros(2)
        proxy.call({"attr": "flip"}, (values,), {})
        assert np.signbit(values[0]) and not np.signbit(values[1])
    finally:
        close()


def _served(module):
    """Connect the proxy to `module` served from a thread; returns a closer."""
    ours, theirs = socket.socketpair()
    server = threading.Thread(target=serve, args=(theirs, module), daemon=True)
    server.start()
    proxy.connect(ours)

    def close():
        proxy.connect(None)
        ours.close()
        server.join(timeout=5)
        theirs.close()

    return close


def test_an_array_the_module_keeps_stays_the_callers_own():
    """What a test can tell in one process (the module kept the caller's
    array, or a copy of it) it can tell across the boundary too: the caller's
    later writes reach an array the module kept, and nothing else."""
    module = type(rope)("keeper")
    store = {}

    def keep(values, copy):
        store["values"] = np.array(values) if copy else values
        return None

    def total():
        return float(store["values"].sum())

    def frozen():
        out = np.arange(3.0)
        out.flags.writeable = False
        return out

    for function in (keep, total, frozen):
        function.__module__ = "keeper"
        setattr(module, function.__name__, function)
    close = _served(module)
    try:
        for copy, expected in ((False, 60.0), (True, 6.0)):
            values = np.array([1.0, 2.0, 3.0])
            proxy.call({"attr": "keep"}, (values, copy), {})
            values *= 10
            assert proxy.call({"attr": "total"}, (), {}) == expected, copy
        returned = proxy.call({"attr": "frozen"}, (), {})
        with pytest.raises(ValueError, match="read-only"):
            returned[0] = 1.0
    finally:
        close()


def test_objects_of_the_module_live_over_there(remote):
    spec = remote.RopeSpec(LADDER, 1.5, "interleaved")
    assert isinstance(spec, remote.RopeSpec) and type(spec).__name__ == "RopeSpec"
    assert spec.rotary_dim == 8 and spec.layout == "interleaved" and spec.attention_scaling == 1.5
    assert np.array_equal(spec.inv_freq, LADDER)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.layout = "half"
    assert dataclasses.is_dataclass(spec) and [f.name for f in dataclasses.fields(spec)] == [
        "inv_freq", "attention_scaling", "layout", "rotary_dim"]
    other = dataclasses.replace(spec, layout="half", rotary_dim=None)
    assert other.layout == "half" and other is not spec and other != spec and spec == spec
    assert hash(spec) == hash(spec) and "RopeSpec" in repr(spec)
    positions = np.arange(5)
    want = rope.RopeSpec(LADDER, 1.5, "interleaved").cos_sin(positions)
    assert all(np.array_equal(g, w) for g, w in zip(spec.cos_sin(positions), want))
    with pytest.raises(ValueError):
        remote.RopeSpec(LADDER, rotary_dim=6)
    assert remote.RopeSpec.layout == "half", "a class attribute (the field's default) is read over there"


def test_nothing_but_behaviour_is_reachable(remote):
    assert "apply_rope" not in remote.apply_rope.__code__.co_names, "the local function is a forwarder"
    for name in ("_positions_as_float32", "__file__", "np"):
        with pytest.raises(AttributeError):
            getattr(remote, name)
    spec = remote.RopeSpec(LADDER)
    for name in ("__post_init__", "_ol_secret", "__class__.__init__"):
        with pytest.raises(AttributeError):
            proxy.request({"op": "getattr", "of": {"handle": object.__getattribute__(spec, "_ol_handle")}, "name": name})
    with pytest.raises(AttributeError, match="public"):
        proxy.request({"op": "getattr", "of": {"attr": "apply_rope"}, "name": "__code__"})
    with pytest.raises(AttributeError, match="public"):
        proxy.request({"op": "call", "fn": {"attr": "_tables_for"}, "args": {"tuple": []}, "kwargs": {"dict": []}})
    assert remote.LAYOUTS == rope.LAYOUTS, "a public constant is read as data"


def test_a_gone_implementation_is_an_error_in_the_test():
    ours, theirs = socket.socketpair()
    module = proxy.build_proxy_module("tinyllm.modern.rope", CONTRACT.read_text(), str(CONTRACT))
    proxy.connect(ours)
    theirs.close()
    try:
        with pytest.raises(proxy.ImplementationGone):
            module.rope_cos_sin(0, LADDER)
    finally:
        proxy.connect(None)
        ours.close()
    with pytest.raises(proxy.ImplementationGone, match="inside a test function"):
        module.rope_cos_sin(0, LADDER)


def test_a_class_that_answers_like_a_plain_type_still_meets_every_hook():
    """wire.is_plain lets exact data types skip the hooks for Tensors and the module's objects; a class whose
    metaclass hashes and compares like dict's must not pass for dict (its objects would skip them too)."""
    from ol.grading import wire

    class LikeDict(type):
        def __hash__(cls):
            return hash(dict)

        def __eq__(cls, other):
            return other is dict or type.__eq__(cls, other)

    class Mimic(metaclass=LikeDict):
        pass

    assert not wire.is_plain(Mimic())
    assert all(wire.is_plain(v) for v in (np.zeros(2), 1.5, "x", True, None, 3, [1], (1,), {1: 2}, np.float32(1)))
    assert not any(wire.is_plain(v) for v in (Tensor(np.zeros(2)), np.zeros(2).view(np.matrix), 1 + 2j))
