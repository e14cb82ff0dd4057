"""``memtune plan``: JSON and table output, and clear errors."""

from __future__ import annotations

import json

from memtune.cli.main import main


def write_steps(path, steps: int = 6) -> None:
    """A lifetime table of a repeating step: two buffers per step, one living into the next."""
    rows = ["id,lower,upper,size"]
    i = 0
    for k in range(steps):
        t = 10 * k
        rows.append(f"{i},{t},{t + 4},{1 << 20}")
        rows.append(f"{i + 1},{t + 1},{t + 13},{3 << 20}")
        rows.append(f"{i + 2},{t + 2},{t + 3},{2 << 20}")
        i += 3
    path.write_text("\n".join(rows) + "\n")


def test_plan_json_reports_period_step_packing_and_replays(tmp_path, capsys):
    f = tmp_path / "steps.csv"
    write_steps(f)
    assert main(["plan", str(f), "--json", "--pack-seconds", "0.1"]) == 0
    (rep,) = json.loads(capsys.readouterr().out)
    assert rep["period"]["count"] >= 3 and rep["coverage"] > 0.5
    assert rep["plan"]["arena_bytes"] >= rep["plan"]["step_lower_bound"] > 0
    assert rep["static_packing"]["ratio"] >= 1.0
    assert rep["lower_bound"] == 9 << 20  # at t + 2: 1 + 2 + 3 MiB, and the previous step's 3 MiB
    for pol in ("memtune-plan", "memtune", "pytorch-cuda"):
        assert rep["replays"][pol]["peak_reserved_bytes"] >= rep["lower_bound"]


def test_plan_table_without_replays(tmp_path, capsys):
    f = tmp_path / "steps.csv"
    write_steps(f)
    assert main(["plan", str(f), "--no-replay"]) == 0
    out = capsys.readouterr().out
    assert "Plan mode" in out and "static packing" in out and "lower bound" in out


def test_plan_of_a_broken_trace_is_one_clear_error(tmp_path, capsys):
    f = tmp_path / "bad.csv"
    f.write_text("id,lower,upper,size\n0,5,1,10\n")
    assert main(["plan", str(f)]) == 2
    err = capsys.readouterr().err
    assert "memtune: error:" in err and "bad.csv" in err


def test_pack_rounds_make_the_packing_reproducible(tmp_path, capsys):
    """With --pack-rounds the packer's output does not depend on how much time it got:
    the same rounds under a tight and a generous budget give the same packing."""
    import random

    rng = random.Random(3)
    rows = ["id,lower,upper,size"]
    for i in range(400):
        lo = rng.randint(0, 2000)
        rows.append(f"{i},{lo},{lo + rng.randint(1, 300)},{rng.randint(1, 1 << 24)}")
    f = tmp_path / "life.csv"
    f.write_text("\n".join(rows) + "\n")
    got = []
    for seconds in ("60", "30"):
        assert main(["plan", str(f), "--json", "--no-replay", "--pack-rounds", "5", "--pack-seconds", seconds]) == 0
        (rep,) = json.loads(capsys.readouterr().out)
        got.append((rep["static_packing"]["peak_bytes"], rep["static_packing"]["method"]))
        assert main(["replay", str(f), "--policy", "memtune", "--json", "--pack-rounds", "5",
                     "--pack-seconds", seconds]) == 0
        (row,) = json.loads(capsys.readouterr().out)
        assert row["static_packing"]["peak_bytes"] == got[-1][0]
    assert got[0] == got[1]
