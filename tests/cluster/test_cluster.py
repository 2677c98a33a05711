"""Cluster presets, scaling, and cluster files (JSON/YAML) with their errors."""

import json

import pytest

from tensoropt.cluster import PRESETS, Cluster, Link, get_cluster, preset_names


def test_paper_presets_numbers():
    c = get_cluster("paper-v100x16")
    assert (c.machines, c.devices_per_machine, c.devices) == (2, 8, 16)
    assert c.memory_bytes == 16 * 2**30
    assert c.peak_flops == 15.7e12
    assert c.intra == Link(130e9, 5e-6)
    assert c.inter == Link(12.5e9, 10e-6)  # 100 Gb/s EDR
    assert get_cluster("paper-nordma").inter.bandwidth_bytes_per_s == pytest.approx(6.25e9)
    assert get_cluster("paper-4xrdma").inter.bandwidth_bytes_per_s == pytest.approx(50e9)
    for name in ("paper-nordma", "paper-4xrdma"):
        other = get_cluster(name)
        assert (other.machines, other.devices_per_machine, other.intra) == (2, 8, c.intra)
    pcie = get_cluster("paper-pcie")
    assert (pcie.machines, pcie.devices_per_machine) == (1, 8)
    assert pcie.intra.bandwidth_bytes_per_s == pytest.approx(130e9 / 20)
    assert set(PRESETS) < set(preset_names()) and "local" in preset_names()


def test_scaled():
    c = get_cluster("paper-v100x16")
    assert c.scaled(16) is c
    c32 = get_cluster("paper-v100x16", devices=32)
    assert (c32.machines, c32.devices_per_machine, c32.name) == (4, 8, "paper-v100x16@32")
    c8 = c.scaled(8)
    assert (c8.machines, c8.devices_per_machine) == (1, 8)
    c4 = c.scaled(4)
    assert (c4.machines, c4.devices_per_machine, c4.intra, c4.inter) == (1, 4, c.intra, c.inter)
    assert c4.scaled(2).name == "paper-v100x16@2"
    assert get_cluster("paper-pcie", devices=16).machines == 2
    with pytest.raises(ValueError, match="use 16 or 24"):
        c.scaled(20)
    with pytest.raises(ValueError, match=">= 1"):
        c.scaled(0)


def test_machine_of():
    c = get_cluster("paper-v100x16")
    assert [c.machine_of(r) for r in (0, 7, 8, 15)] == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="outside"):
        c.machine_of(16)


def test_constructor_validation():
    with pytest.raises(ValueError, match="bandwidth"):
        Link(0, 1e-6)
    with pytest.raises(ValueError, match="latency"):
        Link(1e9, -1)
    with pytest.raises(ValueError, match="machines"):
        Cluster("x", 0, 8, 1e9, 1e12, Link(1e9, 0), Link(1e9, 0))


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_file_round_trip(tmp_path, suffix):
    if suffix == ".yaml":
        pytest.importorskip("yaml")
    c = get_cluster("paper-4xrdma", devices=32)
    path = tmp_path / f"c{suffix}"
    c.to_file(path)
    assert Cluster.from_file(path) == c
    assert get_cluster(str(path)) == c
    assert get_cluster(str(path), devices=8).devices == 8


def _write(tmp_path, data, name="bad.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize("mutate, pattern", [
    (lambda d: d.update(machines=0), r"field 'machines' must be an integer >= 1"),
    (lambda d: d.update(devices_per_machine=2.5), r"field 'devices_per_machine'"),
    (lambda d: d.update(memory_bytes=-1), r"field 'memory_bytes' must be a positive number"),
    (lambda d: d.update(peak_flops="fast"), r"field 'peak_flops'"),
    (lambda d: d["intra"].update(bandwidth_bytes_per_s=0), r"field 'intra.bandwidth_bytes_per_s'"),
    (lambda d: d["inter"].update(latency_s=-1e-6), r"field 'inter.latency_s'"),
    (lambda d: d["inter"].pop("latency_s"), r"field 'inter' must be an object with exactly"),
    (lambda d: d.pop("peak_flops"), r"missing field\(s\) \['peak_flops'\]"),
    (lambda d: d.update(bandwidth=1), r"unknown field\(s\) \['bandwidth'\]"),
    (lambda d: d.update(format_version=99), r"'format_version' is 99"),
    (lambda d: d.update(name=3), r"field 'name' must be a string"),
])
def test_bad_file_errors_name_file_and_field(tmp_path, mutate, pattern):
    data = get_cluster("paper-v100x16").to_dict()
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(ValueError, match=pattern) as info:
        Cluster.from_file(path)
    assert str(path) in str(info.value) and "Cluster.to_file" in str(info.value)


def test_unparsable_and_missing_files(tmp_path):
    with pytest.raises(ValueError, match="not valid JSON"):
        Cluster.from_file(_write(tmp_path, "{machines: 2"))
    with pytest.raises(ValueError, match="one object"):
        Cluster.from_file(_write(tmp_path, "[1, 2]"))
    with pytest.raises(ValueError, match="cannot read"):
        Cluster.from_file(tmp_path / "nope.json")
    with pytest.raises(ValueError, match="not a preset"):
        get_cluster("paper-v100x99")


def test_bad_yaml(tmp_path):
    pytest.importorskip("yaml")
    with pytest.raises(ValueError, match="not valid YAML"):
        Cluster.from_file(_write(tmp_path, "machines: [2\n", "bad.yaml"))


def test_local_needs_a_profile(tmp_path, monkeypatch):
    monkeypatch.delenv("TENSOROPT_PROFILE", raising=False)
    with pytest.raises(ValueError, match="tensoropt calibrate --out"):
        get_cluster("local", profile=tmp_path / "missing.json")
