"""The generated reference page: complete, independent of the environment, and
committed up to date."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtune import config
from memtune.config import docs
from memtune.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "environment.md"


def test_committed_environment_md_is_current():
    expected = docs.render("markdown")
    assert DOC.exists(), "docs/environment.md is missing; run: memtune env docs --format markdown -o docs/environment.md"
    assert DOC.read_text(encoding="utf-8") == expected, (
        "docs/environment.md is stale; regenerate it with: memtune env docs --format markdown -o docs/environment.md"
    )


def test_docs_ignore_the_environment(monkeypatch):
    before = {fmt: docs.render(fmt) for fmt in docs.FORMATS}
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_TYPE", "Round")
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:128")
    config.get("MXNET_GPU_MEM_POOL_TYPE")
    with config.override(MEMTUNE_DEBUG_ALLOCATOR=3):
        assert {fmt: docs.render(fmt) for fmt in docs.FORMATS} == before


def test_json_lists_every_variable_with_required_fields():
    items = json.loads(docs.render("json"))
    assert sorted(i["name"] for i in items) == sorted(v.name for v in config.variables())
    for item in items:
        assert {"name", "type", "default", "read_once", "doc"} <= set(item)
        assert isinstance(item["read_once"], bool) and item["doc"]
    conf = next(i for i in items if i["name"] == "PYTORCH_CUDA_ALLOC_CONF")
    keys = {k["key"]: k for k in conf["keys"]}
    assert keys["max_non_split_rounding_mb"]["default"] == "20" and keys["max_split_size_mb"]["unit"] == "MiB"
    assert keys["release_lock_on_cudamalloc"]["effect"] is False and keys["expandable_segments"]["effect"] is True


def test_markdown_and_rst_mention_every_variable_and_rule():
    md, rst = docs.render("markdown"), docs.render("rst")
    for var in config.variables():
        assert f"### {var.name}" in md and f"``{var.name}``" in rst
    assert "## Cross-variable rules" in md and "PYTORCH_MPS_LOW_WATERMARK_RATIO" in md
    assert "PYTORCH_ALLOC_CONF first" in md  # which of the two PyTorch names wins
    assert "`PYTORCH_MPS_FAST_MATH`" in md  # the allow-list is documented


def test_unknown_format_is_a_clear_error():
    with pytest.raises(ConfigError, match="markdown, rst, json"):
        docs.render("html")


def test_policy_page_names_declared_variables_with_their_defaults():
    """docs/policy.md and the record of its measurements (docs/policy-log.md) are written
    by hand: every MEMTUNE_* they name must exist, and policy.md's table of trade-off knobs
    must give the registry's defaults."""
    import re

    text = (REPO / "docs" / "policy.md").read_text(encoding="utf-8")
    log = (REPO / "docs" / "policy-log.md").read_text(encoding="utf-8")
    declared = {v.name for v in config.variables()}
    for page in (text, log):
        named = set(re.findall(r"MEMTUNE_[A-Z_]+", page))
        assert named and named <= declared, sorted(named - declared)
    rows = {m[0]: m[1] for m in re.findall(r"^\| `(MEMTUNE_[A-Z_]+)`[^|]* \| ([^|]+) \|", text, re.M)}
    assert float(rows["MEMTUNE_SLACK"]) == config.get("MEMTUNE_SLACK")
    assert float(rows["MEMTUNE_TRIM_BUDGET"]) == config.get("MEMTUNE_TRIM_BUDGET")
    growth, growth_max = (x.strip() for x in rows["MEMTUNE_GROWTH"].split(","))
    num, den = growth.split("/")
    assert int(num) / int(den) == config.get("MEMTUNE_GROWTH")
    from memtune.units import parse_bytes

    assert parse_bytes(growth_max.replace(" ", "")) == config.get("MEMTUNE_GROWTH_MAX")
