"""What a credential is called: names that say their value is a secret, and `NAME=value` in running text.

A header, query parameter, environment variable or JSON key named like a
credential has its whole value redacted, whatever it looks like (a password
can look like anything). In free text the same names are found before `=` or
`:` (`DATABASE_PASSWORD=…`, `x-custom-token: …`, `"api_key": "…"`), and only
the value after them is the secret.

The word must not run on into more letters: `max_tokens`, `sort_keys`,
`keyboard` and `author` are not credentials, and neither is a session id,
which is evidence (a target may read it from a header; reports show it).
"""

from __future__ import annotations

import re
from typing import Iterator

Span = tuple[int, int]

NAME_WORD = r"(?:key|token|secrets?|passw(?:or)?ds?|passphrase|auth(?:ori[sz]ation)?|cookies?|credentials?|session|signature)"
_SECRET_WORD = re.compile(NAME_WORD + r"(?![a-z])", re.IGNORECASE)
_SESSION_ID = re.compile(r"session[-_ ]?id", re.IGNORECASE)

_NAME_CHAR = re.compile(r"[A-Za-z0-9_.-]")
# A value ends at whitespace and at anything that could be syntax around it (quotes, markup, separators, and
# the NUL that joins texts scanned together); a full stop or colon right after it ends the sentence, not the secret.
_BARE = r"""[^\s"'`<>\\,;&|()\[\]{}\x00]*[^\s"'`<>\\,;&|()\[\]{}\x00.:!?]"""
_SCHEME = r"(?:(?:bearer|basic|digest)[ \t]+)?"  # `Authorization: Bearer …`: the scheme stays readable
# From the credential word on: the rest of the name, the separator, and a quoted or a bare value (matched in
# lowered() text: the patterns are lower case).
_ASSIGNMENT = re.compile(
    # No '.' after the word: `unknown-key.yaml:2:` is a file and a line, not a key and its value.
    NAME_WORD + r"(?![a-z])(?P<rest>[A-Za-z0-9_-]{0,64})"
    r"""["']?[ \t]*[:=][ \t]*"""
    r"""(?:(?P<quote>["'])(?P<quoted>[^"'\n<>\\\x00]{1,1024})(?P=quote)|""" + _SCHEME + r"(?P<bare>" + _BARE + "))",
)
# Headers whose value is a list of credentials (`cookie: a=1; b=2`): the rest of the line is the secret.
_WHOLE_LINE = re.compile(
    r"(?<![A-Za-z0-9_.-])(?:(?:set-)?cookie|(?:proxy-)?authorization)"
    r"""["']?[ \t]*[:=][ \t]*""" + _SCHEME + r"""(?P<value>[^\n"'<>\\\x00]*[^\s"'<>\\\x00])""",
)
# A value that names where a secret comes from rather than being one: `$TOKEN`, `${API_KEY}`, `%PASSWORD%`.
_REFERENCE = re.compile(r"\$\{?[a-z_][a-z0-9_]*\}?|%[a-z_][a-z0-9_]*%")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def is_secret_name(name: str) -> bool:
    """Whether a header, parameter, variable or key name says its value is a credential."""
    return bool(_SECRET_WORD.search(_SESSION_ID.sub("", name)))


def _name_at(text: str, word_start: int, rest_end: int) -> str:
    """The whole name the credential word stands in: back to where the name begins."""
    start = word_start
    while start > 0 and start > word_start - 64 and _NAME_CHAR.match(text, start - 1):
        start -= 1
    return text[start:rest_end]


def lowered(text: str) -> str:
    """The text in lower case, character for character (so spans found in it are spans of the text).

    Case-sensitive patterns over it are several times faster than IGNORECASE
    ones; str.lower() lengthens a few characters (U+0130), and then only
    ASCII is lowered.
    """
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def assignment_spans(low: str) -> Iterator[Span]:
    """The values of credential-like names in running text, given lowered()."""
    for match in _ASSIGNMENT.finditer(low):
        if not is_secret_name(_name_at(low, match.start(), match.end("rest"))):
            continue  # session_id=…: an id, not a credential
        group = "quoted" if match.group("quoted") is not None else "bare"
        if group == "bare" and _REFERENCE.match(low, match.start("bare")):
            continue
        yield match.span(group)
    for match in _WHOLE_LINE.finditer(low):
        yield match.span("value")
