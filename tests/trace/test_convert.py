"""``memtune convert IN OUT``: the command line around load_trace/save_trace."""

from __future__ import annotations

import gzip
import json

import pytest

from memtune.cli.main import main
from memtune.trace.formats import load_trace


def _rmm(path, rows):
    path.write_text("Thread,Time,Action,Pointer,Size,Stream\n" + "".join(
        f"1,10:00:00.{i:06d},{a},{p:#x},{s},0x0\n" for i, (a, p, s) in enumerate(rows)))
    return path


def test_convert_writes_loadable_jsonl_gz(tmp_path, capsys):
    src = _rmm(tmp_path / "log.csv", [("allocate", 0x100, 64), ("allocate", 0x200, 32), ("free", 0x100, 64)])
    out = tmp_path / "out.jsonl.gz"
    assert main(["convert", str(src), str(out)]) == 0
    text = capsys.readouterr().out
    assert "rmm-log" in text and "device 0: 3 events" in text and "96 B" in text
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    header = json.loads(gzip.decompress(out.read_bytes()).decode().splitlines()[0])
    assert header["format"] == "memtune-trace" and header["source_format"] == "rmm-log"
    assert load_trace(out).devices == load_trace(src).devices


def test_convert_format_override_and_lenient(tmp_path, capsys):
    src = _rmm(tmp_path / "data.bin", [("allocate", 0x100, 64), ("free", 0x300, 8), ("free", 0x100, 64)])
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(src), str(out), "--format", "rmm-log"]) == 2
    err = capsys.readouterr().err
    assert "memtune: error:" in err and str(src) in err and "line 3" in err and "--lenient" in err
    assert main(["convert", str(src), str(out), "--format", "rmm-log", "--lenient"]) == 0
    assert "free_of_unknown_address=1" in capsys.readouterr().out
    assert load_trace(out).devices[0].skipped == {"free_of_unknown_address": 1}


@pytest.mark.parametrize("content", [b"", b"hello world\n", b"\x1f\x8b\x08garbage"])
def test_convert_bad_input_is_one_clear_line(tmp_path, capsys, content):
    src = tmp_path / "in.dat"
    src.write_bytes(content)
    assert main(["convert", str(src), str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memtune: error:") and str(src) in err and "Traceback" not in err
    assert not (tmp_path / "o.jsonl").exists()


def test_convert_shared_snapshot(shared_trace_path, tmp_path, capsys):
    src = shared_trace_path("pytorch-snapshot-warm-emptycache.pickle")
    out = tmp_path / "warm.jsonl"
    assert main(["convert", str(src), str(out), "-q"]) == 0
    assert capsys.readouterr().out == ""
    again = load_trace(out)
    assert again.devices == load_trace(src).devices
    assert again.devices[0].initial_reserved_bytes() == 230_686_720
