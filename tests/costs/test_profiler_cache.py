"""The profile cache: hits, keys, the on-disk file and its errors; the analytical provider."""

from __future__ import annotations

import json

import pytest

import tensoropt as to
from tensoropt.configs import Config, enumerate_configs
from tensoropt.costs.profiler import (FORMAT, VERSION, AnalyticalCompute, ComputeProfiler, ComputeProvider,
                                ProfileCache, local_shard)


def fast_profiler(path=None) -> ComputeProfiler:
    return ComputeProfiler(cache_path=path, warmup=0, min_runs=1, max_runs=1, min_time_s=0.0)


def two_layers():
    """Two matmuls of equal shapes (as in two layers of one model) and a third, larger one."""
    x = to.placeholder(to.float32, [16, 32], name="x")
    w1 = to.get_variable("w1", [32, 32])
    w2 = to.get_variable("w2", [32, 32])
    w3 = to.get_variable("w3", [32, 64])
    y1 = to.matmul(x, w1)
    y2 = to.matmul(y1, w2)
    y3 = to.matmul(y2, w3)
    return y1.op, y2.op, y3.op


def test_same_key_runs_tensorflow_once():
    a, b, c = two_layers()
    p = fast_profiler()
    config = Config((2,), ("m",))
    first = p.compute_s(a, config)
    assert p.measurements == 1 and p.hits == 0
    assert p.compute_s(a, config) == first           # the same op again
    assert p.compute_s(b, config) == first           # another layer of equal shapes
    assert p.measurements == 1 and p.hits == 2
    p.compute_s(c, config)                           # other shapes: measured
    assert p.measurements == 2


def test_key_separates_shapes_attrs_and_splits():
    a, _, c = two_layers()
    assert local_shard(a, Config((2,), ("m",))).key() != local_shard(a, Config((2,), ("n",))).key()
    assert local_shard(a, Config((2,), ("m",))).key() != local_shard(c, Config((2,), ("m",))).key()
    # Redundant axes do not change the shard.
    assert local_shard(a, Config((4,), (None,))).key() == local_shard(a, Config((1,), (None,))).key()
    to.reset_default_graph()
    x = to.placeholder(to.float32, [16, 32])
    w = to.get_variable("w", [32, 32])
    plain = to.matmul(x, w).op
    transposed = to.matmul(x, w, transpose_b=True).op
    one = Config((1,), (None,))
    assert local_shard(plain, one).key() != local_shard(transposed, one).key()


def test_machine_is_part_of_the_key():
    a, _, _ = two_layers()
    one = Config((1,), (None,))
    shard = local_shard(a, one)
    key1 = ComputeProfiler(cache_path=None, threads=1).key(shard)
    key2 = ComputeProfiler(cache_path=None, threads=2).key(shard)
    assert key1 != key2
    assert ComputeProfiler(cache_path=None, threads=1, statistic="min").key(shard) != key1
    machine = json.loads(key1.split("|", 1)[0])
    assert set(machine) == {"tensorflow", "cpu", "threads", "malloc", "statistic"} and machine["threads"] == 1


def test_threads_follow_the_runtimes_setting(monkeypatch):
    monkeypatch.setenv("TENSOROPT_THREADS", "1")
    p = ComputeProfiler(cache_path=None)
    assert p.threads == 1
    a, _, _ = two_layers()
    assert json.loads(p.key(local_shard(a, Config((1,), (None,)))).split("|", 1)[0])["threads"] == 1
    assert ComputeProfiler(cache_path=None, threads=2).threads == 2


def test_file_round_trips(tmp_path):
    path = tmp_path / "sub" / "profile.json"
    a, _, c = two_layers()
    p = fast_profiler(path)
    configs = enumerate_configs(a, 2)
    times = {str(cfg): p.compute_s(a, cfg) for cfg in configs}
    assert p.measurements == len({local_shard(a, cfg).key() for cfg in configs})
    p.save()
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["version"] == VERSION
    # per measured shard: its seconds, its forward seconds and its forward and backward
    # workspace bytes
    assert len(data["entries"]) == 4 * p.measurements
    assert sum(k.endswith("_transient_bytes") for k in data["entries"]) == 2 * p.measurements
    assert sum(k.endswith("|forward_s") for k in data["entries"]) == p.measurements
    again = fast_profiler(path)                     # a new process reads the file
    assert {str(cfg): again.compute_s(a, cfg) for cfg in configs} == times
    assert again.measurements == 0 and again.hits == len(configs)
    again.compute_s(c, configs[0])                  # adds to the file, keeps the old entries
    again.save()
    assert len(json.loads(path.read_text())["entries"]) == 4 * (p.measurements + 1)


