"""A parallelization plan: the one value that crosses from search to execution.

A plan is a frozen, hashable value that serializes to JSON, and imports nothing from the
rest of the package (only ``reschedule``'s layouts and steps). It says, for every op, the
device mesh and which mesh axis splits which of the op's iteration dims; for every data
edge, the re-scheduling steps and the tensor-reuse choice (an ``EdgePlan``); and it
carries the estimated costs. A plan found on a laptop for a 16-GPU cluster can be saved,
read, and executed later.

Every value is checked when it is made, so a plan read from a file is checked field by
field: each step is rebuilt through the ``reschedule.Step`` constructor of its kind, each
layout through ``Layout``; a bad field raises ``ValueError`` naming the file, the op or
edge, and the field.

Usage::

    plan.save("plan.json")
    plan = Plan.load("plan.json")     # ValueError naming the file, op/edge and field if corrupt
    print(plan)                       # a readable summary
    plan.edges[0].forward_steps       # (reschedule.Step, ...)
    dataclasses.replace(plan, notes="checked")    # plans are frozen: make a changed copy
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any, Mapping

from tensoropt._plan_parts import REUSE_CHOICES, EdgePlan, FrozenMap, OpConfig, check_fields, is_int
from tensoropt.units import format_bytes   # pure: imports nothing
from tensoropt.validation import atomic_write_text   # pure: imports nothing of tensoropt

__all__ = ["OpConfig", "EdgePlan", "Plan", "FrozenMap", "PLAN_FORMAT_VERSION", "REUSE_CHOICES"]

PLAN_FORMAT_VERSION = 1
_ESTIMATES = ("memory_bytes", "time_s", "network_s", "compute_s")


@dataclass(frozen=True)
class Plan:
    """A whole-graph plan and its estimated costs; frozen and hashable.

    Attributes:
        parallelism: the number of devices (MPI ranks) it runs on.
        option: the search option that chose it ("single_device", "mini_time", ...).
        ops: op name -> OpConfig (a read-only mapping).
        memory_bytes: estimated peak memory per device, or None if not estimated.
        time_s: estimated per-iteration time, or None if not estimated.
        network_s: estimated communication time per iteration, or None.
        compute_s: estimated computation time per iteration, or None.
        edges: per data edge, an EdgePlan (filled by search).
        notes: free text (how the estimate was made).

    Raises:
        ValueError: naming the op or edge and the field: a mesh whose devices are not
            ``parallelism``, an edge between ops the plan does not configure, or an edge
            layout on another mesh than its op's.
    """

    parallelism: int
    option: str
    ops: Mapping[str, OpConfig]
    memory_bytes: float | None = None
    time_s: float | None = None
    network_s: float | None = None
    compute_s: float | None = None
    edges: tuple[EdgePlan, ...] = ()
    notes: str = ""

    def __post_init__(self) -> None:
        if not is_int(self.parallelism) or self.parallelism < 1:
            raise ValueError(f"field 'parallelism': expected a positive int, found {self.parallelism!r}")
        if not isinstance(self.option, str) or not isinstance(self.notes, str):
            raise ValueError("fields 'option' and 'notes': expected text")
        for name in _ESTIMATES:
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ValueError(f"field {name!r}: expected a number or null, found {value!r}")
                object.__setattr__(self, name, float(value))
        ops = self.ops if isinstance(self.ops, FrozenMap) else FrozenMap(self.ops)
        object.__setattr__(self, "ops", ops)
        for name, config in ops.items():
            if not isinstance(config, OpConfig):
                raise ValueError(f"op {name!r}: expected an OpConfig, found {config!r}")
            if config.devices != self.parallelism:
                raise ValueError(f"op {name!r}: field 'mesh': mesh {list(config.mesh)} has "
                                 f"{config.devices} device(s), the plan's parallelism is {self.parallelism}")
        object.__setattr__(self, "edges", tuple(self.edges))
        for k, edge in enumerate(self.edges):
            if not isinstance(edge, EdgePlan):
                raise ValueError(f"edge {k}: expected an EdgePlan, found {type(edge).__name__}")
            for end, layout, field_name in ((edge.producer, edge.src_layout, "src_layout"),
                                            (edge.consumer, edge.dst_layout, "dst_layout")):
                if end not in ops:
                    raise ValueError(f"edge {k} ({edge.name}): op {end!r} has no configuration in the plan")
                mesh = ops[end].mesh or (1,)
                if layout.mesh != mesh:
                    raise ValueError(f"edge {k} ({edge.name}): field {field_name!r}: layout {layout} "
                                     f"is on mesh {list(layout.mesh)}, but op {end!r} runs on mesh "
                                     f"{list(mesh)}")

    # -- JSON ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["format_version"] = PLAN_FORMAT_VERSION
        d["ops"] = {name: c.to_dict() for name, c in self.ops.items()}
        d["edges"] = [e.to_dict() for e in self.edges]
        return d

    @classmethod
    def from_dict(cls, d: Any, source: str = "plan") -> "Plan":
        """Rebuilds and checks a plan; raises ValueError naming ``source``, the op or edge,
        and the bad field."""
        if not isinstance(d, dict):
            raise ValueError(f"{source}: expected a JSON object, found {type(d).__name__}")
        version = d.get("format_version")
        if version != PLAN_FORMAT_VERSION:
            raise ValueError(f"{source}: plan format_version {version!r}, this TensorOpt reads "
                             f"{PLAN_FORMAT_VERSION}; search the plan again with find_strategy")
        fix = "search it again with find_strategy and save it with plan.save()"
        try:
            check_fields(d, ("format_version", "parallelism", "option", "ops"),
                          (*_ESTIMATES, "edges", "notes"))
        except ValueError as e:
            raise ValueError(f"{source}: not a valid TensorOpt plan: {e}; {fix}") from None
        if not isinstance(d["ops"], dict):
            raise ValueError(f"{source}: field 'ops': expected an object op name -> configuration; {fix}")
        ops = {}
        for name, c in d["ops"].items():
            try:
                ops[name] = OpConfig.from_dict(c)
            except ValueError as e:
                raise ValueError(f"{source}: op {name!r}: {e}; {fix}") from None
        edges = []
        if not isinstance(d.get("edges", []), list):
            raise ValueError(f"{source}: field 'edges': expected a list of edges; {fix}")
        for k, e in enumerate(d.get("edges", [])):
            try:
                edges.append(EdgePlan.from_dict(e))
            except ValueError as err:
                where = (f" ({e.get('producer')}:{e.get('output')} -> {e.get('consumer')}:{e.get('input')})"
                         if isinstance(e, dict) else "")
                raise ValueError(f"{source}: edge {k}{where}: {err}; {fix}") from None
        try:
            return cls(parallelism=d["parallelism"], option=d["option"], ops=ops,
                       **{k: d.get(k) for k in _ESTIMATES}, edges=tuple(edges), notes=d.get("notes", ""))
        except ValueError as e:
            raise ValueError(f"{source}: {e}; {fix}") from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)

    def canonical_json(self) -> str:
        """What execution depends on (parallelism, ops, edges) as compact JSON with sorted
        keys: two plans that run alike give the same text, whatever their estimates."""
        d = self.to_dict()
        return json.dumps({k: d[k] for k in ("parallelism", "ops", "edges")}, sort_keys=True,
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, source: str = "plan") -> "Plan":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{source}: not valid JSON ({e}); the file is corrupt or truncated, "
                             "search the plan again with find_strategy") from None
        return cls.from_dict(data, source)

    def save(self, path: str) -> None:
        """Writes the plan as JSON, atomically: a failed save leaves ``path`` as it was."""
        atomic_write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str) -> "Plan":
        """Reads a plan written by ``save``; ValueError naming the file if unreadable or invalid."""
        try:
            with open(path) as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"plan file {str(path)!r} cannot be read ({getattr(e, 'strerror', None) or e}); "
                             "give the path that plan.save() or tensoropt plan --out wrote") from None
        return cls.from_json(text, source=str(path))

    def __str__(self) -> str:
        def fmt(v, unit):
            return "not estimated" if v is None else (format_bytes(v) if unit == "B" else f"{v:.4g} s")
        lines = [f"Plan({self.option}, {self.parallelism} device(s), {len(self.ops)} ops)",
                 f"  memory/device {fmt(self.memory_bytes, 'B')}, time/iter {fmt(self.time_s, 's')}, "
                 f"network {fmt(self.network_s, 's')}, compute {fmt(self.compute_s, 's')}"]
        if self.notes:
            lines.append(f"  {self.notes}")
        return "\n".join(lines)

