"""Op definitions: one ``OpDef`` per kind, registered on import.

Usage::

    from tensoropt.ops import get_op_def, registered_kinds
    registered_kinds()            # ['add', 'avg_pool2d', 'bias_add', ...]
"""

from tensoropt.ops import (array_ops, compare_ops, composite_ops, conv_ops,  # noqa: F401
                           elementwise_ops, logical_ops, lrn_ops, math_ops, nn_ops, norm_ops,
                           pad_ops, rnn_ops, safe_math, sequence_ops, slice_ops, source_ops)
from tensoropt.ops.registry import LoweringContext, OpDef, Signature, get_op_def, registered_kinds
from tensoropt.ops.space import IterationSpace

__all__ = ["OpDef", "Signature", "LoweringContext", "IterationSpace", "get_op_def", "registered_kinds"]
