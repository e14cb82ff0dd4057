"""Greedy placement for the static packer (:mod:`memtune.trace.packing`).

The three placement rules (_place_cyclic's best fit and lowest offset, _place_canonical) give
exactly the offsets of the all-pairs versions they replaced (kept in
tests/reference_algorithms.py), in time that grows with how many buffers live at the same time
as each one rather than with how many buffers there are: a buffer is compared only with the
buffers it meets in time (listed from their live parts sorted by start, _TimeIndex), and the
fixed buffers placed beforehand enter as the ranges they cover, merged once per set of fixed
buffers that buffers meet. A _Layout holds what the placements of one packing share (12 of them
in pack_cyclic), so it is built once.

Where most buffers meet a large share of the others (dense steps: a transformer's activations,
PanGu's lifetime table, where 7 % of all pairs meet) listing them costs more than testing every
pair, and _place_cyclic_dense and _place_canonical_dense test every pair as the all-pairs
versions did, without what took those their time: the placed buffers are kept sorted by offset
(no sort per buffer) and tested a pass of buffers at a time, and the canonical rule's masks
cover only the buffers still to place.
"""

from __future__ import annotations

import bisect
import math
from typing import Iterator

import numpy as np

#: at most about this many (buffer, buffer it meets) entries are listed at once: the
#: lists of a step with tens of thousands of buffers are built a block at a time
_PAIRS_PER_BLOCK = 1 << 21
#: a _Layout keeps every buffer's list of the buffers it meets while there are at most
#: this many entries in all; past that each placement lists them a block at a time
_PAIRS_KEPT = 1 << 23
#: fewest live parts in a _TimeIndex chunk (about the square root of their number)
_CHUNK = 16
#: past this share of all pairs listed (a third of it when the lists are not kept), the
#: placements test all pairs instead (_place_cyclic_dense, _place_canonical_dense; the
#: held-out steps below it still place faster listed)
_DENSE = 0.1
#: buffers _place_cyclic_dense tests against the placed ones with one mask
_ROWS = 32
#: _place_canonical_dense drops the buffers placed from its arrays every this many placements
_COMPACT = 256
#: most buffers _place_cyclic places in one vectorised pass
_RUN = 256
#: where every placement's first gap starts
_ZERO = np.zeros(1, dtype=np.int64)


