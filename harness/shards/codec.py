"""Any dataclass of harness/results.py to JSON and back, field by field, driven by its type hints alone.

A shard's record must give the merge everything a single run's reporters
are given: request pairs (what report.html shows of a failing check, left
out of results.json), tuples where the renderers expect tuples, paths as
paths. Hand-written from_json methods would drift each time a field is
added to RunResult (attempts, a flaky status); this walks
`dataclasses.fields` and `typing.get_type_hints`, so a new field of any
type built from dataclasses, lists, tuples, dicts, unions, paths and plain
values round-trips without a line changed here.

Values typed `Any` (a check's expected, observed and evidence) carry no
type to decode by, so their tuples and their dicts with keys other than
plain strings are tagged (`{"$tuple": [...]}`, `{"$dict": [[k, v], ...]}`)
and come back as they were; results.json, which renders them, could not
tell the difference but a renderer might.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping, Sequence, Set
from pathlib import Path, PurePath
from typing import Any

_TUPLE, _DICT = "$tuple", "$dict"


class DecodeError(ValueError):
    """The JSON does not have the shape the type hints say."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def encode(value: Any, hint: Any = Any) -> Any:
    """`value` as plain JSON data (dicts, lists, strings, numbers, booleans, None)."""
    if hint is Any or hint is object:
        return _encode_any(value)
    if value is None:
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = _hints(type(value))
        return {f.name: encode(getattr(value, f.name), hints.get(f.name, Any)) for f in dataclasses.fields(value)}
    if isinstance(value, PurePath):
        return str(value)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        return encode(value, kinds[0] if len(kinds) == 1 else Any)
    if isinstance(value, Mapping):
        key_hint, value_hint = args if len(args) == 2 else (Any, Any)
        if key_hint not in (str, Any):
            return [[encode(k, key_hint), encode(v, value_hint)] for k, v in value.items()]
        return {str(k): encode(v, value_hint) for k, v in value.items()}
    if isinstance(value, (list, tuple, Set)):
        return [encode(item, _item_hint(args, number)) for number, item in enumerate(value)]
    return value


def _item_hint(args: tuple, number: int) -> Any:
    if not args:
        return Any
    if len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    return args[number] if number < len(args) else args[-1]


def _encode_any(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encode_any(dataclasses.asdict(value))  # its type is not recorded: what results.json shows of it
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, tuple):
        return {_TUPLE: [_encode_any(v) for v in value]}
    if isinstance(value, (list, Set)):
        return [_encode_any(v) for v in value]
    if isinstance(value, Mapping):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: _encode_any(v) for k, v in value.items()}
        return {_DICT: [[_encode_any(k), _encode_any(v)] for k, v in value.items()]}
    return value


def decode(data: Any, hint: Any) -> Any:
    """The value `encode(value, hint)` was made from; DecodeError when `data` cannot be one."""
    if hint is Any or hint is object:
        return _decode_any(data)
    if data is None:
        return None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(data, dict):
            raise DecodeError(f"{hint.__name__}: expected an object, got {type(data).__name__}")
        hints = _hints(hint)
        given = {f.name: decode(data[f.name], hints.get(f.name, Any))
                 for f in dataclasses.fields(hint) if f.init and f.name in data}
        try:
            return hint(**given)
        except TypeError as exc:  # a required field missing
            raise DecodeError(f"{hint.__name__}: {exc}") from None
    if hint in (Path, PurePath):
        return Path(data)
    if hint is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        return decode(data, kinds[0] if len(kinds) == 1 else Any)
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        key_hint, value_hint = args if len(args) == 2 else (Any, Any)
        pairs = data if isinstance(data, list) else list(_expect(data, dict, hint).items())
        return {decode(k, key_hint): decode(v, value_hint) for k, v in pairs}
    if origin in (list, tuple, set, frozenset, Sequence, Set) or hint in (list, tuple, set, frozenset):
        items = [decode(item, _item_hint(args, n)) for n, item in enumerate(_expect(data, list, hint))]
        made = {list: list, Sequence: tuple, Set: frozenset}.get(origin or hint, origin or hint)
        return made(items)
    return data


def _expect(data: Any, kind: type, hint: Any) -> Any:
    if not isinstance(data, kind):
        raise DecodeError(f"{hint}: expected a JSON {kind.__name__}, got {type(data).__name__}")
    return data


def _decode_any(data: Any) -> Any:
    if isinstance(data, list):
        return [_decode_any(v) for v in data]
    if isinstance(data, dict):
        if set(data) == {_TUPLE}:
            return tuple(_decode_any(v) for v in data[_TUPLE])
        if set(data) == {_DICT}:
            return {_decode_any(k): _decode_any(v) for k, v in data[_DICT]}
        return {k: _decode_any(v) for k, v in data.items()}
    return data