def test_autosave_is_throttled_and_save_writes(tmp_path):
    path = tmp_path / "profile.json"
    cache = ProfileCache(path, autosave_s=3600.0)
    cache.put("a", 1.0)                             # the first entry is written at once
    cache.put("b", 2.0)                             # within autosave_s: kept in memory
    assert ProfileCache(path).entries() == {"a": 1.0}
    cache.save()
    assert ProfileCache(path).entries() == {"a": 1.0, "b": 2.0}
    eager = ProfileCache(tmp_path / "eager.json", autosave_s=0.0)
    eager.put("a", 1.0)
    eager.put("b", 2.0)
    assert ProfileCache(tmp_path / "eager.json").entries() == {"a": 1.0, "b": 2.0}


def test_writers_merge(tmp_path):
    path = tmp_path / "profile.json"
    first, second = ProfileCache(path), ProfileCache(path)
    first.put("a", 1.0)
    second.put("b", 2.0)                            # must not drop "a"
    assert ProfileCache(path).entries() == {"a": 1.0, "b": 2.0}


@pytest.mark.parametrize("text, problem", [
    ("{not json", "not valid JSON"),
    ('{"format": "something else", "version": 1, "entries": {}}', "not a compute profile"),
    (json.dumps({"format": FORMAT, "version": VERSION + 1, "entries": {}}), "version"),
    (json.dumps({"format": FORMAT, "version": VERSION, "entries": []}), "entries"),
    (json.dumps({"format": FORMAT, "version": VERSION, "entries": {"k": -1.0}}), "seconds >= 0"),
    (json.dumps({"format": FORMAT, "version": VERSION, "entries": {"k": "fast"}}), "seconds >= 0"),
])
def test_bad_file_raises_naming_it(tmp_path, text, problem):
    path = tmp_path / "profile.json"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        ComputeProfiler(cache_path=path)
    message = str(err.value)
    assert str(path) in message and problem in message
    assert "Delete the file" in message and "re-run" in message


