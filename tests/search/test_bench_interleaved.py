"""The accuracy bench's interleaved timing (tensoropt.bench.interleaved)."""

import pytest

import tensoropt as to
from tensoropt.bench.interleaved import block_steps, half_medians, interquartile_range, measure_group


@pytest.mark.parametrize("step_s, rounds, min_steps, min_time_s, expected", [
    ([0.01, 0.5], 5, 5, 3.0, [60, 2]),     # the short plan is timed many more times
    ([0.01, 0.5], 5, 12, 0.0, [3, 3]),     # the step count alone
    ([2.0], 1, 5, 3.0, [5]),
    ([0.0], 2, 1, 1.0, [500000]),          # a zero warm-up time is floored, not divided by
])
def test_blocks_give_every_plan_its_steps_and_seconds(step_s, rounds, min_steps, min_time_s, expected):
    blocks = block_steps(step_s, rounds, min_steps, min_time_s)
    assert blocks == expected
    for s, b in zip(step_s, blocks):
        assert b * rounds >= min_steps and (s == 0 or b * rounds * s >= min_time_s - 1e-12)


def test_bad_block_arguments_are_named():
    with pytest.raises(ValueError, match="rounds=0"):
        block_steps([0.1], 0, 5, 1.0)


def test_interquartile_range():
    assert interquartile_range([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0)
    assert interquartile_range([7.0]) == 0.0


def test_half_medians_split_by_round_parity():
    # rounds 0, 2 and 4 against 1 and 3: a drift between rounds falls on both halves
    rounds = [[1.0, 2.0], [10.0, 11.0], [3.0, 4.0], [12.0, 13.0], [5.0, 6.0]]
    assert half_medians(rounds) == (3.5, 11.5)
    assert half_medians([[1.0, 2.0, 3.0, 9.0]]) == (1.5, 6.0)     # one round: its two halves
    assert half_medians([[4.0]]) == (4.0, 4.0)
    with pytest.raises(ValueError, match="no timed step"):
        half_medians([[1.0], []])


class _OneRank:
    """A communicator of one rank that counts barriers."""

    def __init__(self):
        self.barriers = 0

    def Barrier(self):
        self.barriers += 1

    def allgather(self, value):
        return [value]


def test_a_group_is_held_open_together_and_timed_in_rounds():
    x = to.placeholder(to.float32, [8, 4], name="x")
    w = to.get_variable("w", [4, 2])
    loss = to.reduce_mean(to.matmul(x, w))
    step = to.train.GradientDescentOptimizer(0.1).minimize(loss)
    spec = type("Spec", (), {"train_op": step})()
    plan = to.find_strategy()
    comm = _OneRank()
    rows = measure_group(spec, [plan, plan], {x: [[1.0] * 4] * 8}, comm, rounds=3, min_steps=4,
                         min_time_s=0.0, repeats=2)
    assert [r["steps"] for r in rows] == [6, 6]        # 2 timed steps per round, 3 rounds
    assert comm.barriers == 2 * 6 + 2 * 2              # one per timed and per traced step
    for r in rows:
        assert r["time"] > 0 and r["time_spread"] >= 0 and r["memory"] > 0
        assert r["time_even_rounds"] > 0 and r["time_odd_rounds"] > 0


def test_rounds_are_added_two_at_a_time_until_the_run_agrees_with_itself():
    x = to.placeholder(to.float32, [8, 4], name="x")
    w = to.get_variable("w", [4, 2])
    step = to.train.GradientDescentOptimizer(0.1).minimize(to.reduce_mean(to.matmul(x, w)))
    spec = type("Spec", (), {"train_op": step})()
    plan = to.find_strategy()
    feed = {x: [[1.0] * 4] * 8}
    asked = []

    def never(halves):
        asked.append(halves)
        return False

    rows = measure_group(spec, [plan, plan], feed, _OneRank(), rounds=2, min_steps=2, min_time_s=0.0,
                         repeats=1, max_rounds=7, settled=never)
    assert [r["rounds"] for r in rows] == [6, 6]       # 2, then 4, then 6; 8 would pass 7
    assert [r["steps"] for r in rows] == [6, 6]
    assert len(asked) == 2 and all(len(h) == 2 and len(h[0]) == 2 for h in asked)   # after 2 and 4
    rows = measure_group(spec, [plan], feed, _OneRank(), rounds=2, min_steps=2, min_time_s=0.0,
                         repeats=1, max_rounds=7, settled=lambda halves: True)
    assert rows[0]["rounds"] == 2
    rows = measure_group(spec, [plan], feed, _OneRank(), rounds=2, min_steps=2, min_time_s=0.0,
                         repeats=1, max_rounds=7)              # no rule: the rounds given
    assert rows[0]["rounds"] == 2
