"""Reading pickles from strangers without running their code.

A pickle can name any importable callable (``os.system``) and call it while
loading. ``torch.cuda.memory._dump_snapshot`` writes only dicts, lists, strings,
numbers, booleans and None, so memtune refuses *every* global: ``find_class``
raises before anything is looked up, let alone called. Persistent ids and the
copyreg extension registry (the other two ways a pickle reaches objects) are
refused the same way.
"""

from __future__ import annotations

import pickle
from typing import IO, Any

from memtune.errors import TraceError, UnsafePickleError
from memtune.trace.formats._common import DECODE_ERRORS, PathLike, describe, display, open_binary


class RestrictedUnpickler(pickle.Unpickler):
    """An Unpickler that builds only plain data and refuses every global."""

    def __init__(self, file: IO[bytes], *, source: str):
        super().__init__(file)
        self._source = source

    def find_class(self, module: str, name: str) -> Any:  # noqa: D401 - pickle API
        raise UnsafePickleError(
            f"the pickle asks for the global {module}.{name}; memtune refuses every global in a pickle "
            "(a snapshot from torch.cuda.memory._dump_snapshot contains only plain data), so nothing in it was executed",
            path=self._source,
        )

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError(
            f"the pickle uses a persistent id ({str(pid)[:80]!r}); memtune refuses those, nothing in it was executed",
            path=self._source,
        )


def safe_load(path: PathLike) -> Any:
    """Load a (possibly gzipped) pickle of plain data. TraceError on anything else."""
    source = display(path)
    with open_binary(path) as f:
        return _load(f, source)


def safe_loads(data: bytes, *, source: str = "<bytes>") -> Any:
    """``safe_load`` for bytes already in memory (benchmarks, tests)."""
    import io

    return _load(io.BytesIO(data), source)


def _load(f: Any, source: str) -> Any:
    """Unpickle ``f`` refusing every global; every failure becomes a TraceError naming ``source``."""
    try:
        return RestrictedUnpickler(f, source=source).load()
    except UnsafePickleError:
        raise
    except EOFError:
        raise TraceError("the pickle ends unexpectedly (truncated or empty)", path=source) from None
    except pickle.UnpicklingError as e:
        raise TraceError(f"not a valid pickle: {e}", path=source) from None
    except (*DECODE_ERRORS, KeyError, IndexError, TypeError, AttributeError) as e:
        raise TraceError(f"not a valid pickle: {describe(e)}", path=source) from None
