"""Horovod process sets for the mesh-axis groups of ``tensoropt.cluster.mesh``.

Usage::

    from tensoropt.execution.process_sets import register_process_sets

    sets = register_process_sets(hvd, comm)   # calls hvd.init; {group: hvd.ProcessSet}
    sets[(0, 2)].size()
"""

from __future__ import annotations

from typing import Any

from tensoropt.cluster.mesh import process_set_groups

__all__ = ["process_sets_for_init", "register_process_sets"]


def process_sets_for_init(hvd: Any, n: int) -> tuple[list[Any], dict[tuple[int, ...], Any]]:
    """The ``hvd.ProcessSet`` objects to pass to ``hvd.init(process_sets=...)``.

    The group of all ``n`` ranks is horovod's global process set and is not registered again.

    Returns:
        ``(to_register, mapping)``: the list for ``hvd.init`` and the map group -> ProcessSet
        (the full group maps to ``hvd.global_process_set``).
    """
    full = tuple(range(n))
    mapping: dict[tuple[int, ...], Any] = {}
    to_register = []
    for group in process_set_groups(n):
        if group == full:
            mapping[group] = hvd.global_process_set
        else:
            ps = hvd.ProcessSet(list(group))
            mapping[group] = ps
            to_register.append(ps)
    return to_register, mapping


def register_process_sets(hvd: Any, comm: Any = None) -> dict[tuple[int, ...], Any]:
    """Initializes horovod with one static process set per mesh-axis group.

    Calls ``hvd.init(comm=comm, process_sets=...)`` (horovod 0.28 only accepts static process
    sets at init), so call it instead of ``hvd.init``. The world size is ``comm.Get_size()``
    (mpi4py communicator), or the MPI world when ``comm`` is None.

    Returns:
        Map sorted rank tuple -> ``hvd.ProcessSet`` for every group of
        :func:`process_set_groups`; the group of all ranks is ``hvd.global_process_set``.
    """
    if comm is None:
        from tensoropt.execution.mpi_env import import_mpi  # noqa: PLC0415

        comm = import_mpi().COMM_WORLD
    to_register, mapping = process_sets_for_init(hvd, comm.Get_size())
    hvd.init(comm=comm, process_sets=to_register)
    return mapping
