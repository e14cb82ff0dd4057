"""get / set_value / override / read-once / provenance / check."""

from __future__ import annotations

import asyncio
import os
import threading
import warnings

import pytest

import memtune
from memtune import config
from memtune.config import (
    DeprecatedNameWarning,
    LateChangeWarning,
    UnknownVariableWarning,
    Variable,
    override,
)
from memtune.config.types import BitFlags, Bool, Enum, Int
from memtune.errors import ConfigError, UnknownNameError

HERE = os.path.basename(__file__)


# ------------------------------------------------------------ resolution


def test_default_env_and_typed_values(monkeypatch):
    assert config.get("MXNET_GPU_MEM_POOL_TYPE") == "Naive"
    assert config.explain("MXNET_GPU_MEM_POOL_TYPE").source == "default"
    config.reset_for_tests()
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_TYPE", "round")
    assert config.get("MXNET_GPU_MEM_POOL_TYPE") == "Round"
    info = config.explain("MXNET_GPU_MEM_POOL_TYPE")
    assert info.source == "environment variable MXNET_GPU_MEM_POOL_TYPE" and info.value == "Round"


def test_bad_env_value_is_an_error_not_a_fallback(monkeypatch):
    monkeypatch.setenv("MEMTUNE_WARN_UNKNOWN", "maybe")
    with pytest.raises(ConfigError) as info:
        config.get("MEMTUNE_WARN_UNKNOWN")
    msg = str(info.value)
    assert "MEMTUNE_WARN_UNKNOWN" in msg and "'maybe'" in msg and "yes, no, on, off" in msg
    assert "environment variable MEMTUNE_WARN_UNKNOWN" in msg
    assert info.value.variable == "MEMTUNE_WARN_UNKNOWN"


@pytest.mark.parametrize("text,expected", [("0", False), ("false", False), ("off", False), ("1", True), ("YES", True)])
def test_zero_and_false_are_false(monkeypatch, text, expected):
    monkeypatch.setenv("MGB_CUDA_RESERVE_MEMORY", text)
    assert config.get("MGB_CUDA_RESERVE_MEMORY") is expected


