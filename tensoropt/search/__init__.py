"""The search stage: the space of plans, Frontier-Tracking over it, and the paper's options.

- ``space``: the cost graph of per-op configurations and edge alternatives;
- ``driver``: the Frontier-Tracking search and the plans it returns (data parallel included);
- ``strategy``: the options mini_time, mini_parallelism and profiling over frontiers;
- ``summary``: the search's result as a compact value sent to every rank.

Usage::

    from tensoropt.search.strategy import SearchSettings, search_summary
"""