def _expand(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The indices ``start, start + 1, ..., start + len - 1`` of every range, concatenated
    (as int32 when they fit: numpy repeats 4-byte items several times faster)."""
    total = int(lens.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lens)
    shift = starts - (ends - lens)
    kind = np.int32 if total + int(np.abs(shift).max()) < 1 << 31 else np.int64
    return np.arange(total, dtype=kind) + np.repeat(shift.astype(kind), lens)


def _owners(lens: np.ndarray) -> np.ndarray:
    """For ranges of these lengths laid end to end, the range of each index (int32)."""
    return np.repeat(np.arange(len(lens), dtype=np.int32), lens)


def _segmented_cummax(seg: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarting where ``seg`` (nondecreasing) changes.

    Why: numpy has no segmented accumulate; ranking the values first keeps
    ``seg * ranks + rank`` within int64 whatever the values are."""
    if not len(values):
        return values.copy()
    vals, rank = np.unique(values, return_inverse=True)
    shift = seg.astype(np.int64) * len(vals)
    return vals[np.maximum.accumulate(shift + rank.reshape(-1)) - shift]


def _merged(group: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group, the union of the ranges ``[lo, hi)`` as disjoint ranges (touching ones
    joined): (group, start, end), by group then start."""
    if not len(lo):
        return group[:0], lo[:0], hi[:0]
    srt = np.lexsort((lo, group))
    group, lo, hi = group[srt], lo[srt], hi[srt]
    reach = _segmented_cummax(group, hi)
    new = np.ones(len(lo), dtype=bool)
    new[1:] = (group[1:] != group[:-1]) | (lo[1:] > reach[:-1])  # no earlier range of the group reaches it
    last = np.append(np.flatnonzero(new)[1:] - 1, len(lo) - 1)
    return group[new], lo[new], reach[last]


def _hits(qa1: np.ndarray, qb1: np.ndarray, qa2: np.ndarray, qb2: np.ndarray, l1: np.ndarray, h1: np.ndarray,
          l2: np.ndarray, h2: np.ndarray, second: bool) -> np.ndarray:
    """[query, target]: the target, live on [l1, h1) and [l2, h2), counts as live at the same
    time as the query, live on [qa1, qb1) and [qa2, qb2), by the placement rules' test (a
    query's second part only when not empty; no second parts unless ``second``).

    The second parts are tested only for the targets whose second part can meet some
    query's first part and for the queries whose second part is not empty: most buffers
    do not wrap, and the test of the others is the same."""
    m = np.less(l1[None, :], qb1[:, None])
    m &= np.greater(h1[None, :], qa1[:, None])
    if second and m.size:
        cols = np.flatnonzero((l2 < qb1.max()) & (h2 > qa1.min()))
        if cols.size:
            m[:, cols] |= (l2[cols][None, :] < qb1[:, None]) & (h2[cols][None, :] > qa1[:, None])
        rows = np.flatnonzero(qb2 > qa2)
        if rows.size:
            a, b = qa2[rows, None], qb2[rows, None]
            m[rows] |= ((l1[None, :] < b) & (h1[None, :] > a)) | ((l2[None, :] < b) & (h2[None, :] > a))
    return m


def _overlapping(a1: int, b1: int, a2: int, b2: int, l1: np.ndarray, h1: np.ndarray, l2: np.ndarray,
                 h2: np.ndarray, wraps: bool) -> np.ndarray:
    """:func:`_hits` for one query, the canonical rule's test (second parts only if ``wraps``):
    whether the buffers live on ``[l1, h1)`` and ``[l2, h2)`` meet the one live on ``[a1, b1)``
    and ``[a2, b2)``. (One row of comparisons with scalars: a third of the time of a matrix.)"""
    m = l1 < b1
    m &= h1 > a1
    if wraps:
        m |= (l2 < b1) & (h2 > a1)
        if b2 > a2:
            m |= ((l1 < b2) & (h1 > a2)) | ((l2 < b2) & (h2 > a2))
    return m


def _fixed_sets(q: tuple[np.ndarray, ...], f: tuple[np.ndarray, ...],
                second: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fixed buffers each query buffer meets in time (by :func:`_hits`), as sets shared
    by the queries that meet the same ones: (set of each query, (set, fixed index) pairs
    by set then index).

    Why: the fixed blocks plan mode packs around mostly live for the whole cycle, so a few
    hundred of them meet nearly every buffer; merged once per set they are a few ranges.
    Each test ``l < b and h > a`` of a query part ``[a, b)`` depends only on how many of the
    fixed parts' ends are at most ``a`` and how many starts are below ``b``: queries with
    the same counts meet the same fixed buffers, and one of them is tested for all."""
    qa1, qb1, qa2, qb2 = q
    fl1, fh1, fl2, fh2 = f
    nq, nf = len(qa1), len(fl1)
    if not nf or not nq:
        return np.zeros(nq, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ends = [np.sort(fh1)] + ([np.sort(fh2)] if second else [])
    starts = [np.sort(fl1)] + ([np.sort(fl2)] if second else [])
    cols = []
    for a, b, used in ((qa1, qb1, None), (qa2, qb2, qb2 > qa2)):
        if used is not None and not second:
            break
        for e, st in zip(ends, starts):
            ca = np.searchsorted(e, a, "right")
            cb = np.searchsorted(st, b, "left")
            if used is not None:  # a query's empty second part is not tested
                ca, cb = np.where(used, ca, -1), np.where(used, cb, -1)
            cols += [ca, cb]
    srt = np.lexsort(cols[::-1])
    sig = np.stack(cols, axis=1)[srt]
    new = np.ones(nq, dtype=bool)
    new[1:] = (sig[1:] != sig[:-1]).any(axis=1)
    set_of = np.empty(nq, dtype=np.int64)
    set_of[srt] = np.cumsum(new) - 1
    rep = srt[new]  # one query per set
    rows = max(1, (1 << 22) // nf)
    member = np.concatenate([_hits(*(a[rep[s:s + rows]] for a in q), *f, second) for s in range(0, len(rep), rows)])
    s, i = np.nonzero(member)
    return set_of, s.astype(np.int64), i.astype(np.int64)


def _ordinary(l1: np.ndarray, h1: np.ndarray, l2: np.ndarray, h2: np.ndarray, second: bool) -> bool:
    """Whether the rules' test of being live at the same time is the plain one for these
    buffers: two buffers meet when a non-empty part of one overlaps a non-empty part of the
    other. It is when every first part is non-empty and every other second part (empty,
    or ending before it starts) lies where no part starts before it or ends after it
    (plan mode's empty second parts sit at 0)."""
    if not len(l1):
        return True
    if not bool((l1 < h1).all()):
        return False
    if not second:
        return True
    two = h2 > l2
    start = min(int(l1.min()), int(l2[two].min()) if two.any() else int(l1.min()))
    end = max(int(h1.max()), int(h2[two].max()) if two.any() else int(h1.max()))
    return bool((two | (h2 <= start) | (l2 >= end)).all())


class _TimeIndex:
    """Live parts ``[start, end)`` (non-empty) sorted by start, to list the parts that
    overlap a given part in time proportional to how many do.

    A part overlapping ``[a, b)`` either starts in ``[a, b)`` (a slice of the sorted
    starts) or starts before ``a`` and ends after it. For the latter the sorted parts are
    cut into chunks; each chunk keeps, sorted by end, the parts before it that end after
    the last start before it, so those ending after ``a`` are a slice too, and the parts
    of its own chunk before ``a`` are few enough to test one by one."""

    def __init__(self, owner: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        srt = np.argsort(start, kind="stable")
        self.start, self.end, self.owner = start[srt], end[srt], owner[srt]
        m = len(start)
        self.chunk = c = max(_CHUNK, math.isqrt(m))
        chunks = m // c  # chunks 1 .. m // c have lists (a query's chunk is where its start would go)
        bounds = self.start[c - 1::c]  # the last start before chunk k = 1, 2, ...
        # part t is in the lists of chunks t // c + 1 .. (those whose bound it ends after)
        first = np.arange(m, dtype=np.int64) // c + 1
        lens = np.maximum(np.searchsorted(bounds, self.end, "left") - first + 1, 0)
        part = np.repeat(np.arange(m, dtype=np.int64), lens)
        k = _expand(first, lens)
        # sorted by (chunk, end), found with one search on a combined key
        self.span = span = int(self.end.max()) + 2 if m else 1
        srt = np.lexsort((self.end[part], k))
        part, k = part[srt], k[srt]
        self.stab_key = k * span + self.end[part]
        self.stab_ptr = np.searchsorted(k, np.arange(chunks + 2, dtype=np.int64), "left")
        self.src_owner = np.concatenate([self.owner, self.owner[part]])
        self.src_end = np.concatenate([self.end, self.end[part]])

    def ranges(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each query part ``[a, b)``, three ranges of the index's parts (start, length,
        and an end its parts must exceed), in query order."""
        m, c = len(self.start), self.chunk
        sa = np.searchsorted(self.start, a, "left")
        sb = np.searchsorted(self.start, b, "left")
        k = sa // c
        j0 = k * c
        u = np.searchsorted(self.stab_key, k * self.span + a, "right")
        v = self.stab_ptr[k + 1]
        never = np.full(len(a), -1, dtype=np.int64)
        return (np.stack([sa, j0, m + u], axis=1).ravel(), np.stack([sb - sa, sa - j0, v - u], axis=1).ravel(),
                np.stack([never, a, never], axis=1).ravel())

    def overlapping(self, a: int, b: int) -> list[np.ndarray]:
        """The owners of the parts overlapping one part ``[a, b)``: a few slices (for one
        query, cheaper than :meth:`ranges` and :meth:`expand`)."""
        m, c = len(self.start), self.chunk
        sa = int(np.searchsorted(self.start, a, "left"))
        sb = int(np.searchsorted(self.start, b, "left"))
        k = sa // c
        u = int(np.searchsorted(self.stab_key, k * self.span + a, "right"))
        j0 = k * c
        near = self.owner[j0:sa]
        return [self.owner[sa:sb], self.src_owner[m + u:m + int(self.stab_ptr[k + 1])], near[self.end[j0:sa] > a]]

    def expand(self, starts: np.ndarray, lens: np.ndarray, above: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The parts in the given ranges: (range index, owner) of each, by range."""
        idx = _expand(starts, lens)
        rid = _owners(lens)
        keep = self.src_end[idx] > above[rid]
        return rid[keep], self.src_owner[idx[keep]]


class _Meets:
    """Which of buffers 0..m-1 (given by their two live parts) live at the same time as
    which, by the placement rules' test (with second parts or not), listed through a
    :class:`_TimeIndex`; the lists of all of them are kept once built (:meth:`keep`) if
    they are small enough.

    ``dense``: listing does not pay, and the placements test all pairs instead -- when
    most buffers meet a large share of the others (then testing every pair with
    vectorised masks is cheaper than listing the pairs: measured, listing wins below
    about a tenth of all pairs when the lists are kept, and below about a thirtieth when
    each placement lists them again), or when the rules' test is not the plain one
    (:func:`_ordinary`)."""

    def __init__(self, l1: np.ndarray, h1: np.ndarray, l2: np.ndarray, h2: np.ndarray, second: bool) -> None:
        self.m = m = len(l1)
        self.kept: tuple[np.ndarray, np.ndarray] | None = None
        self.dense = not _ordinary(l1, h1, l2, h2, second)
        if self.dense:
            return
        owner, lo, hi = np.arange(m, dtype=np.int64), l1.astype(np.int64), h1.astype(np.int64)
        two = np.flatnonzero(h2 > l2) if second else np.zeros(0, dtype=np.int64)
        if two.size:
            owner = np.concatenate([owner, two])
            lo = np.concatenate([lo, l2[two].astype(np.int64)])
            hi = np.concatenate([hi, h2[two].astype(np.int64)])
            srt = np.argsort(owner, kind="stable")
            owner, lo, hi = owner[srt], lo[srt], hi[srt]
        # times as ranks: the same order, and small enough to combine with chunk numbers
        ranked = np.unique(np.concatenate([lo, hi]), return_inverse=True)[1].reshape(-1).astype(np.int64)
        self.part_lo, self.part_hi = ranked[:len(lo)], ranked[len(lo):]
        self.part_ptr = np.searchsorted(owner, np.arange(m + 1, dtype=np.int64), "left")
        self.index = _TimeIndex(owner, self.part_lo, self.part_hi)
        if m:
            _s, lens, _a = self.index.ranges(self.part_lo, self.part_hi)
            self.upper = np.add.reduceat(lens.reshape(-1, 3).sum(axis=1), self.part_ptr[:-1])
        else:
            self.upper = np.zeros(0, dtype=np.int64)
        total = int(self.upper.sum())
        self.dense = total > (_DENSE if total <= _PAIRS_KEPT else _DENSE / 3) * m * m

    def keep(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Every buffer's list (pointers, buffers met), built on first use if there are at
        most :data:`_PAIRS_KEPT` entries, else None."""
        if self.kept is None and int(self.upper.sum()) <= _PAIRS_KEPT:
            # a block at a time: temporaries of a few MB are reused, larger ones are mapped
            # (and page-faulted) afresh each time
            m = self.m
            lens, others = [], []
            for lo, hi in _blocks(self.upper, _PAIRS_PER_BLOCK // 4, m):
                who, other = self.lists(np.arange(lo, hi, dtype=np.int64))
                lens.append(np.bincount(who, minlength=hi - lo))
                others.append(other.astype(np.int32 if m < 1 << 31 else np.int64))
            ptr = np.zeros(m + 1, dtype=np.int64)
            np.cumsum(np.concatenate(lens) if lens else np.zeros(0, dtype=np.int64), out=ptr[1:])
            self.kept = (ptr, np.concatenate(others) if others else np.zeros(0, dtype=np.int32))
        return self.kept

    def lists(self, items: np.ndarray, rank: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(query, buffer it meets) for each of the buffers ``items``, by query (an index into
        ``items``); with ``rank``, only the buffers ranked before the query; never the query
        itself (a buffer met through both its parts may be listed twice)."""
        if self.kept is not None:
            ptr, table = self.kept
            lens = ptr[items + 1] - ptr[items]
            other = table[_expand(ptr[items], lens)]
            q = _owners(lens)
            if rank is None:
                return q, other
            keep = rank[other] < rank[items][q]
            return q[keep], other[keep]
        nparts = self.part_ptr[items + 1] - self.part_ptr[items]
        parts = _expand(self.part_ptr[items], nparts)
        starts, lens, above = self.index.ranges(self.part_lo[parts], self.part_hi[parts])
        rid, other = self.index.expand(starts, lens, above)
        q = _owners(nparts)[rid // 3]
        keep = other != items[q] if rank is None else rank[other] < rank[items[q]]
        return q[keep], other[keep]


class _Layout:
    """What the greedy placements of one packing share: the buffers that may be placed
    (``movable``, by index; the lists below count them 0..) and which of them live at
    the same time as which, and the ``fixed`` buffers (placed at ``off``) each meets,
    merged -- all built on first use, once for the 12 placements of :func:`pack_cyclic`."""

    def __init__(self, lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray, size: np.ndarray,
                 off: np.ndarray, fixed: np.ndarray, movable: np.ndarray) -> None:
        self.lo1, self.hi1, self.lo2, self.hi2 = lo1, hi1, lo2, hi2
        self.size = np.asarray(size, dtype=np.int64)
        self.fixed = fixed
        self.fixed_off = np.asarray(off[fixed], dtype=np.int64)
        self.fixed_size = self.size[fixed]
        self.movable = movable
        self.local = np.full(len(size), -1, dtype=np.int64)
        self.local[movable] = np.arange(len(movable))
        self.wraps = bool((hi2 > lo2).any())  # the canonical rule compares second parts only then
        # offsets not below 0, sizes not negative and every end below 2**62, as every
        # caller's are: what merging the fixed buffers and placing runs of buffers at once
        # rely on (else the best-fit and lowest-offset rules test all pairs)
        top = int((self.fixed_off + self.fixed_size).max()) if len(fixed) else 0
        self.plain_sizes = not bool((self.size[movable] < 0).any() or (self.fixed_size < 0).any()
                                    or (self.fixed_off < 0).any()) \
            and max(top, 0) + int(self.size[movable].sum()) < 1 << 62
        self._meets: dict[bool | None, _Meets] = {}
        self._key: dict[bool, bool | None] = {}
        self._sets: dict[bool, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._merged: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._ranges: list[tuple[list[int], list[int]]] | None = None
        self._order_lists: _OrderLists | None = None

    def order_lists(self, order: np.ndarray) -> "_OrderLists":
        """The :class:`_OrderLists` of ``order``: the last one's again if it is the same."""
        last = self._order_lists
        if last is None or len(last.order) != len(order) or not np.array_equal(last.order, order):
            last = self._order_lists = _OrderLists(self, order)
        return last

    def meets(self, second: bool) -> _Meets:
        """The movable buffers' lists, by the rules' test with or without second parts."""
        mv = self.movable
        parts = self.lo1[mv], self.hi1[mv], self.lo2[mv], self.hi2[mv]
        if second not in self._key:
            # the plain test is the same with and without second parts when none is non-empty
            self._key[second] = None if _ordinary(*parts, second) else second
        key = self._key[second]
        if key not in self._meets:
            self._meets[key] = _Meets(*parts, second)
        return self._meets[key]

    def sets(self, second: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`_fixed_sets` of the movable buffers against the fixed ones."""
        if second not in self._sets:
            mv, fx = self.movable, self.fixed
            self._sets[second] = _fixed_sets((self.lo1[mv], self.hi1[mv], self.lo2[mv], self.hi2[mv]),
                                             (self.lo1[fx], self.hi1[fx], self.lo2[fx], self.hi2[fx]), second)
        return self._sets[second]

    def merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For the best-fit and lowest-offset rules: per set of fixed buffers, a point at 0
        (so no list is empty), the ranges the set's buffers cover and the offsets of its
        zero-size ones (they split gaps): (pointer by set, offsets, ends)."""
        if self._merged is None:
            _set_of, s, f = self.sets(True)
            nsets = int(_set_of.max()) + 1 if len(_set_of) else 1
            fo, fz = self.fixed_off[f], self.fixed_size[f]
            cs, co, ce = _merged(s[fz > 0], fo[fz > 0], fo[fz > 0] + fz[fz > 0])
            zero = fz == 0
            vs = np.concatenate([np.arange(nsets, dtype=np.int64), cs, s[zero]])
            vo = np.concatenate([np.zeros(nsets, dtype=np.int64), co, fo[zero]])
            ve = np.concatenate([np.zeros(nsets, dtype=np.int64), ce, fo[zero]])
            srt = np.argsort(vs, kind="stable")
            self._merged = (np.searchsorted(vs[srt], np.arange(nsets + 1, dtype=np.int64), "left"), vo[srt], ve[srt])
        return self._merged

    def ranges(self) -> list[tuple[list[int], list[int]]]:
        """For the canonical rule: per movable buffer, the ranges its fixed buffers of size >
        0 cover (starts, ends; ascending), as :func:`_place_canonical` searches them."""
        if self._ranges is None:
            set_of, s, f = self.sets(self.wraps)
            f_off, f_top = self.fixed_off[f], self.fixed_off[f] + self.fixed_size[f]
            filled = f_top > f_off
            cs, co, ce = _merged(s[filled], f_off[filled], f_top[filled])
            ptr = np.searchsorted(cs, np.arange(int(set_of.max()) + 2 if len(set_of) else 1), "left").tolist()
            co, ce = co.tolist(), ce.tolist()
            by_set = [(co[ptr[g]:ptr[g + 1]], ce[ptr[g]:ptr[g + 1]]) for g in range(len(ptr) - 1)]
            self._ranges = [by_set[g] for g in set_of.tolist()]
        return self._ranges


def _place_cyclic(order: np.ndarray, lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray,
                  size: np.ndarray, *, best_fit: bool, off0: np.ndarray | None = None,
                  placed0: np.ndarray | None = None, layout: _Layout | None = None) -> np.ndarray:
    """Offsets from placing buffers in ``order``: each in the smallest gap below the
    buffers it overlaps in time that holds it (best fit) or the lowest such gap.
    ``placed0`` marks buffers already placed at ``off0`` (they stay there).

    Each buffer is compared with the buffers placed before it that it meets in time
    (:class:`_CyclicPlacement`), or, where most buffers meet a large share of the others,
    with every buffer placed before it (:func:`_place_cyclic_dense`): the offsets are
    the same. ``layout`` (the caller's, for the buffers of ``order`` -- distinct, none in
    ``placed0`` -- around ``placed0``) is shared by the placements of one packing; without
    it one is built for the placements of this call (an order may then name a buffer
    twice, or a fixed one: each placement is one more buffer)."""
    n = len(size)
    off = np.zeros(n, dtype=np.int64) if off0 is None else off0.copy()
    order = np.asarray(order, dtype=np.int64)
    if layout is not None:
        if layout.meets(True).dense or not layout.plain_sizes:
            return _place_cyclic_dense(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0,
                                       placed0=placed0)
        off[order] = _CyclicPlacement(layout, order, best_fit).offsets
        return off
    pre = np.flatnonzero(placed0) if placed0 is not None else np.zeros(0, dtype=np.int64)
    # one entry per placement (an order may name a buffer twice): positions 0.. the fixed
    # buffers, then the placements in order
    seq = np.concatenate([pre, order])
    if len(order):
        npre, npos = len(pre), len(seq)
        at = off[seq]
        lay = _Layout(lo1[seq], hi1[seq], lo2[seq], hi2[seq], size[seq], at, np.arange(npre), np.arange(npre, npos))
        if lay.meets(True).dense or not lay.plain_sizes:
            return _place_cyclic_dense(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0,
                                       placed0=placed0)
        at[npre:] = _CyclicPlacement(lay, np.arange(npre, npos), best_fit).offsets
        off[seq] = at
    return off


class _ByOffset:
    """The buffers placed so far, sorted by offset (ties: in the order they were placed):
    their times (rows lo1, hi1, lo2, hi2), offsets and ends.

    Why: the buffers one buffer meets, picked out of these with a mask, come out in the
    order the gap search wants them (the all-pairs version's stable sort by offset), so
    no buffer sorts them again."""

    def __init__(self, times: np.ndarray, off: np.ndarray, size: np.ndarray) -> None:
        srt = np.argsort(off, kind="stable")
        self.times = tuple(t[srt] for t in times)  # (rows apart: each contiguous, for the masks)
        self.off, self.end = off[srt], off[srt] + size[srt]

    def meeting(self, q: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each of the buffers with times ``q`` (4 rows), the placed ones it meets (by the
        rules' test, :func:`_hits`), by offset: their offsets and ends."""
        out = []
        for row in _hits(*q, *self.times, True):
            cols = np.flatnonzero(row)
            out.append((self.off[cols], self.end[cols]))
        return out

    def add(self, times: np.ndarray, off: np.ndarray, size: np.ndarray) -> None:
        """Merge in buffers placed after all of these (in the order given)."""
        srt = np.argsort(off, kind="stable")
        off = off[srt]
        at = np.searchsorted(self.off, off, "right") + np.arange(len(off))
        old = np.ones(len(self.off) + len(off), dtype=bool)
        old[at] = False

        def merged(mine: np.ndarray, new: np.ndarray) -> np.ndarray:
            out = np.empty(len(old), dtype=mine.dtype)
            out[old] = mine
            out[at] = new
            return out

        self.times = tuple(merged(mine, new[srt]) for mine, new in zip(self.times, times))
        self.off, self.end = merged(self.off, off), merged(self.end, off + size[srt])


def _place_cyclic_dense(order: np.ndarray, lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray,
                        size: np.ndarray, *, best_fit: bool, off0: np.ndarray | None = None,
                        placed0: np.ndarray | None = None) -> np.ndarray:
    """:func:`_place_cyclic`, comparing each buffer with every buffer placed before it, as
    the all-pairs version did, for steps whose buffers mostly meet (and odd inputs).

    Why this way: there listing the buffers each one meets costs more than testing them
    all, and what took the all-pairs version its time was one mask and one sort per buffer.
    The placed buffers are kept sorted by offset (:class:`_ByOffset`), so the ones a buffer
    meets need no sort, and one mask serves :data:`_ROWS` buffers. Those buffers are not
    in it yet: a buffer that meets one of the others of its pass adds them, sorted stably
    by offset after the placed ones (they were placed last), so every gap search sees
    exactly what the all-pairs version's did."""
    n = len(size)
    off = np.zeros(n, dtype=np.int64) if off0 is None else off0.copy()
    pre = np.flatnonzero(placed0) if placed0 is not None else np.zeros(0, dtype=np.int64)
    seq = np.concatenate([pre, np.asarray(order, dtype=np.int64)])
    npre = len(pre)
    times = np.stack([lo1[seq], hi1[seq], lo2[seq], hi2[seq]]).astype(np.int64)
    if times.size and -(1 << 31) <= int(times.min()) and int(times.max()) < 1 << 31:
        times = times.astype(np.int32)  # (the masks compare twice as many at once)
    sizes = np.asarray(size, dtype=np.int64)[seq]
    at = off[seq]
    placed = _ByOffset(times[:, :npre], at[:npre], sizes[:npre])
    size_of = sizes.tolist()
    for s in range(npre, len(seq), _ROWS):
        e = min(s + _ROWS, len(seq))
        q = times[:, s:e]
        inner = np.tril(_hits(*q, *q, True), -1)  # [j, i]: the earlier ones of this pass that j meets
        deps = inner.any(axis=1).tolist()
        for j, (starts, ends) in enumerate(placed.meeting(q)):
            if deps[j]:
                mine = s + np.flatnonzero(inner[j])
                starts = np.concatenate([starts, at[mine]])
                srt = np.argsort(starts, kind="stable")
                starts, ends = starts[srt], np.concatenate([ends, at[mine] + sizes[mine]])[srt]
            at[s + j] = _gap_offset(starts, np.maximum.accumulate(ends), size_of[s + j], best_fit) \
                if len(starts) else 0
        placed.add(q, at[s:e], sizes[s:e])
    off[seq] = at
    return off


class _Block:
    """Placements lo..hi-1 of one order, with what their placement reads: per placement
    one list (a point at 0, the merged ranges of its fixed buffers, then the earlier
    buffers it meets; as indices into :class:`_CyclicPlacement`'s offsets) and the runs
    that can be placed at once."""

    def __init__(self, lo: int, hi: int, order_lists: "_OrderLists", q: np.ndarray, other: np.ndarray) -> None:
        ol = order_lists
        nb, nmov, big = hi - lo, len(ol.size), ol.big
        self.loc = loc = ol.loc[lo:hi]
        count_n = np.bincount(q, minlength=nb)
        sets = ol.set_of[loc]
        count_v = ol.vptr[sets + 1] - ol.vptr[sets]
        latest = np.full(nb, -1, dtype=np.int64)  # the last earlier placement each meets
        has = count_n > 0
        if has.any():
            latest[has] = np.maximum.reduceat(ol.rank[other], (np.cumsum(count_n) - count_n)[has])
        count = count_v + count_n
        ptr = np.zeros(nb + 1, dtype=np.int64)
        np.cumsum(count, out=ptr[1:])
        kind = np.int32 if nmov + len(ol.vptr) + int(ol.vptr[-1]) < 1 << 31 else np.int64
        self.entries = entries = np.empty(int(ptr[-1]), dtype=kind)
        entries[_expand(ptr[:-1], count_v)] = nmov + _expand(ol.vptr[sets], count_v)
        entries[_expand(ptr[:-1] + count_v, count_n)] = other
        self.owner = _owners(count)
        self.big = big  # a run's entries sort on (placement) * big + offset
        self.base_of = np.arange(nb, dtype=np.int64) * big
        self.first, self.last = ptr[:-1], ptr[1:] - 1
        self.ptr, self.mid = ptr.tolist(), (ptr[:-1] + count_v).tolist()
        self.size = ol.size[loc]
        # placed alone, as the all-pairs version did: sizes 0 (the order of equal offsets matters)
        alone = self.size == 0
        run_max = min(_RUN, ol.most)
        # runs: (start, end) of placements none of which meets an earlier one of them
        self.runs: list[tuple[int, int]] = []
        alone_l, latest_l = alone.tolist(), latest.tolist()
        k = 0
        while k < nb:
            s = k
            k += 1
            if not alone_l[s]:
                while k < nb and k - s < run_max and latest_l[k] < s + lo and not alone_l[k]:
                    k += 1
            self.runs.append((s, k))
        self.alone = alone_l


class _OrderLists:
    """What placing one order on a :class:`_Layout` reads that does not depend on the
    rule: :class:`_Block` s, built as they are placed, kept for the next rule when the
    layout keeps its lists (best fit and lowest offset take the same orders)."""

    def __init__(self, layout: _Layout, order: np.ndarray) -> None:
        self.order = order.copy()
        self.loc = loc = layout.local[order]  # the movable buffer (0..) of each placement
        nq, nmov = len(order), len(layout.movable)
        # the placement of each movable buffer (one past the last: not placed)
        self.rank = np.full(nmov, nq, dtype=np.int32 if nq < 1 << 31 else np.int64)
        self.rank[loc] = np.arange(nq)
        self.size = layout.size[layout.movable]
        self.set_of = layout.sets(True)[0]
        self.vptr = layout.merged()[0]
        top = max(int((layout.fixed_off + layout.fixed_size).max()), 0) if len(layout.fixed) else 0
        # no offset reaches past the fixed buffers' top plus every size to place
        self.big = top + int(self.size[loc].sum()) + 1
        self.most = max(1, (1 << 62) // self.big)  # placements in a block for (placement) * big to fit
        self.meets = layout.meets(True)
        sets = self.set_of[loc]
        upper = self.meets.upper[loc] + self.vptr[sets + 1] - self.vptr[sets]
        self.bounds = _blocks(upper, _PAIRS_PER_BLOCK, self.most)
        # kept for the next rule with the layout's lists (8 bytes an entry, half as many)
        self.kept: list[_Block] | None = [] if self.meets.keep() is not None else None

    def blocks(self) -> Iterator[_Block]:
        if self.kept is not None and len(self.kept) == len(self.bounds):
            yield from self.kept
            return
        for lo, hi in self.bounds:
            q, other = self.meets.lists(self.loc[lo:hi], self.rank)
            block = _Block(lo, hi, self, q, other)
            if self.kept is not None:
                self.kept.append(block)
            yield block


def _gap_offset(starts: np.ndarray, reach: np.ndarray, size: int, best_fit: bool) -> int:
    """Where a buffer of ``size`` goes among placed buffers (``starts`` ascending, ``reach``
    the running maximum of their ends): the smallest gap that holds it (best fit, lowest
    on ties) or the lowest one, else on top of them all."""
    prev = np.concatenate((_ZERO, reach[:-1]))
    gap = starts - prev
    fit = (gap >= size).nonzero()[0]
    if not fit.size:
        return int(reach[-1])
    if best_fit:
        return int(prev[fit[np.argmin(gap[fit])]])
    return int(prev[fit[0]])


class _CyclicPlacement:
    """One :func:`_place_cyclic` placement on a :class:`_Layout`: ``offsets`` of ``order``.

    Each buffer looks at the buffers placed before it that it meets and at the merged
    ranges of its fixed ones. A run of buffers none of which meets an earlier one of the
    run sees only buffers placed before the run, so it is placed in one vectorised pass;
    a buffer of size 0, for which the order of equal offsets matters, is placed alone,
    comparing exactly what the all-pairs version compared."""

    def __init__(self, layout: _Layout, order: np.ndarray, best_fit: bool) -> None:
        self.layout, self.best_fit = layout, best_fit
        self.lists = lists = layout.order_lists(order)
        _vptr, vo, ve = layout.merged()
        nmov = len(lists.size)
        # offsets and ends of the movable buffers, then of the merged fixed ranges
        self.voff = np.concatenate([np.zeros(nmov, dtype=np.int64), vo])
        self.vend = np.concatenate([np.zeros(nmov, dtype=np.int64), ve])
        for block in lists.blocks():
            for s, e in block.runs:
                if block.alone[s]:
                    self._exact(block, s)
                elif e - s == 1:
                    self._one(block, s)
                else:
                    self._run(block, s, e)
        self.offsets = self.voff[lists.loc]

    def _one(self, bl: _Block, k: int) -> None:
        """Place one placement (size > 0): into the gaps between what its list covers."""
        ids = bl.entries[bl.ptr[k]:bl.ptr[k + 1]]
        vo = self.voff[ids]
        srt = vo.argsort()  # the order of equal offsets does not matter for a size > 0
        o = _gap_offset(vo[srt], np.maximum.accumulate(self.vend[ids[srt]]), bl.size[k], self.best_fit)
        i = bl.loc[k]
        self.voff[i] = o
        self.vend[i] = o + bl.size[k]

    def _run(self, bl: _Block, s: int, e: int) -> None:
        """Place placements s..e-1 of the block (sizes > 0, none meeting an earlier one of
        them) at once: the gaps of each, its entries sorted on (placement, offset)."""
        a, b = bl.ptr[s], bl.ptr[e]
        ids = bl.entries[a:b]
        owners = bl.owner[a:b]
        base = owners.astype(np.int64) * bl.big
        key = self.voff[ids] + base
        srt = key.argsort()
        key = key[srt]
        reach = np.maximum.accumulate((self.vend[ids] + base)[srt])
        prev = np.empty_like(reach)
        prev[1:] = reach[:-1]
        bases = bl.base_of[s:e]
        prev[bl.first[s:e] - a] = bases  # each one's first gap starts at 0
        gap = key - prev
        fit = (gap >= bl.size[owners]).nonzero()[0]
        out = reach[bl.last[s:e] - a] - bases  # no gap holds it: on top
        if fit.size:
            owner = owners[fit]
            if self.best_fit:
                pick = np.lexsort((gap[fit], owner))  # the smallest gap, the lowest of equal ones
                fit, owner = fit[pick], owner[pick]
            first = np.empty(len(fit), dtype=bool)
            first[0] = True
            np.not_equal(owner[1:], owner[:-1], out=first[1:])
            chosen = owner[first]
            out[chosen - s] = prev[fit[first]] - bl.base_of[chosen]
        i = bl.loc[s:e]
        self.voff[i] = out
        self.vend[i] = out + bl.size[s:e]

    def _exact(self, bl: _Block, k: int) -> None:
        """Place one placement as the all-pairs version did: every buffer it meets (fixed
        ones unmerged), in placement order, sorted stably by offset."""
        lay, lists = self.layout, self.lists
        _set_of, s, f = lay.sets(True)
        st = int(lists.set_of[bl.loc[k]])
        fx = f[np.searchsorted(s, st, "left"):np.searchsorted(s, st, "right")]
        mv = lists.loc[np.unique(lists.rank[bl.entries[bl.mid[k]:bl.ptr[k + 1]]])]
        oi = np.concatenate([lay.fixed_off[fx], self.voff[mv]])
        sizes = np.concatenate([lay.fixed_size[fx], lists.size[mv]])
        if not oi.size:
            o = 0
        else:
            srt = np.argsort(oi, kind="stable")
            so = oi[srt]
            o = _gap_offset(so, np.maximum.accumulate(so + sizes[srt]), bl.size[k], self.best_fit)
        i = bl.loc[k]
        self.voff[i] = o
        self.vend[i] = o + bl.size[k]


def _blocks(sizes: np.ndarray, cap: int, most: int) -> list[tuple[int, int]]:
    """Consecutive placements cut into blocks of about ``cap`` list entries and at most
    ``most`` placements (at least one placement each)."""
    ends = np.cumsum(sizes)
    out, lo, base = [], 0, 0
    n = len(sizes)
    while lo < n:
        hi = int(np.searchsorted(ends, base + cap, "right"))
        hi = min(max(hi, lo + 1), lo + most, n)
        out.append((lo, hi))
        base = int(ends[hi - 1])
        lo = hi
    return out


def _clear_of_ranges(starts: list[int], ends: list[int], o: int, size: int) -> int:
    """The lowest offset from ``o`` up where ``size`` bytes overlap none of the disjoint
    ranges ``[starts[j], ends[j])`` (both ascending)."""
    j = bisect.bisect_right(ends, o)
    while j < len(starts) and starts[j] < o + size:
        o = ends[j]
        j += 1
    return o


#: "not to place" in a canonical placement's keys
_INF = np.iinfo(np.int64).max


def _canonical_start(order: np.ndarray, size: np.ndarray, off0: np.ndarray | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What both canonical placements start from: (offsets, the buffers to place, each
    one's rank in ``order``, keys = lowest feasible offset * n + rank, _INF = not to place)."""
    n = len(size)
    off = np.zeros(n, dtype=np.int64) if off0 is None else off0.copy()
    todo = np.asarray(order, dtype=np.int64)
    rank = np.zeros(n, dtype=np.int64)
    rank[todo] = np.arange(len(todo))
    key = np.full(n, _INF, dtype=np.int64)
    key[todo] = rank[todo]
    return off, todo, rank, key


def _place_canonical(order: np.ndarray, lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray,
                     size: np.ndarray, *, off0: np.ndarray | None = None,
                     placed0: np.ndarray | None = None, layout: _Layout | None = None) -> np.ndarray:
    """minimalloc's canonical greedy (as :func:`_lowest_offset`), for buffers live on
    one or two parts of a cycle and around buffers already placed: repeatedly place,
    of the buffers in ``order``, the one that can sit lowest -- on top of every
    buffer placed so far that it overlaps in time, and clear of the ``placed0``
    buffers (fixed at ``off0``) -- ties going to the earliest in ``order``.

    Why: placing buffers in rising offsets makes every buffer rest on what is below
    it, so the buffers live at the busiest time stack without gaps. Taking buffers in
    a fixed order instead (largest first, longest first) leaves gaps under a buffer
    that no later one fills: on the held-out steps, 12 of 47 packings end more than
    1 % above the bound that way, and 4 with this rule too.

    A placed buffer raises only the buffers it meets in time, and a buffer's fixed
    ones are merged once per set of them (both from ``layout``, the caller's or built
    here: for the buffers of ``order`` around ``placed0``); where most buffers meet a
    large share of the others, :func:`_place_canonical_dense` tests them all. The
    offsets are the same. ``order`` names distinct buffers, none in ``placed0``.
    """
    n = len(size)
    off, todo, rank, key = _canonical_start(order, size, off0)
    inf = _INF
    # lowest feasible offset of each buffer to place; inf for the others, and for each one
    # once placed, so that only its test below tells whom a placed buffer raises
    min_off = np.full(n, inf, dtype=np.int64)
    min_off[todo] = 0
    fixed = np.flatnonzero(placed0) if placed0 is not None else np.zeros(0, dtype=np.int64)
    if not len(todo):
        return off
    if layout is None:
        layout = _Layout(lo1, hi1, lo2, hi2, size, off, fixed, np.unique(todo))
    meets = layout.meets(layout.wraps)  # no second parts (lifetime tables, run plans): none compared
    local, movable = layout.local, layout.movable
    # per buffer to place, the fixed buffers it overlaps in time merged into disjoint
    # ranges (starts, ends; both ascending): it is checked against them again each time
    # its lowest offset rises
    ranges = layout.ranges() if fixed.size else []
    if meets.dense:
        # keys (lowest offset * n + rank) as Python ints, as the all-pairs version's int64
        # ones while no offset reaches past the fixed buffers' top plus every size to place
        top = int((layout.fixed_off + layout.fixed_size).max()) if len(fixed) else 0
        if not layout.plain_sizes or (max(top, 0) + int(size[todo].sum()) + 1) * n >= 1 << 63:
            return _place_canonical_all_pairs(order, lo1, hi1, lo2, hi2, size, off0=off0, placed0=placed0)
        return _place_canonical_dense(todo, lo1, hi1, lo2, hi2, size, off, layout.wraps,
                                      [ranges[j] for j in local[todo].tolist()] if fixed.size else None)
    kept = meets.keep()
    if kept is not None:
        ptr, table = kept[0].tolist(), movable[kept[1]]
    else:
        part_ptr, part_lo, part_hi = meets.part_ptr.tolist(), meets.part_lo.tolist(), meets.part_hi.tolist()
        overlapping = meets.index.overlapping

    sizes, rank_of, local_of = size.tolist(), rank.tolist(), local.tolist()  # (Python ints: faster one at a time)
    for _ in range(len(todo)):
        while True:
            i = int(key.argmin())
            o = int(min_off[i])
            if not fixed.size:
                break
            # the lowest offset from o up that clears the fixed buffers it overlaps
            # (raising it keeps the choice canonical: a key only ever grows)
            starts, ends = ranges[local_of[i]]
            o2 = _clear_of_ranges(starts, ends, o, sizes[i])
            if o2 == o:
                break
            min_off[i] = o2
            key[i] = o2 * n + rank_of[i]
        off[i] = o
        key[i] = min_off[i] = inf
        h = o + sizes[i]
        li = local_of[i]
        if kept is not None:
            m = table[ptr[li]:ptr[li + 1]]
        else:  # (the buffer itself is among them: placed, it is not raised)
            m = movable[np.concatenate([got for p in range(part_ptr[li], part_ptr[li + 1])
                                        for got in overlapping(part_lo[p], part_hi[p])])]
        m = m[min_off[m] < h]  # the buffers it meets that are still to place, below its top
        if m.size:
            min_off[m] = h
            key[m] = h * n + rank[m]
    return off


def _place_canonical_dense(todo: np.ndarray, lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray,
                           size: np.ndarray, off: np.ndarray, wraps: bool,
                           ranges: list[tuple[list[int], list[int]]] | None) -> np.ndarray:
    """:func:`_place_canonical` for steps whose buffers mostly meet, as the all-pairs version
    places them: each buffer placed raises, with one mask, every buffer still to place that it
    meets (by the rules' test, :func:`_overlapping`). ``todo``: the
    buffers by rank; ``off``: where the others are; ``ranges``: each one's fixed ranges (by
    rank), if any.

    Why not the all-pairs version: its masks cover every buffer, placed or not, and half
    of them are placed on average. These cover the buffers still to place only (the arrays
    drop the placed ones every :data:`_COMPACT` placements), with times as int32 where they
    fit, which halves the time on a dense step."""
    n = len(size)
    times = np.stack([lo1[todo], hi1[todo], lo2[todo], hi2[todo]]).astype(np.int64)
    if times.size and -(1 << 31) <= int(times.min()) and int(times.max()) < 1 << 31:
        times = times.astype(np.int32)  # (the masks compare twice as many at once)
    # the buffers still to place (while not compacted, placed ones too, with key _INF): their
    # times, rank and key = lowest feasible offset * n + rank
    live_times, rank = tuple(times), np.arange(len(todo), dtype=np.int64)
    key = rank.copy()
    sizes, parts = size[todo].tolist(), times.T.tolist()
    for done in range(1, len(todo) + 1):
        while True:
            k = int(key.argmin())
            o, r = divmod(int(key[k]), n)
            if ranges is None:
                break
            # the lowest offset from o up that clears the fixed buffers it overlaps (raising
            # it keeps the choice canonical: a key only ever grows)
            o2 = _clear_of_ranges(*ranges[r], o, sizes[r])
            if o2 == o:
                break
            key[k] = o2 * n + r
        off[todo[r]] = o
        key[k] = _INF
        h = o + sizes[r]
        m = _overlapping(*parts[r], *live_times, wraps)
        m &= key < h * n  # (not placed, and below its top)
        raised = np.flatnonzero(m)
        key[raised] = h * n + rank[raised]
        if done % _COMPACT == 0:
            keep = np.flatnonzero(key != _INF)
            live_times, rank, key = tuple(t[keep] for t in live_times), rank[keep], key[keep]
    return off


# --------------------------------------------------------------------------- all pairs
#
# The canonical placement as it was before it listed pairs (commit c4b8c3e), the tests'
# reference: each buffer placed is tested against every buffer with vectorised masks. It
# places where _place_canonical_dense cannot: keys past int64, negative sizes or offsets.


def _place_canonical_all_pairs(order: np.ndarray, lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray,
                               hi2: np.ndarray, size: np.ndarray, *, off0: np.ndarray | None = None,
                               placed0: np.ndarray | None = None) -> np.ndarray:
    """:func:`_place_canonical`, testing each placed buffer against every buffer to place."""
    n = len(size)
    off, todo, rank, key = _canonical_start(order, size, off0)
    inf = _INF
    min_off = np.zeros(n, dtype=np.int64)
    fixed = np.flatnonzero(placed0) if placed0 is not None else np.zeros(0, dtype=np.int64)
    f_lo1, f_hi1, f_lo2, f_hi2 = lo1[fixed], hi1[fixed], lo2[fixed], hi2[fixed]
    f_off, f_top = off[fixed], off[fixed] + size[fixed]

    wraps = bool((hi2 > lo2).any())  # no second parts (lifetime tables, run plans): half the comparisons

    # per buffer, the fixed buffers it overlaps in time merged into disjoint ranges
    # (starts, ends; both ascending), built when first needed: a buffer is checked
    # against them again each time its lowest offset rises
    taken: dict[int, tuple[list[int], list[int]]] = {}

    def fixed_ranges(i: int) -> tuple[list[int], list[int]]:
        got = taken.get(i)
        if got is None:
            m = _overlapping(lo1[i], hi1[i], lo2[i], hi2[i], f_lo1, f_hi1, f_lo2, f_hi2, wraps) & (f_top > f_off)
            fo, ft = f_off[m], f_top[m]
            srt = np.argsort(fo, kind="stable")
            fo, reach = fo[srt], np.maximum.accumulate(ft[srt])
            new = np.ones(len(fo), dtype=bool)
            new[1:] = fo[1:] > reach[:-1]  # a range starts where no earlier one reaches
            last = np.append(np.flatnonzero(new)[1:] - 1, len(fo) - 1) if len(fo) else np.zeros(0, dtype=np.int64)
            got = taken[i] = (fo[new].tolist(), reach[last].tolist())
        return got

    for _ in range(len(todo)):
        while True:
            i = int(np.argmin(key))
            o = int(min_off[i])
            if not fixed.size:
                break
            # the lowest offset from o up that clears the fixed buffers it overlaps
            # (raising it keeps the choice canonical: a key only ever grows)
            starts, ends = fixed_ranges(i)
            o2 = _clear_of_ranges(starts, ends, o, int(size[i]))
            if o2 == o:
                break
            min_off[i] = o2
            key[i] = o2 * n + rank[i]
        off[i] = o
        key[i] = inf
        h = o + int(size[i])
        m = np.flatnonzero(_overlapping(lo1[i], hi1[i], lo2[i], hi2[i], lo1, hi1, lo2, hi2, wraps)
                           & (key != inf) & (min_off < h))
        if m.size:
            min_off[m] = h
            key[m] = h * n + rank[m]
    return off
