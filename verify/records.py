"""Typed, one-line-erroring access to parsed evidence records.

Evidence is JSON. Every value a check uses is read through :func:`get` (or the typed
shorthands), which names the file and the key path in its error, so malformed evidence
(missing keys, wrong types, NaN where a number is required) becomes one line, never a
traceback. JSON is parsed with NaN/Infinity rejected, as the writers use ``allow_nan=False``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from protocol.errors import BundleError

MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays/objects accepted in evidence JSON (the deepest shipped record
nests 8 levels); deeper input is refused before it is parsed, so no input can exhaust the
parser's recursion."""


class RecordError(BundleError):
    """Malformed evidence: ``<what> (<file>: <key path>): <what to do>``.

    Attributes:
        where: the file (and position) the error names, as passed to :func:`get`, or None.
    """

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.where = where

    @property
    def file(self) -> str | None:
        """The archive-relative file named by :attr:`where` (text before any ``:``), or None."""
        return self.where.split(":")[0].strip() if self.where else None


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true/false",
               dict: "an object", list: "a list"}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in evidence JSON")


MAX_INT_DIGITS = 40
"""Longest integer literal accepted (the largest figure the bundle writes, a byte count, has ~12 digits)."""


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits is not a figure (at most {MAX_INT_DIGITS})")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} overflows to infinity")
    return value


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"key {key!r} appears twice in one object")
            seen.add(key)
    return obj


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_A_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(data: bytes) -> int:
    """Deepest nesting of ``[``/``{`` in JSON bytes, counted outside strings, without parsing.

    Args:
        data: JSON text as bytes (UTF-8).

    Returns:
        0 for a scalar, 1 for ``[]`` or ``{"a": 1}``, and so on. For text that is not JSON the
        count is meaningless (the parser then rejects it).
    """
    brackets = np.frombuffer(_JSON_STRING.sub(b"", data).translate(None, _NOT_A_BRACKET), dtype=np.uint8)
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1)
    return int(np.cumsum(steps).max(initial=0))


def parse_json(data: bytes, where: str, *, max_depth: int | None = MAX_JSON_DEPTH) -> Any:
    """Parse evidence JSON bytes (UTF-8) strictly.

    Args:
        data: the JSON text.
        where: file name for the error line.
        max_depth: refuse nesting deeper than this before parsing (:func:`json_depth`); None
            only for bytes that already passed this check (the verified members of an archive).

    Returns:
        The parsed value (objects as dicts in file order).

    Raises:
        RecordError: not UTF-8, not JSON, NaN/Infinity, a key repeated within one object, or
            nesting deeper than *max_depth* (:data:`MAX_JSON_DEPTH`).
    """
    if max_depth is not None and data.count(b"[") + data.count(b"{") > max_depth \
            and (depth := json_depth(data)) > max_depth:
        raise RecordError(f"record nests {depth} levels deep, more than the {max_depth} evidence JSON may "
                          f"({where}): this is not a record the bundle writes; restore the file", where)
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant, parse_int=_bounded_int,
                          parse_float=_finite_float, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as exc:
        raise RecordError(f"record is not UTF-8 text ({where}, byte {exc.start}): regenerate the file", where) from None
    except _DuplicateKey as exc:
        raise RecordError(f"record has a duplicate key ({where}): {exc}; JSON readers disagree on which value "
                          "counts, so the bundle never writes one: regenerate the file", where) from None
    except RecursionError:
        raise RecordError(f"record nests too deeply to parse ({where}): restore the file", where) from None
    except ValueError as exc:
        msg = str(exc).splitlines()[0]
        raise RecordError(f"record is not valid JSON ({where}): {msg}; regenerate the file", where) from None


def get(obj: Any, path: str | tuple[str, ...], kind: type | tuple[type, ...] | None, where: str) -> Any:
    """Return ``obj[path]`` for a dotted path (list positions are integers: ``trials.2.active``).

    Args:
        obj: parsed JSON.
        path: dotted key path, or a tuple of keys when a key itself contains a dot.
        kind: required type(s); ``float`` accepts ints too; bool is never an int; floats
            must be finite. None accepts anything.
        where: file name for the error line.

    Raises:
        RecordError: a key is missing or the value has the wrong type.
    """
    cur = obj
    walked: list[str] = []
    parts = path if isinstance(path, tuple) else (path.split(".") if path else [])
    path = ".".join(parts)
    for part in parts:
        walked.append(part)
        if type(cur) is dict or isinstance(cur, Mapping):  # parsed JSON is a dict: skip the ABC check for it
            if part not in cur:
                raise RecordError(f"missing key '{'.'.join(walked)}' ({where}): the record is incomplete; regenerate it", where)
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit():
            idx = int(part)
            if idx >= len(cur):
                raise RecordError(f"missing list item '{'.'.join(walked)}' ({where}): the record is incomplete", where)
            cur = cur[idx]
        else:
            raise RecordError(f"'{'.'.join(walked[:-1]) or '<top>'}' is not an object ({where}): wrong record layout", where)
    if kind is not None and not _is_kind(cur, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        want = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
        raise RecordError(f"'{path}' should be {want} but is {_describe(cur)} ({where}): fix or regenerate the record", where)
    return cur


def _is_kind(value: Any, kind: type | tuple[type, ...]) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if k is float:
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                return True
        elif k is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return True
        elif isinstance(value, k):
            return True
    return False


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}"


def get_int(obj: Any, path: str, where: str) -> int:
    """Integer field (bool rejected)."""
    return get(obj, path, int, where)


def get_float(obj: Any, path: str, where: str) -> float:
    """Finite number field (int accepted, returned as float)."""
    return float(get(obj, path, float, where))


def get_str(obj: Any, path: str, where: str) -> str:
    """String field."""
    return get(obj, path, str, where)


def get_dict(obj: Any, path: str, where: str) -> dict:
    """Object field."""
    return get(obj, path, dict, where)


def get_list(obj: Any, path: str, where: str) -> list:
    """List field."""
    return get(obj, path, list, where)


def get_bool(obj: Any, path: str, where: str) -> bool:
    """Boolean field."""
    return get(obj, path, bool, where)
