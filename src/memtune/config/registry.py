"""The variable registry: declarations, resolution, overrides and provenance.

Resolution order for a value, first match wins:

1. the innermost active :func:`override` in the current context (thread / task),
2. a value set by :func:`set_value` (an API call),
3. the environment variable, then its deprecated aliases (in declared order),
4. the declared default.

A *read-once* variable freezes layers 2-4 at its first read (framework
allocators read their environment once, at start-up) and records where that read
happened. A later change in the environment then warns once and changes nothing;
overriding or setting it after the read is an error. A *dynamic* variable follows
the environment on every read; parsed values are cached keyed on the raw string,
so a read costs a dictionary look-up when nothing changed.

The registry is memtune's one piece of module-level mutable state (by design):
one :class:`Registry` instance, ``REGISTRY``.
"""

from __future__ import annotations

import contextvars
import difflib
import functools
import inspect
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, NoReturn

import memtune
from memtune.config.types import InvalidValue, OptionList, VarType
from memtune.errors import ConfigError, MemtuneWarning, UnknownNameError

# ------------------------------------------------------------------ warnings


class ConfigWarning(MemtuneWarning):
    """Base class of configuration warnings."""


class LateChangeWarning(ConfigWarning):
    """A read-once variable changed in the environment after it was read."""


class UnknownVariableWarning(ConfigWarning):
    """An environment name under a known prefix is not a declared variable."""


class DeprecatedNameWarning(ConfigWarning):
    """A value came from a deprecated alias of a variable."""


# --------------------------------------------------------------- declaration

_UNSET: Any = object()


@dataclass(eq=False)
class Variable:
    """One configuration variable, declared once.

    ``default`` may be given typed or as the string a user would write; it is
    validated at declaration. ``default_doc`` replaces the rendered default in
    the docs when the true default depends on the machine (e.g. MPS's low
    watermark: 1.4 on unified memory, 1.0 on discrete GPUs).
    """

    name: str
    type: VarType
    default: Any
    doc: str
    unit: str = ""
    read_once: bool = False
    aliases: tuple[str, ...] = ()
    group: str = "memtune"
    default_doc: str | None = None
    reference: str = ""  # where the framework defines it (file or doc page)
    declared_in: str = field(default="", compare=False)

    def format_default(self) -> str:
        if self.default_doc is not None:
            return self.default_doc
        if self.default is None:
            return "unset"
        if isinstance(self.type, OptionList) and self.default == self.type.defaults():
            return "unset (every key at its default)"
        return self.type.format(self.default)


@dataclass(frozen=True)
class Rule:
    """A cross-variable rule. ``check`` gets the values of ``names`` (in order)
    and returns a message naming the variables, or ``None`` when satisfied."""

    names: tuple[str, ...]
    check: Callable[..., str | None]
    doc: str = ""


@dataclass(frozen=True)
class Problem:
    """One problem found by :func:`check`. ``str(problem)`` is its message."""

    kind: str  # "unknown", "invalid", "late-change", "rule", "deprecated"
    variables: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Explanation:
    """What :func:`explain` reports about one variable."""

    name: str
    value: Any
    display: str  # the value as a user would write it
    source: str
    read_once: bool
    read_at: str | None  # "file:line" of the first read (read-once only)
    frozen: bool
    env_value: str | None  # what the environment holds now (primary or alias)
    default: str
    doc: str
    problem: str | None = None  # invalid value / pending late change

    def __str__(self) -> str:
        lines = [
            f"{self.name} = {self.display or '(empty)'}",
            f"  source:    {self.source}",
            f"  kind:      {'read-once' if self.read_once else 'dynamic'}"
            + (f" (frozen; first read at {self.read_at})" if self.frozen and self.read_at else "")
            + (" (not read yet)" if self.read_once and not self.frozen else ""),
            f"  default:   {self.default}",
        ]
        if self.env_value is not None:
            lines.append(f"  env now:   {self.env_value!r}")
        if self.problem:
            lines.append(f"  problem:   {self.problem}")
        lines.append(f"  doc:       {self.doc}")
        return "\n".join(lines)


