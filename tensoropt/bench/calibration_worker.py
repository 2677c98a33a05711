"""Worker of ``python -m tensoropt.bench calibration`` (run under mpirun): calibrate, and measure
sizes the calibration did not measure.

Usage::

    mpirun -np 4 python -m tensoropt.bench.calibration_worker OUT_DIR MAX_BYTES REPEATS STEP MODE [INNER [STATISTIC]]

Writes OUT_DIR/profile.json (sizes 2^i, i.e. what ``tensoropt calibrate`` writes) and
OUT_DIR/fresh.json (sizes 3 * 2^i for every STEP-th i: never in the profile). MODE:

* ``after``: calibrate, then measure the fresh sizes (two phases, one launch);
* ``interleaved``: the fresh sizes share the calibration's measurement rounds (each round
  visits every calibration size and every fresh size once), so both sets see the same
  machine load; only the 2^i results go into the profile.
"""

import json
import os
import sys
import time

from tensoropt.execution.calibration_job import BUSY_ROUNDS, DEFAULT_LINKS, Calibrator, default_sizes


def main() -> None:
    out_dir, max_bytes, repeats, step, mode = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                               int(sys.argv[4]), sys.argv[5])
    inner = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    statistic = sys.argv[7] if len(sys.argv) > 7 else "median"
    started = time.time()
    cal = Calibrator()
    min_bytes = 4 * cal.size
    sizes = default_sizes(min_bytes, max_bytes)
    fresh_sizes = [3 * b for b in sizes[::step] if 4 * b <= max_bytes]  # between 2^(i+1) and 2^(i+2)
    ready = time.time()
    if mode == "after":
        profile = cal.calibrate(os.path.join(out_dir, "profile.json"), max_bytes=max_bytes,
                                repeats=repeats, min_bytes=min_bytes, inner=inner, statistic=statistic)
        calibrated = time.time()
        fresh = cal.measure(cal.tasks(fresh_sizes), repeats=repeats, inner=inner, statistic=statistic,
                            links=DEFAULT_LINKS)
        samples = cal.last_samples
    elif mode == "interleaved":
        # (tasks round sizes up to split among a group: tell the two sets apart by task)
        profiled, held_out = cal.tasks(sizes), cal.tasks(fresh_sizes)
        results = cal.measure(profiled + held_out, repeats=repeats, inner=inner,
                              statistic=statistic, links=DEFAULT_LINKS, busy_rounds=BUSY_ROUNDS)
        fresh = {t: results[t] for t in held_out}
        samples = cal.last_samples
        profile = cal.build_profile({t: results[t] for t in profiled}, repeats=repeats,
                                    inner=inner, statistic=statistic, busy=cal.last_busy)
        if cal.rank == 0:
            profile.save(os.path.join(out_dir, "profile.json"))
        calibrated = time.time()
    else:
        raise SystemExit(f"calibration_worker: MODE must be 'after' or 'interleaved', got {mode!r}")
    timing = dict(cal.last_timing)
    # guard: 16 MiB must take clearly longer than 16 B (it would not if the collectives were
    # constant-folded away instead of run)
    sanity = cal.measure([("allreduce", cal.size, 1, 16), ("allreduce", cal.size, 1, 2**24)], repeats=5)
    if cal.rank == 0 and os.environ.get("CALIBRATION_WORKER_SAMPLES"):
        with open(os.path.join(out_dir, "samples.json"), "w") as f:
            json.dump([[*t, v] for t, v in samples.items()], f)
    if cal.rank == 0:
        with open(os.path.join(out_dir, "fresh.json"), "w") as f:
            json.dump({"world_size": profile.world_size, "repeats": repeats, "mode": mode,
                       "startup_s": round(ready - started, 2),
                       "calibrate_s": round(calibrated - ready, 2),
                       "fresh_s": round(time.time() - calibrated, 2), **timing,
                       "allreduce_16MiB_over_16B": sanity[("allreduce", cal.size, 1, 2**24)]
                       / sanity[("allreduce", cal.size, 1, 16)],
                       "measurements": [{"collective": c, "group_size": g, "stride": s, "bytes": n,
                                         "seconds": t} for (c, g, s, n), t in fresh.items()]}, f, indent=1)
    cal.finish()


if __name__ == "__main__":
    main()
