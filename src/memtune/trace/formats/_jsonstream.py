"""Stream the elements of one big JSON array without holding the file twice.

Chrome traces are one JSON object whose ``traceEvents`` array holds every
event (hundreds of thousands; tens of MB). ``json.load`` would keep the whole
text plus every event object alive at once. Here the text is read in chunks and
each array element is decoded with ``JSONDecoder.raw_decode`` as soon as it is
complete, so only the elements the caller keeps stay in memory.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterator

from memtune.errors import TraceError
from memtune.trace.formats._common import DECODE_ERRORS, describe

CHUNK = 1 << 20
_WS = " \t\n\r"


@dataclass
class _Buffer:
    stream: IO[bytes]
    path: str
    text: str = ""
    pos: int = 0
    eof: bool = False
    line: int = 1  # line number of text[0]
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8-sig")(errors="strict"))

    def more(self) -> bool:
        """Append the next chunk; drop consumed text. False at end of file."""
        if self.eof:
            return False
        try:
            raw = self.stream.read(CHUNK)
            chunk = self.decoder.decode(raw, final=not raw)
        except DECODE_ERRORS as e:
            raise TraceError(f"cannot read the file: {describe(e)}", path=self.path, location=self.where()) from None
        if not raw:
            self.eof = True
        if self.pos:
            self.line += self.text.count("\n", 0, self.pos)
            self.text = self.text[self.pos :]
            self.pos = 0
        self.text += chunk
        return bool(chunk) or not self.eof

    def where(self) -> str:
        return f"line {self.line + self.text.count(chr(10), 0, self.pos)}"

    def skip_ws(self) -> str:
        """Skip whitespace; return the next character ('' at end of file)."""
        while True:
            n = len(self.text)
            while self.pos < n and self.text[self.pos] in _WS:
                self.pos += 1
            if self.pos < n:
                return self.text[self.pos]
            if not self.more():
                return ""

    def expect(self, chars: str, what: str) -> str:
        c = self.skip_ws()
        if c == "" or c not in chars:
            found = "end of file (truncated?)" if c == "" else repr(c)
            raise TraceError(f"invalid JSON: expected {what}, found {found}", path=self.path, location=self.where())
        self.pos += 1
        return c

    def value(self, decoder: json.JSONDecoder) -> Any:
        """Decode one complete JSON value at the current position."""
        self.skip_ws()
        while True:
            try:
                obj, end = decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as e:
                if not self.eof:
                    self.more()
                    continue
                # Report the position of the failure, not the value's start.
                line = self.line + self.text.count("\n", 0, e.pos)
                raise TraceError(f"invalid JSON: {e.msg}", path=self.path, location=f"line {line}") from None
            except (RecursionError, MemoryError, ValueError) as e:
                raise TraceError(f"invalid JSON: {describe(e)}", path=self.path, location=self.where()) from None
            if end == len(self.text) and not self.eof:
                # A number at the very end of the buffer may continue in the next chunk.
                self.more()
                continue
            self.pos = end
            return obj


def iter_array(buf: _Buffer, decoder: json.JSONDecoder) -> Iterator[Any]:
    """Yield the elements of the array whose '[' was just consumed."""
    if buf.skip_ws() == "]":
        buf.pos += 1
        return
    while True:
        yield buf.value(decoder)
        if buf.expect(",]", "',' or ']' in the array") == "]":
            return


def stream_chrome_trace(
    stream: IO[bytes], path: str, on_event: Callable[[Any, int, Callable[[], str]], None]
) -> dict[str, Any]:
    """Call ``on_event(element, index, where)`` for each ``traceEvents`` element
    (``where()`` gives the current line, computed only when needed).

    Accepts the object form (``{"traceEvents": [...], ...}``) and the bare array
    form of the Chrome trace format. Returns the other top-level fields.
    """
    buf = _Buffer(stream, path)
    decoder = json.JSONDecoder()
    first = buf.skip_ws()
    others: dict[str, Any] = {}
    if first == "":
        raise TraceError("the file is empty", path=path)
    if first == "[":
        buf.pos += 1
        for i, el in enumerate(iter_array(buf, decoder)):
            on_event(el, i, buf.where)
        _expect_end(buf)
        return others
    buf.expect("{", "'{' or '[' at the start of a Chrome trace")
    seen_events = False
    if buf.skip_ws() == "}":
        buf.pos += 1
    else:
        while True:
            key = buf.value(decoder)
            if not isinstance(key, str):
                raise TraceError("invalid JSON: object key is not a string", path=path, location=buf.where())
            buf.expect(":", "':' after an object key")
            if key == "traceEvents" and buf.skip_ws() == "[":
                buf.pos += 1
                seen_events = True
                for i, el in enumerate(iter_array(buf, decoder)):
                    on_event(el, i, buf.where)
            else:
                others[key] = buf.value(decoder)
            if buf.expect(",}", "',' or '}' in the top-level object") == "}":
                break
    _expect_end(buf)
    if not seen_events:
        raise TraceError("no 'traceEvents' array: not a Chrome/torch.profiler trace", path=path)
    return others


def _expect_end(buf: _Buffer) -> None:
    c = buf.skip_ws()
    if c != "":
        raise TraceError(f"invalid JSON: unexpected data after the end ({c!r})", path=buf.path, location=buf.where())
