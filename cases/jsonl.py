"""Reading JSONL the way the spec asks, shared by import and the ``score`` command.

Pure Python. A UTF-8 byte-order mark, CRLF endings and blank lines are fine; invalid
UTF-8, duplicate keys, NaN/Infinity and over-long lines are errors naming the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any


class _DuplicateKey(ValueError):
    pass


class _NonFiniteNumber(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key)
        obj[key] = value
    return obj


def _refuse_constant(name: str) -> Any:
    raise _NonFiniteNumber(name)


def parse_line(raw: bytes, line_no: int) -> tuple[Any, str | None]:
    """Decode and parse one line; returns (object, None) or (None, error text)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"line {line_no}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1})"
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_refuse_constant), None
    except _DuplicateKey as exc:
        return None, f"line {line_no}: {exc.args[0]}: key appears twice in the same object"
    except _NonFiniteNumber as exc:
        return None, f"line {line_no}: {exc.args[0]} is not a JSON number (NaN and Infinity are not allowed)"
    except json.JSONDecodeError as exc:
        return None, f"line {line_no}: not valid JSON: {exc.msg} at column {exc.colno}"
    except RecursionError:
        return None, f"line {line_no}: JSON nested too deeply"


def iter_lines(stream: IO[bytes], *, max_line: int, max_file: int) -> Iterator[tuple[int, bytes | None, str | None]]:
    """Yield (line number, raw line without its ending, error) with the size limits applied.

    Handles a UTF-8 byte-order mark on the first line, LF and CRLF endings, and reads
    no more than ``max_line`` + 2 bytes of any line into memory.
    """
    read = stream.readline
    total = 0
    line_no = 0
    while True:
        chunk = read(max_line + 2)
        if not chunk:
            return
        line_no += 1
        total += len(chunk)
        if total > max_file:
            yield line_no, None, f"file: larger than the import limit of {max_file:,} bytes; nothing was imported"
            return
        if line_no == 1 and chunk.startswith(b"\xef\xbb\xbf"):
            chunk = chunk[3:]
        complete = chunk.endswith(b"\n")
        body = chunk.rstrip(b"\n").rstrip(b"\r") if complete else chunk
        if len(body) > max_line:
            # Skip the rest of an oversized line without holding it in memory.
            while not complete:
                more = read(64 * 1024)
                if not more:
                    break
                total += len(more)
                complete = more.endswith(b"\n")
            yield line_no, None, f"line {line_no}: line is longer than the limit of {max_line:,} bytes"
            if total > max_file:
                yield line_no, None, f"file: larger than the import limit of {max_file:,} bytes; nothing was imported"
                return
            continue
        yield line_no, body, None
