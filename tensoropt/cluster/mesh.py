"""Device meshes and their rank groups: the mesh geometry, written once (pure data).

A device mesh of ``n`` ranks is an ordered factorization of ``n`` into factors > 1 (up to
three axes). Ranks are laid out row-major, the last axis fastest; a collective "along mesh
axis a" runs in the groups of ranks that differ only in coordinate ``a``. Every such group
is an arithmetic progression ``base, base + stride, ..., base + (size - 1) * stride``, where
``stride`` is the product of the mesh axes after ``a``. The pair ``(group_size, stride)`` is
the group's *partitioning scheme*: all groups of one scheme partition the ranks and run
together, so they contend for the same links.

Usage::

    from tensoropt.cluster.mesh import device_meshes, process_set_groups, group_scheme

    device_meshes(4)               # ((4,), (2, 2)): fewest axes first
    process_set_groups(4)          # [(0, 1), (0, 1, 2, 3), (0, 2), (1, 3), (2, 3)]
    group_scheme((1, 3))           # (2, 2): two ranks, stride 2

The horovod process sets of these groups are registered by
``tensoropt.execution.process_sets``.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["device_meshes", "mesh_axis_groups", "process_set_groups", "group_scheme",
           "partition_schemes", "scheme_groups", "MAX_MESH_AXES"]

MAX_MESH_AXES = 3


@lru_cache(maxsize=None)
def device_meshes(n: int, max_axes: int = MAX_MESH_AXES) -> tuple[tuple[int, ...], ...]:
    """Every ordered factorization of ``n`` into 1..max_axes factors > 1, fewest axes first
    (then ascending); one device has the single mesh ``(1,)`` (a layout needs one axis).

    Raises:
        ValueError: if ``n`` < 1 or ``max_axes`` < 1.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"device_meshes: n must be a positive int, got {n!r}")
    if max_axes < 1:
        raise ValueError(f"device_meshes: max_axes must be >= 1, got {max_axes}")
    if n == 1:
        return ((1,),)
    out: list[tuple[int, ...]] = []

    def rec(rest: int, prefix: tuple[int, ...]) -> None:
        if rest == 1:
            out.append(prefix)
            return
        if len(prefix) == max_axes:
            return
        for f in range(2, rest + 1):
            if rest % f == 0:
                rec(rest // f, prefix + (f,))

    rec(n, ())
    return tuple(sorted(out, key=lambda m: (len(m), m)))


def mesh_axis_groups(mesh: tuple[int, ...], axis: int) -> list[tuple[int, ...]]:
    """The groups of ranks that differ only in coordinate ``axis`` of ``mesh``, sorted.

    Raises:
        ValueError: for an axis outside the mesh.
    """
    if not 0 <= axis < len(mesh):
        raise ValueError(f"mesh_axis_groups: axis {axis} is not an axis of mesh {list(mesh)}")
    n = 1
    for f in mesh:
        n *= f
    stride = 1
    for f in mesh[axis + 1:]:
        stride *= f
    return scheme_groups(n, mesh[axis], stride)


def scheme_groups(n: int, group_size: int, stride: int) -> list[tuple[int, ...]]:
    """All groups of the scheme ``(group_size, stride)`` over ranks ``0..n-1``, sorted.

    Raises:
        ValueError: if ``group_size * stride`` does not divide ``n``.
    """
    if group_size < 1 or stride < 1 or n % (group_size * stride) != 0:
        raise ValueError(f"scheme_groups: group_size={group_size} x stride={stride} must divide "
                         f"the {n} ranks; a mesh-axis group of {n} ranks always does")
    bases = [r for r in range(n) if (r // stride) % group_size == 0]
    return [tuple(b + j * stride for j in range(group_size)) for b in bases]


def group_scheme(group: tuple[int, ...] | list[int]) -> tuple[int, int]:
    """``(group_size, stride)`` of a group of ranks in arithmetic progression.

    A group of one rank has stride 1.

    Raises:
        ValueError: for an empty group or one whose ranks are not evenly spaced.
    """
    ranks = sorted(group)
    if not ranks:
        raise ValueError("group_scheme: the group is empty")
    if len(ranks) == 1:
        return 1, 1
    stride = ranks[1] - ranks[0]
    if stride <= 0 or any(b - a != stride for a, b in zip(ranks, ranks[1:])):
        raise ValueError(f"group_scheme: ranks {ranks} are not evenly spaced; mesh-axis groups "
                         "always are (see process_set_groups)")
    return len(ranks), stride


def process_set_groups(n: int, max_axes: int = MAX_MESH_AXES) -> list[tuple[int, ...]]:
    """Every group of every mesh axis of every device mesh of ``n`` ranks, deduplicated, sorted.

    Groups of one rank never appear (mesh factors are > 1).
    """
    groups: set[tuple[int, ...]] = set()
    for mesh in device_meshes(n, max_axes):
        for axis, size in enumerate(mesh):
            if size > 1:  # the one-device mesh (1,) has no group of two ranks
                groups.update(mesh_axis_groups(mesh, axis))
    return sorted(groups)


def partition_schemes(n: int, max_axes: int = MAX_MESH_AXES) -> list[tuple[int, int]]:
    """The distinct ``(group_size, stride)`` schemes of :func:`process_set_groups`, sorted."""
    return sorted({group_scheme(g) for g in process_set_groups(n, max_axes)})
