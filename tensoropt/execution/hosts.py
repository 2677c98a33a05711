"""Which machine each rank runs on: host names, grouped into machines.

``init`` gathers every rank's host name. ``TENSOROPT_HOSTS`` (a comma-separated list, one
name per rank, or ``name:count`` entries) overrides them, so that one machine can stand
in for several in tests and dry runs. A cluster is machines x devices per machine with the ranks of one machine
numbered consecutively, which is how ``mpirun --map-by slot`` (its default) and
``horovodrun -H a:8,b:8`` place them; any other placement is refused with the fix.

Usage::

    hostnames = job_hostnames(comm.allgather(socket.gethostname()), os.environ)
    machines, per_machine = machine_shape(hostnames)
    machine_groups(hostnames)      # ((0, 1), (2, 3)) for a, a, b, b: each machine's ranks
"""

from __future__ import annotations

from typing import Mapping, Sequence

__all__ = ["HOSTS_ENV", "job_hostnames", "machine_shape", "machine_groups"]

HOSTS_ENV = "TENSOROPT_HOSTS"


def job_hostnames(gathered: Sequence[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    """Each rank's host: the gathered names, or ``TENSOROPT_HOSTS`` when set.

    ``TENSOROPT_HOSTS`` lists one name per rank (``a,a,b,b``); an entry ``name:count``
    stands for ``count`` ranks on that host (``a:8,b:8``, as ``horovodrun -H``).

    Raises:
        ValueError: ``TENSOROPT_HOSTS`` has an empty name or a bad count, or does not name
            one host per rank.
    """
    override = environ.get(HOSTS_ENV, "").strip()
    if not override:
        return tuple(gathered)
    n = len(gathered)
    example = f"{HOSTS_ENV}=a:{n // 2},b:{n - n // 2}" if n > 1 else f"{HOSTS_ENV}=a"
    names: list[str] = []
    for entry in override.split(","):
        name, colon, count = (part.strip() for part in entry.partition(":"))
        if not name or (colon and not (count.isdigit() and int(count) > 0)):
            raise ValueError(f"{HOSTS_ENV}={override!r}: entry {entry.strip()!r} is not a host name or "
                             f"name:count with a count >= 1; e.g. {example}")
        names += [name] * (int(count) if colon else 1)
    if len(names) != n:
        raise ValueError(f"{HOSTS_ENV}={override!r} names {len(names)} host(s) for {n} rank(s); give one "
                         f"name per rank, or name:count entries adding up to {n}, e.g. {example}")
    return tuple(names)


def machine_shape(hostnames: Sequence[str]) -> tuple[int, int]:
    """(machines, devices per machine) of a job whose rank r runs on ``hostnames[r]``.

    Raises:
        ValueError: machines run different numbers of ranks, or a machine's ranks are
            not numbered consecutively (naming the hosts and the mpirun option to use).
    """
    order: list[str] = []
    for h in hostnames:
        if not order or order[-1] != h:
            order.append(h)
    counts = {h: hostnames.count(h) for h in order}
    if len(order) != len(counts):
        raise ValueError(f"ranks of one host are not numbered consecutively ({', '.join(hostnames)}); "
                         "launch with mpirun --map-by slot (or horovodrun -H a:N,b:N)")
    if len(set(counts.values())) != 1:
        raise ValueError(f"hosts run different numbers of ranks ({counts}); TensorOpt plans for "
                         "machines x devices per machine: give every host the same number of slots")
    return len(order), len(hostnames) // len(order)


def machine_groups(hostnames: Sequence[str]) -> tuple[tuple[int, ...], ...]:
    """Each machine's ranks, machine by machine (``machine_shape``'s placement).

    They are the groups of the mesh's last axes of ``devices_per_machine`` ranks, so each
    has its horovod process set (``execution.process_sets``): a plan's collectives inside
    one machine run on one machine's ranks.

    Raises:
        ValueError: as ``machine_shape``.
    """
    machines, per_machine = machine_shape(hostnames)
    return tuple(tuple(range(m * per_machine, (m + 1) * per_machine)) for m in range(machines))
