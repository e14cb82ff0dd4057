"""Every error memtune raises on purpose derives from :class:`MemtuneError`.

Callers can catch one type; each subclass also derives from the builtin a user
would naturally catch (``ValueError``, ``MemoryError``), so memtune fits into
existing ``except`` clauses.
"""

from __future__ import annotations


class MemtuneError(Exception):
    """Base class of memtune's own errors."""


class MemtuneWarning(UserWarning):
    """Base class of memtune's warnings (late changes, misspellings, deprecations)."""


class ConfigError(MemtuneError, ValueError):
    """A configuration value is invalid. The message names the variable, the value,
    the accepted forms and where the value came from."""

    def __init__(self, message: str, *, variable: str | None = None, problems: list[str] | None = None):
        super().__init__(message)
        self.variable = variable
        self.problems = problems or [message]


class UnknownNameError(ConfigError, KeyError):
    """A variable, preset or setting name is not known. The message suggests close names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class AllocatorUsageError(MemtuneError, ValueError):
    """The allocator was called incorrectly (unknown or double free, bad size).
    The allocator's state is unchanged."""


class OutOfMemoryError(MemtuneError, MemoryError):
    """An allocation could not be satisfied even after releasing cached memory.

    The allocator stays usable afterwards. Attributes carry the numbers the
    message reports, so tools can act on them without parsing text.
    """

    def __init__(
        self,
        message: str,
        *,
        requested: int = 0,
        capacity: int | None = None,
        allocated: int = 0,
        reserved: int = 0,
        limit: int | None = None,
    ):
        super().__init__(message)
        self.requested = requested
        self.capacity = capacity
        self.allocated = allocated
        self.reserved = reserved
        self.limit = limit

    @property
    def reserved_but_unallocated(self) -> int:
        return self.reserved - self.allocated


class TraceError(MemtuneError, ValueError):
    """A trace file is unreadable or inconsistent. The message names the file and
    the line or event index."""

    def __init__(self, message: str, *, path: str | None = None, location: str | None = None):
        where = ", ".join(p for p in (path, location) if p)
        super().__init__(f"{where}: {message}" if where else message)
        self.path = path
        self.location = location


class PlanFileError(MemtuneError, ValueError):
    """A plan file (``memtune plan TRACE --save``) cannot be read: the message names the
    file, the field, the value found and what is accepted. Nothing was changed."""

    def __init__(self, message: str, *, path: str | None = None):
        super().__init__(message)
        self.path = path


class UnsafePickleError(TraceError):
    """A pickle names a global (a class or function). memtune never executes those."""
