"""The held-out runs' manifest (``manifest.toml`` beside this file): read and check it.

    runs = load()                      # a Manifest; raises ManifestError naming every problem
    [r.name for r in runs if r.fixed_shapes]
    runs["gpt-accum-train"].steps      # 3

Standard library only, and loaded by its path (``tests/shared_traces.py``,
``benchmarks/bench_policy.py``): it imports nothing from memtune, the tests or the
benchmarks. A directory beside it other than ``rerun/`` (a set kept unseen) is never read.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the repository this file is in
REPO = HERE.parents[1]
MANIFEST = HERE / "manifest.toml"
SUFFIX = ".jsonl.gz"
#: the set whose runs are bundled with the package (every other set is in benchmarks/heldout)
DEMO_SET = "demo"
#: keys of a [trace.NAME] table, and their types
KEYS: dict[str, type] = {"set": str, "fixed_shapes": bool, "steps": int, "rerun": bool}
TOP_KEYS = ("sets", "trace")
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
#: improvement rounds of the run plan made from the recording of a run of fixed shapes (a
#: count, not a time: the same plan on any machine), where the packing's quality is what its
#: later run gets. A run whose shapes change every step gets the heuristics' packing only, as
#: plan mode packs what it learns online (PlanSpec's pack_rounds=0): its later run leaves the
#: plan in its first steps, and what the rounds polish is the recording's own sequence.
#: Measured on the 53 such runs of the first twenty-five sets (peak with the plan / learned
#: online, 40 rounds -> none): 47 the same, dino-multicrop-train 1.0375 -> 1.0042,
#: fid-rag-train 1.0226 -> 1.0056, detect-varbox-train 0.9822 -> 0.9778, speculative-decode
#: 1.0000 -> 1.0179; making the 53 plans took 290 s with the rounds and 80 s without.
#: (tests/plan/test_runplan.py and benchmarks/bench_policy.py make their plans so: Run.plan_rounds.)
PLAN_ROUNDS = 40


class ManifestError(ValueError):
    """The manifest is unreadable, malformed, or does not match the traces on disk."""


@dataclasses.dataclass(frozen=True)
class Run:
    """One recorded run of the manifest."""

    name: str  # "gru-lm-train"
    set: str  # "first"
    fixed_shapes: bool
    steps: int
    path: Path  # the recorded run
    rerun: Path | None  # its later run in benchmarks/heldout/rerun, if there is one

    @property
    def file(self) -> str:
        """The trace's file name, ``NAME.jsonl.gz``."""
        return self.name + SUFFIX

    @property
    def plan_rounds(self) -> int:
        """Improvement rounds for the run plan of this recording: :data:`PLAN_ROUNDS` where
        its shapes are fixed, none where they change."""
        return PLAN_ROUNDS if self.fixed_shapes else 0


@dataclasses.dataclass(frozen=True)
class Manifest:
    """The runs in the manifest's order (the capture script's), and the sets' names in order."""

    sets: tuple[str, ...]
    runs: tuple[Run, ...]

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def __getitem__(self, name: str) -> Run:
        """The run called ``name``, with or without ``.jsonl.gz``."""
        key = name.removesuffix(SUFFIX)
        for r in self.runs:
            if r.name == key:
                return r
        raise KeyError(name)


def dirs(repo: Path = REPO) -> tuple[Path, Path, Path]:
    """(demo traces, held-out traces, later runs) of the repository at ``repo``."""
    heldout = repo / "benchmarks" / "heldout"
    return repo / "src" / "memtune" / "data" / "traces", heldout, heldout / "rerun"


def load(path: Path = MANIFEST, repo: Path = REPO) -> Manifest:
    """Read the manifest at ``path`` and check it against the traces of ``repo``.

    Raises :class:`ManifestError` listing every problem: unknown or missing keys (naming
    the run and the key), a value of the wrong type, a set not in ``sets``, a listed trace
    or later run that is not there, and a trace in the demo, held-out or later-run
    directory (``*.jsonl.gz``, not recursive) that the manifest does not list."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ManifestError(f"{path}: cannot read the manifest: {e}") from e
    problems: list[str] = []
    for key in data:
        if key not in TOP_KEYS:
            problems.append(f"unknown top-level key {key!r} (known: {', '.join(TOP_KEYS)})")
    sets = data.get("sets")
    if not isinstance(sets, list) or not sets or not all(isinstance(s, str) for s in sets):
        problems.append("'sets' must be a non-empty list of set names")
        sets = []
    elif len(set(sets)) != len(sets):
        problems.append(f"'sets' names a set twice: {sets}")
    table = data.get("trace")
    if not isinstance(table, dict) or not table:
        problems.append("no [trace.NAME] table")
        table = {}
    demo_dir, heldout_dir, rerun_dir = dirs(repo)
    runs: list[Run] = []
    named: set[str] = set()  # every entry's name and set, valid or not: no second error about them
    named_sets: set[str] = set()
    for name, entry in table.items():
        where = f"[trace.{name}]"
        if not _NAME.match(name):
            problems.append(f"{where}: a run's name is lower-case letters, digits and '-'")
            continue
        named.add(name)
        if not isinstance(entry, dict):
            problems.append(f"{where}: must be a table")
            continue
        if isinstance(entry.get("set"), str):
            named_sets.add(entry["set"])
        bad = False
        for key in entry:
            if key not in KEYS:
                problems.append(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")
                bad = True
        for key, typ in KEYS.items():
            if key not in entry:
                problems.append(f"{where}: missing key {key!r}")
                bad = True
            elif type(entry[key]) is not typ:  # (a bool is not a step count)
                problems.append(f"{where}: {key} = {entry[key]!r} is not {'an' if typ is int else 'a'} {typ.__name__}")
                bad = True
        if bad:
            continue
        if entry["set"] not in sets:
            problems.append(f"{where}: set {entry['set']!r} is not in 'sets' ({', '.join(sets)})")
        if entry["steps"] < 1:
            problems.append(f"{where}: steps = {entry['steps']} (at least 1)")
        file = name + SUFFIX
        trace = (demo_dir if entry["set"] == DEMO_SET else heldout_dir) / file
        if not trace.is_file():
            problems.append(f"{where}: {trace} is not there")
        later = rerun_dir / file if entry["rerun"] else None
        if later is not None and not later.is_file():
            problems.append(f"{where}: rerun = true but {later} is not there")
        runs.append(Run(name, entry["set"], entry["fixed_shapes"], entry["steps"], trace, later))
    listed = {r.path for r in runs}
    for d in (demo_dir, heldout_dir):
        for p in sorted(d.glob("*" + SUFFIX)):
            if p not in listed and p.name.removesuffix(SUFFIX) not in named:
                problems.append(f"{p} is not listed: add a [trace.{p.name.removesuffix(SUFFIX)}] table "
                                f"(in {'the demo set' if d == demo_dir else 'benchmarks/heldout'})")
    later_listed, valid = {r.rerun for r in runs}, {r.name for r in runs}
    for p in sorted(rerun_dir.glob("*" + SUFFIX)):
        n = p.name.removesuffix(SUFFIX)
        if p not in later_listed and (n in valid or n not in named):
            problems.append(f"{p} is a later run the manifest does not list: set rerun = true in "
                            f"[trace.{n}]")
    for s in sets:
        if s not in named_sets:
            problems.append(f"set {s!r} has no run")
    if problems:
        raise ManifestError(f"{path}:\n  " + "\n  ".join(problems))
    return Manifest(tuple(sets), tuple(runs))