def test_default_path_is_overridable(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSOROPT_CACHE_DIR", str(tmp_path))
    p = ComputeProfiler()
    assert p.cache.path == tmp_path / "compute-profile.json"


def test_sources_cost_nothing_and_never_run():
    x = to.placeholder(to.float32, [4, 4])
    w = to.get_variable("w", [4, 4])
    z = to.zeros([4, 4])
    p = fast_profiler()
    for t in (x, w, z):
        assert p.compute_s(t.op, Config((1,), (None,))) == 0.0
        assert AnalyticalCompute(1e12).compute_s(t.op, Config((1,), (None,))) == 0.0
    assert p.measurements == 0


def test_analytical_is_the_roofline():
    a, _, _ = two_layers()
    provider = AnalyticalCompute(peak_flops=2e9)
    assert isinstance(provider, ComputeProvider) and isinstance(fast_profiler(), ComputeProvider)
    flops = 3 * 2 * 16 * 32 * 32
    assert provider.compute_s(a, Config((1,), (None,))) == pytest.approx(flops / 2e9)
    assert provider.compute_s(a, Config((2, 2), ("m", "k"))) == pytest.approx(flops / 4 / 2e9)
    assert provider.compute_s(a, Config((2, 2), ("m", None))) == pytest.approx(flops / 2 / 2e9)
    with pytest.raises(ValueError, match="peak_flops"):
        AnalyticalCompute(0)


def test_bad_settings_say_how_to_fix():
    with pytest.raises(ValueError, match="min_runs"):
        ComputeProfiler(cache_path=None, min_runs=5, max_runs=2)
    with pytest.raises(ValueError, match="statistic"):
        ComputeProfiler(cache_path=None, statistic="mean")
    with pytest.raises(ValueError, match="threads"):
        ComputeProfiler(cache_path=None, threads=0)


def test_measuring_on_a_busy_machine_warns_once_where_the_inflated_times_are_kept(tmp_path, monkeypatch):
    import math
    import warnings

    from tensoropt.costs.profiler import _measure

    x = to.placeholder(to.float32, [4, 8], name="x")
    op = to.tanh(x).op
    path = tmp_path / "profile.json"
    monkeypatch.setattr(_measure, "_warned_busy", False)
    monkeypatch.setattr(_measure, "_last_probe", -math.inf)
    monkeypatch.setattr(_measure, "BUSY_PROBE_EVERY_S", 0.0)
    monkeypatch.setattr(_measure, "cpu_wait_share", lambda: 0.02)
    quiet = ComputeProfiler(cache_path=path, warmup=0, min_runs=1, max_runs=1, min_time_s=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        quiet.measure(op, local_shard(op, Config((1,), (None,))))
    monkeypatch.setattr(_measure, "cpu_wait_share", lambda: 0.5)
    with pytest.warns(RuntimeWarning, match=r"busy \(this rank waited 50% of a probe for its CPU\).*in "
                                            r".*profile.json; delete it and profile again on a quiet machine"):
        quiet.measure(op, local_shard(op, Config((1,), (None,))))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # once per process
        quiet.measure(op, local_shard(op, Config((1,), (None,))))


def _busy_warnings(monkeypatch, share, load, cpus=2, every_s=0.0, calls=1):
    import math
    import warnings

    from tensoropt.costs.profiler import _measure

    probes = []

    def probe():
        probes.append(1)
        return share

    monkeypatch.setattr(_measure, "_warned_busy", False)
    monkeypatch.setattr(_measure, "_last_probe", -math.inf)
    monkeypatch.setattr(_measure, "BUSY_PROBE_EVERY_S", every_s)
    monkeypatch.setattr(_measure, "cpu_wait_share", probe)
    monkeypatch.setattr(_measure.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(_measure.os, "cpu_count", lambda: cpus)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            _measure.warn_if_busy(None)
    return [str(w.message) for w in caught], len(probes)


def test_a_job_that_ended_a_minute_ago_is_not_a_busy_machine(monkeypatch):
    # the load average still counts the calibration that just ran; this rank's CPU is free
    assert _busy_warnings(monkeypatch, share=0.03, load=2.6)[0] == []


def test_without_schedstat_the_load_average_against_all_cpus_stands_in(monkeypatch):
    (message,), _ = _busy_warnings(monkeypatch, share=None, load=64.0)
    assert "1-minute load 64.0 on 2 CPUs" in message
    assert "kept in memory only; profile again" in message        # no cache file to delete
    assert _busy_warnings(monkeypatch, share=None, load=1.9, cpus=2)[0] == []


def test_a_free_cpu_is_probed_again_only_after_a_while(monkeypatch):
    assert _busy_warnings(monkeypatch, share=0.0, load=0.0, every_s=3600.0, calls=5) == ([], 1)
    assert _busy_warnings(monkeypatch, share=0.0, load=0.0, every_s=0.0, calls=5) == ([], 5)


def test_the_probe_sees_another_busy_process_on_its_cpu():
    import subprocess
    import sys

    # a child pinned to one CPU, a spinning grandchild pinned to the same one
    code = (
        "import os, subprocess, sys, time\n"
        "from tensoropt.costs.profiler._measure import cpu_wait_share\n"
        "cpu = min(os.sched_getaffinity(0)); os.sched_setaffinity(0, {cpu})\n"
        "spin = subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n"
        "time.sleep(0.2)\n"
        "try:\n"
        "    print(max(cpu_wait_share(0.2) or 0.0 for _ in range(3)))\n"
        "finally:\n"
        "    spin.kill()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert float(out.stdout) > 0.25


def test_the_probe_reads_nothing_where_schedstat_is_missing(tmp_path):
    from tensoropt.costs.profiler._measure import cpu_wait_share

    assert cpu_wait_share(0.001, path=str(tmp_path / "missing")) is None


def test_entries_put_since_the_last_write_are_written_when_the_cache_is_dropped(tmp_path):
    # a cost model per model in one process: its profiler's cache goes before exit
    path = tmp_path / "p.json"
    cache = ProfileCache(path, autosave_s=3600.0)
    cache.put("a", 1.0)                             # the first put writes at once
    cache.put("b", 2.0)                             # within autosave_s: in memory only
    assert ProfileCache(path).entries() == {"a": 1.0}
    del cache
    assert ProfileCache(path).entries() == {"a": 1.0, "b": 2.0}
