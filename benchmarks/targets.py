"""Issue 6's targets for memtune's own policy on every stream, fast enough to try a change.

    python benchmarks/targets.py run -o before.json --jobs 2            # online targets
    python benchmarks/targets.py run -o before.json --longer --plan     # ... and longer runs, plan mode
    python benchmarks/targets.py run -o before.json --runplan           # ... and plans of first runs
    python benchmarks/targets.py run -o x.json --only vgg-train --set move_slack=0.03
    python benchmarks/targets.py run -o new.json --extra benchmarks/heldout/thirtyfifth
    python benchmarks/targets.py compare before.json after.json         # verdicts won and lost

Why: a change to the online policy or to plan mode moves hundreds of replays, and the
test suite checks one shard of the held-out runs per run (``pytest --heldout all``
takes 25-45 minutes). This replays ``memtune`` (and, with ``--plan``, ``memtune-plan``;
with ``--longer``, the runs 200 and 300 steps longer) on every stream the targets read,
judges each target as ``tests/plan`` does, and writes the numbers to a JSON file that
``compare`` holds against another. The other presets do not change with memtune's
policy: their numbers are cached (``--cache``, keyed by each trace's bytes and by the
source of the engine they run), so a second run replays memtune alone.

Streams: each device of each shared trace (``../shared/traces``), every held-out first run
and later run of ``benchmarks/heldout/manifest.toml``, and the first runs and later runs in
any ``--extra`` directory (a set measured but not yet in the manifest; its later runs in
``DIR/rerun``). Targets (tests/plan/test_targets.py, test_longer_runs.py, test_runplan.py):

* first runs and shared streams: ``presets`` (memtune <= every caching preset that had no
  more OOMs), ``bound`` (<= 1.05 x the lower bound, where the bound is at least 64 KiB),
  ``pytorch-cuda`` (<= its peak reserved) and ``calls`` (<= 2 x its device calls);
* later runs: ``bound``, ``pytorch-cuda`` and ``calls``;
* ``--longer``, fixed-shape first runs: ``settles`` (calls and peak reserved the same 200 and
  300 steps longer);
* ``--plan``: ``plan-1.02`` on first runs and shared streams whose step repeats over at least
  half of the events (memtune-plan's whole run <= 1.02 x the bound), and ``plan<=memtune`` on
  later runs of fixed-shape runs (memtune-plan learning online reserves no more than memtune);
* ``--runplan``, later runs of the manifest, served by memtune-plan from a plan of their first
  run (made as test_runplan.py makes it, and kept in ``--runplan-cache`` under the recording's
  bytes and the planning code): where shapes are fixed, ``runplan-1.02`` (no more than learning
  online, and <= 1.02 x the bound) and ``runplan-page`` (within a page of the bound rounded up
  to pages; the test also checks how tightly the recording packs, which this does not); where
  they change, ``runplan-little`` (<= 1.02 x learning online) and ``runplan-calls`` (<= 2 x its
  device calls). Its misses on the 203 later runs are test_runplan.py's strict xfails, plus
  ppo-train's two (the tests leave that run to BENCHMARKS.md). Making the 203 plans took 10-15
  minutes on two cores (with ``--plan --kinds later``); a later run reuses them.

The strict xfails in tests/plan hold the known misses; a verdict this reports as lost is
a test that will fail, and one won is an xfail that will pass (and must go).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import json
import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SRC = REPO / "src" / "memtune"
TRACES = Path(os.environ.get("MEMTUNE_SHARED_TRACES", REPO.parent / "shared" / "traces"))
DEFAULT_CACHE = REPO / ".cache" / "targets-presets.json"
DEFAULT_RUNPLANS = REPO / ".cache" / "runplans"
#: presets the online targets compare memtune with (every caching preset)
PRESETS = ("pytorch-cuda", "pytorch-mps", "mxnet-naive", "mxnet-round", "cupy", "megengine")
#: below this lower bound a ratio to it measures allocation granularity (tests/plan/test_targets.py)
MIN_MEANINGFUL_BOUND = 64 * 1024
LONGER = (200, 300)
PAGE = 2 << 20
#: a step repeating over at least this share of a stream's events gets the plan-mode target
STEP_COVERAGE = 0.5
FIRST_TARGETS = ("presets", "bound", "pytorch-cuda", "calls")
LATER_TARGETS = ("bound", "pytorch-cuda", "calls")


@dataclasses.dataclass(frozen=True)
class Stream:
    """One replayed stream: ``key`` names it in the results (``kind:name`` or ``kind:name:device``)."""

    key: str
    kind: str  # "shared", "first" or "later"
    path: str
    device: int | None  # None: the trace's only device (held-out runs)
    fixed_shapes: bool = False
    #: a later run's first run (the recording a plan of it is made from, for --runplan), and
    #: that plan's improvement rounds (the manifest's Run.plan_rounds)
    first: str | None = None
    plan_rounds: int = 0


def _manifest():
    import importlib.util

    name = "heldout_manifest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "heldout" / "manifest.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def streams(extra: list[Path], only: list[str], kinds: set[str]) -> list[Stream]:
    """Every stream the targets read, in a stable order (largest traces first, to balance workers)."""
    import memtune

    out: list[Stream] = []
    if "shared" in kinds:
        if not TRACES.is_dir():
            raise SystemExit(f"targets: the shared traces are not at {TRACES} (set MEMTUNE_SHARED_TRACES), "
                             "or leave them out with --kinds first,later")
        for p in sorted(TRACES.iterdir()):
            if p.name == "README.md":
                continue
            for dt in memtune.load_trace(p).devices:
                out.append(Stream(f"shared:{p.name}:{dt.device}", "shared", str(p), dt.device))
    runs = [(r.name, r.path, r.rerun, r.fixed_shapes, r.plan_rounds) for r in _manifest().load()]
    for d in extra:
        if not d.is_dir():
            raise SystemExit(f"targets: --extra {str(d)!r} is not a directory")
        for p in sorted(d.glob("*.jsonl.gz")):
            name = p.name.removesuffix(".jsonl.gz")
            rerun = d / "rerun" / p.name
            runs.append((name, p, rerun if rerun.is_file() else None, None, None))
    for name, path, rerun, fixed, rounds in runs:
        if "first" in kinds:
            out.append(Stream(f"first:{name}", "first", str(path), None, bool(fixed)))
        if rerun is not None and "later" in kinds:
            # (a run of --extra is not in the manifest: whether its shapes are fixed, and so
            # which plan targets it gets, is unknown, and --runplan leaves it out)
            out.append(Stream(f"later:{name}", "later", str(rerun), None, bool(fixed),
                              str(path) if rounds is not None else None, rounds or 0))
    if only:
        out = [s for s in out if any(o in s.key for o in only)]
    return sorted(out, key=lambda s: -Path(s.path).stat().st_size)


def _digest(paths) -> str:
    h = hashlib.sha1()
    for p in sorted(paths):
        h.update(str(p.relative_to(REPO)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def preset_code() -> str:
    """A digest of the code the cached presets run: memtune's own policy and plan mode are
    left out, so a change to them keeps the cache."""
    mine = {SRC / "allocator" / "arena.py", SRC / "allocator" / "presets" / "memtune.py"}
    files = [p for d in ("allocator", "devices", "trace") for p in (SRC / d).rglob("*.py") if p not in mine
             and p.name not in ("plan.py", "runplan.py", "packing.py", "placement.py", "extend.py", "record.py")]
    return _digest(files)


def _file_digest(path: str) -> str:
    return hashlib.sha1(Path(path).read_bytes()).hexdigest()[:16]


def _numbers(r) -> dict:
    return {"reserved": r.peak_reserved_bytes, "calls": r.device_allocs + r.device_frees, "ooms": len(r.ooms)}


def plan_code() -> str:
    """A digest of the code a run plan is made with: a plan made by other code is made again."""
    return _digest([SRC / "trace" / n for n in ("runplan.py", "packing.py", "placement.py", "plan.py")])


def run_plan_file(first: str, rounds: int, directory: Path) -> Path:
    """The plan of the recording ``first`` (made as tests/plan/test_runplan.py makes it), kept in
    ``directory`` under its recording's bytes, its rounds and the code that made it."""
    from memtune.trace import runplan

    path = directory / f"{Path(first).name.removesuffix('.jsonl.gz')}-{_file_digest(first)}-{rounds}-{plan_code()}.json"
    if not path.is_file():
        import memtune

        tr = memtune.load_trace(first)
        # a count of improvement rounds, whatever they take: the same plan on any machine
        made = runplan.make_run_plan(tr.devices[0].events, time_budget=120.0, rounds=rounds)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        made.save(part)
        part.replace(path)
    return path


