"""A parallelization plan: the one value that crosses from search to execution.

A plan is plain data, JSON-serializable, and imports nothing from the rest of the
package. It says, for every op, the device mesh and which mesh axis splits which of the
op's iteration dims, and carries the estimated costs. A plan found on a laptop for a
16-GPU cluster can be saved, read, and executed later.

Usage::

    plan.save("plan.json")
    plan = Plan.load("plan.json")     # ValueError naming the file and the problem if corrupt
    print(plan)                       # a readable summary
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["OpConfig", "Plan", "PLAN_FORMAT_VERSION"]

PLAN_FORMAT_VERSION = 1


@dataclass(frozen=True)
class OpConfig:
    """One op's configuration.

    Attributes:
        mesh: the device mesh, e.g. ``(2, 4)``; ``()`` on one device.
        dim_axes: iteration dim -> mesh axis that splits it. A mesh axis split over a
            reduction dim leaves a partial sum; an axis that splits nothing means the op is
            computed redundantly along it.
    """

    mesh: tuple[int, ...] = ()
    dim_axes: tuple[tuple[str, int], ...] = ()

    def __str__(self) -> str:
        mesh = "[" + ",".join(map(str, self.mesh)) + "]"
        split = ",".join(f"{d}:{a}" for d, a in self.dim_axes) or "-"
        return f"{mesh} {split}"


@dataclass
class Plan:
    """A whole-graph plan and its estimated costs.

    Attributes:
        parallelism: the number of devices (MPI ranks) it runs on.
        option: the search option that chose it ("single_device", "mini_time", ...).
        ops: op name -> OpConfig.
        memory_bytes: estimated peak memory per device, or None if not estimated.
        time_s: estimated per-iteration time, or None if not estimated.
        network_s: estimated communication time per iteration, or None.
        compute_s: estimated computation time per iteration, or None.
        edges: per data edge, the re-scheduling steps and the reuse choice (filled by search).
        notes: free text (how the estimate was made).
    """

    parallelism: int
    option: str
    ops: dict[str, OpConfig]
    memory_bytes: float | None = None
    time_s: float | None = None
    network_s: float | None = None
    compute_s: float | None = None
    edges: list[dict[str, Any]] = field(default_factory=list)
    notes: str = ""
    # Not serialized: what find_strategy found beside the chosen plan.
    frontier: list["Plan"] = field(default_factory=list, repr=False, compare=False)
    data_parallel: "Plan | None" = field(default=None, repr=False, compare=False)

    # -- JSON ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)
             if f.name not in ("frontier", "data_parallel")}
        d["format_version"] = PLAN_FORMAT_VERSION
        d["ops"] = {name: {"mesh": list(c.mesh), "dim_axes": dict(c.dim_axes)}
                    for name, c in self.ops.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "plan") -> "Plan":
        """Rebuilds a plan; raises ValueError naming ``source`` and the bad field."""
        if not isinstance(d, dict):
            raise ValueError(f"{source}: expected a JSON object, found {type(d).__name__}")
        version = d.get("format_version")
        if version != PLAN_FORMAT_VERSION:
            raise ValueError(f"{source}: plan format_version {version!r}, this TensorOpt reads "
                             f"{PLAN_FORMAT_VERSION}; search the plan again with find_strategy")
        try:
            ops = {str(name): OpConfig(tuple(int(m) for m in c["mesh"]),
                                       tuple((str(k), int(v)) for k, v in c["dim_axes"].items()))
                   for name, c in d["ops"].items()}
            return cls(parallelism=int(d["parallelism"]), option=str(d["option"]), ops=ops,
                       memory_bytes=_opt_float(d.get("memory_bytes")), time_s=_opt_float(d.get("time_s")),
                       network_s=_opt_float(d.get("network_s")), compute_s=_opt_float(d.get("compute_s")),
                       edges=list(d.get("edges", [])), notes=str(d.get("notes", "")))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"{source}: not a valid TensorOpt plan ({type(e).__name__}: {e}); "
                             "search it again with find_strategy and save it with plan.save()") from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, source: str = "plan") -> "Plan":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{source}: not valid JSON ({e}); the file is corrupt or truncated, "
                             "search the plan again with find_strategy") from None
        return cls.from_dict(data, source)

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            f.write(self.to_json())

    @classmethod
    def load(cls, path: str) -> "Plan":
        with open(path) as f:
            return cls.from_json(f.read(), source=path)

    def __str__(self) -> str:
        def fmt(v, unit):
            return "not estimated" if v is None else (f"{v / 2**30:.3f} GiB" if unit == "B" else f"{v:.4g} s")
        lines = [f"Plan({self.option}, {self.parallelism} device(s), {len(self.ops)} ops)",
                 f"  memory/device {fmt(self.memory_bytes, 'B')}, time/iter {fmt(self.time_s, 's')}, "
                 f"network {fmt(self.network_s, 's')}, compute {fmt(self.compute_s, 's')}"]
        if self.notes:
            lines.append(f"  {self.notes}")
        return "\n".join(lines)


def _opt_float(v):
    return None if v is None else float(v)
