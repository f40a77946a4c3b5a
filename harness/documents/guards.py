"""What one YAML document may not do to the harness, refused while it is composed and built.

PyYAML builds an alias as a second reference to one object, so a billion-laughs
document (``a: &a [x, x, ...]``, ``b: &b [*a, *a, ...]``, ``c: &c [*b, *b, ...]``)
loads in kilobytes and explodes later, in whatever walks the value as a tree: a
tool call's input copied into JSON grew past 2.9 GB before MemoryError.  So the
composer counts, at every alias, how many values it stands for once written out,
and refuses the document at the alias that takes the document past
``MAX_ALIAS_EXPANSION``, before anything is built.  An alias to a value that
contains it stands for infinitely many: it is refused too.  Nesting is bounded
for a like reason: every reader of a document walks it recursively, and
Python's stack is not the place to find out it was too deep.  Plain uses
(``<<: *defaults``, a tool input written once and used twice) stay far below
the bounds.

Two more things a document can hold that break the harness later: half of a
UTF-16 surrogate pair (``"\\ud83d"``), which no file, argument or UTF-8 journal
can carry; and a scalar PyYAML resolves but cannot build (``2024-13-45``, an
integer of 5,000 digits, ``!!bool maybe``, ``!!int`` with no digits), whose
ValueError, KeyError, IndexError or AttributeError escaped as a traceback; and
a hexadecimal or binary integer too long to print in decimal, which every
message, report and JSON reply would do.
"""

from __future__ import annotations

import re
import sys

from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.errors import InputError

MAX_ALIAS_EXPANSION = 100_000  # values the aliases of one document may stand for, in all
MAX_DEPTH = 100  # mappings and lists nested in one another, scalars at the bottom included
MAX_DOCUMENT_SIZE = 16 * 1024 * 1024  # bytes of a file, characters of a text: a scenario or target is written by hand

_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_UNBUILDABLE = (ValueError, TypeError, LookupError, AttributeError, ArithmeticError)
_INT_BITS_ALWAYS_PRINTABLE = 2000  # 603 decimal digits, below any limit Python lets sys.set_int_max_str_digits set


class GuardedLoading:
    """Mixin before a ``yaml.SafeLoader``: refuses, with the file and line, what this module's docstring lists.

    Needs ``source_path`` (the file named in errors) on the loader.
    """

    source_path = None

    def __init__(self, stream):
        super().__init__(stream)
        self._values_of: dict[int, int] = {}  # id(node) -> values it stands for, once composed
        self._alias_values = 0
        self._depth = 0

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            event = self.peek_event()
            node = super().compose_node(parent, index)
            self._count_alias(node, event)
            return node
        event = self.peek_event()
        if self._depth >= MAX_DEPTH:
            raise self._error(event.start_mark, f"nested more than {MAX_DEPTH} deep")
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._values_of[id(node)] = 1 + sum(self._values_of[id(child)] for child in _children(node))
        return node

    def compose_scalar_node(self, anchor):
        node = super().compose_scalar_node(anchor)
        lone = _LONE_SURROGATE.search(node.value)
        if lone:
            raise self._error(
                node.start_mark,
                f"\\u{ord(lone.group()):04x} is half of a UTF-16 surrogate pair, not a character: "
                "write the character itself, or \\UXXXXXXXX",
            )
        return node

    def construct_object(self, node, deep=False):
        kind = node.tag.rsplit(":", 1)[-1]
        try:
            data = super().construct_object(node, deep)
        except _UNBUILDABLE as error:
            reason = f"not a valid {kind}"
            if isinstance(error, (ValueError, ArithmeticError)):  # a reason worth showing ("month must be in 1..12")
                reason = str(error).split("; use sys.set_int_max_str_digits")[0] or reason
            raise self._error(node.start_mark, f"cannot read {kind} {_shown(node)}: {reason}") from None
        if isinstance(data, int) and data.bit_length() > _INT_BITS_ALWAYS_PRINTABLE:
            try:
                str(data)
            except ValueError:  # 0x... and 0b... are read past the limit that decimal text is held to
                raise self._error(
                    node.start_mark,
                    f"cannot read {kind} {_shown(node)}: more than {sys.get_int_max_str_digits()} digits in decimal, "
                    "which no message, report or JSON reply could print",
                ) from None
        return data

    def _count_alias(self, node: Node, event: AliasEvent) -> None:
        values = self._values_of.get(id(node))
        if values is None:  # composition is depth first: a node not yet done is one this alias is inside
            raise self._error(
                event.start_mark,
                f"recursive alias *{event.anchor}: it stands for a value that contains it "
                f"(anchored on line {node.start_mark.line + 1}), which has no end",
            )
        self._alias_values += values
        if self._alias_values > MAX_ALIAS_EXPANSION:
            raise self._error(
                event.start_mark,
                f"with *{event.anchor} ({values:,} values), this document's aliases stand for more than "
                f"{MAX_ALIAS_EXPANSION:,} values: refused as an alias bomb, which would exhaust memory once "
                "written out; write the values out, or alias less",
            )

    def _error(self, mark, message: str) -> InputError:
        return InputError(f"invalid YAML at column {mark.column + 1}: {message}", self.source_path, mark.line + 1)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _shown(node: Node) -> str:
    if not isinstance(node, ScalarNode):
        return "here"
    return repr(node.value) if len(node.value) <= 40 else repr(node.value[:37] + "...")
