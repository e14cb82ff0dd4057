"""The answer a user wants from a report: for each framework, the best setting
found, as the exact ``export ...`` line(s) to paste, and the bytes it saves
against that framework's default.

"Best" compares configurations over every trace/device they were replayed on:
configurations that never OOM beat ones that do; then lower total peak reserved
wins; ties go to fewer settings changed (the simpler advice).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from memtune.trace.replay import ReplayResult, config_label

#: preset -> (framework shown to the user, the framework's default preset,
#: environment variable that selects this preset and its value, if any).
FRAMEWORKS: dict[str, tuple[str, str, tuple[str, str] | None]] = {
    "pytorch-cuda": ("PyTorch (CUDA)", "pytorch-cuda", None),
    "pytorch-mps": ("PyTorch (MPS)", "pytorch-mps", None),
    "mxnet-naive": ("MXNet", "mxnet-naive", ("MXNET_GPU_MEM_POOL_TYPE", "Naive")),
    "mxnet-round": ("MXNet", "mxnet-naive", ("MXNET_GPU_MEM_POOL_TYPE", "Round")),
    "mxnet-unpooled": ("MXNet", "mxnet-naive", ("MXNET_GPU_MEM_POOL_TYPE", "Unpooled")),
    "cupy": ("CuPy", "cupy", None),
    "megengine": ("MegEngine", "megengine", None),
}

#: Option-list variables: a preset's settings are keys inside one variable.
OPTION_LIST_VAR = {"pytorch-cuda": "PYTORCH_CUDA_ALLOC_CONF"}

#: Short setting names -> the framework's environment variable.
SETTING_VARS: dict[str, dict[str, str]] = {
    "pytorch-mps": {
        "high_watermark_ratio": "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
        "low_watermark_ratio": "PYTORCH_MPS_LOW_WATERMARK_RATIO",
    },
    "mxnet": {
        "pool_type": "MXNET_GPU_MEM_POOL_TYPE",
        "round_linear_cutoff": "MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF",
        "pool_round_linear_cutoff": "MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF",
        "large_alloc_round_size": "MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE",
        "reserve": "MXNET_GPU_MEM_POOL_RESERVE",
        "pool_reserve": "MXNET_GPU_MEM_POOL_RESERVE",
        "page_size": "MXNET_GPU_MEM_POOL_PAGE_SIZE",
        "pool_page_size": "MXNET_GPU_MEM_POOL_PAGE_SIZE",
    },
    "cupy": {"limit": "CUPY_GPU_MEMORY_LIMIT", "memory_limit": "CUPY_GPU_MEMORY_LIMIT",
             "gpu_memory_limit": "CUPY_GPU_MEMORY_LIMIT"},
    "megengine": {"reserve_memory": "MGB_CUDA_RESERVE_MEMORY", "cuda_reserve_memory": "MGB_CUDA_RESERVE_MEMORY"},
}


#: Advice never picks a configuration making more than CALLS_FACTOR x the default's
#: device allocs+frees (and at least CALLS_SLACK more): slow, whatever it saves.
CALLS_FACTOR = 4
CALLS_SLACK = 100


def _fmt(n: int) -> str:
    from memtune.units import format_bytes

    return format_bytes(n)


@dataclass
class Advice:
    framework: str
    preset: str
    settings: dict[str, Any]
    exports: list[str]               # the exact lines to paste (may be empty: defaults)
    python: str                      # the same as a memtune.allocator(...) call
    default_label: str
    default_reserved_bytes: int
    best_reserved_bytes: int
    saved_bytes: int                 # default - best (summed over traces/devices)
    default_ooms: int
    best_ooms: int
    replays: int                     # trace/device streams compared
    is_default: bool = False
    has_default: bool = True         # False: the framework's default was not replayed
    note: str = ""
    per_trace: list[dict[str, Any]] = field(default_factory=list)

    @property
    def export_text(self) -> str:
        return "\n".join(self.exports) if self.exports else "(no change: the defaults are best)"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def framework_of(preset: str) -> str:
    if preset in FRAMEWORKS:
        return FRAMEWORKS[preset][0]
    if preset.startswith("memtune"):
        return "memtune"
    return preset


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_format_value(v) for v in value) + "]"
    return str(value)


def config_key_for(preset: str, key: str) -> str | None:
    """The config variable (``VAR`` or ``VAR:key``) behind a preset's setting ``key``.

    Asks the preset registry first (each setting names the variable that validates
    it); falls back to the tables above for presets the registry does not know.
    """
    if key.isupper() or ":" in key:
        return key
    try:
        from memtune.allocator.presets import get

        s = get(preset).lookup.get(key.lower())
        if s is not None and s.config_key:
            return s.config_key
    except Exception:  # an unknown preset or an engine without a registry: use the tables
        pass
    if preset in OPTION_LIST_VAR:
        return f"{OPTION_LIST_VAR[preset]}:{key}"
    group = "mxnet" if preset.startswith("mxnet") else preset
    return SETTING_VARS.get(group, {}).get(key)


def env_var_for(preset: str, key: str) -> str | None:
    """The environment variable behind a preset's setting ``key`` (None if unknown)."""
    ck = config_key_for(preset, key)
    return ck.split(":", 1)[0] if ck else None


