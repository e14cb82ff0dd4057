"""``memtune plan TRACE``: detect the repeating step, pack it, compare with the lower bound."""

from __future__ import annotations

import click

from memtune.cli._common import console, echo_json, pack_rounds_option, pack_seconds_option, parse_set


@click.command()
@click.argument("trace", type=click.Path(exists=True, dir_okay=False))
@click.option("--device", type=int, default=None, help="Analyse only this device of the trace.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per device.")
@click.option("--no-replay", is_flag=True, help="Only detect and pack the step; skip the replays.")
@pack_seconds_option("Time budget of the static packer (one step; a lifetime table's whole table).")
@pack_rounds_option()
@click.option("--longer", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
              help="Also replay with the step played N more times (a recording holds a few steps, a job "
                   "thousands: a layout that drifts from step to step shows there), and say whether device "
                   "calls or reserved memory still grow over the last quarter of them. 0: off.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="A setting of the replayed policies, for those that have it (as for memtune replay), "
                   "e.g. fit=first or slack=0.04. Repeatable.")
@click.option("--save", type=click.Path(dir_okay=False), default=None, metavar="PLAN.json",
              help="Also plan the whole run (its first steps around the repeating step) and write it here. "
                   "memtune-plan serves it from the first allocation of a later run of the same program: "
                   "MEMTUNE_PLAN_FILE=PLAN.json, or --set plan_file=PLAN.json.")
def plan(trace, device, as_json, no_replay, pack_seconds, pack_rounds, longer, sets, save):
    """Learn TRACE's repeating step (step markers, or the detected period) and pack it offline.

    Reports, per device: the period, how much of the trace repeats, the packed
    arena of one step against that step's lower bound (peak of live requested
    bytes), and -- unless --no-replay -- the peak reserved of memtune-plan, memtune
    and pytorch-cuda (with the trace's own settings) against the trace's lower
    bound; with --longer N, also with the step played N more times. Lifetime tables
    also get the best static packing of the whole table.

        memtune plan snapshot.pickle --json
        memtune plan run1.jsonl.gz --longer 200      # does the layout hold over a long job?
        memtune plan run1.jsonl.gz --longer 200 --set fit=first   # ...with first fit?
        memtune plan run1.jsonl.gz --save plan.json   # then: MEMTUNE_PLAN_FILE=plan.json for the next run
    """
    from memtune.trace.plan import analyze, late_steps
    from memtune.trace.replay import load

    if longer and no_replay:
        raise click.UsageError("--longer replays the run with more steps; it cannot go with --no-replay")
    settings = parse_set(sets)
    if settings and no_replay:
        raise click.UsageError("--set applies to the replays; it cannot go with --no-replay")
    tr = load(trace)  # once, for the analysis and the saved plan
    saved = _save_run_plan(tr, device, save, pack_seconds, pack_rounds) if save else None
    reports = analyze(tr, device=device, replay=not no_replay, pack_seconds=pack_seconds, pack_rounds=pack_rounds,
                      longer=longer, settings=settings, settings_source="--set")
    if as_json:
        out = [r.to_json() for r in reports]
        if saved is not None:
            for r in out:
                if r["device"] == saved[1]:
                    r["run_plan"] = saved[2]
        echo_json(out)
        return
    from rich.table import Table

    from memtune.trace.model import device_name
    from memtune.units import format_bytes

    table = Table(title=f"Plan mode: {trace}")
    for col in ("device", "events", "period", "repeats", "step arena / step bound"):
        table.add_column(col, justify="right")
    pols = list(reports[0].replays) if reports and reports[0].replays else []
    for p in pols:
        table.add_column(f"{p} / bound", justify="right")
    if longer:
        for p in pols:
            table.add_column(f"{p}: {longer} more steps", justify="right")
    show_pack = any(r.packing for r in reports)
    if show_pack:
        table.add_column("static packing / bound", justify="right")
    for r in reports:
        per = r.period
        period = "-" if per is None else f"{per.length} ev x{per.count} from {per.start} ({per.source})"
        cover = "-" if per is None else f"{100 * r.coverage:.0f}% of events"
        step = "-" if r.plan is None or not r.plan.lower_bound else (
            f"{format_bytes(r.plan.arena)} / {format_bytes(r.plan.lower_bound)} = {r.plan.ratio:.3f}")
        cells = ["CPU" if r.device == -1 else str(r.device), str(r.events), period, cover, step]
        for p in pols:
            x = r.replays[p]
            ratio = x["ratio"]
            cells.append("-" if ratio is None else f"{ratio:.3f} ({x['device_calls']} calls)")
        if longer:
            for p in pols:
                x = r.longer_replays.get(p)
                cells.append("-" if x is None or x["ratio"] is None else f"{x['ratio']:.3f} ({x['device_calls']} calls)")
        if show_pack:
            cells.append("-" if r.packing is None else f"{r.packing.ratio:.4f} ({r.packing.method})")
        table.add_row(*cells)
    out = console()
    out.print(table)
    for r in reports:
        out.print(f"{device_name(r.device)}: lower bound (peak live requested) {format_bytes(r.lower_bound)}",
                  highlight=False)
        where = peak_note(r)
        if where:
            out.print(f"{device_name(r.device)}: {where}", highlight=False)
        if r.longer_replays:
            parts = [f"{p} {r.replays[p]['ratio']:.3f} -> {x['ratio']:.3f}"
                     f" ({r.replays[p]['device_calls']} -> {x['device_calls']} device calls)"
                     for p, x in r.longer_replays.items() if x["ratio"] is not None and r.replays[p]["ratio"] is not None]
            out.print(f"{device_name(r.device)}: {r.longer_steps} more steps, peak reserved / bound: " + "; ".join(parts),
                      highlight=False)
            late_growth = {p: x["late_growth"] for p, x in r.longer_replays.items()}
            growing = {p: g for p, g in late_growth.items() if g["device_calls"] or g["peak_reserved_bytes"]}
            late = late_steps(r.longer_steps)
            if growing:
                hint = ""
                if {"memtune", "memtune-plan"} & growing.keys():
                    hint = "; a plan of the whole run (--save) serves every step from one layout" + (
                        "" if _fit(settings) == "first" else ", and first fit (--set fit=first, or "
                        "MEMTUNE_FIT=first: the lowest hole that fits) lets memtune's own layout settle sooner")
                out.print(f"{device_name(r.device)}: still growing in the last {late} of them, so the layout has not "
                          f"settled{hint}: " + "; ".join(
                              f"{p} +{g['device_calls']} device calls, +{format_bytes(g['peak_reserved_bytes'])} "
                              f"peak reserved" for p, g in growing.items()), highlight=False)
            else:
                out.print(f"{device_name(r.device)}: settled: no policy made a device call or reserved more in the "
                          f"last {late} of them", highlight=False)
            for p, x in r.longer_replays.items():
                again = x.get("state_repeats")
                if again is not None:
                    out.print(f"{device_name(r.device)}: {p}'s state at the end of step {again['from_step']} more "
                              f"comes again {again['every_steps']} step(s) later: from there on it makes no device "
                              f"call and reserves nothing more, however long the run", highlight=False)
        if longer and not r.longer_replays:
            out.print(f"{device_name(r.device)}: no step repeats here (or it frees blocks from before it), so there "
                      f"is nothing to play {longer} more times", highlight=False)
    if saved is not None:
        path, dev, info = saved
        out.print(f"{device_name(dev)}: wrote {path}: a plan of the whole run, arena {format_bytes(info['arena_bytes'])}"
                  f" = {info['ratio']:.4f} x its lower bound ({info['prologue_events']} events before the step"
                  f"{'' if info['step_events'] is None else ', then a step of ' + str(info['step_events']) + ' events'}"
                  f"). Use it for a later run of the same program: MEMTUNE_PLAN_FILE={path} (memtune-plan).",
                  highlight=False)


