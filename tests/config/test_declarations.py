"""The declared variables: documented defaults and meanings, framework rules,
and automatic discovery of declaration modules."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from memtune import config
from memtune.config import declarations
from memtune.config.declarations.pytorch import OPTIONS, alloc_conf
from memtune.config.registry import REGISTRY
from memtune.config.types import SizeSpec
from memtune.errors import ConfigError

ISSUE_POINT_9 = [
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
    "PYTORCH_MPS_LOW_WATERMARK_RATIO",
    "PYTORCH_DEBUG_MPS_ALLOCATOR",
    "MXNET_GPU_MEM_POOL_TYPE",
    "MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF",
    "MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE",
    "MXNET_GPU_MEM_POOL_RESERVE",
    "MXNET_GPU_MEM_POOL_PAGE_SIZE",
    "MGB_CUDA_RESERVE_MEMORY",
    "MEGENGINE_DTR_EVICTION_THRESHOLD",
    "MEGENGINE_DTR_EVICTEE_MINIMUM_SIZE",
    "CUPY_GPU_MEMORY_LIMIT",
    "MEMTUNE_DEBUG_ALLOCATOR",
    "MEMTUNE_PROFILER_AUTOSTART",
    "MEMTUNE_PROFILER_OUTPUT",
    "MEMTUNE_HOST_ALLOCATOR",
    "MEMTUNE_HOST_HIGH_WATERMARK",
    "MEMTUNE_HOST_LOW_WATERMARK",
    "MEMTUNE_WARN_UNKNOWN",
]

# The frameworks' documented defaults (ANCHORS.md, the sources named in the declarations).
DEFAULTS = {
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO": 1.7,
    "PYTORCH_MPS_LOW_WATERMARK_RATIO": 1.4,
    "PYTORCH_DEBUG_MPS_ALLOCATOR": 0,
    "MXNET_GPU_MEM_POOL_TYPE": "Naive",
    "MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF": 24,
    "MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE": 2 * 1024 * 1024,
    "MXNET_GPU_MEM_POOL_RESERVE": 5,
    "MXNET_GPU_MEM_POOL_PAGE_SIZE": 4096,
    "MGB_CUDA_RESERVE_MEMORY": False,
    "MEGENGINE_DTR_EVICTION_THRESHOLD": 0,
    "MEGENGINE_DTR_EVICTEE_MINIMUM_SIZE": 1024 * 1024,
    "CUPY_GPU_MEMORY_LIMIT": SizeSpec(bytes=0),
    "MEMTUNE_DEBUG_ALLOCATOR": 0,
    "MEMTUNE_PROFILER_AUTOSTART": False,
    "MEMTUNE_HOST_ALLOCATOR": "memtune",
    "MEMTUNE_HOST_HIGH_WATERMARK": SizeSpec(fraction=0.9),
    "MEMTUNE_HOST_LOW_WATERMARK": SizeSpec(fraction=0.6),
    "MEMTUNE_WARN_UNKNOWN": True,
}

READ_ONCE = {
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
    "PYTORCH_MPS_LOW_WATERMARK_RATIO",
    "PYTORCH_DEBUG_MPS_ALLOCATOR",
    "MEMTUNE_PROFILER_AUTOSTART",
    "MGB_CUDA_RESERVE_MEMORY",
}


def test_everything_in_point_9_is_declared_with_documented_defaults():
    names = {v.name for v in config.variables()}
    assert set(ISSUE_POINT_9) <= names
    for name, default in DEFAULTS.items():
        assert config.get(name) == default, name
    for name in READ_ONCE:
        assert REGISTRY.variable(name).read_once, name
    assert not REGISTRY.variable("MEMTUNE_DEBUG_ALLOCATOR").read_once
    assert "discrete" in REGISTRY.variable("PYTORCH_MPS_LOW_WATERMARK_RATIO").format_default()


def test_every_variable_has_a_doc_and_a_group():
    for var in config.variables():
        assert len(var.doc) > 20 and var.group, var.name


def test_pytorch_conf_defaults_match_c10():
    conf = config.get("PYTORCH_CUDA_ALLOC_CONF")
    assert conf["max_split_size_mb"] is None  # unlimited
    assert conf["max_non_split_rounding_mb"] == 20
    assert conf["garbage_collection_threshold"] == 0.0
    assert conf["roundup_power2_divisions"] == (0,) * 16
    assert conf["expandable_segments"] is False and conf["backend"] == "native"
    assert set(conf) == set(OPTIONS)
    for key in ("release_lock_on_cudamalloc", "pinned_use_cuda_host_register", "pinned_num_register_threads"):
        assert not OPTIONS[key].effect and "no effect in memtune" in OPTIONS[key].doc


@pytest.mark.parametrize(
    "key,bad",
    [
        ("max_split_size_mb", "19"),
        ("max_non_split_rounding_mb", "10"),
        ("garbage_collection_threshold", "1"),
        ("garbage_collection_threshold", "-0.1"),
        ("roundup_power2_divisions", "3"),
        ("expandable_segments", "maybe"),
        ("backend", "cuda"),
        ("pinned_num_register_threads", "3"),
        ("pinned_num_register_threads", "256"),
    ],
)
def test_pytorch_conf_rejects_what_pytorch_rejects(key, bad):
    with pytest.raises(ConfigError, match=f"PYTORCH_ALLOC_CONF:{key}='{bad}'"):
        config.parse_value(f"PYTORCH_ALLOC_CONF:{key}", bad, source="--set")


def test_pytorch_alloc_conf_wins_when_both_are_set(monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:64")
    conf, source = alloc_conf()
    assert (conf["max_split_size_mb"], source) == (64, "PYTORCH_CUDA_ALLOC_CONF")
    config.reset_for_tests()
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:128")
    conf, source = alloc_conf()
    assert (conf["max_split_size_mb"], source) == (128, "PYTORCH_ALLOC_CONF")
    (problem,) = config.check()
    assert problem.kind == "rule" and "PYTORCH_ALLOC_CONF first" in problem.message
    config.reset_for_tests()
    monkeypatch.delenv("PYTORCH_ALLOC_CONF")
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF")
    assert alloc_conf()[1] == "default"


def test_async_backend_ignores_native_keys(monkeypatch):
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "backend:cudaMallocAsync,max_split_size_mb:64")
    (problem,) = config.check()
    assert "cudaMallocAsync ignores max_split_size_mb" in problem.message


def test_mps_bounds():
    assert config.parse_value("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "2.0") == 2.0
    assert config.parse_value("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "0") == 0.0
    for bad in ("2.1", "-1", "abc"):
        with pytest.raises(ConfigError, match="PYTORCH_MPS_HIGH_WATERMARK_RATIO"):
            config.parse_value("PYTORCH_MPS_HIGH_WATERMARK_RATIO", bad)
    assert config.parse_value("PYTORCH_DEBUG_MPS_ALLOCATOR", "0x1f") == 31


def test_mxnet_ranges_and_round_rule(monkeypatch):
    for name, bad in (
        ("MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", "19"),
        ("MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", "35"),
        ("MXNET_GPU_MEM_POOL_PAGE_SIZE", "31"),
        ("MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE", "0"),
        ("MXNET_GPU_MEM_POOL_RESERVE", "101"),
        ("MXNET_GPU_MEM_POOL_TYPE", "Pooled"),
    ):
        with pytest.raises(ConfigError, match=name):
            config.parse_value(name, bad)
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_PAGE_SIZE", "6000")
    assert config.check() == []  # Naive does not need a power of two
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_TYPE", "round")
    (problem,) = config.check()
    assert "MXNET_GPU_MEM_POOL_PAGE_SIZE (6000) must be a power of two" in problem.message
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_PAGE_SIZE", str(1 << 22))
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", "21")
    (problem,) = config.check()
    assert "MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF (21)" in problem.message


def test_cupy_limit_forms(monkeypatch):
    monkeypatch.setenv("CUPY_GPU_MEMORY_LIMIT", "90%")
    assert config.get("CUPY_GPU_MEMORY_LIMIT").resolve(1000) == 900
    assert config.parse_value("CUPY_GPU_MEMORY_LIMIT", "1073741824").resolve(10**12) == 1 << 30
    with pytest.raises(ConfigError, match="CUPY_GPU_MEMORY_LIMIT"):
        config.parse_value("CUPY_GPU_MEMORY_LIMIT", "ninety")


def test_megengine_sizes():
    assert config.parse_value("MEGENGINE_DTR_EVICTION_THRESHOLD", "2GiB") == 2 << 30
    assert config.parse_value("MEGENGINE_DTR_EVICTEE_MINIMUM_SIZE", "1MiB") == 1 << 20


def test_host_watermark_rule_compares_bytes_and_fractions(monkeypatch):
    monkeypatch.setenv("MEMTUNE_HOST_HIGH_WATERMARK", "1GiB")
    monkeypatch.setenv("MEMTUNE_HOST_LOW_WATERMARK", "2GiB")
    (problem,) = config.check()
    assert "MEMTUNE_HOST_LOW_WATERMARK" in problem.message and "MEMTUNE_HOST_HIGH_WATERMARK" in problem.message
    monkeypatch.setenv("MEMTUNE_HOST_HIGH_WATERMARK", "0")  # no limit
    assert config.check() == []


def test_every_group_module_is_loaded():
    assert set(declarations.MODULES) >= {"memtune", "pytorch", "mps", "mxnet", "megengine", "cupy"}
    assert {v.group for v in config.variables()} >= {"memtune", "pytorch", "mps", "mxnet", "megengine", "cupy"}


def test_new_declaration_module_is_discovered_without_edits(tmp_path, monkeypatch):
    (tmp_path / "zz_policy.py").write_text(
        textwrap.dedent(
            """
            from memtune.config import declare
            from memtune.config.registry import Variable
            from memtune.config.types import Int

            declare(Variable(name="TEST_MT_POLICY_KNOB", type=Int(min=1), default=4,
                             doc="declared by a module dropped into the package", group="policy"))
            """
        )
    )
    monkeypatch.setattr(declarations, "__path__", [*declarations.__path__, str(tmp_path)])
    try:
        loaded = declarations._load_all()
        assert loaded[-1] == "zz_policy" and loaded[:6] == list(declarations.FIRST)
        assert config.get("TEST_MT_POLICY_KNOB") == 4
        assert REGISTRY.variable("TEST_MT_POLICY_KNOB").declared_in == "memtune.config.declarations.zz_policy"
        rules = len(REGISTRY.rules)
        importlib.reload(sys.modules["memtune.config.declarations.memtune"])  # re-declaring from the same module is fine
        assert len(REGISTRY.rules) == rules  # and does not double its rules
    finally:
        REGISTRY.variables.pop("TEST_MT_POLICY_KNOB", None)
        REGISTRY.states.pop("TEST_MT_POLICY_KNOB", None)
        sys.modules.pop("memtune.config.declarations.zz_policy", None)
