"""The horovod process sets registered for the mesh-axis groups (with a stand-in hvd)."""

from tensoropt.cluster.mesh import process_set_groups
from tensoropt.execution.process_sets import process_sets_for_init


class _FakeHvd:
    global_process_set = "GLOBAL"

    class ProcessSet:
        def __init__(self, ranks):
            self.ranks = ranks


def test_process_sets_for_init():
    to_register, mapping = process_sets_for_init(_FakeHvd, 4)
    assert [ps.ranks for ps in to_register] == [[0, 1], [0, 2], [1, 3], [2, 3]]
    assert mapping[(0, 1, 2, 3)] == "GLOBAL"
    assert set(mapping) == set(process_set_groups(4))
