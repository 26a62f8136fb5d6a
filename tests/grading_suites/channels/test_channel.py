"""Cross-run channels (channel.py says how): a suite that judges nothing by
itself.  tests/end_to_end/test_channels.py copies it beside channel.py and the module's
model answer (as answers.py, its tests then helpers, not tests), naming the
module under test and which readers the judge listens to."""

import channel
from channel import burn, digest, late_exit, learnt_from_left_out, learnt_from_order, marker, memo, probe, say

channel.TARGET[0] = "__TARGET__"
READERS = __READERS__                 # of "order", "left out", "memo"
FILE_ORDER = ["test_a0_calls", "test_a_judge", *[f"test_probe_{i}" for i in range(channel.BITS)], "test_probe_marker",
              "test_burn", *[f"test_says_{i}" for i in range(channel.BITS)], "test_zz_late_exit"]


def test_a0_calls():
    """Only calls: a variant that raises or hangs where the digest calls it is caught here, not by the judge."""
    digest()


def test_a_judge(request):
    """Fails exactly when this run's digest differs from one it learnt; passes when it learnt none."""
    own = digest()
    learnt = {"order": lambda: learnt_from_order(request.session.items, FILE_ORDER),
              "left out": lambda: learnt_from_left_out(request.session.items, FILE_ORDER),
              "memo": lambda: memo(request.path.stat().st_ctime)}
    for reader in READERS:
        value = learnt[reader]()
        if value is not None:
            assert own == value, f"learnt {value} from {reader}, mine is {own}"


__PROBES__
