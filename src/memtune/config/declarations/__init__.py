"""Declarations of every variable memtune knows, one module per group.

Every module in this package is imported automatically (pkgutil), so a new
group (say ``policy.py``) is added by creating its file; nothing here changes.
Modules are imported in name order, except that ``memtune`` comes first so the
docs list memtune's own variables before the frameworks'.
"""

from __future__ import annotations

import importlib
import pkgutil

FIRST = ("memtune", "pytorch", "mps", "mxnet", "megengine", "cupy")


def _load_all() -> list[str]:
    names = [m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    ordered = [n for n in FIRST if n in names] + sorted(n for n in names if n not in FIRST)
    for name in ordered:
        importlib.import_module(f"{__name__}.{name}")
    return ordered


MODULES: tuple[str, ...] = tuple(_load_all())
