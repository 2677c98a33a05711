"""Elimination results remembered by what they were computed from (repeated layers).

A model's repeated layers (a Transformer's blocks, a ResNet stage's bottlenecks) give
the same cost tables, so Frontier-Tracking eliminates each layer with the same products
of the same frontiers. Every table in the ``Store`` has a *fingerprint*: an original
node's or edge's is a hash of its values; a derived table's is a hash of the operation,
its parameters and its parents' fingerprints. Two tables with one fingerprint hold the
same points in the same order, so a product whose fingerprint was seen before takes the
earlier result, table and back pointers (which number the parents' points, the same in
both), instead of running the kernels again. Results are shared, not copied.

``Memo`` keeps results up to a byte budget (values and back pointers). The budget is
``MEMO_SHARE`` (a quarter) of the memory the system has available (``MemAvailable`` in
``/proc/meminfo``) when the search starts, or ``MEMO_FALLBACK_BYTES`` (3 GiB) where
that cannot be read; ``MEMO_BYTES``, when set, fixes it instead (0 turns reuse off). A
fixed 3 GiB had been too little for PaSE's Transformer on 64 devices, whose first
self-attention leaves one 91M-point result of about 3.3 GB that took about 120 s to
compute: refused, every later layer computed it again. A quarter of what is free
leaves the search itself three quarters, and the budget is counted conservatively: a
result still held by the ``Store`` (or whose pointers the ``Store`` keeps for the
unroll) costs nothing more for being remembered, yet is counted in full.

Past the budget, results are dropped by *GreedyDual* (Young, 1994) with the seconds a
result took as its cost, times the uses it has had (GreedyDual-Frequency): each entry
has a credit, ``L + seconds * (1 + reuses)`` when it is put or reused, and the entry of
least credit goes first; ``L`` is then raised to that credit, so entries not reused
for a while age out behind newer ones. Without the reuses, a result reused once a
layer was dropped as soon as the quick results recomputed between two of its reuses
took longer than it had: on PaSE's Transformer at 64 devices the 88M-point product
(33 s) went after three encoders, by timing noise, and computing it again took the
search past 19 GB. A new result is always
kept (the others make room for it) unless it alone is over the budget: the layer just
eliminated is the one the next layer repeats. Among equally costly results the least
recently used goes first, as before. Ties go to the older entry. The credit is not
divided by bytes (GreedyDual-Size): on PaSE's Transformer at 64 devices one layer's
results (about 7 GiB: 88M, 46M, 36M, 17M, 15M points...) exceed the budget, and per
byte they all cost about the same (10 to 30 s a GB), so that rule dropped them as a
least-recently-used one would, each before the next layer asked for it, and every
layer computed them all again. By seconds, the two slowest (46M points: 34 s, 88M: 32
s; 4.1 GiB) stay and the quick ones cycle.
A result dropped before anything reused it tells ``Work.remembered`` (``take_unused``),
which marks its record's pointers as its own again, so that the ``Store``'s collector
may renumber them (shared pointers are never renumbered: on the Transformer at 64
devices the results that cycle through the memo each layer, about 100M points, had
otherwise kept every point's pointers to the end).
Small results are kept too: a ResNet's or Inception's repeated blocks are many small
eliminations (on PaSE's resnet101 at 16 devices, 2,400 reused results take tracking
from 30.1 to 21.5 CPU seconds).

Results no reduction can ask for again are forgotten (``forget``): after each
elimination, and before a result is put in a full memo, ``Work`` asks the ``Store``
(``Store.can_recur``: no live table, nor any table live ones can still make, has the
fingerprint of one of its inputs) about every result of ``_eliminate.FORGET_MIN_BYTES``
(16 MiB) or more, and a new result that large is put only if it can come again once
its elimination has consumed its inputs. GreedyDual credit had kept PaSE's
Transformer's self-attention results at 64 devices (88M and 46M points, reused by
every layer) to the end of the search, long after the last layer that could use
them, and a new result that carries its layer's own frontier (never asked for again)
pushed reusable ones out.

Usage::

    key = fingerprint("combine", st.fp[a], st.fp[b], Shape(W, K, P), budget)
    hit = memo.get(key)                 # (table, back pointers, gap) or None
    memo.put(key, (table, bp, gap), seconds)      # seconds: what computing it took
    memo.forget(store.can_recur, min_bytes)       # drops what cannot come again
"""

from __future__ import annotations

import hashlib
import heapq
from typing import Callable, Optional

import numpy as np

from frontier._table import Table

__all__ = ["Memo", "entry_bytes", "fingerprint", "table_fingerprint", "memo_budget", "MEMO_BYTES",
           "MEMO_SHARE", "MEMO_FALLBACK_BYTES"]

MEMO_BYTES: Optional[int] = None   # a fixed budget (bytes of values + pointers), if set
MEMO_SHARE = 0.25                  # else this share of MemAvailable when the search starts
MEMO_FALLBACK_BYTES = 3 * 2 ** 30  # ... or this, where /proc/meminfo cannot be read


def _feed(h, part) -> None:
    if isinstance(part, (bytes, bytearray)):
        h.update(b"b"); h.update(len(part).to_bytes(8, "little")); h.update(part)
    elif isinstance(part, np.ndarray):
        a = np.ascontiguousarray(part)
        h.update(b"a" + a.dtype.str.encode() + repr(a.shape).encode()); h.update(a.tobytes())
    elif part is None or isinstance(part, (bool, int, float, str, np.integer, np.floating)):
        h.update(b"s" + repr(part).encode() + b";")
    elif isinstance(part, tuple):
        h.update(b"(")
        for p in part:
            _feed(h, p)
        h.update(b")")
    else:
        raise TypeError(f"cannot fingerprint a {type(part).__name__}; pass bytes, arrays, "
                        "numbers, strings or tuples of them")