def _save_run_plan(tr, device, path, pack_seconds, pack_rounds):
    """Plan the whole run of one device stream of trace ``tr`` and write it; (path, device, summary)."""
    from memtune.trace.runplan import make_run_plan

    if device is None and len(tr.devices) > 1:
        names = ", ".join(str(d.device) for d in tr.devices)
        raise click.UsageError(f"{tr.source} has {len(tr.devices)} device streams ({names}); a plan is for one: "
                               "choose it with --device")
    dt = tr.device(device) if device is not None else tr.devices[0]
    rp = make_run_plan(dt.events, initial=dt.initial_live(), time_budget=pack_seconds, rounds=pack_rounds,
                       source={"trace": str(tr.source), "device": dt.device})
    try:
        rp.save(path)
    except OSError as e:
        raise click.UsageError(f"cannot write the plan to {path}: {e.strerror or e}") from None
    info = {"path": str(path), "arena_bytes": rp.arena, "lower_bound": rp.lower_bound, "ratio": rp.ratio,
            "prologue_events": rp.start, "step_events": None if rp.step is None else rp.step.length,
            "method": rp.method}
    return str(path), dt.device, info


def peak_note(r) -> str | None:
    """Where the live peak falls relative to the step: whether this step's plan can
    lower the run's peak reserved at all, or only the steps after it."""
    from memtune.trace.plan import STEP_COVERAGE, PlanSpec

    k, per = r.peak_repetition, r.period
    if k is None or per is None:
        return None
    if r.coverage < STEP_COVERAGE:
        return (f"what repeats ({per.length} events x{per.count}) covers {100 * r.coverage:.0f}% of the events: no "
                "step repeats over most of this run (do its shapes change?), so plan mode has little to plan.")
    head = f"live bytes peak at event {r.peak_event}"
    before = ("so the run's peak reserved is set before a plan of this step can serve it (a plan of the whole run, "
              "--save, serves a later run from its first allocation)")
    if k == 0:
        return f"{head}, before the step starts repeating (event {per.start}), {before}."
    if k > per.count:
        return f"{head}, after the repeating stretch (it ends at event {per.end}), where the step's plan does not apply."
    m = PlanSpec().repeats_to_plan(per.length)
    if k <= m:
        times = {1: "once", 2: "twice"}.get(m, f"{m} times")
        return (f"{head}, in repetition {k} of {per.count} of the step; plan mode plans a step once it has seen it "
                f"{times}, {before}.")
    return f"{head}, in repetition {k} of {per.count} of the step, late enough for the step's plan to serve it."


def _fit(settings: dict[str, str]) -> str:
    """The fit memtune replayed with: its settings among ``--set`` over the environment."""
    from memtune.allocator.presets import get, resolve

    lookup = get("memtune").lookup
    spec, _verbose = resolve("memtune", {k: v for k, v in settings.items() if k.lower() in lookup}, 0, "--set")
    return spec.fit