# ----------------------------------------------------------------- helpers

_MEMTUNE_DIR = os.path.dirname(os.path.abspath(memtune.__file__)) + os.sep
_CONTEXTLIB_FILE = os.path.abspath(__import__("contextlib").__file__)


def _caller_location() -> str:
    """file:line of the nearest frame outside memtune (and contextlib/functools)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_MEMTUNE_DIR) and filename != _CONTEXTLIB_FILE and "importlib" not in filename:
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>"


def _stacklevel() -> int:
    """stacklevel for warnings.warn that points at the first frame outside memtune."""
    frame = sys._getframe(1)  # the function calling warnings.warn is level 1
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_MEMTUNE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _env_source(name: str, alias: bool) -> str:
    return f"environment variable {name} (deprecated alias)" if alias else f"environment variable {name}"


def _format_error(label: str, raw: Any, source: str, err: InvalidValue, accepted: str) -> str:
    if err.value is not None:
        raw = err.value
    shown = raw if isinstance(raw, str) else repr(raw)
    return f"{label}={shown!r} from {source}: {err.reason}; expected {err.accepted or accepted}"


def _raise_invalid(name: str, raw: Any, source: str, err: InvalidValue, accepted: str) -> NoReturn:
    """ConfigError for one or several (option-list keys) errors; problems lists each."""
    parts = err.errors or [err]
    messages = []
    for e in parts:
        label = f"{name}:{e.key}" if e.key else name
        messages.append(_format_error(label, raw, source, e, accepted))
    label = f"{name}:{parts[0].key}" if len(parts) == 1 and parts[0].key else name
    raise ConfigError("; ".join(messages), variable=label, problems=messages) from None


class _State:
    """Per-variable runtime state. Slots keep the hot read path cheap."""

    __slots__ = (
        "var",
        "key",
        "alias_keys",
        "cache",
        "last_raw",
        "last_value",
        "last_source",
        "api_value",
        "api_source",
        "frozen",
        "frozen_value",
        "frozen_raw",
        "frozen_source",
        "read_at",
        "warned_raw",
        "warned_aliases",
        "mutable",
    )

    def __init__(self, var: Variable, encode: Callable[[str], Any]):
        self.var = var
        self.key = encode(var.name)
        self.alias_keys = tuple((a, encode(a)) for a in var.aliases)
        self.mutable = isinstance(var.type, OptionList)  # dict values: hand out copies
        self.reset()

    def reset(self) -> None:
        self.cache: dict[Any, Any] = {}
        self.last_raw: Any = _UNSET
        self.last_value: Any = None
        self.last_source = "default"
        self.api_value: Any = _UNSET
        self.api_source = ""
        self.frozen = False
        self.frozen_value: Any = None
        self.frozen_raw: Any = None
        self.frozen_source = ""
        self.read_at: str | None = None
        self.warned_raw: Any = _UNSET
        self.warned_aliases: set[str] = set()


# ------------------------------------------------------------------ registry


class Registry:
    """All declared variables and their state. memtune has exactly one."""

    def __init__(self) -> None:
        self.variables: dict[str, Variable] = {}
        self.states: dict[str, _State] = {}
        self.aliases: dict[str, str] = {}  # alias -> primary name
        self.rules: list[Rule] = []
        self.prefixes: list[str] = []
        self.allowed: dict[str, str] = {}  # framework names memtune does not model -> group
        self.overrides: contextvars.ContextVar[Mapping[str, tuple[Any, str]]] = contextvars.ContextVar(
            "memtune_config_overrides", default={}
        )
        self._lock = threading.RLock()
        self._scanned = False
        self._bind_environ()

    # -- environment access (raw bytes on POSIX: no decoding on the hot path)
    def _bind_environ(self) -> None:
        env = os.environ
        data = getattr(env, "_data", None)
        encodekey = getattr(env, "encodekey", None)
        decodevalue = getattr(env, "decodevalue", None)
        if isinstance(data, dict) and encodekey is not None and decodevalue is not None:
            self._env_data: dict[Any, Any] = data
            self._encode: Callable[[str], Any] = encodekey
            self._decode: Callable[[Any], str] = decodevalue
        else:  # pragma: no cover - exotic os.environ replacements
            self._env_data = env  # type: ignore[assignment]
            self._encode = str
            self._decode = str
        for st in self.states.values():
            st.key = self._encode(st.var.name)
            st.alias_keys = tuple((a, self._encode(a)) for a in st.var.aliases)

    # -- declaration -----------------------------------------------------------
    def declare(self, var: Variable) -> Variable:
        if not var.declared_in:
            var.declared_in = sys._getframe(2).f_globals.get("__name__", "")
        with self._lock:
            old = self.variables.get(var.name)
            if old is not None and old.declared_in != var.declared_in:
                raise ConfigError(
                    f"{var.name} is already declared (in {old.declared_in}); each variable is declared once",
                    variable=var.name,
                )
            for alias in var.aliases:
                owner = self.aliases.get(alias)
                if (alias in self.variables) or (owner is not None and owner != var.name):
                    raise ConfigError(f"alias {alias} of {var.name} is already in use", variable=var.name)
            if var.default is not None:
                try:
                    var.default = var.type.convert(var.default)
                except InvalidValue as e:
                    raise ConfigError(
                        _format_error(var.name, var.default, "its declaration", e, var.type.accepted()), variable=var.name
                    ) from None
            elif isinstance(var.type, OptionList):
                var.default = var.type.defaults()
            self.variables[var.name] = var
            self.states[var.name] = _State(var, self._encode)
            for alias in var.aliases:
                self.aliases[alias] = var.name
        return var

    def add_rule(self, rule: Rule) -> Rule:
        for n in rule.names:
            self.variable(n)
        def ident(r: Rule) -> tuple[Any, ...]:
            return (r.names, getattr(r.check, "__module__", None), getattr(r.check, "__qualname__", None))

        # a re-imported declaration module replaces its rules in place instead of doubling them
        for i, existing in enumerate(self.rules):
            if ident(existing) == ident(rule):
                self.rules[i] = rule
                return rule
        self.rules.append(rule)
        return rule

    # -- lookup ----------------------------------------------------------------
    def known_names(self) -> list[str]:
        return [*self.variables, *self.aliases]

    def unknown(self, name: str, what: str = "configuration variable") -> UnknownNameError:
        close = difflib.get_close_matches(name, self.known_names(), n=3, cutoff=0.6)
        if not close:
            close = difflib.get_close_matches(name.upper(), self.known_names(), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(self.variables)}"
        return UnknownNameError(f"unknown {what} {name!r}{hint}", variable=name)

    def variable(self, name: str) -> Variable:
        var = self.variables.get(name)
        if var is None:
            primary = self.aliases.get(name)
            if primary is None:
                raise self.unknown(name)
            var = self.variables[primary]
        return var

    # -- parsing ---------------------------------------------------------------
    def parse(self, name: str, raw: Any, source: str) -> Any:
        """``parse_value``: validate ``raw`` for ``name`` or ``NAME:key``."""
        base, sep, key = name.partition(":")
        var = self.variable(base)
        if sep:
            if not isinstance(var.type, OptionList):
                raise ConfigError(f"{var.name} is not an option list; '{name}' names no key", variable=var.name)
            try:
                return var.type.parse_key(key, raw)
            except InvalidValue as e:
                e.key = e.key or key
                _raise_invalid(var.name, raw, source, e, var.type.accepted())
        return self._convert(var, raw, source)

    def _convert(self, var: Variable, raw: Any, source: str) -> Any:
        try:
            return var.type.convert(raw)
        except InvalidValue as e:
            _raise_invalid(var.name, raw, source, e, var.type.accepted())

    # -- reading ---------------------------------------------------------------
    def _env(self, st: _State) -> tuple[Any, str | None]:
        """(raw, env name it came from) — primary name first, then aliases."""
        raw = self._env_data.get(st.key)
        if raw is not None or not st.alias_keys:
            return raw, (st.var.name if raw is not None else None)
        for alias, key in st.alias_keys:
            raw = self._env_data.get(key)
            if raw is not None:
                return raw, alias
        return None, None

    def _from_raw(self, st: _State, raw: Any, env_name: str | None) -> tuple[Any, str]:
        """Typed value and source for the base layers (api > env > default)."""
        if st.api_value is not _UNSET:
            return st.api_value, st.api_source
        if raw is None:
            return st.var.default, "default"
        alias = env_name != st.var.name
        source = _env_source(env_name or st.var.name, alias)
        cached = st.cache.get(raw, _UNSET)
        if cached is _UNSET:
            text = self._decode(raw) if not isinstance(raw, str) else raw
            cached = self._convert(st.var, text, source)
            if len(st.cache) > 64:
                st.cache.clear()
            st.cache[raw] = cached
        if alias and env_name not in st.warned_aliases:
            st.warned_aliases.add(env_name)  # type: ignore[arg-type]
            warnings.warn(
                f"{env_name} is deprecated; use {st.var.name} instead (value {self._decode(raw)!r} taken from {env_name})",
                DeprecatedNameWarning,
                stacklevel=_stacklevel(),
            )
        return cached, source

    def get(self, name: str) -> Any:
        st = self.states.get(name)
        if st is None:
            primary = self.aliases.get(name)
            if primary is None:
                raise self.unknown(name)
            st = self.states[primary]
            name = primary
        if not self._scanned:
            self._first_use()
        ov = self.overrides.get()
        if ov:
            hit = ov.get(name)
            if hit is not None:
                if st.var.read_once and not st.frozen:
                    try:  # the first read happens here; record it (and freeze the layers below)
                        self._freeze(st)
                    except ConfigError:
                        pass  # an invalid environment value surfaces on the next read outside the override
                return dict(hit[0]) if st.mutable else hit[0]
        if st.frozen:
            raw = self._env_data.get(st.key) if not st.alias_keys else self._env(st)[0]
            if raw is not st.frozen_raw and raw != st.frozen_raw and raw != st.warned_raw:
                self._warn_late(st, raw)
            return dict(st.frozen_value) if st.mutable else st.frozen_value
        if st.var.read_once:
            value = self._freeze(st)
            return dict(value) if st.mutable else value
        # dynamic
        if st.mutable:
            return dict(self._dynamic(st, name))
        if st.api_value is not _UNSET:
            return st.api_value
        raw = self._env_data.get(st.key)
        if raw is st.last_raw and (raw is not None or not st.alias_keys):
            return st.last_value
        return self._dynamic(st, name)

    def _dynamic(self, st: _State, name: str) -> Any:
        if st.api_value is not _UNSET:
            return st.api_value
        raw = self._env_data.get(st.key)
        if raw is st.last_raw and (raw is not None or not st.alias_keys):
            return st.last_value
        if raw is None and st.alias_keys:
            raw, env_name = self._env(st)
        else:
            env_name = name if raw is not None else None
        value, source = self._from_raw(st, raw, env_name)
        st.last_raw, st.last_value, st.last_source = raw, value, source
        return value

    def _freeze(self, st: _State) -> Any:
        with self._lock:
            if st.frozen:
                return st.frozen_value
            raw, env_name = self._env(st)
            value, source = self._from_raw(st, raw, env_name)
            st.frozen_value, st.frozen_raw, st.frozen_source = value, raw, source
            st.read_at = _caller_location()
            st.frozen = True
            return value

    def _warn_late(self, st: _State, raw: Any) -> None:
        st.warned_raw = raw
        warnings.warn(self._late_message(st), LateChangeWarning, stacklevel=_stacklevel())

    def _late_message(self, st: _State) -> str:
        return f"{st.var.name} changed after it was read at {st.read_at}; it has no effect until restart"

    def peek(self, name: str) -> tuple[Any, str]:
        """(value, source) without reading: nothing freezes, nothing warns.
        Raises ConfigError if the environment holds an invalid value."""
        value, source = self._peek(name)
        return (dict(value), source) if isinstance(value, dict) else (value, source)

    def _peek(self, name: str) -> tuple[Any, str]:
        var = self.variable(name)
        st = self.states[var.name]
        ov = self.overrides.get().get(var.name)
        if ov is not None:
            return ov
        if st.frozen:
            return st.frozen_value, st.frozen_source
        if st.api_value is not _UNSET:
            return st.api_value, st.api_source
        raw, env_name = self._env(st)
        if raw is None:
            return var.default, "default"
        source = _env_source(env_name or var.name, env_name != var.name)
        text = self._decode(raw) if not isinstance(raw, str) else raw
        return self._convert(var, text, source), source

    # -- writing ---------------------------------------------------------------
    def _refuse_after_read(self, st: _State, what: str) -> None:
        if st.var.read_once and st.frozen:
            raise ConfigError(
                f"cannot {what} {st.var.name}: it is read-once and was already read at {st.read_at}; "
                "a new value would have no effect until restart",
                variable=st.var.name,
            )

    def set_value(self, name: str, value: Any) -> None:
        var = self.variable(name)
        st = self.states[var.name]
        self._refuse_after_read(st, "set")
        if value is None:
            st.api_value, st.api_source = _UNSET, ""
        else:
            loc = _caller_location()
            typed = self._convert(var, value, f"set_value() at {loc}")
            st.api_value, st.api_source = typed, f"API call set_value() at {loc}"
        st.last_raw = _UNSET

    # -- one-time environment scan --------------------------------------------
    def _first_use(self) -> None:
        with self._lock:
            if self._scanned:
                return
            self._scanned = True
        if not self._warn_unknown_enabled():
            return
        for problem in self.unknown_env_names():
            warnings.warn(problem.message, UnknownVariableWarning, stacklevel=_stacklevel())

    def _warn_unknown_enabled(self) -> bool:
        st = self.states.get("MEMTUNE_WARN_UNKNOWN")
        if st is None:
            return True
        try:
            return bool(self.peek("MEMTUNE_WARN_UNKNOWN")[0])
        except ConfigError:
            return True

    # -- checks ----------------------------------------------------------------
    def environ_names(self) -> Iterator[str]:
        return iter(list(os.environ))

    def unknown_env_names(self) -> list[Problem]:
        known = set(self.variables) | set(self.aliases) | set(self.allowed)
        candidates = [*self.variables, *self.aliases, *self.allowed]
        problems = []
        for env_name in sorted(self.environ_names()):
            if env_name in known:
                continue
            under_prefix = any(env_name.startswith(p) for p in self.prefixes)
            close = difflib.get_close_matches(env_name, candidates, n=3, cutoff=0.6 if under_prefix else 0.9)
            if not under_prefix and not (close and env_name.startswith(("PYTORCH_", "MXNET_", "CUPY_"))):
                continue
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            problems.append(
                Problem(
                    "unknown",
                    (env_name, *close),
                    f"{env_name} is set but is not a variable memtune knows (it is ignored){hint}",
                )
            )
        return problems

    def check(self, names: Iterable[str] | None = None) -> list[Problem]:
        """Every problem at once: misspellings, invalid values, late changes, rules."""
        selected = None if names is None else {self.variable(n).name for n in names}
        problems: list[Problem] = []
        if selected is None:
            problems.extend(self.unknown_env_names())
        values: dict[str, Any] = {}
        bad: set[str] = set()
        for var in self.variables.values():
            if selected is not None and var.name not in selected:
                continue
            st = self.states[var.name]
            raw, env_name = self._env(st)
            if raw is not None and env_name != var.name:
                problems.append(
                    Problem("deprecated", (env_name, var.name), f"{env_name} is deprecated; use {var.name} instead")  # type: ignore[arg-type]
                )
            if raw is not None:
                text = self._decode(raw) if not isinstance(raw, str) else raw
                try:
                    self._convert(var, text, _env_source(env_name or var.name, env_name != var.name))
                except ConfigError as e:
                    problems.extend(Problem("invalid", (var.name,), m) for m in e.problems)
                    bad.add(var.name)
            if st.frozen and raw != st.frozen_raw:
                problems.append(Problem("late-change", (var.name,), self._late_message(st)))
            if var.name not in bad:
                try:
                    values[var.name] = self.peek(var.name)[0]
                except ConfigError as e:
                    problems.append(Problem("invalid", (var.name,), str(e)))
                    bad.add(var.name)
        for rule in self.rules:
            if selected is not None and not selected.intersection(rule.names):
                continue
            if any(n in bad for n in rule.names):
                continue
            args = [values[n] if n in values else self.peek(n)[0] for n in rule.names]
            message = rule.check(*args)
            if message:
                problems.append(Problem("rule", rule.names, message))
        return problems

    # -- explain ---------------------------------------------------------------
    def explain(self, name: str) -> Explanation:
        var = self.variable(name)
        st = self.states[var.name]
        raw, env_name = self._env(st)
        env_text = None if raw is None else (self._decode(raw) if not isinstance(raw, str) else raw)
        problem = None
        try:
            value, source = self.peek(var.name)
            display = var.type.format(value) if value is not None else var.format_default()
            if not display and source == "default":
                display = var.format_default()
        except ConfigError as e:
            value, source, display, problem = None, "environment (invalid)", env_text or "", str(e)
        if st.frozen and raw != st.frozen_raw:
            problem = self._late_message(st)
        if env_name is not None and env_name != var.name and problem is None:
            problem = f"{env_name} is deprecated; use {var.name} instead"
        return Explanation(
            name=var.name,
            value=value,
            display=display,
            source=source,
            read_once=var.read_once,
            read_at=st.read_at,
            frozen=st.frozen,
            env_value=env_text,
            default=var.format_default(),
            doc=var.doc,
            problem=problem,
        )

    # -- tests -----------------------------------------------------------------
    def reset_for_tests(self) -> None:
        with self._lock:
            self._bind_environ()
            for st in self.states.values():
                st.reset()
            self._scanned = False


REGISTRY = Registry()


# ------------------------------------------------------------------ override


class override:
    """Scoped values: ``with override(NAME=value): ...`` or ``@override(NAME=value)``.

    Built on contextvars, so each thread and each asyncio task sees only its
    own overrides; scopes nest and restore exactly the outer values, even when
    the block raises. Only the names given change. Values are validated when
    the override is created (an unknown name is an error with suggestions);
    entering it fails if a named read-once variable was already read.
    ``None`` as a value means "the declared default".
    """

    def __init__(self, **values: Any):
        reg = REGISTRY
        self._values: dict[str, tuple[Any, str]] = {}
        self._raw = dict(values)
        for name, value in values.items():
            var = reg.variable(name)
            if value is None:
                self._values[var.name] = (var.default, "override (declared default)")
            else:
                self._values[var.name] = (reg._convert(var, value, "override()"), "override")
        self._tokens: list[contextvars.Token[Mapping[str, tuple[Any, str]]]] = []

    def __enter__(self) -> override:
        reg = REGISTRY
        for name in self._values:
            reg._refuse_after_read(reg.states[name], "override")
        current = reg.overrides.get()
        self._tokens.append(reg.overrides.set({**current, **self._values}))
        return self

    def __exit__(self, *exc: object) -> None:
        REGISTRY.overrides.reset(self._tokens.pop())

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        values = self._raw
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with override(**values):
                    return await func(*args, **kwargs)

            return async_wrapper

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with override(**values):
                return func(*args, **kwargs)

        return wrapper

    def __repr__(self) -> str:
        return f"override({', '.join(f'{k}={v!r}' for k, v in self._raw.items())})"
