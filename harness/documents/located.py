"""YAML with line numbers, for every user-written file the harness reads.

``load_located`` parses with a ``yaml.SafeLoader`` subclass: every mapping
becomes a :class:`LocatedDict` and every sequence a :class:`LocatedList`, both
remembering the 1-based lines of themselves and of their keys / items, so a
validator can say *where* a value it rejects was written.  Duplicate keys,
syntax errors, scalars PyYAML cannot build (``2024-13-45``), lone surrogates
and documents past harness.documents.guards' bounds (alias bombs, deep nesting,
size) become :class:`~harness.errors.InputError` at the right line.

Key paths in messages are written like ``steps[2].retry.reply[1].tool_use``:
list positions are counted from 1, as humans count them (``item_path`` takes
the 0-based Python index and renders it 1-based).
"""

from __future__ import annotations

import datetime
import difflib
import re
from pathlib import Path
from typing import Any, Iterable

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.errors import InputError
from harness.documents.guards import MAX_DOCUMENT_SIZE, GuardedLoading
from harness.documents.yaml_errors import yaml_input_error

__all__ = [
    "LocatedDict",
    "LocatedList",
    "load_located",
    "load_located_file",
    "unknown_key_error",
    "type_name",
    "describe",
    "child_path",
    "item_path",
    "to_plain",
]

_MERGE_TAG = "tag:yaml.org,2002:merge"


class LocatedDict(dict):
    """A YAML mapping: ``.line`` is its 1-based line, ``.key_lines[key]`` each key's."""

    def __init__(self, line: int | None = None):
        super().__init__()
        self.line = line
        self.key_lines: dict[Any, int] = {}

    def key_line(self, key: Any) -> int | None:
        """Line of ``key`` if present, else the mapping's own line."""
        return self.key_lines.get(key, self.line)


class LocatedList(list):
    """A YAML sequence: ``.line`` is its 1-based line, ``.item_lines[i]`` item i's."""

    def __init__(self, line: int | None = None):
        super().__init__()
        self.line = line
        self.item_lines: list[int] = []

    def item_line(self, index: int) -> int | None:
        """Line of item ``index`` (0-based) if it exists, else the list's own line."""
        if 0 <= index < len(self.item_lines):
            return self.item_lines[index]
        return self.line


# --------------------------------------------------------------------------- paths

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


def child_path(where: str, key: Any) -> str:
    """``where`` + one mapping key: ``steps[2]`` + ``retry`` -> ``steps[2].retry``."""
    if isinstance(key, str) and _PLAIN_KEY.fullmatch(key):
        return f"{where}.{key}" if where else key
    return f"{where}[{key!r}]"


def item_path(where: str, index: int) -> str:
    """``where`` + a 0-based list index, rendered 1-based: ``reply``, 0 -> ``reply[1]``."""
    return f"{where}[{index + 1}]"


# --------------------------------------------------------------------------- describing values


