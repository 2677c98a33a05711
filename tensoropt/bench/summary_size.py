"""How many bytes rank 0 sends the other ranks for a search result.

    python -m tensoropt.bench summary_size --model paper_vgg16 --devices 8 --epsilon 0.05

Searches a zoo model on the ``paper-v100x16`` cluster scaled to ``--devices`` (one
process; no MPI needed), and prints the size of the ``SearchSummary`` that
``to.search_strategy`` broadcasts (the frontier's choice arrays and the distinct op
configurations and edge plans they use, compressed), beside the size of every frontier
plan's JSON, which is what sending the plans one by one would cost.
"""

from __future__ import annotations

import argparse
import time

import tensoropt as to
from tensoropt import models
from tensoropt.cluster import get_cluster
from tensoropt.search.driver import SearchOptions
from tensoropt.search.strategy import SearchSettings, choose_plan
from tensoropt.search.summary import SearchSummary

__all__ = ["main"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench summary_size", description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="paper_vgg16")
    parser.add_argument("--size", default="paper")
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--epsilon", type=float, default=0.05, help="0 for the exact frontier")
    args = parser.parse_args(argv)
    to.reset_default_graph()
    models.build(args.model, size=args.size)
    graph = to.get_default_graph()
    cluster = get_cluster("paper-v100x16", devices=args.devices)
    start = time.perf_counter()
    settings = SearchSettings(cluster=cluster, option="mini_time", parallelism=args.devices,
                              search=SearchOptions(epsilon=args.epsilon or None))
    summary = choose_plan(graph, settings)
    searched = time.perf_counter()
    data = summary.to_bytes()
    encoded = time.perf_counter()
    received = SearchSummary.from_bytes(data)
    decoded = time.perf_counter()
    table = summary.frontier.table
    plans = len(summary.frontier)
    json_bytes = sum(len(p.to_json()) for p in received.frontier) + len(received.data_parallel.to_json())
    same = all(a == b for a, b in zip(received.frontier, summary.frontier)) and \
        received.data_parallel == summary.data_parallel and received.chosen == summary.chosen
    print(f"{args.model} ({args.size}) on {args.devices} devices, epsilon {args.epsilon}: {len(graph.operations)} ops, "
          f"{len(table.edges)} distinct edge plans and {len(table.configs)} distinct op configurations over "
          f"{plans} frontier plans + data parallel")
    print(f"  search summary sent by rank 0: {len(data):,} bytes (encoded in {encoded - searched:.2f} s, "
          f"decoded and checked in {decoded - encoded:.2f} s; search {searched - start:.1f} s)")
    print(f"  the same plans as JSON, one by one: {json_bytes:,} bytes ({json_bytes / len(data):.0f}x)")
    print(f"  every plan rebuilt from the bytes equals rank 0's: {same}")
    return 0 if same else 1
