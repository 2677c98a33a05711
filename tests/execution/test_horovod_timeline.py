"""Horovod's timeline, read for how long horovod itself worked on each collective: the
outermost activity that is not negotiation, per call, and its median per tensor."""

import json

import pytest

from tensoropt.execution.horovod_timeline import busy_seconds, parse_timeline


def _tensor(pid, name, calls):
    """Events of one tensor: per call (negotiate_us, work_us), its activities in order."""
    events = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}]
    t = 1000 * pid
    for negotiate, work in calls:
        events += [{"ph": "B", "name": "NEGOTIATE_ALLGATHER", "ts": t, "pid": pid},
                   {"ph": "X", "name": "1", "ts": t + 1, "pid": pid, "dur": 0},
                   {"ph": "E", "ts": t + negotiate, "pid": pid},
                   {"ph": "B", "name": "ALLGATHER", "ts": t + negotiate, "pid": pid},
                   {"ph": "B", "name": "ALLOCATE_OUTPUT", "ts": t + negotiate + 1, "pid": pid},
                   {"ph": "E", "ts": t + negotiate + 3, "pid": pid},
                   {"ph": "B", "name": "MPI_ALLGATHER", "ts": t + negotiate + 3, "pid": pid},
                   {"ph": "E", "ts": t + negotiate + work - 1, "pid": pid},
                   {"ph": "E", "ts": t + negotiate + work, "pid": pid, "args": {"shape": "[4]"}}]
        t += negotiate + work + 50
    return events


def _text(events, closed=False):
    # horovod writes "[\n" then events each followed by ",", and may never close the array
    body = "[\n" + "".join(json.dumps(e) + ",\n" for e in events)
    return body + "]" if closed else body   # closed: a comma before the bracket too


def test_each_call_is_the_collective_s_own_work_negotiation_and_inner_phases_not_added():
    events = _tensor(1, "allgather/a/0", [(900, 40), (1000, 60)]) + _tensor(2, "allgather/b/0", [(5, 700)])
    for closed in (False, True):
        calls = parse_timeline(_text(events, closed))
        assert calls == {"allgather/a/0": [pytest.approx(40e-6), pytest.approx(60e-6)],
                         "allgather/b/0": [pytest.approx(700e-6)]}


def test_busy_seconds_is_the_median_call_per_tensor(tmp_path):
    path = tmp_path / "timeline.json"
    path.write_text(_text(_tensor(1, "x", [(1, 30), (1, 10), (1, 500)])))
    assert busy_seconds(path) == {"x": pytest.approx(30e-6)}


@pytest.mark.parametrize("text, pattern", [("not json", "not a horovod timeline"),
                                           ('{"ph": "B"}', "JSON array of events")])
def test_a_file_that_is_not_a_timeline_is_named(text, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        parse_timeline(text, source="t.json")
    assert "t.json" in str(info.value)
