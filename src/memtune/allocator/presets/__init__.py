"""Allocator presets: each a short declarative description of a real allocator.

A preset module defines ``PRESETS``: one or more :class:`PresetInfo` (name, the
settings it takes with the config variable that validates each, how to read
them from the environment, and ``build(settings, capacity, explicit) ->
PresetSpec``). The engine is shared; only the description differs.

The module object is callable, so ``memtune.allocator.presets()`` lists the
names whether ``presets`` resolves to this package or to the function.
"""

from __future__ import annotations

import difflib
import functools
import sys
import types
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

from memtune.allocator.spec import PresetSpec
from memtune.errors import ConfigError, UnknownNameError


@dataclass(frozen=True)
class Setting:
    """One setting a preset takes (``memtune.allocator(preset, name=value)``, ``--set name=value``).

    ``config_key`` is the declared variable (or ``VAR:key``) whose parser
    validates the value, so errors read exactly like the environment's.
    """

    name: str
    config_key: str | None
    doc: str
    aliases: tuple[str, ...] = ()
    #: validator for settings without a config variable: (value, source) -> value
    parse: Callable[[Any, str], Any] | None = None


@dataclass(frozen=True)
class PresetInfo:
    name: str
    reproduces: str
    settings: tuple[Setting, ...]
    #: the preset's settings as the environment gives them (through memtune.config)
    env: Callable[[], dict[str, Any]]
    #: resolved settings, device capacity, names given explicitly -> PresetSpec
    build: Callable[[dict[str, Any], int, frozenset[str]], PresetSpec]
    #: bit-mask variables selecting verbose logging
    verbose_vars: tuple[str, ...] = ("MEMTUNE_DEBUG_ALLOCATOR",)
    hidden: bool = False
    lookup: dict[str, Setting] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        for s in self.settings:
            for n in (s.name, *s.aliases):
                self.lookup[n.lower()] = s


def _load() -> Mapping[str, PresetInfo]:
    from memtune.allocator.presets import cupy, megengine, memtune, mxnet, pytorch_cuda, pytorch_mps

    out: dict[str, PresetInfo] = {}
    for module in (pytorch_cuda, pytorch_mps, mxnet, cupy, megengine, memtune):
        for info in module.PRESETS:
            out[info.name] = info
    return MappingProxyType(out)


@functools.cache
def registry() -> Mapping[str, PresetInfo]:
    """Every preset by name (built on first use; read-only afterwards)."""
    return _load()


def names() -> list[str]:
    """The preset names, in a stable order (hidden aliases left out)."""
    return [n for n, info in registry().items() if not info.hidden]


def get(name: str) -> PresetInfo:
    if not isinstance(name, str):
        raise UnknownNameError(f"preset must be a name (str) or a PresetSpec; got {name!r}")
    reg = registry()
    info = reg.get(name) or reg.get(name.strip().lower())
    if info is None:
        close = difflib.get_close_matches(name.lower(), list(reg), n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownNameError(f"unknown allocator preset {name!r}.{hint} Known presets: {', '.join(names())}.")
    return info


def _raw_for_config(value: Any) -> Any:
    """Explicit Python values as the config parser takes them (it also accepts strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def parse_setting(info: PresetInfo, name: str, value: Any, source: str) -> tuple[str, Any]:
    """Validate one explicit setting; returns (canonical name, typed value)."""
    s = info.lookup.get(str(name).lower())
    if s is None:
        known = sorted({x.name for x in info.settings})
        close = difflib.get_close_matches(str(name).lower(), list(info.lookup), n=3, cutoff=0.5)
        close = sorted({info.lookup[c].name for c in close})
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownNameError(
            f"unknown setting {name!r} for allocator preset {info.name!r} (from {source}).{hint} "
            f"Accepted settings: {', '.join(known) or 'none'}."
        )
    if s.config_key is not None:
        from memtune import config

        return s.name, config.parse_value(s.config_key, _raw_for_config(value), source=source)
    if s.parse is not None:
        return s.name, s.parse(value, source)
    return s.name, value


def resolve(preset: str, settings: Mapping[str, Any], capacity: int, source: str = "memtune.allocator()") -> tuple[PresetSpec, int]:
    """Preset name + explicit settings -> (PresetSpec, verbose mask from the environment).

    Environment-derived settings are read now (through memtune.config), so a
    variable set later has no effect on this allocator.
    """
    info = get(preset)
    explicit: dict[str, Any] = {}
    for k, v in settings.items():
        name, value = parse_setting(info, k, v, source)
        explicit[name] = value
    resolved = dict(info.env())
    resolved.update(explicit)
    spec = info.build(resolved, capacity, frozenset(explicit))
    from memtune import config

    mask = 0
    for var in info.verbose_vars:
        mask |= int(config.get(var) or 0)
    return spec, mask


def ratio_parser(setting: str, lo: float, hi: float, hi_inclusive: bool = True) -> Callable[[Any, str], float]:
    """A validator for a number in [lo, hi] that errors like the config system."""

    def parse(value: Any, source: str) -> float:
        try:
            if isinstance(value, bool):
                raise ValueError
            x = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{setting}={value!r} from {source}: expected a number in [{lo}, {hi}]",
                              variable=setting) from None
        if not (lo <= x and (x <= hi if hi_inclusive else x < hi)):
            raise ConfigError(f"{setting}={value!r} from {source}: out of range; expected a number in [{lo}, {hi}"
                              f"{']' if hi_inclusive else ')'}", variable=setting)
        return x

    return parse


class _CallablePresets(types.ModuleType):
    def __call__(self) -> list[str]:
        return names()


sys.modules[__name__].__class__ = _CallablePresets
