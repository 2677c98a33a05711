"""The local copies the simulator prices for a conversion (``step_buffers.collective_copy_ops``,
``StepBuffers.copy_ops``) are the transposes, splits and concatenations that
``execution.horovod_comm`` builds for it, shape for shape."""

import types

import pytest

from reschedule import Layout, plan_conversion
from tensoropt._tf import import_tensorflow
from tensoropt.execution.horovod_comm import CollectiveOps
from tensoropt.execution.recording_hvd import RecordingHorovod
from tensoropt.execution.schedule import step_calls
from tensoropt.simulator.step_buffers import conversion_step_buffers, split_copies

SHAPE = (4, 6, 8, 10)
MESH = (2, 2)
CASES = [
    ((-1, -1, -1, 0), (), (-1, -1, -1, -1)),      # gather the last dim
    ((-1, -1, -1, -1), (0,), (-1, -1, 0, -1)),    # sum partials into a split of dim 2
    ((-1, 0, -1, -1), (), (-1, -1, 0, -1)),       # exchange dim 1 for dim 2
    ((0, -1, -1, -1), (), (-1, -1, -1, 1)),       # gather rows, split the last dim
    ((-1, -1, -1, -1), (), (-1, -1, 1, 0)),       # slices only
]


def _op_of(node, tf):
    value = tf.get_static_value
    if node.type == "Transpose":
        return ("transpose", tuple(node.inputs[0].shape.as_list()), tuple(int(p) for p in value(node.inputs[1])))
    if node.type == "Split":
        return ("split", tuple(node.inputs[1].shape.as_list()), int(value(node.inputs[0])), node.get_attr("num_split"))
    if node.type == "ConcatV2":
        return ("concat", tuple(node.inputs[0].shape.as_list()), node.get_attr("N"), int(value(node.inputs[-1])))
    return None


def _copying(ops):
    """Without the dim-0 splits that make views (TensorFlow builds them; they copy nothing)."""
    return sorted(op for op in ops if op[0] != "split" or split_copies(op[1], op[2], op[3], 4))


@pytest.mark.parametrize("src_map, partial, dst_map", CASES)
def test_the_priced_copies_are_the_ones_the_run_builds(src_map, partial, dst_map):
    tf = import_tensorflow()
    steps = plan_conversion(Layout(MESH, src_map, frozenset(partial)), Layout(MESH, dst_map), SHAPE).steps
    tensor = types.SimpleNamespace(shape=SHAPE, dtype=types.SimpleNamespace(itemsize=4))
    hvd = RecordingHorovod(tf, size=4)
    graph = tf.Graph()
    with graph.as_default():
        ops = CollectiveOps(tf, hvd, rank=0, process_sets=hvd.process_sets(),
                            schedule=step_calls(steps, "t", tensor, "forward"))
        x = tf.zeros(Layout(MESH, src_map, frozenset(partial)).local_shape(SHAPE))
        ops.apply_steps(x, steps, SHAPE, "t")
    stand_ins = {name for _, name, _ in hvd.made}      # RecordingHorovod's local collectives
    built = [_op_of(n, tf) for n in graph.get_operations() if n.name not in stand_ins]
    priced = [op for held in conversion_step_buffers(steps, SHAPE, 4).steps for op in held.copy_ops]
    assert _copying(op for op in built if op) == _copying(priced)
    assert priced or not any(built), "a conversion that copies must price its copies"
