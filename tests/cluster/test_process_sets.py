"""Mesh-axis rank groups and their (group_size, stride) schemes."""

import pytest

from tensoropt.cluster.mesh import (device_meshes, group_scheme, mesh_axis_groups, partition_schemes,
                                    process_set_groups, scheme_groups)


def test_meshes():
    assert device_meshes(1) == ((1,),)   # a layout needs one axis
    assert device_meshes(4) == ((4,), (2, 2))   # fewest axes first
    assert sorted(device_meshes(8)) == [(2, 2, 2), (2, 4), (4, 2), (8,)]
    assert (2, 2, 2, 2) not in device_meshes(16)
    assert len(device_meshes(16)) == 1 + 3 + 3  # [16]; [2,8],[4,4],[8,2]; [2,2,4],[2,4,2],[4,2,2]
    assert len(device_meshes(16, max_axes=2)) == 4
    with pytest.raises(ValueError):
        device_meshes(0)


def test_groups_n4():
    assert mesh_axis_groups((4,), 0) == [(0, 1, 2, 3)]
    assert mesh_axis_groups((2, 2), 0) == [(0, 2), (1, 3)]
    assert mesh_axis_groups((2, 2), 1) == [(0, 1), (2, 3)]
    assert process_set_groups(4) == [(0, 1), (0, 1, 2, 3), (0, 2), (1, 3), (2, 3)]
    assert partition_schemes(4) == [(2, 1), (2, 2), (4, 1)]


def test_groups_last_axis_fastest():
    assert mesh_axis_groups((2, 4), 1) == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert mesh_axis_groups((2, 4), 0) == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert mesh_axis_groups((2, 2, 2), 1) == [(0, 2), (1, 3), (4, 6), (5, 7)]


def test_group_counts_n8_n16():
    # every (g, s) with g > 1 and g * s | n is a mesh-axis scheme; n/g groups each
    for n, n_groups, n_schemes in ((8, 12 + 4 + 1, 6), (16, 32 + 12 + 4 + 1, 10)):
        groups = process_set_groups(n)
        assert len(groups) == len(set(groups)) == n_groups
        assert len(partition_schemes(n)) == n_schemes
        for g, s in partition_schemes(n):
            assert sum(1 for grp in groups if group_scheme(grp) == (g, s)) == n // g
    assert process_set_groups(1) == []


def test_group_scheme():
    assert group_scheme((1, 3)) == (2, 2)
    assert group_scheme([6, 2, 4]) == (3, 2)
    assert group_scheme((5,)) == (1, 1)
    with pytest.raises(ValueError, match="not evenly spaced"):
        group_scheme((0, 1, 3))
    with pytest.raises(ValueError, match="empty"):
        group_scheme(())


def test_scheme_groups_partition_ranks():
    for g, s in partition_schemes(16):
        groups = scheme_groups(16, g, s)
        assert sorted(r for grp in groups for r in grp) == list(range(16))
    with pytest.raises(ValueError, match="must divide"):
        scheme_groups(6, 4, 1)
