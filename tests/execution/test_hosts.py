"""Host names grouped into machines (no MPI)."""

import pytest

from tensoropt.cluster.mesh import process_set_groups
from tensoropt.execution.hosts import job_hostnames, machine_groups, machine_shape


def test_the_override_names_one_host_per_rank():
    assert job_hostnames(["n", "n"], {}) == ("n", "n")
    assert job_hostnames(["n"] * 4, {"TENSOROPT_HOSTS": "a, a,b,b"}) == ("a", "a", "b", "b")
    with pytest.raises(ValueError, match="names 3 host.*4 rank"):
        job_hostnames(["n"] * 4, {"TENSOROPT_HOSTS": "a,a,b"})
    with pytest.raises(ValueError, match="entry '' is not a host name"):
        job_hostnames(["n"] * 2, {"TENSOROPT_HOSTS": "a,"})


def test_the_override_takes_name_count_entries():
    assert job_hostnames(["n"] * 4, {"TENSOROPT_HOSTS": "a:2, b:2"}) == ("a", "a", "b", "b")
    assert job_hostnames(["n"] * 3, {"TENSOROPT_HOSTS": "a:2,b"}) == ("a", "a", "b")
    assert job_hostnames(["n"] * 16, {"TENSOROPT_HOSTS": "a:8,b:8"}) == ("a",) * 8 + ("b",) * 8
    with pytest.raises(ValueError, match=r"names 3 host\(s\) for 4 rank\(s\).*adding up to 4, e.g. TENSOROPT_HOSTS=a:2,b:2"):
        job_hostnames(["n"] * 4, {"TENSOROPT_HOSTS": "a:2,b"})
    for bad in ("a:0,b:4", "a:two,b:2", ":2,b:2", "a:,b:3"):
        with pytest.raises(ValueError, match=f"entry '{bad.split(',')[0]}' is not a host name or name:count"):
            job_hostnames(["n"] * 4, {"TENSOROPT_HOSTS": bad})


@pytest.mark.parametrize("hosts, shape", [(["a"], (1, 1)), (["a"] * 4, (1, 4)), (["a", "a", "b", "b"], (2, 2)),
                                          (["x", "y", "z"], (3, 1))])
def test_machine_shape(hosts, shape):
    assert machine_shape(hosts) == shape


def test_placements_that_are_not_machines_by_devices_are_refused():
    with pytest.raises(ValueError, match="--map-by slot"):
        machine_shape(["a", "b", "a", "b"])
    with pytest.raises(ValueError, match="same number of slots"):
        machine_shape(["a", "a", "a", "b"])


@pytest.mark.parametrize("machines, per_machine", [(2, 2), (2, 4), (4, 2), (2, 8), (3, 2)])
def test_each_machines_ranks_have_a_process_set(machines, per_machine):
    hosts = [f"h{m}" for m in range(machines) for _ in range(per_machine)]
    groups = machine_groups(hosts)
    assert groups == tuple(tuple(range(m * per_machine, (m + 1) * per_machine)) for m in range(machines))
    registered = set(process_set_groups(machines * per_machine))
    assert set(groups) <= registered
    # and the ranks with one local index, one per machine
    assert {tuple(range(i, machines * per_machine, per_machine)) for i in range(per_machine)} <= registered