def export_lines(preset: str, settings: Mapping[str, Any]) -> list[str]:
    """``export VAR=value`` lines that make ``preset`` run with ``settings``.

    Keys of one option-list variable (``PYTORCH_CUDA_ALLOC_CONF:key``) join into one line.

    >>> export_lines("pytorch-cuda", {"expandable_segments": "True"})
    ['export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True']
    """
    lines: list[str] = []
    fw = FRAMEWORKS.get(preset)
    if fw and fw[2] is not None and fw[1] != preset:
        lines.append(f"export {fw[2][0]}={fw[2][1]}")
    option_lists: dict[str, list[str]] = {}
    for key, value in settings.items():
        ck = config_key_for(preset, key)
        if ck is None:
            lines.append(f"# {preset} setting {key}={_format_value(value)} has no environment variable; pass it in code")
        elif ":" in ck:
            var, _, sub = ck.partition(":")
            option_lists.setdefault(var, []).append(f"{sub}:{_format_value(value)}")
        else:
            lines.append(f"export {ck}={_format_value(value)}")
    for var, items in option_lists.items():
        lines.append(f"export {var}={','.join(items)}")
    return lines


def drop_defaults(preset: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` without the entries equal to the preset's default: advice names
    only what to change (a sweep's ``expandable_segments=False`` is not advice)."""
    from memtune import config
    from memtune.errors import MemtuneError

    kept: dict[str, Any] = {}
    for key, value in settings.items():
        ck = config_key_for(preset, key)
        if ck is None:
            kept[key] = value
            continue
        var_name, _, sub = ck.partition(":")
        default: Any = _MISSING
        for var in config.variables():
            if var.name == var_name:
                default = var.type.options[sub].default if sub and hasattr(var.type, "options") else var.default
                break
        try:
            parsed = config.parse_value(ck, value, source="advice")
            default_parsed = default if default is None or default is _MISSING else config.parse_value(ck, default, source="advice")
        except (MemtuneError, KeyError, TypeError, ValueError):
            kept[key] = value
            continue
        if default is _MISSING or parsed != default_parsed:
            kept[key] = value
    return kept


_MISSING = object()


def python_call(preset: str, settings: Mapping[str, Any]) -> str:
    args = "".join(f", {k}={v!r}" for k, v in settings.items() if k.isidentifier())
    return f'memtune.allocator("{preset}"{args})'


def _config_key(r: ReplayResult) -> tuple[str, tuple]:
    return r.policy, tuple(sorted((k, str(v)) for k, v in r.overrides.items()))


def advise(results: Sequence[ReplayResult]) -> list[Advice]:
    """One :class:`Advice` per framework present in ``results``."""
    streams = {(r.trace, r.device) for r in results}
    by_config: dict[tuple, dict[tuple, ReplayResult]] = {}
    for r in results:
        by_config.setdefault(_config_key(r), {})[(r.trace, r.device)] = r
    frameworks: dict[str, list[tuple]] = {}
    for key in by_config:
        frameworks.setdefault(framework_of(key[0]), []).append(key)

    out: list[Advice] = []
    for fw, keys in frameworks.items():
        # Compare only over the streams every candidate of this framework covered.
        common = set(streams)
        for k in keys:
            common &= set(by_config[k])
        if not common:
            continue
        default_preset = FRAMEWORKS.get(keys[0][0], (fw, keys[0][0], None))[1]
        if fw == "memtune":
            default_preset = "memtune" if any(k[0] == "memtune" for k in keys) else keys[0][0]
        default_key = (default_preset, ())
        if default_key not in by_config:
            default_key = None

        def score(k: tuple) -> tuple:
            rs = [by_config[k][s] for s in common]
            ooms = sum(len(r.ooms) for r in rs)
            return (ooms > 0, ooms, sum(r.peak_reserved_bytes for r in rs), len(k[1]), k != default_key)

        def calls(k: tuple) -> int:
            return sum(by_config[k][s].device_allocs + by_config[k][s].device_frees for s in common)

        # A configuration that saves memory by calling the device far more often (no
        # caching: a cudaMalloc per request) is not advice anyone should take.
        excluded = []
        if default_key is not None:
            budget = max(CALLS_FACTOR * calls(default_key), calls(default_key) + CALLS_SLACK)
            excluded = [k for k in keys if calls(k) > budget]
        candidates = [k for k in keys if k not in excluded] or keys
        best = min(candidates, key=score)
        best_rs = [by_config[best][s] for s in sorted(common)]
        best_total = sum(r.peak_reserved_bytes for r in best_rs)
        best_ooms = sum(len(r.ooms) for r in best_rs)
        if default_key is not None:
            def_rs = [by_config[default_key][s] for s in sorted(common)]
            def_total = sum(r.peak_reserved_bytes for r in def_rs)
            def_ooms = sum(len(r.ooms) for r in def_rs)
            def_label = config_label(default_key[0], dict(default_key[1]))
        else:
            def_rs, def_total, def_ooms = [], best_total, best_ooms
            def_label = f"{default_preset} (not replayed)"
        # Effective settings of the winner (trace settings + overrides) are what to export;
        # they agree across streams of one trace, so take the first stream's.
        preset = best[0]
        eff = drop_defaults(preset, dict(best_rs[0].settings) if best_rs else {})
        notes = []
        if best_ooms:
            notes.append(f"every {fw} configuration tried hits OOM ({best_ooms} in the best one)")
        for k in excluded:
            if score(k) < score(best):
                rs_k = sum(by_config[k][s].peak_reserved_bytes for s in common)
                notes.append(f"{config_label(k[0], dict(k[1]))} reserves less ({_fmt(rs_k)}) but makes {calls(k):,} "
                             f"device allocs/frees against {calls(default_key):,} for the default: not recommended")
        if fw == "memtune":
            notes.append("memtune's own allocator: use it through memtune.allocator(...) rather than an environment variable")
        per_trace = []
        for s in sorted(common):
            b = by_config[best][s]
            d = by_config[default_key][s] if default_key is not None else b
            per_trace.append({"trace": s[0], "device": s[1], "best_reserved_bytes": b.peak_reserved_bytes,
                              "default_reserved_bytes": d.peak_reserved_bytes,
                              "saved_bytes": d.peak_reserved_bytes - b.peak_reserved_bytes,
                              "best_ooms": len(b.ooms), "default_ooms": len(d.ooms)})
        out.append(Advice(
            framework=fw,
            preset=preset,
            settings=eff,
            exports=export_lines(preset, eff),
            python=python_call(preset, eff),
            default_label=def_label,
            default_reserved_bytes=def_total,
            best_reserved_bytes=best_total,
            saved_bytes=def_total - best_total,
            default_ooms=def_ooms,
            best_ooms=best_ooms,
            replays=len(common),
            is_default=best == default_key,
            has_default=default_key is not None,
            note="; ".join(notes),
            per_trace=per_trace,
        ))
    order = {name: i for i, name in enumerate(dict.fromkeys(v[0] for v in FRAMEWORKS.values()))}
    out.sort(key=lambda a: order.get(a.framework, len(order)))
    return out


def advice_lines(advice: Iterable[Advice]) -> list[str]:
    """Plain-text advice for the terminal."""
    from memtune.units import format_bytes

    lines = []
    for a in advice:
        if a.is_default:
            head = f"{a.framework}: the default ({a.default_label}) is the best found"
        elif not a.has_default:
            head = (f"{a.framework}: best of the configurations tried is {config_label(a.preset, a.settings)} "
                    f"(the default was not replayed, so no saving is computed)")
        elif a.default_ooms > a.best_ooms:
            head = (f"{a.framework}: best is {config_label(a.preset, a.settings)}: "
                    + (f"it fits where the default ({a.default_label}) hits {a.default_ooms} OOM(s)" if not a.best_ooms
                       else f"{a.best_ooms} OOM(s) against the default's {a.default_ooms}")
                    + f"; peak reserved {format_bytes(a.best_reserved_bytes)}")
        else:
            head = (f"{a.framework}: best is {config_label(a.preset, a.settings)}, saving "
                    f"{format_bytes(a.saved_bytes)} ({a.saved_bytes:,} B) peak reserved against {a.default_label}")
        lines.append(head)
        for e in a.exports:
            lines.append(f"    {e}")
        if a.note:
            lines.append(f"    note: {a.note}")
    return lines
