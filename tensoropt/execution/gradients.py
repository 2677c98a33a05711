"""Graph-mode custom gradients whose gradient functions die with their graph.

``tf.custom_gradient`` in graph mode registers a new entry in TensorFlow's global gradient
registry for every call (``CustomGradient-<uid>``), and never removes it. Each entry's
closure holds the tensors of the graph it was built in, so every execution graph built in
a process stays alive: building 50 plans grew a process by about 20 MiB per plan.

``custom_gradient`` here does what ``tf.custom_gradient`` does in graph mode (the
results and the inputs pass through one ``IdentityN`` whose gradient is overridden), but
registers a single gradient function, once, which finds each call's own gradient function
in a table kept on the graph. When the graph goes, so does the table.

Usage::

    @custom_gradient(tf)
    def fused(x):
        def grad(dy):
            return backward(dy)
        return forward(x), grad
"""

from __future__ import annotations

from typing import Callable

__all__ = ["custom_gradient", "GRADIENT_NAME"]

GRADIENT_NAME = "TensorOptCustomGradient"
_TABLE = "_tensoropt_gradient_functions"
_registered = False


def _register(tf) -> None:
    global _registered
    if _registered:
        return

    @tf.RegisterGradient(GRADIENT_NAME)
    def _gradient(op, *grads):   # noqa: ANN001 - TensorFlow's gradient function signature
        grad_fn, n_results = getattr(op.graph, _TABLE)[op.name]
        input_grads = grad_fn(*grads[:n_results])
        if not isinstance(input_grads, (list, tuple)):
            input_grads = [input_grads]
        return [None] * n_results + list(input_grads)

    _registered = True


def custom_gradient(tf) -> Callable:
    """A decorator like ``tf.custom_gradient`` for graph mode: ``f(*tensors)`` returns
    ``(result, grad_fn)``, where ``result`` is a tensor or a list of tensors and
    ``grad_fn(*result_grads)`` returns one gradient (or None) per input."""
    _register(tf)

    def decorator(f: Callable) -> Callable:
        def wrapped(*args):
            args = [tf.convert_to_tensor(a) for a in args]
            result, grad_fn = f(*args)
            flat = list(result) if isinstance(result, (list, tuple)) else [result]
            graph = tf.compat.v1.get_default_graph()
            with graph.gradient_override_map({"IdentityN": GRADIENT_NAME}):
                passed = tf.identity_n(flat + args)
            table = getattr(graph, _TABLE, None)
            if table is None:
                table = {}
                setattr(graph, _TABLE, table)
            table[passed[0].op.name] = (grad_fn, len(flat))
            outputs = passed[:len(flat)]
            return outputs if isinstance(result, (list, tuple)) else outputs[0]

        return wrapped

    return decorator
