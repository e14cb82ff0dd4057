"""``memtune env`` end to end: the acceptance commands of issue 2, run as a user
would (the console script, in a controlled environment)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memtune import config

REPO = Path(__file__).resolve().parents[2]
WATCHED = ("MEMTUNE_", "PYTORCH_", "MXNET_", "MGB_", "MEGENGINE_", "CUPY_")


def _command() -> list[str]:
    script = Path(sys.executable).with_name("memtune")
    if script.exists():
        return [str(script)]
    found = shutil.which("memtune")
    return [found] if found else [sys.executable, "-m", "memtune"]


def memtune(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the memtune command with a clean environment plus ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(WATCHED)}
    base.update(env)
    return subprocess.run(
        [*_command(), *args], env=base, capture_output=True, text=True, timeout=60, cwd=REPO
    )


# ------------------------------------------------------- acceptance (issue 2)


def test_check_clean_environment_exits_0_with_ok():
    r = memtune("env", "check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"


def test_check_misspelled_name_exits_1_and_names_the_real_one():
    r = memtune("env", "check", MXNET_GPU_MEM_POOL_TYP="Round")
    assert r.returncode == 1
    assert "MXNET_GPU_MEM_POOL_TYP " in r.stdout and "did you mean MXNET_GPU_MEM_POOL_TYPE" in r.stdout


def test_check_bad_number_names_variable_and_says_a_number_is_expected():
    r = memtune("env", "check", PYTORCH_MPS_HIGH_WATERMARK_RATIO="abc")
    assert r.returncode == 1
    assert "PYTORCH_MPS_HIGH_WATERMARK_RATIO='abc'" in r.stdout and "expected a number" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_check_low_above_high_names_both_variables():
    r = memtune("env", "check", PYTORCH_MPS_LOW_WATERMARK_RATIO="1.9", PYTORCH_MPS_HIGH_WATERMARK_RATIO="1.2")
    assert r.returncode == 1
    assert "PYTORCH_MPS_LOW_WATERMARK_RATIO" in r.stdout and "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in r.stdout


def test_check_lists_every_problem():
    r = memtune(
        "env",
        "check",
        MXNET_GPU_MEM_POOL_TYP="Round",
        PYTORCH_MPS_HIGH_WATERMARK_RATIO="abc",
        PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:1,expandable_segment:True",
        MGB_CUDA_RESERVE_MEMORY="maybe",
    )
    assert r.returncode == 1
    lines = [line for line in r.stdout.splitlines() if line.startswith("  - ")]
    assert len(lines) == 5, r.stdout
    assert r.stdout.startswith("5 problems")


def test_docs_json_lists_every_point_9_variable():
    r = memtune("env", "docs", "--format", "json", PYTORCH_MPS_HIGH_WATERMARK_RATIO="0.5")
    assert r.returncode == 0, r.stderr
    items = json.loads(r.stdout)
    assert isinstance(items, list)
    for item in items:
        assert {"name", "type", "default", "read_once", "doc"} <= set(item)
    by_name = {i["name"]: i for i in items}
    # every declared variable (tests/config/test_declarations.py checks the list is declared)
    assert set(by_name) == {v.name for v in config.variables()}
    assert by_name["PYTORCH_MPS_HIGH_WATERMARK_RATIO"]["default"] == "1.7"  # declarations, not the environment


def test_docs_markdown_matches_the_committed_page():
    r = memtune("env", "docs", "--format", "markdown", MXNET_GPU_MEM_POOL_TYPE="Round")
    assert r.returncode == 0
    assert r.stdout == (REPO / "docs" / "environment.md").read_text(encoding="utf-8")


# --------------------------------------------------------- show / explain


def test_show_table_has_value_source_and_read_marker():
    r = memtune("env", "show", MXNET_GPU_MEM_POOL_TYPE="round", MEMTUNE_DEBUG_ALLOCATOR="ALLOCATIONS")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    row = next(line for line in out.splitlines() if "MXNET_GPU_MEM_POOL_TYPE" in line)
    assert "Round" in row and "environment variable" in row and "once" in row
    row = next(line for line in out.splitlines() if "MEMTUNE_DEBUG_ALLOCATOR" in line)
    assert "ALLOCATIONS" in row and "dynamic" in row
    row = next(line for line in out.splitlines() if "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in line)
    assert "1.7" in row and "default" in row


def test_explain_and_unknown_name():
    r = memtune("env", "explain", "PYTORCH_MPS_LOW_WATERMARK_RATIO", PYTORCH_MPS_LOW_WATERMARK_RATIO="1.1")
    assert r.returncode == 0
    assert "PYTORCH_MPS_LOW_WATERMARK_RATIO = 1.1" in r.stdout
    assert "environment variable PYTORCH_MPS_LOW_WATERMARK_RATIO" in r.stdout and "read-once" in r.stdout
    r = memtune("env", "explain", "PYTORCH_MPS_LOW_WATERMARK")
    assert r.returncode == 2
    assert "did you mean PYTORCH_MPS_LOW_WATERMARK_RATIO" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------ in-process (fast)


@pytest.fixture
def runner(monkeypatch):
    for name in list(os.environ):
        if name.startswith(WATCHED):
            monkeypatch.delenv(name)
    config.reset_for_tests()
    yield CliRunner()
    config.reset_for_tests()


def test_in_process_show_does_not_freeze_read_once_variables(runner):
    from memtune.cli.env import env

    result = runner.invoke(env, ["show", "--group", "mps"])
    assert result.exit_code == 0, result.output
    assert "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in result.output and "MXNET" not in result.output
    assert not config.explain("PYTORCH_MPS_HIGH_WATERMARK_RATIO").frozen
    bad = runner.invoke(env, ["show", "--group", "nope"])
    assert bad.exit_code == 2 and "unknown group" in bad.output


def test_in_process_show_marks_invalid_values(runner, monkeypatch):
    from memtune.cli.env import env

    monkeypatch.setenv("MXNET_GPU_MEM_POOL_PAGE_SIZE", "7")
    result = runner.invoke(env, ["show", "--set-only"])
    assert result.exit_code == 0, result.output
    assert "invalid" in result.output and "MXNET_GPU_MEM_POOL_PAGE_SIZE" in result.output
    assert "MEMTUNE_DEBUG_ALLOCATOR" not in result.output


def test_in_process_docs_to_file(runner, tmp_path):
    from memtune.cli.env import env

    out = tmp_path / "env.rst"
    result = runner.invoke(env, ["docs", "--format", "rst", "-o", str(out)])
    assert result.exit_code == 0
    assert out.read_text().startswith("Environment variables\n=====")
