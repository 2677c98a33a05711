"""The error for a TensorFlow 1.x name TensorOpt does not mirror (PEP 562 ``__getattr__``).

A script ported from ``tf.compat.v1`` fails on the first name TensorOpt lacks; the error
says which TensorFlow name it is, what TensorOpt offers instead where there is a usual
way (``tf.layers.dense``, ``tf.Session``), the closest names, and every name the module has.

Usage (at the end of a module)::

    __getattr__ = missing_name_getter(__name__, "tf", lambda: __all__, NEW_OP)
"""

from __future__ import annotations

import difflib
from typing import Callable, Iterable

__all__ = ["missing_name_getter", "INSTEAD", "NEW_OP"]

#: TensorFlow 1.x names with a usual TensorOpt way of writing the same thing.
INSTEAD = {
    "dense": "to.layers.dense",
    "batch_normalization": "to.nn.moments then to.nn.batch_normalization (training-mode statistics; "
                           "moving averages are not mirrored)",
    "softmax_cross_entropy": "to.losses.softmax_cross_entropy",
    "sparse_softmax_cross_entropy": "to.losses.sparse_softmax_cross_entropy",
    "mean_squared_error": "to.losses.mean_squared_error",
    "sigmoid_cross_entropy": "to.losses.sigmoid_cross_entropy",
    "Session": "there is no session: to.build_execution_graph(plan=...) builds and initializes, to.run(...) runs",
    "InteractiveSession": "there is no session: to.build_execution_graph(plan=...) then to.run(...)",
    "global_variables_initializer": "variables are initialized by to.build_execution_graph (or restored by "
                                    "to.train.Saver().restore)",
    "xw_plus_b": "to.nn.bias_add(to.matmul(x, w), b)",
    "summary": "fetch the value with to.run and log it yourself (TensorOpt writes no event files)",
    "metrics": "compute a metric from ops and fetch it, e.g. to.reduce_mean(to.cast(to.equal("
               "to.argmax(logits, 1), labels), to.float32))",
}


#: What the error ends with for a module of ops (how TensorOpt learns a new one).
NEW_OP = "An op TensorOpt does not know needs an OpDef (tensoropt/ops, DESIGN.md) before it can be planned"


def missing_name_getter(module: str, tf_module: str, names: Callable[[], Iterable[str]], last: str = ""):
    """A module ``__getattr__`` whose AttributeError names the missing TensorFlow name,
    a replacement where ``INSTEAD`` has one, the closest names, all of ``names()``, then
    ``last``."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        available = sorted(names())
        close = difflib.get_close_matches(name, available, n=3, cutoff=0.6)
        parts = [f"module {module!r} has no attribute {name!r}: TensorOpt mirrors part of TensorFlow 1.x's "
                 f"{tf_module} API, and {tf_module}.{name} is not in it"]
        if name in INSTEAD:
            parts.append(f"instead, {INSTEAD[name]}")
        if close:
            parts.append(f"did you mean {' or '.join(close)}?")
        parts.append(f"{module} has: {', '.join(available)}" + (f". {last}" if last else ""))
        raise AttributeError("; ".join(parts))

    return __getattr__