def measure(stream: Stream, cached: dict | None, settings: dict[str, dict], longer: bool, plan: bool,
            runplan_dir: Path | None = None) -> dict:
    """Every number the targets read of one stream (presets from ``cached`` when given;
    ``settings``: memtune's and memtune-plan's, by policy; ``runplan_dir``: where the plans of
    first runs are kept, for a later run's plan targets)."""
    import memtune
    from memtune.trace.replay import replay_device

    t0 = time.perf_counter()
    tr = memtune.load_trace(stream.path)
    dt = tr.device(stream.device) if stream.device is not None else tr.devices[0]
    dt = dataclasses.replace(dt, settings={})
    out: dict = {"bound": dt.peak_requested_bytes(), "events": len(dt.events)}
    out["presets"] = cached if cached is not None else {p: _numbers(replay_device(tr, dt, p)) for p in PRESETS}
    out["memtune"] = _numbers(replay_device(tr, dt, "memtune", settings=settings["memtune"] or None))
    if plan:
        repeats = stream.kind == "later" and stream.fixed_shapes
        if stream.kind != "later":
            from memtune.trace.plan import analyze

            (rep,) = analyze(tr, device=dt.device, replay=False, pack_seconds=1.0, pack_rounds=0)
            repeats = rep.period is not None and rep.coverage >= STEP_COVERAGE and rep.plan is not None
        if repeats:
            out["memtune-plan"] = _numbers(replay_device(tr, dt, "memtune-plan",
                                                         settings=settings["memtune-plan"] or None))
    if runplan_dir is not None and stream.kind == "later" and stream.first is not None:
        plan_file = run_plan_file(stream.first, stream.plan_rounds, runplan_dir)
        served = replay_device(tr, dt, "memtune-plan", settings={**settings["memtune-plan"], "plan_file": str(plan_file)})
        learned = out.get("memtune-plan") or _numbers(replay_device(tr, dt, "memtune-plan",
                                                                    settings=settings["memtune-plan"] or None))
        out["runplan"] = {"served": _numbers(served), "learned": learned}
        out["fixed_shapes"] = stream.fixed_shapes
    if longer and stream.kind == "first" and stream.fixed_shapes:
        from memtune.errors import MemtuneError
        from memtune.trace.extend import replay_longer_run

        try:
            got = replay_longer_run(tr, dt, "memtune", LONGER, settings=settings["memtune"] or None)
            out["longer"] = [[got.checkpoints[k].device_calls, got.checkpoints[k].peak_reserved_bytes]
                             for k in LONGER]
        except MemtuneError as e:  # a step repeat_step refuses to repeat
            out["longer_refused"] = str(e)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def verdicts(stream: dict) -> dict[str, bool]:
    """Each target's verdict on one stream's numbers (True: met)."""
    kind, lb, m = stream["kind"], stream["bound"], stream["memtune"]
    pre = stream["presets"]
    pt = pre["pytorch-cuda"]
    out: dict[str, bool] = {}
    if kind != "later":
        out["presets"] = all(m["reserved"] <= v["reserved"] for v in pre.values() if v["ooms"] <= m["ooms"])
    if lb >= MIN_MEANINGFUL_BOUND:
        out["bound"] = m["reserved"] <= 1.05 * lb
    out["pytorch-cuda"] = m["reserved"] <= pt["reserved"]
    out["calls"] = m["calls"] <= 2 * pt["calls"]
    if "longer" in stream:
        a, b = stream["longer"]
        out["settles"] = a == b
    if "memtune-plan" in stream and lb >= MIN_MEANINGFUL_BOUND:
        p = stream["memtune-plan"]["reserved"]
        if kind == "later":
            out["plan<=memtune"] = p <= m["reserved"]
        else:
            out["plan-1.02"] = p <= 1.02 * lb
    if "runplan" in stream and lb >= MIN_MEANINGFUL_BOUND:
        served, learned = stream["runplan"]["served"], stream["runplan"]["learned"]
        if stream["fixed_shapes"]:
            out["runplan-1.02"] = (served["reserved"] <= min(learned["reserved"], 1.02 * lb) and not served["ooms"])
            floor = -(-lb // PAGE) * PAGE  # no allocator that maps pages can reserve less
            out["runplan-page"] = served["reserved"] <= floor + PAGE
        else:
            out["runplan-little"] = served["reserved"] <= 1.02 * learned["reserved"]
            out["runplan-calls"] = served["calls"] <= 2 * learned["calls"]
    return out


def _work(args: tuple) -> tuple[str, dict]:
    stream, cached, settings, longer, plan, runplan_dir = args
    return stream.key, measure(stream, cached, settings, longer, plan, runplan_dir)


def _parse_settings(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise SystemExit(f"targets: --set {item!r}: expected KEY=VALUE, e.g. --set slack=0.03")
        out[key.strip()] = value.strip()
    return out


def _read_cache(path: Path) -> dict:
    """The preset cache, or an empty one where it is absent or unusable (it is only a cache:
    the presets are replayed again, and the file is rewritten)."""
    if not path.is_file():
        return {}
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        print(f"targets: preset cache {str(path)!r} is unreadable ({e}); replaying the presets again",
              file=sys.stderr)
        return {}
    if not isinstance(cache, dict) or not isinstance(cache.get("streams"), dict):
        print(f"targets: preset cache {str(path)!r} is not one this script wrote; replaying the presets again",
              file=sys.stderr)
        return {}
    return cache


def run(args: argparse.Namespace) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from memtune.errors import MemtuneError
    from memtune.trace.replay import settings_per_policy

    settings = _parse_settings(args.set)
    try:  # each policy gets the settings it has; one neither has is named, with suggestions
        per_policy = settings_per_policy(["memtune", "memtune-plan"], settings, "--set")
    except MemtuneError as e:
        raise SystemExit(f"targets: {e}") from None
    kinds = set(args.kinds.split(","))
    bad = kinds - {"shared", "first", "later"}
    if bad:
        raise SystemExit(f"targets: --kinds {args.kinds!r}: unknown {sorted(bad)}; expected shared, first, later")
    todo = streams([Path(d) for d in args.extra], args.only, kinds)
    if not todo:
        raise SystemExit(f"targets: no stream matches --only {args.only}")
    cache_path = Path(args.cache)
    code = preset_code()
    cache = _read_cache(cache_path)
    if cache.get("code") != code:
        cache = {"code": code, "streams": {}}
    keys = {s.key: f"{_file_digest(s.path)}:{s.device}" for s in todo}
    runplan_dir = Path(args.runplan_cache) if args.runplan else None
    if runplan_dir is not None:
        try:  # here, not in a worker: a path that cannot be a directory is named, not a traceback
            runplan_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SystemExit(f"targets: --runplan-cache {str(runplan_dir)!r} is not a directory that can be "
                             f"made or written ({e.strerror or e})") from None
    jobs = [(s, cache["streams"].get(keys[s.key]), per_policy, args.longer, args.plan, runplan_dir) for s in todo]
    import importlib

    import memtune

    # imported before the workers fork: they replay the code this process started with, even if
    # the files change while they run (a second checkout tried meanwhile)
    for module in ("memtune.allocator.arena", "memtune.trace.extend", "memtune.trace.plan", "memtune.trace.replay",
                   "memtune.trace.runplan"):
        importlib.import_module(module)

    print(f"memtune from {Path(memtune.__file__).parent}", flush=True)
    results: dict[str, dict] = {}
    start = time.perf_counter()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=not sys.stderr.isatty()) as progress:
        task = progress.add_task("replaying", total=len(jobs))
        if args.jobs > 1:
            ctx = multiprocessing.get_context("fork")
            with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
                for key, got in pool.map(_work, jobs):
                    results[key] = got
                    progress.advance(task)
        else:
            for job in jobs:
                key, got = _work(job)
                results[key] = got
                progress.advance(task)
    for s in todo:
        r = results[s.key]
        r["kind"] = s.kind
        cache["streams"][keys[s.key]] = r["presets"]
        r["verdicts"] = verdicts(r)
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    part = cache_path.with_name(f"{cache_path.name}.{os.getpid()}.part")
    part.write_text(json.dumps(cache))
    part.replace(cache_path)  # whole or not at all, whatever else writes it meanwhile
    doc = {"memtune": str(Path(memtune.__file__).parent), "settings": settings, "longer": args.longer, "plan": args.plan,
           "runplan": args.runplan,
           "seconds": round(time.perf_counter() - start, 1), "streams": {s.key: results[s.key] for s in todo}}
    Path(args.output).write_text(json.dumps(doc, indent=1, sort_keys=True))
    summary(doc)
    print(f"wrote {args.output} ({len(todo)} streams in {doc['seconds']} s)")
    return 0


def _misses(doc: dict) -> dict[str, list[str]]:
    return {k: [t for t, ok in v["verdicts"].items() if not ok] for k, v in doc["streams"].items()}


def summary(doc: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="misses by target (streams judged)")
    table.add_column("target")
    for kind in ("shared", "first", "later"):
        table.add_column(kind, justify="right")
    targets = sorted({t for v in doc["streams"].values() for t in v["verdicts"]})
    for t in targets:
        cells = []
        for kind in ("shared", "first", "later"):
            judged = [v["verdicts"][t] for v in doc["streams"].values() if v["kind"] == kind and t in v["verdicts"]]
            cells.append(f"{judged.count(False)} / {len(judged)}" if judged else "")
        table.add_row(t, *cells)
    total = sum(len(v) for v in _misses(doc).values())
    table.caption = f"{total} misses in all"
    Console().print(table)


def _ratio(v: dict, who: str) -> str:
    x = v.get(who)
    return "-" if x is None else f"{x['reserved'] / v['bound']:.4f}/{x['calls']}" if v["bound"] else "-"


def _results(path: str) -> dict:
    """A results file of ``run``, or SystemExit naming what is wrong with it."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as e:
        raise SystemExit(f"targets: cannot read results file {path!r}: {e.strerror or e}") from None
    except ValueError as e:
        raise SystemExit(f"targets: results file {path!r} is not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("streams"), dict) or not all(
            isinstance(v, dict) and {"verdicts", "memtune", "bound"} <= set(v) for v in doc["streams"].values()):
        raise SystemExit(f"targets: {path!r} is not a results file of 'targets.py run' (expected 'streams', each "
                         "with 'verdicts', 'memtune' and 'bound')")
    return doc


def compare(args: argparse.Namespace) -> int:
    a, b = (_results(p) for p in (args.before, args.after))
    common = sorted(set(a["streams"]) & set(b["streams"]))
    lost, won, moved = [], [], []
    for k in common:
        va, vb = a["streams"][k], b["streams"][k]
        for t in sorted(set(va["verdicts"]) | set(vb["verdicts"])):
            x, y = va["verdicts"].get(t), vb["verdicts"].get(t)
            if x is True and y is False:
                lost.append((k, t))
            elif x is False and y is True:
                won.append((k, t))
        both = [key for key in ("memtune", "memtune-plan", "longer") if key in va and key in vb]
        if any(va[key] != vb[key] for key in both):
            moved.append(k)
    # misses of the targets both files judged (a run without --longer or --plan judges fewer)
    judged = {k: set(a["streams"][k]["verdicts"]) & set(b["streams"][k]["verdicts"]) for k in common}
    ma, mb = (sum(1 for k in common for t in judged[k] if not d["streams"][k]["verdicts"][t]) for d in (a, b))
    print(f"{len(common)} streams in both: misses {ma} -> {mb} (of the targets both judged); {len(won)} won, "
          f"{len(lost)} lost; {len(moved)} replays changed")
    calls = [sum(d["streams"][k]["memtune"]["calls"] for k in common) for d in (a, b)]
    print(f"memtune's device calls in all: {calls[0]} -> {calls[1]}")
    for title, items in (("lost", lost), ("won", won)):
        for k, t in items:
            va, vb = a["streams"][k], b["streams"][k]
            print(f"  {title:4} {t:14} {k}: memtune {_ratio(va, 'memtune')} -> {_ratio(vb, 'memtune')}"
                  f"{'  plan ' + _ratio(va, 'memtune-plan') + ' -> ' + _ratio(vb, 'memtune-plan') if t.startswith('plan') else ''}"
                  f"{'  longer ' + str(va.get('longer')) + ' -> ' + str(vb.get('longer')) if t == 'settles' else ''}")
    if args.verbose:
        for k in moved:
            va, vb = a["streams"][k], b["streams"][k]
            print(f"  moved {k}: memtune {_ratio(va, 'memtune')} -> {_ratio(vb, 'memtune')}; plan "
                  f"{_ratio(va, 'memtune-plan')} -> {_ratio(vb, 'memtune-plan')}; longer {va.get('longer')} -> "
                  f"{vb.get('longer')}")
    only = sorted(set(a["streams"]) ^ set(b["streams"]))
    if only:
        print(f"({len(only)} streams in one file only, not compared)")
    return 0


def main(argv: list[str] | None = None) -> int:
    if argv is None and hasattr(signal, "SIGPIPE"):  # `... compare a b | head`: stop quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="replay every stream and judge the targets")
    r.add_argument("-o", "--output", required=True, help="results file (JSON) to write")
    r.add_argument("--jobs", type=int, default=max(1, os.cpu_count() or 1), help="processes (default: one a core)")
    r.add_argument("--longer", action="store_true", help="also replay fixed-shape runs 200 and 300 steps longer")
    r.add_argument("--plan", action="store_true", help="also replay memtune-plan where its targets read it")
    r.add_argument("--extra", action="append", default=[], metavar="DIR",
                   help="a directory of first runs (and DIR/rerun of later runs) not in the manifest")
    r.add_argument("--only", action="append", default=[], metavar="NAME", help="streams whose key contains NAME")
    r.add_argument("--kinds", default="shared,first,later", help="which streams (default: shared,first,later)")
    r.add_argument("--runplan", action="store_true",
                   help="also serve each later run of the manifest from a plan of its first run")
    r.add_argument("--runplan-cache", default=str(DEFAULT_RUNPLANS), metavar="DIR",
                   help=f"where those plans are kept (default {DEFAULT_RUNPLANS})")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a memtune setting")
    r.add_argument("--cache", default=str(DEFAULT_CACHE), help=f"preset results cache (default {DEFAULT_CACHE})")
    c = sub.add_parser("compare", help="verdicts won and lost between two results files")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("-v", "--verbose", action="store_true", help="list every stream whose replay changed")
    args = parser.parse_args(argv)
    if args.command == "run":
        if args.jobs < 1:
            parser.error(f"--jobs {args.jobs}: expected a whole number >= 1")
        return run(args)
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