def fingerprint(*parts) -> bytes:
    """A 16-byte hash of ``parts`` (bytes, numpy arrays, numbers, strings, tuples)."""
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        _feed(h, p)
    return h.digest()


def table_fingerprint(t: Table, *extra) -> bytes:
    """The fingerprint of a table's values (and of ``extra``, e.g. an edge's alternatives)."""
    return fingerprint("table", t.mem, t.time, t.off, t.radius, *extra)


def entry_bytes(entry) -> int:
    table, bp, _ = entry
    return (table.mem.nbytes + table.time.nbytes + table.off.nbytes
            + (0 if table.radius is None else table.radius.nbytes)
            + sum(b.nbytes for b in bp))


def available_bytes(meminfo: str = "/proc/meminfo") -> Optional[int]:
    """The system's ``MemAvailable`` in bytes, or None where it cannot be read."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def memo_budget() -> int:
    """``MEMO_BYTES`` if set, else ``MEMO_SHARE`` of the memory available now, else
    ``MEMO_FALLBACK_BYTES``."""
    if MEMO_BYTES is not None:
        return MEMO_BYTES
    avail = available_bytes()
    return MEMO_FALLBACK_BYTES if avail is None else int(MEMO_SHARE * avail)


class Memo:
    """Results by fingerprint within ``max_bytes`` (default ``memo_budget()``, read when
    the memo is made), the entry of least GreedyDual credit dropped first."""

    def __init__(self, max_bytes: Optional[int] = None):
        self.max_bytes = memo_budget() if max_bytes is None else max_bytes
        self._entries: dict[bytes, tuple] = {}
        self._sizes: dict[bytes, int] = {}
        self._worth: dict[bytes, float] = {}     # seconds computing each entry took
        self._credit: dict[bytes, tuple] = {}    # key -> its live (credit, order)
        self._heap: list[tuple] = []             # (credit, order, key), stale ones too
        self._uses: dict[bytes, int] = {}        # reuses of each entry (``get``)
        self._unused: list[bytes] = []           # dropped, never reused (``take_unused``)
        self._order = 0
        self.aging = 0.0                         # L: the credit last evicted
        self.bytes = 0
        self.evictions = 0
        self.forgotten = 0                       # entries ``forget`` dropped

    def _rate(self, key: bytes) -> None:
        self._order += 1
        item = (self.aging + self._worth[key] * (1 + self._uses[key]), self._order)
        self._credit[key] = item
        heapq.heappush(self._heap, (*item, key))
        if len(self._heap) > 4 * len(self._credit) + 64:   # drop stale heap items
            self._heap = [(*c, k) for k, c in self._credit.items()]
            heapq.heapify(self._heap)

    def __contains__(self, key: bytes) -> bool:
        """Whether an entry is kept under ``key`` (its credit untouched)."""
        return key in self._entries

    def get(self, key: bytes) -> Optional[tuple]:
        """The entry under ``key``, its credit renewed, or None. (Hits are counted by
        the caller, ``Work.remembered``, in ``Tally.memo_hits``.)"""
        entry = self._entries.get(key)
        if entry is not None:
            self._uses[key] += 1
            self._rate(key)
        return entry

    def pointer_ids(self) -> set[int]:
        """Ids of the back-pointer arrays the entries hold (``Store.pinned``: arrays a
        record's renumbering cannot free while the memo keeps them)."""
        return {id(b) for _, bp, _ in self._entries.values() for b in bp}

    def take_unused(self) -> list[bytes]:
        """The keys dropped since the last call whose entries were never reused: their
        back pointers are their records' alone again (``Work.remembered``)."""
        keys, self._unused = self._unused, []
        return keys

    def _drop(self, key: bytes) -> None:
        del self._entries[key], self._worth[key], self._credit[key]
        if not self._uses.pop(key):
            self._unused.append(key)
        self.bytes -= self._sizes.pop(key)

    def forget(self, can_recur: Callable[[bytes], bool], min_bytes: int = 0) -> int:
        """Drops every entry of at least ``min_bytes`` whose key ``can_recur(key)`` says
        no reduction can ask for again (``Store.can_recur``); returns the bytes dropped.
        Their credit does not age the others (``aging`` stays): they go for what they
        are, not for what the others are worth."""
        dead = [k for k, size in self._sizes.items() if size >= min_bytes and not can_recur(k)]
        before = self.bytes
        for key in dead:
            self._drop(key)
        self.forgotten += len(dead)
        return before - self.bytes

    def put(self, key: bytes, entry: tuple, seconds: float = 0.0) -> bool:
        """Keeps ``entry`` = (table, back pointers, gap), which took ``seconds`` to
        compute, under ``key`` if it fits in the budget; says whether it did."""
        size = entry_bytes(entry)
        if size > self.max_bytes or key in self._entries:
            return False
        while self.bytes + size > self.max_bytes:    # make room: least credit first
            credit, order, old = heapq.heappop(self._heap)
            if self._credit.get(old) != (credit, order):
                continue                              # stale: renewed or dropped
            self.aging = credit
            self._drop(old)
            self.evictions += 1
        self._entries[key] = entry
        self._sizes[key] = size
        self._worth[key] = max(seconds, 0.0)
        self._uses[key] = 0
        self._rate(key)
        self.bytes += size
        return True
