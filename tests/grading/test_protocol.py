"""Kit tests of ol.grading.protocol: a run's notes and the collector's
frames, read by the observer alone.  Whatever bytes a run writes, the parser
keeps only well-formed lines and never raises; frames come out as they went
in however the stream is cut, and garbage breaks the stream for good."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.cheats import HOSTILE
from ol.grading import protocol


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=20000), st.sampled_from(HOSTILE),
                 st.lists(st.sampled_from([b"{", b"}", b"[", b"]", b'"', b"\\", b":", b",", b"\n", b"1", b"a",
                                           b'{"at": 1}', b'{"collected": ["x"]}', b"\xff"]), max_size=400)
                 .map(b"".join)))
def test_the_report_parser_keeps_only_well_formed_lines_and_never_raises(data):
    lines = protocol.parse_notes(data)
    for line in lines:
        assert line and set(line) <= set(protocol.NOTE_FIELDS)
        for key, value in line.items():
            assert protocol._checked(protocol.NOTE_FIELDS[key], value) == value
    try:
        protocol.loads_bounded(data, 64)   # ValueError is its one way to refuse
    except ValueError:
        pass



def test_brackets_in_a_note_s_text_are_text_and_nesting_outside_it_drops_the_line():
    many = "[{" * (protocol.MAX_LINE_BRACKETS + 1)
    assert protocol.parse_note_line(b'{"failed": "' + many.encode() + b'"}') == {"failed": many}
    assert protocol.parse_note_line(b'{"collected": ["' + many.encode() + b'", "b"]}') == {"collected": [many, "b"]}
    nested = b"[" * (protocol.MAX_LINE_BRACKETS + 1) + b"]" * (protocol.MAX_LINE_BRACKETS + 1)
    assert protocol.parse_note_line(b'{"detail": ' + nested + b', "at": 1}') is None


def test_text_a_run_wrote_is_kept_as_it_came_but_for_lone_surrogates():
    for text in ("python/tests/test_x.py::test_y[half-8]", "é ∑ 你好", ""):
        assert protocol.writable(text) == text
    assert protocol.writable("a\udcffb") == "a\ufffdb"

FRAMES = st.lists(st.one_of(
    st.tuples(st.just(b"D"), st.integers(0, 2**32 - 1), st.integers(-2**31, 2**31 - 1), st.integers(0, 2**32 - 1)),
    st.tuples(st.sampled_from([b"C", b"P"]), st.binary(max_size=300))), max_size=20)


@settings(max_examples=300, deadline=None, database=None)
@given(FRAMES, st.lists(st.integers(1, 64), max_size=40), st.binary(max_size=64))
def test_frames_come_out_as_they_went_in_however_cut_and_garbage_breaks_the_stream(frames, cuts, garbage):
    data = b"".join(protocol.done_frame(*f[1:]) if f[0] == b"D" else protocol.sized_frame(*f) for f in frames)
    reader, got, at = protocol.FrameReader(), [], 0
    for cut in cuts + [len(data)]:
        got += reader.feed(data[at:at + cut])
        at += cut
    got += reader.feed(data[at:])
    want = [protocol.Frame(b"D", run_id=f[1], exit=f[2], cpu_ms=f[3]) if f[0] == b"D" else protocol.Frame(f[0], body=f[1])
            for f in frames]
    assert got == want and reader.broken is None
    if garbage[:1] not in (b"", b"C", b"P", b"D"):
        assert reader.feed(garbage + data) == [] and reader.broken is not None
        assert reader.feed(data) == []