def test_option_list_get_returns_every_key(monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128,expandable_segments:True")
    conf = config.get("PYTORCH_CUDA_ALLOC_CONF")
    assert conf["max_split_size_mb"] == 128 and conf["expandable_segments"] is True
    assert conf["max_non_split_rounding_mb"] == 20 and conf["garbage_collection_threshold"] == 0.0
    assert conf["backend"] == "native" and conf["roundup_power2_divisions"] == (0,) * 16
    conf["max_split_size_mb"] = 1  # callers get a copy
    assert config.get("PYTORCH_CUDA_ALLOC_CONF")["max_split_size_mb"] == 128


def test_unknown_name_suggests_close_names():
    with pytest.raises(UnknownNameError) as info:
        config.get("MXNET_GPU_MEM_POOL_TYP")
    assert "did you mean MXNET_GPU_MEM_POOL_TYPE" in str(info.value)
    assert isinstance(info.value, KeyError) and isinstance(info.value, memtune.ConfigError)
    for call in (lambda: config.explain("PYTORCH_MPS_HIGH_WATERMARK"), lambda: config.set_value("MEMTUNE_DEBUG", 1)):
        with pytest.raises(UnknownNameError, match="did you mean"):
            call()


def test_parse_value_validates_like_the_environment():
    assert config.parse_value("PYTORCH_CUDA_ALLOC_CONF:max_split_size_mb", "128", source="--set") == 128
    assert config.parse_value("MXNET_GPU_MEM_POOL_TYPE", "round", source="memtune.allocator()") == "Round"
    assert config.parse_value("PYTORCH_CUDA_ALLOC_CONF:max_split_size_mb", 256) == 256
    with pytest.raises(ConfigError) as info:
        config.parse_value("PYTORCH_CUDA_ALLOC_CONF:max_split_size_mb", "10", source="--set")
    msg = str(info.value)
    assert msg.startswith("PYTORCH_CUDA_ALLOC_CONF:max_split_size_mb='10' from --set") and ">= 20" in msg
    assert info.value.variable == "PYTORCH_CUDA_ALLOC_CONF:max_split_size_mb"
    with pytest.raises(ConfigError, match="did you mean max_split_size_mb"):
        config.parse_value("PYTORCH_CUDA_ALLOC_CONF:max_split_size", "128", source="--set")
    with pytest.raises(ConfigError, match="not an option list"):
        config.parse_value("MXNET_GPU_MEM_POOL_TYPE:x", "1")
    with pytest.raises(ConfigError, match="from memtune.allocator"):
        config.parse_value("MXNET_GPU_MEM_POOL_TYPE", "Rund", source="memtune.allocator()")


def test_set_value_is_an_api_source(monkeypatch):
    monkeypatch.setenv("MEMTUNE_DEBUG_ALLOCATOR", "ALLOCATIONS")
    config.set_value("MEMTUNE_DEBUG_ALLOCATOR", "RECYCLES|RELEASES")
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 12
    source = config.explain("MEMTUNE_DEBUG_ALLOCATOR").source
    assert source.startswith("API call set_value() at ") and HERE in source
    with override(MEMTUNE_DEBUG_ALLOCATOR=1):
        assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 1  # override beats the API value
    config.set_value("MEMTUNE_DEBUG_ALLOCATOR", None)
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 2  # back to the environment
    with pytest.raises(ConfigError, match="set_value"):
        config.set_value("MEMTUNE_DEBUG_ALLOCATOR", "NOPE")


# --------------------------------------------------------------- dynamic


def test_dynamic_variable_follows_environment(monkeypatch):
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 0
    monkeypatch.setenv("MEMTUNE_DEBUG_ALLOCATOR", "ALLOCATIONS")
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 2
    monkeypatch.setenv("MEMTUNE_DEBUG_ALLOCATOR", "LARGE_ONLY|RELEASES")
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 24
    monkeypatch.delenv("MEMTUNE_DEBUG_ALLOCATOR")
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 0
    monkeypatch.setenv("MEMTUNE_DEBUG_ALLOCATOR", "BOGUS")
    with pytest.raises(ConfigError, match="MEMTUNE_DEBUG_ALLOCATOR"):
        config.get("MEMTUNE_DEBUG_ALLOCATOR")


# ------------------------------------------------------------- read-once


def test_read_once_freezes_and_warns_once_on_late_change(monkeypatch):
    monkeypatch.setenv("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "1.2")
    assert config.get("PYTORCH_MPS_HIGH_WATERMARK_RATIO") == 1.2
    line = test_read_once_freezes_and_warns_once_on_late_change.__code__.co_firstlineno + 2
    info = config.explain("PYTORCH_MPS_HIGH_WATERMARK_RATIO")
    assert info.frozen and info.read_at.endswith(f"{HERE}:{line}")
    monkeypatch.setenv("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "0.5")
    with pytest.warns(LateChangeWarning) as record:
        assert config.get("PYTORCH_MPS_HIGH_WATERMARK_RATIO") == 1.2
    message = str(record[0].message)
    assert record[0].filename == __file__  # the warning points at the reader, not at memtune
    assert message == (
        f"PYTORCH_MPS_HIGH_WATERMARK_RATIO changed after it was read at {info.read_at}; "
        "it has no effect until restart"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert config.get("PYTORCH_MPS_HIGH_WATERMARK_RATIO") == 1.2  # warned once, not again
    assert any(p.kind == "late-change" and "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in p.message for p in config.check())
    assert "changed after it was read" in (config.explain("PYTORCH_MPS_HIGH_WATERMARK_RATIO").problem or "")


def test_read_once_unset_then_set_also_counts_as_a_change(monkeypatch):
    assert config.get("MXNET_GPU_MEM_POOL_TYPE") == "Naive"
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_TYPE", "Round")
    with pytest.warns(LateChangeWarning, match="MXNET_GPU_MEM_POOL_TYPE changed after it was read"):
        assert config.get("MXNET_GPU_MEM_POOL_TYPE") == "Naive"


def test_read_location_is_outside_memtune():
    from memtune.config.declarations.pytorch import alloc_conf

    alloc_conf()  # reads through memtune's own frames
    assert HERE in config.explain("PYTORCH_ALLOC_CONF").read_at


def test_override_or_set_after_read_is_an_error():
    config.get("CUPY_GPU_MEMORY_LIMIT")
    with pytest.raises(ConfigError, match="read-once and was already read at .*" + HERE):
        with override(CUPY_GPU_MEMORY_LIMIT="50%"):
            pass
    with pytest.raises(ConfigError, match="already read"):
        config.set_value("CUPY_GPU_MEMORY_LIMIT", "50%")
    config.reset_for_tests()
    with override(CUPY_GPU_MEMORY_LIMIT="50%"):  # before the first read it is fine
        assert config.get("CUPY_GPU_MEMORY_LIMIT").resolve(1000) == 500
    assert config.get("CUPY_GPU_MEMORY_LIMIT").is_zero


def test_override_hides_an_invalid_environment_value(monkeypatch):
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_TYPE", "Pooled")
    with override(MXNET_GPU_MEM_POOL_TYPE="Round"):
        assert config.get("MXNET_GPU_MEM_POOL_TYPE") == "Round"
    with pytest.raises(ConfigError, match="MXNET_GPU_MEM_POOL_TYPE='Pooled'"):
        config.get("MXNET_GPU_MEM_POOL_TYPE")


def test_reset_for_tests_forgets_reads(monkeypatch):
    config.get("MGB_CUDA_RESERVE_MEMORY")
    monkeypatch.setenv("MGB_CUDA_RESERVE_MEMORY", "1")
    config.reset_for_tests()
    assert config.get("MGB_CUDA_RESERVE_MEMORY") is True
    assert not config.check()


# -------------------------------------------------------------- override


def test_override_nests_and_restores_exactly(monkeypatch):
    monkeypatch.setenv("MEMTUNE_DEBUG_ALLOCATOR", "1")
    with override(MEMTUNE_DEBUG_ALLOCATOR=2, MEMTUNE_WARN_UNKNOWN=False):
        assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 2 and config.get("MEMTUNE_WARN_UNKNOWN") is False
        with override(MEMTUNE_DEBUG_ALLOCATOR="RECYCLES"):
            assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 4
            assert config.get("MEMTUNE_WARN_UNKNOWN") is False  # only the names given change
            assert config.explain("MEMTUNE_DEBUG_ALLOCATOR").source == "override"
        assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 2
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 1 and config.get("MEMTUNE_WARN_UNKNOWN") is True


def test_override_restores_on_exception():
    with pytest.raises(RuntimeError):
        with override(MEMTUNE_DEBUG_ALLOCATOR=8):
            with override(MEMTUNE_DEBUG_ALLOCATOR=16):
                raise RuntimeError("boom")
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 0
    assert config.explain("MEMTUNE_DEBUG_ALLOCATOR").source == "default"


def test_override_validates_names_and_values():
    with pytest.raises(UnknownNameError, match="did you mean MEMTUNE_DEBUG_ALLOCATOR"):
        override(MEMTUNE_DEBUG_ALOCATOR=1)
    with pytest.raises(ConfigError, match="MEMTUNE_WARN_UNKNOWN='maybe' from override"):
        override(MEMTUNE_WARN_UNKNOWN="maybe")
    with override(MEMTUNE_DEBUG_ALLOCATOR=None):
        assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 0


def test_override_as_decorator_sync_and_async():
    @override(MEMTUNE_DEBUG_ALLOCATOR=2)
    def f(x):
        return config.get("MEMTUNE_DEBUG_ALLOCATOR") + x

    @override(MEMTUNE_DEBUG_ALLOCATOR=4)
    async def g():
        await asyncio.sleep(0)
        return config.get("MEMTUNE_DEBUG_ALLOCATOR")

    assert f(1) == 3 and f(10) == 12 and f.__name__ == "f"
    assert asyncio.run(g()) == 4
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 0


def test_same_override_object_reentered():
    ov = override(MEMTUNE_DEBUG_ALLOCATOR=2)
    with ov:
        with override(MEMTUNE_DEBUG_ALLOCATOR=4):
            with ov:
                assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 2
            assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 4
        assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 2
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 0


def test_overrides_are_per_thread():
    barrier = threading.Barrier(4)
    seen: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            with override(MEMTUNE_DEBUG_ALLOCATOR=1 << i):
                barrier.wait(timeout=10)  # all four scopes are open at once
                first = config.get("MEMTUNE_DEBUG_ALLOCATOR")
                with override(MEMTUNE_DEBUG_ALLOCATOR=31):
                    barrier.wait(timeout=10)
                    inner = config.get("MEMTUNE_DEBUG_ALLOCATOR")
                barrier.wait(timeout=10)
                seen[i] = [first, inner, config.get("MEMTUNE_DEBUG_ALLOCATOR")]
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    with override(MEMTUNE_DEBUG_ALLOCATOR=16):
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 16  # the main thread's scope is untouched
    assert not errors
    assert seen == {i: [1 << i, 31, 1 << i] for i in range(4)}


def test_overrides_are_per_asyncio_task():
    async def task(value: int, gate: asyncio.Event, out: list[int]) -> None:
        with override(MEMTUNE_DEBUG_ALLOCATOR=value):
            await gate.wait()  # every task holds its scope open while the others run
            out.append(config.get("MEMTUNE_DEBUG_ALLOCATOR"))
            with override(MEMTUNE_DEBUG_ALLOCATOR="LARGE_ONLY"):
                await asyncio.sleep(0)
                out.append(config.get("MEMTUNE_DEBUG_ALLOCATOR"))
            await asyncio.sleep(0)
            out.append(config.get("MEMTUNE_DEBUG_ALLOCATOR"))

    async def main() -> dict[int, list[int]]:
        gate = asyncio.Event()
        results = {v: [] for v in (1, 2, 4, 8)}
        with override(MEMTUNE_DEBUG_ALLOCATOR=31):
            tasks = [asyncio.create_task(task(v, gate, results[v])) for v in results]
            await asyncio.sleep(0)
            gate.set()
            await asyncio.gather(*tasks)
            assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 31
        return results

    results = asyncio.run(main())
    assert results == {v: [v, 16, v] for v in (1, 2, 4, 8)}
    assert config.get("MEMTUNE_DEBUG_ALLOCATOR") == 0


# --------------------------------------------------------------- aliases


def test_deprecated_alias_warns_once_and_names_both(monkeypatch, declare_temp):
    declare_temp(
        Variable(
            name="TEST_MT_NEW",
            type=Int(min=0),
            default=3,
            doc="test",
            aliases=("TEST_MT_OLD",),
            group="test",
        )
    )
    monkeypatch.setenv("TEST_MT_OLD", "7")
    with pytest.warns(DeprecatedNameWarning, match="TEST_MT_OLD is deprecated; use TEST_MT_NEW"):
        assert config.get("TEST_MT_NEW") == 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert config.get("TEST_MT_NEW") == 7  # once
        assert config.get("TEST_MT_OLD") == 7  # the alias name reads the variable
    assert config.explain("TEST_MT_NEW").source == "environment variable TEST_MT_OLD (deprecated alias)"
    assert any(p.kind == "deprecated" for p in config.check())
    monkeypatch.setenv("TEST_MT_NEW", "9")  # the new name wins when both are set
    assert config.get("TEST_MT_NEW") == 9
    monkeypatch.setenv("TEST_MT_OLD", "x")
    monkeypatch.delenv("TEST_MT_NEW")
    with pytest.raises(ConfigError, match="TEST_MT_NEW='x' from environment variable TEST_MT_OLD"):
        config.get("TEST_MT_NEW")


def test_declaring_twice_or_reusing_an_alias_is_refused(declare_temp):
    declare_temp(Variable(name="TEST_MT_A", type=Bool(), default=False, doc="a", aliases=("TEST_MT_B",)))
    with pytest.raises(ConfigError, match="already declared"):
        config.declare(Variable(name="TEST_MT_A", type=Bool(), default=False, doc="again", declared_in="elsewhere"))
    with pytest.raises(ConfigError, match="alias TEST_MT_B"):
        config.declare(Variable(name="TEST_MT_C", type=Bool(), default=False, doc="c", aliases=("TEST_MT_B",)))
    with pytest.raises(ConfigError, match="its declaration"):
        config.declare(Variable(name="TEST_MT_D", type=Enum("x", "y"), default="z", doc="d"))


# ------------------------------------------------------------ misspellings


def test_misspelled_names_warn_once_with_suggestion(monkeypatch):
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_TYP", "Round")
    monkeypatch.setenv("PYTORCH_MPS_FAST_MATH", "1")  # real PyTorch name memtune does not model
    with pytest.warns(UnknownVariableWarning) as record:
        config.get("MEMTUNE_DEBUG_ALLOCATOR")
    messages = [str(w.message) for w in record]
    assert len(messages) == 1 and "did you mean MXNET_GPU_MEM_POOL_TYPE" in messages[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config.get("MEMTUNE_DEBUG_ALLOCATOR")


def test_misspelling_warning_can_be_silenced(monkeypatch):
    monkeypatch.setenv("MEMTUNE_DEBUG_ALLOCATR", "1")
    monkeypatch.setenv("MEMTUNE_WARN_UNKNOWN", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config.get("MEMTUNE_DEBUG_ALLOCATOR")
    problems = config.check()  # check reports it regardless
    assert [p.kind for p in problems] == ["unknown"] and "MEMTUNE_DEBUG_ALLOCATOR" in problems[0].message


def test_close_names_outside_prefixes_are_caught(monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALOC_CONF", "expandable_segments:True")
    problems = config.check()
    assert any("PYTORCH_CUDA_ALOC_CONF" in p.message and "PYTORCH_CUDA_ALLOC_CONF" in p.message for p in problems)


# ---------------------------------------------------------------- check


def test_check_reports_every_problem_together(monkeypatch):
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_TYP", "Round")
    monkeypatch.setenv("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "abc")
    monkeypatch.setenv("MEMTUNE_HOST_LOW_WATERMARK", "95%")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:5,garbage_collection_threshold:1.5")
    problems = config.check()
    kinds = sorted(p.kind for p in problems)
    assert kinds == ["invalid", "invalid", "invalid", "rule", "unknown"], [str(p) for p in problems]
    text = "\n".join(map(str, problems))
    for needle in (
        "MXNET_GPU_MEM_POOL_TYPE",
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO='abc'",
        "expected a number",
        "PYTORCH_CUDA_ALLOC_CONF:max_split_size_mb='5'",
        "PYTORCH_CUDA_ALLOC_CONF:garbage_collection_threshold='1.5'",
        "MEMTUNE_HOST_LOW_WATERMARK (95%) is above MEMTUNE_HOST_HIGH_WATERMARK (90%)",
    ):
        assert needle in text
    with pytest.raises(ConfigError) as info:
        config.validate("PYTORCH_CUDA_ALLOC_CONF")
    assert len(info.value.problems) == 2


def test_check_clean_environment_is_empty():
    assert config.check() == []


def test_mps_rule_names_both_variables(monkeypatch):
    monkeypatch.setenv("PYTORCH_MPS_LOW_WATERMARK_RATIO", "1.9")
    monkeypatch.setenv("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "1.2")
    (problem,) = config.check()
    assert problem.kind == "rule"
    assert set(problem.variables) == {"PYTORCH_MPS_LOW_WATERMARK_RATIO", "PYTORCH_MPS_HIGH_WATERMARK_RATIO"}
    assert "PYTORCH_MPS_LOW_WATERMARK_RATIO" in problem.message and "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in problem.message
    monkeypatch.setenv("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "0")  # 0 = no limit: any low is allowed
    assert config.check() == []


def test_rules_see_overrides():
    with override(PYTORCH_MPS_LOW_WATERMARK_RATIO=1.5, PYTORCH_MPS_HIGH_WATERMARK_RATIO=1.0):
        with pytest.raises(ConfigError, match="PYTORCH_MPS_LOW_WATERMARK_RATIO"):
            config.validate("PYTORCH_MPS_HIGH_WATERMARK_RATIO")
    config.validate("PYTORCH_MPS_HIGH_WATERMARK_RATIO")


def test_custom_rule(declare_temp):
    declare_temp(Variable(name="TEST_MT_LO", type=Int(), default=1, doc="lo"))
    declare_temp(Variable(name="TEST_MT_HI", type=Int(), default=2, doc="hi"))

    @config.rule("TEST_MT_LO", "TEST_MT_HI")
    def _lo_le_hi(lo: int, hi: int) -> str | None:
        return f"TEST_MT_LO ({lo}) > TEST_MT_HI ({hi})" if lo > hi else None

    assert config.check(["TEST_MT_LO"]) == []
    with override(TEST_MT_LO=5):
        assert [p.message for p in config.check(["TEST_MT_HI"])] == ["TEST_MT_LO (5) > TEST_MT_HI (2)"]


# ---------------------------------------------------------------- explain


def test_explain_reports_value_source_and_read_state(monkeypatch):
    monkeypatch.setenv("PYTORCH_DEBUG_MPS_ALLOCATOR", "ALLOCATIONS|RECYCLES")
    info = config.explain("PYTORCH_DEBUG_MPS_ALLOCATOR")
    assert (info.value, info.display, info.read_once, info.frozen) == (6, "ALLOCATIONS|RECYCLES", True, False)
    assert info.source == "environment variable PYTORCH_DEBUG_MPS_ALLOCATOR"
    text = str(info)
    assert "read-once (not read yet)" in text and "PYTORCH_DEBUG_MPS_ALLOCATOR = ALLOCATIONS|RECYCLES" in text
    config.get("PYTORCH_DEBUG_MPS_ALLOCATOR")
    assert "first read at" in str(config.explain("PYTORCH_DEBUG_MPS_ALLOCATOR"))
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_PAGE_SIZE", "16")
    bad = config.explain("MXNET_GPU_MEM_POOL_PAGE_SIZE")
    assert bad.value is None and ">= 32" in (bad.problem or "")
    assert not config.explain("MXNET_GPU_MEM_POOL_PAGE_SIZE").frozen  # explain never reads


def test_bitflags_variable_shared_meaning():
    t = config.variables()[0].type
    assert isinstance(t, BitFlags) and t.bits["LARGE_ONLY"] == 16
