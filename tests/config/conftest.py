"""Fixtures for the configuration tests: a clean registry state and environment
for every test, and temporary variables that disappear afterwards."""

from __future__ import annotations

import os
from typing import Callable, Iterator

import pytest

from memtune import config
from memtune.config.registry import REGISTRY, Variable

WATCHED = ("MEMTUNE_", "PYTORCH_", "MXNET_", "MGB_", "MEGENGINE_", "CUPY_", "TEST_MT_")


@pytest.fixture(autouse=True)
def clean_config(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith(WATCHED) and name != "MEMTUNE_SHARED_TRACES":
            monkeypatch.delenv(name)
    config.reset_for_tests()
    yield
    monkeypatch.undo()
    config.reset_for_tests()


@pytest.fixture
def declare_temp() -> Iterator[Callable[..., Variable]]:
    """declare_temp(Variable(...)) declares a variable for one test only."""
    added: list[str] = []
    rules_before = list(REGISTRY.rules)
    prefixes_before = list(REGISTRY.prefixes)

    def declare(var: Variable) -> Variable:
        var.declared_in = var.declared_in or "tests.config"
        v = config.declare(var)
        added.append(v.name)
        return v

    yield declare
    for name in added:
        var = REGISTRY.variables.pop(name)
        REGISTRY.states.pop(name)
        for alias in var.aliases:
            REGISTRY.aliases.pop(alias, None)
    REGISTRY.rules = rules_before
    REGISTRY.prefixes[:] = prefixes_before
