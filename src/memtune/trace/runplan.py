"""Plans made from an earlier run: plan mode from the first allocation.

Why: plan mode learns a step while the run goes, so it can serve a step only once it
has seen it three times (twice for a long step). Live bytes first peak much earlier --
usually in the first step after the optimizer's state appears -- so the plan lowers
later steps but never the run's peak. A training job is run again and again (restarts, resumes, sweeps), and
its allocation sequence depends only on the program and its shapes. A plan made from
one recorded run knows the whole sequence, and the next run can use it from its first
allocation:

* the **repeating step** is packed as plan mode packs it (:func:`memtune.trace.plan.make_plan`:
  a cycle whose buffers may cross the step boundary), so it can repeat for as long as
  the new run does;
* everything before it (the **prologue**: the first steps, the model's weights, the
  optimizer's state) is packed statically around the step's buffers
  (:func:`memtune.trace.packing.pack_around`), with the lifetimes the recording shows.
  A buffer the recording frees only in its teardown (or never) lives for the rest of
  the run: it goes at the bottom of the arena, clear of every slot of the step;
* the blocks **live when the recording began** (a snapshot taken mid-run) are planned
  as prologue buffers live from the start: a warm start puts them in the arena.

:class:`memtune.trace.plan.PlanAllocator` serves a run plan from its first
allocation while the run follows the recording (sizes, streams, which blocks each run
of frees releases)
and falls back to its online policy (and online learning) at the first deviation,
as it does for a learned step. A run plan is a JSON file (``memtune plan TRACE
--save PLAN``; ``MEMTUNE_PLAN_FILE`` or ``--set plan_file=PLAN`` uses it); a file
that is not one gets a :class:`memtune.errors.PlanFileError` naming what is wrong.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from memtune.errors import PlanFileError
from memtune.trace import packing
from memtune.trace.formats._common import DECODE_ERRORS, GZIP_MAGIC
from memtune.trace.model import Action, Event
from memtune.trace.plan import ALLOC, FREE, STEP_COVERAGE, UNKNOWN_FREE, StepPlan, find_step, make_plan, tokenize

FORMAT = "memtune-run-plan"
VERSION = 1
#: Largest arena a plan file may ask for (1 PiB): a bigger number is a corrupt file.
MAX_ARENA = 1 << 50


@dataclass
class RunPlan:
    """Offsets for a whole run: a prologue served by position, then a repeating step."""

    keys: list[tuple]               # token keys of the prologue, by position (0 = first alloc/free)
    offsets: dict[int, int]         # prologue alloc position -> offset in the arena
    step: StepPlan | None           # the repeating step, from position ``start`` on (None: prologue only)
    start: int                      # first position the step serves (= len(keys))
    anchor: int                     # a position where the step's (unrotated) phase is 0
    arena: int                      # bytes: the packed peak of prologue and step together
    lower_bound: int                # peak live bytes of the planned buffers in the recording
    alignment: int = 512
    source: dict[str, Any] = field(default_factory=dict)  # trace, device, events of the recording
    method: str = ""                # how the prologue was packed
    #: blocks live when the recording began (a snapshot taken mid-run), in address
    #: order: (requested size, stream, offset). A warm start puts them in the arena.
    initial: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.arena / self.lower_bound if self.lower_bound else 1.0

    def phase(self, position: int) -> int:
        """The step's unrotated phase at ``position`` (>= ``start``)."""
        assert self.step is not None
        return (position - self.anchor) % self.step.length

    def first_use(self, page: int) -> np.ndarray:
        """For each ``page``-sized page of the arena, the first position a planned block
        touches it (the prologue, then the step's first cycle); never-used pages get a
        position past every other."""
        pages = -(-self.arena // page)
        never = np.iinfo(np.int64).max
        out = np.full(pages, never, dtype=np.int64)
        align = self.alignment

        def touch(q: int, off: int, size: int) -> None:
            i, j = off // page, -(-(off + (size + align - 1) // align * align) // page)
            np.minimum(out[i:j], q, out=out[i:j])

        for size, _stream, off in self.initial:
            touch(0, off, size)
        for q, off in self.offsets.items():
            touch(q, off, self.keys[q][1])
        st = self.step
        if st is not None:
            for q in range(self.start, self.start + st.length):
                ph = self.phase(q)
                off = st.offsets.get(ph)
                if off is not None:
                    touch(q, off, st.template[ph][1])
        return out

    # ------------------------------------------------------------ files
    def to_json(self) -> dict[str, Any]:
        st = self.step
        return {
            "format": FORMAT,
            "version": VERSION,
            "source": self.source,
            "alignment": self.alignment,
            "arena": self.arena,
            "lower_bound": self.lower_bound,
            "method": self.method,
            "initial": [list(b) for b in self.initial],
            "prologue": {"keys": [list(k) for k in self.keys],
                         "offsets": [[p, o] for p, o in sorted(self.offsets.items())]},
            "step": None if st is None else {
                "start": self.start, "anchor": self.anchor, "length": st.length, "cut": st.cut,
                "template": [list(k) for k in st.template],
                "offsets": [[p, o] for p, o in sorted(st.offsets.items())],
                "durations": [[p, d] for p, d in sorted(st.durations.items())],
                "arena": st.arena, "lower_bound": st.lower_bound,
            },
        }

    def save(self, path: str | os.PathLike) -> Path:
        """Write the plan as JSON (gzip-compressed when the name ends in ``.gz``)."""
        path = Path(path)
        text = json.dumps(self.to_json(), separators=(",", ":"))
        tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        try:  # never a half-written plan under the real name
            if path.suffix == ".gz":
                with gzip.open(tmp, "wt", encoding="utf-8") as f:
                    f.write(text)
            else:
                tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()
        return path


# ---------------------------------------------------------------- building


def make_run_plan(events: Sequence[Event], *, initial: Sequence[tuple[int, int, int]] = (), alignment: int = 512,
                  min_period: int = 4, time_budget: float = 2.0, rounds: int | None = None,
                  source: dict[str, Any] | None = None) -> RunPlan:
    """Plan a whole recorded device stream (see the module docstring).

    ``initial`` lists the blocks live when the recording began, as
    :meth:`memtune.trace.model.DeviceTrace.initial_live` gives them (a snapshot taken
    mid-run): they are planned too, live from the start until the recording frees
    them, so a warm start puts them in the arena instead of beside it.

    Half of ``time_budget`` packs the step, the rest packs the prologue around it (a
    run with no step: the whole recording around the buffers it never frees, placed
    first at the bottom). ``rounds`` caps each packer's improvement rounds, as in
    :func:`memtune.trace.packing.pack`: give it for a plan that does not depend on the
    machine's load.
    """
    toks, keys = tokenize(events)
    n = len(toks)
    per, template = find_step(events, min_period=min_period)
    # every alloc's size and the position of its free (None: never freed in the recording)
    size_at: dict[int, int] = {}
    death: dict[int, int] = {}
    born: dict[int, int] = {}
    init = sorted(initial)  # (address, requested, stream), in address order
    init_at = {addr: i for i, (addr, _r, _s) in enumerate(init)}
    init_death: dict[int, int] = {}
    pos = 0
    for ev in events:
        if ev.action is Action.ALLOC:
            born[ev.address] = pos
            size_at[pos] = ev.size
        elif ev.action is Action.FREE:
            b = born.pop(ev.address, None)
            if b is not None:
                death[b] = pos
            else:
                i = init_at.pop(ev.address, None)
                if i is not None:
                    init_death[i] = pos
        else:
            continue
        pos += 1
    step = None
    start, anchor = n, 0
    if per is not None and per.length * per.count < STEP_COVERAGE * n:
        per = None  # what repeats is a sliver of the run (a layer, a shape that recurs): no step
    if per is not None:
        step = make_plan(template, alignment, time_budget / 2, rounds=rounds)
        if step.arena == 0:
            step = None
        else:
            p = per.length
            last = per.start + (per.count - 1) * p  # the template's first position
            # the step serves from the first position where the recording follows it
            # without a break up to its last repetition
            j = last
            while j > 0 and toks[j - 1] == toks[j - 1 + p]:
                j -= 1
            start, anchor = j, last
            # where the recording stops following the step (its teardown)
            end = last + p
            while end < n and toks[end] == toks[end - p]:
                end += 1
    if step is None:
        end = max(size_at, default=-1) + 1  # after the last allocation only frees come: teardown
    # a buffer freed only in the teardown lives for as long as the run does: in a longer
    # run its free comes later (the model's weights, the optimizer's state)
    death = {q: f for q, f in death.items() if f < end}
    init_death = {i: f for i, f in init_death.items() if f < end}
    round_up = lambda s: (s + alignment - 1) // alignment * alignment  # noqa: E731
    horizon = n if step is None else n + 2 * step.length
    # Packing times are positions + 1: the blocks live when the recording began are
    # live on [0, their free + 1), before the first event's own time.
    # Buffers the recording never frees (weights, the optimizer's state) go at the
    # bottom, in the order they come: if a later run deviates, the arena it keeps
    # holding is those buffers, on as few pages as they fill.
    offsets: dict[int, int] = {}
    init_off: dict[int, int] = {}
    fixed: list[tuple[int, int, int, int]] = []
    base = 0
    for i, (_addr, req, _stream) in enumerate(init):
        if i not in init_death:
            init_off[i] = base
            fixed.append((0, horizon + 1, round_up(req), base))
            base += round_up(req)
    for q in range(start):
        if q in size_at and q not in death:
            offsets[q] = base
            fixed.append((q + 1, horizon + 1, round_up(size_at[q]), base))
            base += round_up(size_at[q])
    if step is not None and base:
        step = dataclasses.replace(step, offsets={ph: o + base for ph, o in step.offsets.items()},
                                   arena=step.arena + base)
    if step is not None:
        # the step's buffers from ``start`` on, at their cyclic offsets, for two more
        # cycles past the recording: a buffer the recording never frees must stay clear
        # of every slot the step uses in any cycle
        for q in range(start, horizon):
            ph = (q - anchor) % step.length
            off = step.offsets.get(ph)
            if off is not None:
                sz = step.template[ph][1]
                fixed.append((q + 1, q + 1 + step.durations[ph], round_up(sz), off))
    # a prologue buffer freed where the step already serves is the previous cycle's
    # instance of a step buffer when its free follows the template: it may take that
    # instance's slot, which the packed cycle keeps clear of every other
    slotted: dict[int, int] = {}
    if step is not None:
        for q in range(start):
            f = death.get(q)
            if f is None or f < start:
                continue
            d = f - q
            ph = (f - anchor) % step.length
            a = (ph - d) % step.length
            if step.template[ph] == (FREE, d) and step.durations.get(a) == d and step.template[a] == keys[toks[q]]:
                slotted[q] = step.offsets[a]
    init_pos = [i for i in range(len(init)) if i not in init_off]
    budget = time_budget / 2 if step is not None else time_budget

    def pack_prologue(in_slots: bool, seconds: float) -> tuple[list[int], packing.Packing]:
        """The prologue packed around the fixed buffers, the previous cycle's instances at
        their slots (``in_slots``) or wherever the packer puts them."""
        pinned = [(q + 1, death[q] + 1, round_up(size_at[q]), o) for q, o in slotted.items()] if in_slots else []
        pro = [q for q in range(start) if q in size_at and q not in offsets and not (in_slots and q in slotted)]
        intervals = ([(q + 1, death.get(q, horizon) + 1, size_at[q]) for q in pro]
                     + [(0, init_death[i] + 1, init[i][1]) for i in init_pos])
        return pro, packing.pack_around(intervals, fixed + pinned, alignment=alignment, time_budget=seconds,
                                        rounds=rounds)

    # (A run with no step keeps them at the bottom too, though the static packer's own
    # search, free to put them anywhere, often packs the recording a little tighter: a
    # recording with no step is one whose shapes follow the data, so a later run leaves
    # it within the first batch, and the buffers that live to the end then hold every
    # page they are spread over beside the online policy for the rest of the run. Held-
    # out yolov5-detect-train's later run: 1.1735x the bound with them spread, 1.0540x at
    # the bottom, 1.0431x learned online; measured in docs/policy-log.md.)
    pro_pos, pk = pack_prologue(True, budget / 2 if slotted else budget)
    # (no packing of the prologue ends below the step's slots and the buffers at the bottom:
    # where the slots reach no higher, packing again cannot win)
    fixed_top = max((off + size for _s, _e, size, off in fixed), default=0)
    if slotted and pk.peak > fixed_top:
        # Their slots are where the cycle keeps room for them, but a long-lived one pins a
        # step's slot far back into the prologue, and the prologue's own buffers must then
        # fit around slots scattered over the arena: held-out t5-adafactor-train's 9.5 MiB
        # buffer, live for most of its first steps, found no room below them (1.0275 x
        # the recording's bound; packed freely, 1.0082). The better packing is kept.
        free_pos, free_pk = pack_prologue(False, budget / 2)
        if free_pk.peak < pk.peak:
            pro_pos, pk = free_pos, free_pk
            slotted = {}
    offsets.update(slotted)
    got = [int(o) for o in pk.offsets]
    offsets.update(zip(pro_pos, got[:len(pro_pos)]))
    init_off.update(zip(init_pos, got[len(pro_pos):]))
    # the lower bound: live requested bytes of what the plan places while the recording follows it
    lives = [(q + 1, death.get(q, horizon) + 1, size_at[q]) for q in range(start) if q in size_at]
    lives += [(0, init_death.get(i, horizon) + 1, req) for i, (_a, req, _s) in enumerate(init)]
    if step is not None:
        for q in range(start, end):
            ph = (q - anchor) % step.length
            if ph in step.offsets:
                lives.append((q + 1, q + 1 + step.durations[ph], step.template[ph][1]))
    lb = packing.lower_bound([(a, min(b, end + 1), sz) for a, b, sz in lives if a < end + 1]) if lives else 0
    src = dict(source or {})
    src.setdefault("events", n)
    return RunPlan([keys[t] for t in toks[:start].tolist()], offsets, step, start, anchor, int(pk.peak), lb,
                   alignment, src, pk.method, [(req, stream, init_off[i]) for i, (_a, req, stream) in enumerate(init)])


# ---------------------------------------------------------------- reading


def load(path: str | os.PathLike) -> RunPlan:
    """Read a plan file written by :meth:`RunPlan.save`, checking every field."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise PlanFileError(f"cannot read plan file {name}: {e.strerror or e}", path=name) from None
    try:
        if raw[:2] == GZIP_MAGIC:
            raw = gzip.decompress(raw)
        data = json.loads(raw.decode("utf-8"))
    except DECODE_ERRORS as e:
        raise PlanFileError(f"plan file {name} is not JSON (or gzip-compressed JSON): {e}; write one with "
                            "`memtune plan TRACE --save PLAN.json`", path=name) from None
    return from_json(data, name)


def from_json(data: Any, name: str = "<plan>") -> RunPlan:
    """Check and convert what :meth:`RunPlan.to_json` wrote."""
    def bad(what: str, value: Any, accepted: str) -> PlanFileError:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return PlanFileError(f"plan file {name}: {what} is {shown}; expected {accepted}", path=name)

    def obj(d: Any, what: str) -> dict:
        if not isinstance(d, dict):
            raise bad(what, d, "a JSON object")
        return d

    def nat(d: dict, key: str, what: str, lo: int = 0, hi: int = MAX_ARENA) -> int:
        v = d.get(key)
        if type(v) is not int or not lo <= v <= hi:
            raise bad(f"{what}.{key}", v, f"an integer in [{lo}, {hi}]")
        return v

    def key_list(v: Any, what: str) -> list[tuple]:
        if not isinstance(v, list):
            raise bad(what, v, "a list of tokens")
        out = []
        for i, k in enumerate(v):
            ok = (isinstance(k, list) and k and all(type(x) is int for x in k) and (
                (k[0] == ALLOC and len(k) == 3 and k[1] > 0 and k[2] >= 0)
                or (k[0] == FREE and len(k) == 2 and k[1] > 0)
                or (k[0] == UNKNOWN_FREE and len(k) == 2 and k[1] >= 0)))
            if not ok:
                raise bad(f"{what}[{i}]", k, f"[{ALLOC}, size > 0, stream >= 0] (alloc), [{FREE}, distance > 0] "
                                             f"(free) or [{UNKNOWN_FREE}, size] (free of an earlier block)")
            out.append(tuple(k))
        return out

    def offset_map(v: Any, what: str, keys: list[tuple], arena: int, align: int) -> dict[int, int]:
        if not isinstance(v, list):
            raise bad(what, v, "a list of [position, offset] pairs")
        out: dict[int, int] = {}
        for i, pair in enumerate(v):
            if not (isinstance(pair, list) and len(pair) == 2 and all(type(x) is int for x in pair)):
                raise bad(f"{what}[{i}]", pair, "[position, offset] (integers)")
            q, o = pair
            if not 0 <= q < len(keys) or keys[q][0] != ALLOC:
                raise bad(f"{what}[{i}] position", q, "the position of an alloc token in the same plan")
            size = (keys[q][1] + align - 1) // align * align
            if o < 0 or o % align or o + size > arena:
                raise bad(f"{what}[{i}] offset", o, f"a multiple of {align} with offset + {size} <= arena ({arena})")
            out[q] = o
        return out

    d = obj(data, "the file")
    if d.get("format") != FORMAT:
        raise bad("format", d.get("format"), f"{FORMAT!r} (a plan written by `memtune plan TRACE --save`)")
    if d.get("version") != VERSION:
        raise bad("version", d.get("version"), f"{VERSION} (this memtune reads version {VERSION})")
    align = nat(d, "alignment", "plan", 1, 1 << 30)
    if align & (align - 1):
        raise bad("alignment", align, "a power of two")
    arena = nat(d, "arena", "plan")
    lb = nat(d, "lower_bound", "plan")
    source = d.get("source", {})
    if not isinstance(source, dict):
        raise bad("source", source, "a JSON object")
    if "events" in source:
        nat(source, "events", "source")
    initial: list[tuple[int, int, int]] = []
    init_raw = d.get("initial", [])
    if not isinstance(init_raw, list):
        raise bad("initial", init_raw, "a list of [size, stream, offset] (blocks live when the recording began)")
    for i, b in enumerate(init_raw):
        if not (isinstance(b, list) and len(b) == 3 and all(type(x) is int and x >= 0 for x in b)):
            raise bad(f"initial[{i}]", b, "[size, stream, offset] (integers >= 0)")
        size = (b[0] + align - 1) // align * align
        if b[2] % align or b[2] + size > arena:
            raise bad(f"initial[{i}] offset", b[2], f"a multiple of {align} with offset + {size} <= arena ({arena})")
        initial.append((b[0], b[1], b[2]))
    pro = obj(d.get("prologue"), "prologue")
    keys = key_list(pro.get("keys"), "prologue.keys")
    offsets = offset_map(pro.get("offsets"), "prologue.offsets", keys, arena, align)
    st = d.get("step")
    step = None
    start, anchor = len(keys), 0
    if st is not None:
        st = obj(st, "step")
        if nat(st, "start", "step") != len(keys):
            raise bad("step.start", st.get("start"), f"the prologue's length ({len(keys)})")
        anchor = nat(st, "anchor", "step")
        length = nat(st, "length", "step", 1, 1 << 31)
        cut = nat(st, "cut", "step", 0, length - 1)
        template = key_list(st.get("template"), "step.template")
        if len(template) != length:
            raise bad("step.template", f"{len(template)} tokens", f"step.length ({length}) tokens")
        soff = offset_map(st.get("offsets"), "step.offsets", template, arena, align)
        dur_raw = st.get("durations")
        if not isinstance(dur_raw, list):
            raise bad("step.durations", dur_raw, "a list of [phase, events] pairs")
        durations: dict[int, int] = {}
        for i, pair in enumerate(dur_raw):
            if not (isinstance(pair, list) and len(pair) == 2 and all(type(x) is int for x in pair)
                    and pair[0] in soff and pair[1] > 0):
                raise bad(f"step.durations[{i}]", pair, "[phase of a planned alloc, events > 0]")
            durations[pair[0]] = pair[1]
        if set(durations) != set(soff):
            raise bad("step.durations", f"{len(durations)} phases", f"one per planned alloc ({len(soff)})")
        s_arena = nat(st, "arena", "step")
        step = StepPlan(length, cut, template, soff, s_arena, nat(st, "lower_bound", "step"),
                        sum(template[q][1] for q in soff), 0, None, durations)
    # the arena ends where the last planned slot does (the packed peak): a larger one is
    # a corrupt file, and serving it would size page tables by it
    rnd = lambda n: (n + align - 1) // align * align  # noqa: E731
    extent = max([o + rnd(keys[q][1]) for q, o in offsets.items()]
                 + ([o + rnd(step.template[ph][1]) for ph, o in step.offsets.items()] if step is not None else [])
                 + [o + rnd(n) for n, _s, o in initial], default=0)
    if arena != extent:
        raise bad("arena", arena, f"the end of the last planned slot ({extent})")
    return RunPlan(keys, offsets, step, start, anchor, arena, lb, align, source, str(d.get("method", "")), initial)
