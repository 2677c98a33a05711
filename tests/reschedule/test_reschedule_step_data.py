"""Steps as JSON data, and back through the constructors that check them."""

import pytest

from reschedule import Layout, Step, plan_conversion


def _steps():
    out = []
    for src, dst, shape in [("[2,2] S0,R", "[4] R,S0", (8, 8)), ("[2,2] S0,S1", "[2,2] S1,S0", (8, 8)),
                            ("[2,2] R,R P{0}", "[2,2] S0,R", (8, 4)), ("[2,4] S0,S1", "[2,4] R,R", (8, 8))]:
        out += list(plan_conversion(Layout.parse(src), Layout.parse(dst), shape, 4).steps)
    return out


def test_every_kind_of_step_round_trips():
    steps = _steps()
    assert {s.kind for s in steps} >= {"alltoallv", "allgather", "alltoall", "slice", "reducescatter"}
    for step in steps:
        assert Step.from_dict(step.to_dict()) == step


@pytest.mark.parametrize("change, message", [
    ({"kind": "scatter"}, r"field 'kind': 'scatter' is not one of"),
    ({"src": "[2,2] S0,S0"}, r"field 'src': Layout .* mesh axis 0 is used by tensor dims"),
    ({"dst": "[2,2] R,S1"}, r"field 'dst' is '\[2,2\] R,S1', but that step gives"),
    ({"axis": 1}, r"mesh axis 1 is R, but allgather needs it to be S"),
    ({"src_dim": "0"}, r"field 'src_dim': expected an int or null"),
])
def test_a_bad_step_names_its_field(change, message):
    step = Step.make_allgather(Layout.parse("[2,2] S0,R"), 0)
    data = dict(step.to_dict(), **change)
    with pytest.raises(ValueError, match=message):
        Step.from_dict(data)


def test_a_step_with_a_missing_or_unknown_field_is_refused():
    data = Step.make_allgather(Layout.parse("[2,2] S0,R"), 0).to_dict()
    with pytest.raises(ValueError, match=r"missing field\(s\) \['axis'\]"):
        Step.from_dict({k: v for k, v in data.items() if k != "axis"})
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['group'\]"):
        Step.from_dict(dict(data, group=[0, 1]))
