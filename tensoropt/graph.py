"""The recorded high-level graph: what a user's script builds, before any plan exists.

Recording only: shapes, dtypes, names, attributes and each op's iteration space. No
TensorFlow object is created here, so a paper-scale model records in milliseconds.

Usage::

    import tensoropt as to
    to.reset_default_graph()
    x = to.placeholder(to.float32, [8, 4], name="x")
    w = to.get_variable("w", [4, 2])
    y = to.matmul(x, w)
    g = to.get_default_graph()
    [op.name for op in g.operations]    # ['x', 'w', 'matmul']
    y.op.space.dims                     # {'m': 8, 'k': 4, 'n': 2}
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from tensoropt.dtypes import DType

if TYPE_CHECKING:  # pragma: no cover
    from tensoropt.ops.space import IterationSpace

__all__ = [
    "Graph",
    "Operation",
    "Tensor",
    "Variable",
    "TensorShape",
    "get_default_graph",
    "reset_default_graph",
    "name_scope",
    "variable_scope",
    "get_variable_scope",
    "VariableScope",
    "AUTO_REUSE",
]

AUTO_REUSE = "auto_reuse"


class Dimension(int):
    """One dimension of a ``TensorShape``: an int with TensorFlow 1.x's ``.value``
    (``x.get_shape()[1].value``)."""

    @property
    def value(self) -> int:
        return int(self)


class TensorShape(tuple):
    """A fully known shape: a tuple of ints with TensorFlow's ``as_list()``; indexing
    gives a ``Dimension``, slicing a ``TensorShape``."""

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return TensorShape(item) if isinstance(index, slice) else Dimension(item)

    def as_list(self) -> list[int]:
        return list(self)

    @property
    def rank(self) -> int:
        return len(self)

    @property
    def ndims(self) -> int:
        return len(self)

    def num_elements(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n


class Tensor:
    """One output of a recorded operation.

    Attributes:
        op: the producing Operation.
        value_index: which output of ``op`` this is.
        shape: the full logical shape (a TensorShape).
        dtype: a tensoropt DType.
    """

    __array_priority__ = 100  # so numpy scalars defer to our operators

    def __init__(self, op: "Operation", value_index: int, shape: Sequence[int], dtype: DType):
        self.op = op
        self.value_index = value_index
        self.shape = TensorShape(int(d) for d in shape)
        self.dtype = dtype

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    @property
    def graph(self) -> "Graph":
        return self.op.graph

    @property
    def nbytes(self) -> int:
        """Bytes of the full logical tensor."""
        return self.shape.num_elements() * self.dtype.itemsize

    def get_shape(self) -> TensorShape:
        return self.shape

    def consumers(self) -> list["Operation"]:
        return [op for op in self.graph.operations if self in op.inputs]

    def __repr__(self) -> str:
        return f"<tensoropt.Tensor '{self.name}' shape={tuple(self.shape)} dtype={self.dtype.name}>"

    # Python operators (+ - * / @, unary -), as on tf.Tensor, are installed by
    # tensoropt.ops.math_ops, which imports this module.

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:  # identity, as tf.Tensor in graph mode
        return self is other

    def __bool__(self) -> bool:
        raise TypeError(
            f"the truth value of {self!r} is not known while recording; "
            "use Python control flow on ordinary values instead"
        )


class _VariableType(type):
    """Lets ``to.Variable(initial_value, ...)`` make a variable as ``tf.Variable`` does
    (``tensoropt.initial_values.tf1_variable``, set as ``factory``); the recorder itself
    constructs one from its ``variable`` op."""

    factory: Any = None

    def __call__(cls, *args, **kwargs):
        if args and isinstance(args[0], Operation):
            return super().__call__(*args, **kwargs)
        return _VariableType.factory(*args, **kwargs)


class Variable(Tensor, metaclass=_VariableType):
    """A trainable (or not) parameter: the output of a recorded ``variable`` op.

    Attributes:
        initializer: a tensoropt initializer (see ``tensoropt.initializers``).
        trainable: whether optimizers update it.
    """

    def __init__(self, op, value_index, shape, dtype, initializer, trainable: bool):
        super().__init__(op, value_index, shape, dtype)
        self.initializer = initializer
        self.trainable = trainable

    @property
    def name(self) -> str:  # TensorFlow's variable name, "scope/w:0"
        return f"{self.op.name}:0"

    def __repr__(self) -> str:
        return (f"<tensoropt.Variable '{self.op.name}' shape={tuple(self.shape)} "
                f"dtype={self.dtype.name}>")


@dataclass(eq=False)
class Operation:
    """One recorded operator.

    Attributes:
        graph: the Graph that holds it.
        name: a deterministic, unique name ("block_1/matmul_2").
        kind: the op kind; ``tensoropt.ops.get_op_def(kind)`` gives its definition.
        inputs: input tensors, in order.
        attrs: the op's attributes (Python values).
        outputs: output tensors.
        space: the iteration space (named dims, per-tensor dims, reductions, FLOPs, ...).
    """

    graph: "Graph"
    name: str
    kind: str
    inputs: tuple[Tensor, ...]
    attrs: dict[str, Any]
    outputs: tuple[Tensor, ...] = ()
    space: "IterationSpace | None" = None
    index: int = -1

    @property
    def op_def(self):
        # Lazy: importing tensoropt.ops.registry runs tensoropt/ops/__init__, whose op
        # modules import this module (it is not heavy; it is the package's import order).
        from tensoropt.ops.registry import get_op_def  # noqa: PLC0415
        return get_op_def(self.kind)

    def __repr__(self) -> str:
        ins = ", ".join(t.name for t in self.inputs)
        return f"<tensoropt.Operation '{self.name}' kind={self.kind} inputs=[{ins}]>"

    def __hash__(self) -> int:
        return id(self)


@dataclass
class _Scope:
    name: str
    reuse: Any = None
    is_variable_scope: bool = False


class VariableScope:
    """What ``with variable_scope("conv1") as scope:`` gives, as TensorFlow's: ``name``
    (the full scope name, ``"block/conv1"``), ``original_name_scope`` (``"block/conv1/"``),
    ``reuse``, and ``reuse_variables()``, which makes ``get_variable`` return existing
    variables from then on inside it. Passing it to ``variable_scope`` enters the same
    scope again, wherever that is written."""

    def __init__(self, name: str, scope: _Scope) -> None:
        self.name = name
        self._scope = scope

    @property
    def reuse(self) -> Any:
        return self._scope.reuse

    @property
    def original_name_scope(self) -> str:
        return self.name + "/" if self.name else ""

    def reuse_variables(self) -> None:
        self._scope.reuse = True

    def __repr__(self) -> str:
        return f"<tensoropt VariableScope {self.name!r} reuse={self.reuse!r}>"


@dataclass
class TrainStep:
    """What ``Optimizer.minimize`` (or ``apply_gradients``) recorded: the loss, the
    variables and the optimizer; ``counts_steps``: it adds one to the graph's global step
    (``global_step=...``); ``clips``: what is done to every gradient before the update, in
    order (``tensoropt.clipping.Clip``), and ``global_norm`` the norm a global-norm clip
    computes."""

    name: str
    loss: Tensor
    var_list: tuple[Variable, ...]
    optimizer: Any
    counts_steps: bool = False
    clips: tuple = ()
    global_norm: Any = None


class Graph:
    """A recorded computation graph.

    Ops are kept in creation order, which is a topological order.
    """

    def __init__(self) -> None:
        self.operations: list[Operation] = []
        self.variables: dict[str, Variable] = {}
        self.train_steps: list[TrainStep] = []
        self.global_step: Any = None   # tensoropt.schedules.GlobalStep, once created
        self.collections: dict[str, list] = {}   # name -> items (tensoropt.graph_collections)
        self.seed: int | None = None
        self._names: set[str] = set()
        self._name_counts: dict[str, int] = {}
        self._scopes: list[_Scope] = []
        self._root = _Scope("", None, True)   # get_variable_scope() outside every scope

    # -- naming ------------------------------------------------------------------------
    def _scope_prefix(self, scopes: Sequence[_Scope] | None = None) -> str:
        """``"a/b/"`` for the scopes entered (or for ``scopes``, outermost first)."""
        return "".join(s.name + "/" for s in (self._scopes if scopes is None else scopes) if s.name)

    def unique_name(self, base: str, *, scoped: bool = True, reserve: bool = True) -> str:
        """Returns ``scope/base`` made unique as TensorFlow does ("x", "x_1", "x_2", ...).
        With ``reserve=False`` the name is only looked up: the op created under it next
        takes it (``to.Variable`` names its variable op so)."""
        name = (self._scope_prefix() + base) if scoped else base
        if name not in self._names:
            if reserve:
                self._names.add(name)
                self._name_counts.setdefault(name, 0)
            return name
        i = self._name_counts.get(name, 0)
        while True:
            i += 1
            candidate = f"{name}_{i}"
            if candidate not in self._names:
                if reserve:
                    self._name_counts[name] = i
                    self._names.add(candidate)
                return candidate

    @contextlib.contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        if not name:
            yield self._scope_prefix()
            return
        self._scopes.append(_Scope(name))
        try:
            yield self._scope_prefix()
        finally:
            self._scopes.pop()

    @contextlib.contextmanager
    def variable_scope(self, name: str, reuse: Any = None, *,
                       absolute: bool = False) -> Iterator[VariableScope]:
        """Enters scope ``name`` inside the current one, or, ``absolute``, as the whole
        scope (``name`` is then a full name: a ``VariableScope`` entered again)."""
        saved = self._scopes
        if absolute:
            self._scopes = []
        inherited = self.current_reuse()
        scope = _Scope(name, reuse if reuse is not None else inherited, True)
        self._scopes = self._scopes + [scope]
        try:
            yield VariableScope(self._scope_prefix().rstrip("/"), scope)
        finally:
            self._scopes = saved

    def current_scope(self) -> VariableScope:
        """The innermost variable scope (the root one, named "", outside every scope)."""
        inner = [i for i, s in enumerate(self._scopes) if s.is_variable_scope]
        if not inner:
            return VariableScope("", self._root)
        last = inner[-1]
        return VariableScope(self._scope_prefix(self._scopes[:last + 1]).rstrip("/"), self._scopes[last])

    def current_reuse(self) -> Any:
        return next((s.reuse for s in reversed([self._root, *self._scopes]) if s.reuse), None)

    # -- building ----------------------------------------------------------------------
    def create_op(self, kind: str, inputs: Sequence[Tensor], attrs: dict[str, Any] | None = None,
                  name: str | None = None, *, scoped: bool = True) -> Operation:
        """Records one op: validates its inputs, infers its outputs and iteration space.

        Raises:
            ValueError: for an unknown kind, inputs from another graph, or inputs the op
                definition rejects (the message names the op and the shapes seen).
        """
        from tensoropt.ops.registry import get_op_def  # noqa: PLC0415 - see Operation.op_def

        op_def = get_op_def(kind)
        for t in inputs:
            if not isinstance(t, Tensor):
                raise ValueError(f"{kind}: expected tensoropt Tensors as inputs, got {t!r}")
            if t.graph is not self:
                raise ValueError(
                    f"{kind}: input {t.name} belongs to another graph; build the whole model "
                    "after one reset_default_graph()"
                )
        attrs = dict(attrs or {})
        op_name = self.unique_name(name or op_def.default_name, scoped=scoped)
        op = Operation(self, op_name, kind, tuple(inputs), attrs)
        try:
            signature = op_def.infer(op)
        except ValueError:
            self._names.discard(op_name)
            raise
        outputs = []
        for i, (shape, dtype) in enumerate(signature.outputs):
            if kind == "variable":
                outputs.append(Variable(op, i, shape, dtype, attrs["initializer"], attrs["trainable"]))
            else:
                outputs.append(Tensor(op, i, shape, dtype))
        op.outputs = tuple(outputs)
        op.space = signature.space
        op.index = len(self.operations)
        self.operations.append(op)
        return op

    @contextlib.contextmanager
    def as_default(self) -> Iterator["Graph"]:
        """``with graph.as_default():`` records into this graph, as in TensorFlow."""
        global _default_graph
        previous = _default_graph
        _default_graph = self
        try:
            yield self
        finally:
            _default_graph = previous

    # -- queries -----------------------------------------------------------------------
    @property
    def trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables.values() if v.trainable]

    def get_operation_by_name(self, name: str) -> Operation:
        for op in self.operations:
            if op.name == name:
                return op
        raise KeyError(f"no operation named {name!r} in the recorded graph")

    def edges(self) -> list[tuple[Operation, int, Operation, int]]:
        """Every (producer, output index, consumer, input index) data edge."""
        out = []
        for op in self.operations:
            for j, t in enumerate(op.inputs):
                out.append((t.op, t.value_index, op, j))
        return out


_default_graph = Graph()


def get_default_graph() -> Graph:
    """The graph that ops are recorded into, as ``tf.compat.v1.get_default_graph``."""
    return _default_graph


def reset_default_graph() -> None:
    """Starts a new empty recording, as ``tf.compat.v1.reset_default_graph``."""
    global _default_graph
    _default_graph = Graph()


def name_scope(name: str | None):
    """``with tensoropt.name_scope("block"):`` prefixes the names of ops recorded inside."""
    return get_default_graph().name_scope(name)


def variable_scope(name_or_scope: str | None, reuse: Any = None, default_name: str | None = None):
    """``with tensoropt.variable_scope("layer", reuse=...):`` prefixes variables and ops.

    ``reuse=True`` or ``tensoropt.AUTO_REUSE`` lets ``get_variable`` return an existing
    variable of the same name, as in TensorFlow 1.x.
    """
    graph = get_default_graph()
    if isinstance(name_or_scope, VariableScope):   # entered again, as it was captured
        return graph.variable_scope(name_or_scope.name, reuse if reuse is not None else name_or_scope.reuse,
                                    absolute=True)
    name = name_or_scope
    if name is None:  # as TensorFlow: a fresh scope named after default_name
        name = graph.unique_name(default_name or "scope").rsplit("/", 1)[-1]
    return graph.variable_scope(name, reuse)


def get_variable_scope() -> VariableScope:
    """The current variable scope, as ``tf.compat.v1.get_variable_scope()``:
    ``get_variable_scope().reuse_variables()`` makes later ``get_variable`` calls in it
    (at the top level: everywhere) return existing variables."""
    return get_default_graph().current_scope()