def type_name(value: Any) -> str:
    """'a string', 'a list', 'null', ... for "expected X, got <type_name>"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if value == "" else "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, datetime.datetime):
        return "a timestamp"
    if isinstance(value, datetime.date):
        return "a date"
    if isinstance(value, (bytes, bytearray)):
        return "binary data"
    if isinstance(value, (set, frozenset)):
        return "a set"
    return f"a {type(value).__name__}"


def describe(value: Any) -> str:
    """``type_name`` plus the value itself for short scalars: "an integer (41)"."""
    name = type_name(value)
    if isinstance(value, bool):
        return f"{name} ({'true' if value else 'false'})"
    if isinstance(value, (int, float, datetime.date)):
        return f"{name} ({value})"
    if isinstance(value, str) and value:
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"{name} ({shown!r})"
    return name


def unknown_key_error(
    key: Any,
    allowed: Iterable[Any],
    path: str | Path | None,
    line: int | None,
    where: str = "",
    *,
    what: str = "key",
    listing: str = "allowed",
) -> InputError:
    """The error for a key that is not one of ``allowed``, with a did-you-mean.

    ``where`` is the key path of the mapping holding the key ("" for the top
    level).  Returns the error; the caller raises it.
    """
    names = sorted(str(a) for a in allowed)
    hint = ""
    if isinstance(key, str):
        close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
        if not close:  # "stop" for "stop_reason": a unique prefix is a fair guess too
            folded = key.casefold()
            close = [n for n in names if folded and n.casefold().startswith(folded)]
            close = close if len(close) == 1 else []
        if close:
            hint = f"did you mean {close[0]!r}? "
    message = f"unknown {what} {key!r} ({hint}{listing}: {', '.join(names)})"
    if where:
        message = f"{where}: {message}"
    return InputError(message, path, line)


def to_plain(value: Any) -> Any:
    """A deep copy with LocatedDict/LocatedList turned into plain dict/list.

    Raises ValueError on a structure that contains itself (a recursive alias).
    """
    return _plain(value, set())


def _plain(value: Any, active: set[int]) -> Any:
    if isinstance(value, (dict, list)):
        if id(value) in active:
            raise ValueError("recursive YAML alias: a value contains itself")
        active.add(id(value))
        try:
            if isinstance(value, dict):
                return {k: _plain(v, active) for k, v in value.items()}
            return [_plain(v, active) for v in value]
        finally:
            active.discard(id(value))
    return value


# --------------------------------------------------------------------------- loading


class _LocatingLoader(GuardedLoading, yaml.SafeLoader):
    """SafeLoader building LocatedDict / LocatedList with line numbers, refusing what harness.documents.guards lists."""

    source_path: str | Path | None = None


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def _construct_located_map(loader: _LocatingLoader, node: MappingNode):
    data = LocatedDict(_line(node))
    yield data
    loader.flatten_mapping(node)  # `<<` merge keys: merged pairs first, own pairs win
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise InputError(
                f"a mapping key must be a plain value such as a string, got {type_name(key)}",
                loader.source_path,
                _line(key_node),
            ) from None
        data[key] = loader.construct_object(value_node, deep=False)
        data.key_lines[key] = _line(key_node)


def _construct_located_seq(loader: _LocatingLoader, node: SequenceNode):
    data = LocatedList(_line(node))
    yield data
    for child in node.value:
        data.append(loader.construct_object(child, deep=False))
        data.item_lines.append(_line(child))


_LocatingLoader.add_constructor("tag:yaml.org,2002:map", _construct_located_map)
_LocatingLoader.add_constructor("tag:yaml.org,2002:seq", _construct_located_seq)


def _check_duplicate_keys(loader: _LocatingLoader, node: Node, where: str, seen_nodes: set[int]) -> None:
    """Reject a mapping that states one key twice, in document order."""
    if id(node) in seen_nodes:  # aliases: each node is checked once
        return
    seen_nodes.add(id(node))
    if isinstance(node, MappingNode):
        first_line: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                continue  # merged mappings are checked where they are written
            child_where = where
            if isinstance(key_node, ScalarNode):
                key = loader.construct_object(key_node, deep=True)
                if key in first_line:
                    label = f"{where}: " if where else ""
                    raise InputError(
                        f"{label}duplicate key {key!r} (first on line {first_line[key]}, "
                        f"again on line {_line(key_node)})",
                        loader.source_path,
                        _line(key_node),
                    )
                first_line[key] = _line(key_node)
                child_where = child_path(where, key)
            _check_duplicate_keys(loader, value_node, child_where, seen_nodes)
    elif isinstance(node, SequenceNode):
        for index, child in enumerate(node.value):
            _check_duplicate_keys(loader, child, item_path(where, index), seen_nodes)


def load_located(text: str, path: str | Path | None = None) -> Any:
    """Parse one YAML document; mappings/sequences come back located.

    An empty document (or only comments) gives None.  Every problem raises
    InputError naming ``path`` and the 1-based line.
    """
    if len(text) > MAX_DOCUMENT_SIZE:
        raise InputError(f"{len(text):,} characters: more than the {MAX_DOCUMENT_SIZE:,} a document may have", path)
    loader = None
    try:
        loader = _LocatingLoader(text)  # the reader rejects unprintable characters here
        loader.source_path = path
        node = loader.get_single_node()
        if node is None:
            return None
        _check_duplicate_keys(loader, node, "", set())
        return loader.construct_document(node)
    except yaml.YAMLError as error:
        raise yaml_input_error(error, text, path) from None
    except RecursionError:
        raise InputError("invalid YAML: nested too deeply", path) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_located_file(path: str | Path) -> Any:
    """Read ``path`` as UTF-8 and ``load_located`` it."""
    try:
        with Path(path).open("rb") as handle:  # bounded: /dev/zero or a runaway file is refused, not read whole
            raw = handle.read(MAX_DOCUMENT_SIZE + 1)
    except IsADirectoryError:
        raise InputError("expected a file, got a directory", path) from None
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except OSError as error:
        raise InputError(f"cannot read the file: {error.strerror or error}", path) from None
    if len(raw) > MAX_DOCUMENT_SIZE:
        raise InputError(f"more than the {MAX_DOCUMENT_SIZE:,} bytes a document may have", path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        raise InputError(
            f"not UTF-8 text: byte 0x{raw[error.start]:02x} at column {column} cannot be decoded",
            path,
            line,
        ) from None
    return load_located(text, path)
