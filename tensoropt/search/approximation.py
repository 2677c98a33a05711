"""The one line that says how exact a searched frontier is (it goes into plans' notes).

Usage::

    from tensoropt.search.approximation import approximation_line

    approximation_line(result.stats["frontier"])   # "frontier: exact", or the error bound
"""

from __future__ import annotations

from frontier import TrackStats

__all__ = ["EXACT", "approximation_line"]

EXACT = "frontier: exact"


def approximation_line(track_stats: TrackStats) -> str:
    """Says whether the frontier is exact, and if not, by how much it may be off."""
    heuristic = track_stats.heuristic_eliminations
    parts = []
    thinned = []
    if track_stats.epsilon is not None:
        thinned.append(f"epsilon {track_stats.epsilon:g}"
                       + (" (relative to each plan's time)" if track_stats.relative else ""))
    if track_stats.capped_products:
        thinned.append(f"{track_stats.capped_products} products thinned to about "
                       f"{track_stats.max_candidates:.3g} candidates (time steps up to "
                       f"{track_stats.cap_delta_max_s:.3g} s)")
    if thinned:
        bound = track_stats.time_error_bound_s
        lower = track_stats.time_lower_bound_s
        parts.append(f"{', '.join(thinned)}: each plan is at most {bound:.3g} s "
                     f"({bound / lower:.2%} of the {lower:.4g} s no plan beats) slower than the "
                     "exact frontier point it stands for"
                     + (f", and at most {track_stats.relative_error_bound:.2%} slower than its "
                        "own time" if track_stats.relative else ""))
    if heuristic:
        runs = track_stats.heuristic_runs
        rules = f", tracked once per rule ({', '.join(str(r[0]) for r in runs)}) and merged" if runs else ""
        parts.append(f"{heuristic} heuristic eliminations fixed some ops' configurations{rules}")
    return ("frontier: " + "; ".join(parts)) if parts else EXACT
