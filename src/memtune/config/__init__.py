"""memtune's typed configuration: every knob declared once, parsed strictly,
scoped safely and explained.

    from memtune import config
    config.get("MXNET_GPU_MEM_POOL_TYPE")              # "Naive" (typed)
    with config.override(MEMTUNE_DEBUG_ALLOCATOR=2):   # also a decorator
        ...
    config.explain("PYTORCH_MPS_HIGH_WATERMARK_RATIO")  # value, source, read-once, where read
    config.check()                                     # every problem, not just the first

Resolution: override (innermost scope) > set_value() > environment (then
deprecated aliases) > declared default. See ``registry.py`` for read-once rules
and ``docs/environment.md`` (``memtune env docs``) for every variable.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from memtune.config import types
from memtune.config.registry import (
    REGISTRY,
    ConfigWarning,
    DeprecatedNameWarning,
    Explanation,
    LateChangeWarning,
    Problem,
    Rule,
    UnknownVariableWarning,
    Variable,
    override,
)
from memtune.errors import ConfigError

__all__ = [
    "ConfigWarning",
    "DeprecatedNameWarning",
    "Explanation",
    "LateChangeWarning",
    "Problem",
    "Rule",
    "UnknownVariableWarning",
    "Variable",
    "allow_names",
    "check",
    "declare",
    "explain",
    "get",
    "override",
    "parse_value",
    "reset_for_tests",
    "rule",
    "set_value",
    "types",
    "validate",
    "variables",
    "watch_prefix",
]

#: Read a variable's typed value (``override > set_value > env > default``).
#: A bound method, not a wrapper, so a read costs one call.
get: Callable[[str], Any] = REGISTRY.get


def declare(variable: Variable) -> Variable:
    """Declare a variable (once). Modules in ``memtune/config/declarations/`` call this."""
    return REGISTRY.declare(variable)


def rule(*names: str, doc: str = "") -> Callable[[Callable[..., str | None]], Callable[..., str | None]]:
    """Declare a cross-variable rule: the decorated function gets the values of
    ``names`` and returns a message naming the variables, or ``None`` if fine."""

    def decorate(func: Callable[..., str | None]) -> Callable[..., str | None]:
        REGISTRY.add_rule(Rule(tuple(names), func, doc or (func.__doc__ or "").strip()))
        return func

    return decorate


def watch_prefix(*prefixes: str) -> None:
    """Environment names under these prefixes that are not declared get a
    "did you mean" warning (unless allow-listed with :func:`allow_names`)."""
    for p in prefixes:
        if p not in REGISTRY.prefixes:
            REGISTRY.prefixes.append(p)


def allow_names(group: str, *names: str) -> None:
    """Framework variables memtune does not model: never reported as misspellings."""
    for n in names:
        REGISTRY.allowed[n] = group


def set_value(name: str, value: Any) -> None:
    """Set a value through the API (process-wide; below overrides, above the
    environment). ``None`` removes it. A read-once variable already read -> ConfigError."""
    REGISTRY.set_value(name, value)


def parse_value(name: str, raw: Any, source: str = "argument") -> Any:
    """Validate ``raw`` for ``NAME`` or one option-list key ``NAME:key`` exactly as
    the environment parser would; errors name ``source`` (e.g. ``--set``)."""
    return REGISTRY.parse(name, raw, source)


def explain(name: str) -> Explanation:
    """Value, source, read-once state and where it was first read. Reads nothing."""
    return REGISTRY.explain(name)


def check(names: Iterable[str] | None = None) -> list[Problem]:
    """Every problem at once: misspelled names, invalid values, late changes of
    read-once variables, broken cross-variable rules, deprecated names."""
    return REGISTRY.check(names)


def validate(*names: str) -> None:
    """Raise one ConfigError listing every problem that concerns ``names``."""
    problems = REGISTRY.check(names)
    if problems:
        raise ConfigError(
            "; ".join(p.message for p in problems),
            variable=names[0] if len(names) == 1 else None,
            problems=[p.message for p in problems],
        )


def variables() -> list[Variable]:
    """Every declared variable, in declaration order."""
    return list(REGISTRY.variables.values())


def reset_for_tests() -> None:
    """Forget reads, caches, set_value() values and warnings (declarations stay)."""
    REGISTRY.reset_for_tests()


# Every module in memtune/config/declarations/ registers its variables on import.
from memtune.config import declarations as _declarations  # noqa: E402,F401
