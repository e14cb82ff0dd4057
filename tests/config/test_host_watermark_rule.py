"""Setting only MEMTUNE_HOST_HIGH_WATERMARK is valid: the unset low watermark
follows it (as the default host allocator does). Two explicit values that
contradict each other are one problem naming both variables."""

from __future__ import annotations

from memtune import config


def _problems(monkeypatch, **env: str) -> list[str]:
    for name in ("MEMTUNE_HOST_HIGH_WATERMARK", "MEMTUNE_HOST_LOW_WATERMARK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config.reset_for_tests()
    return [str(p) for p in config.check() if "WATERMARK" in str(p) and "HOST" in str(p)]


def test_a_small_high_watermark_alone_is_fine(monkeypatch):
    assert _problems(monkeypatch, MEMTUNE_HOST_HIGH_WATERMARK="3GiB") == []


def test_explicit_low_above_high_is_reported_with_both_names(monkeypatch):
    (problem,) = _problems(monkeypatch, MEMTUNE_HOST_HIGH_WATERMARK="3GiB", MEMTUNE_HOST_LOW_WATERMARK="4GiB")
    assert "MEMTUNE_HOST_LOW_WATERMARK" in problem and "MEMTUNE_HOST_HIGH_WATERMARK" in problem
