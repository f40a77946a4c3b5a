"""What a credential's value looks like, wherever it stands: the shapes the redactor knows.

A credential an agent prints or sends rarely carries a helpful name, so the
redactor (harness/redaction/) also recognises values by their shape. The
vendor formats come from detect-secrets, whose plugins are a maintained list
of them (AWS, GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, PyPI, JWT,
Discord, Telegram, Mailchimp, Azure storage, Square, OpenAI's older keys): we
take each plugin's `denylist` regexes, not its scanner, because the scanner
judges lines of source code and reports strings, where we need the span of
the secret in running text to replace only that.

Left out of detect-secrets, on purpose: the entropy plugins (they would take
git shas, hex session ids, uuids and base64 for secrets: evidence a reviewer
needs), the keyword plugin and the IBM, Cloudant and Softlayer ones (names in
source code; the redactor judges names itself (names.py), in headers, query strings,
environments and `NAME=value` text), the public-IP plugin (an address is not
a credential), Artifactory (its password shape `AP[0-9A-F]…` takes ordinary
capitalised words such as APACHE2LICENSE), npm and basic-auth (their `.+` and
`[^{}\\s]+` run across quotes and markup, so a replacement could eat the
report's own syntax; narrower versions are below), and the private-key plugin
(it matches the BEGIN line only, leaving the key itself).

Added, because detect-secrets 1.5.0 lacks them: Anthropic keys, OpenAI's
project, service-account and admin keys, GitHub's fine-grained tokens, Google
API keys, npm tokens, bearer tokens, passwords in URLs, and whole private-key
blocks (the body too, and a block whose BEGIN line an output tail cut off).
Every shape here stops at quotes, backslashes, angle brackets and NUL, so a
replacement never crosses a JSON string, an XML attribute, an HTML tag or
the join between texts the redactor scans together.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Iterator

Span = tuple[int, int]

# After a vendor match, the rest of the token: GitHub's `{36}` or JWT's lazy signature would leave a tail visible.
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_-]*")


# detect-secrets' convention is that a regex's groups are the secret, but some of its plugins group only a prefix
# (GitHub's `(ghp|gho|…)_`, GitLab's `(glpat|…)-`): a group shorter than this is taken for such a prefix.
_SHORTEST_SECRET_GROUP = 16


@dataclass(frozen=True)
class Shape:
    pattern: re.Pattern[str]
    # The secret is the regex's non-empty groups, or the whole match when it has none.
    by_groups: bool = False
    vendor: bool = False  # a detect-secrets pattern: its short groups are prefixes, and then the match is the secret
    needle: str | None = None  # a substring every match contains: texts without it are skipped at once

    def spans(self, text: str) -> Iterator[Span]:
        if self.needle is not None and self.needle not in text:
            return
        for match in self.pattern.finditer(text):
            groups = [match.span(i) for i in range(1, match.re.groups + 1) if match.group(i)] if self.by_groups else []
            if self.vendor and any(end - start < _SHORTEST_SECRET_GROUP for start, end in groups):
                groups = []
            if groups:
                yield from groups
            elif match.end() > match.start():  # the whole match, and the rest of its token
                yield match.start(), _TOKEN_TAIL.match(text, match.end()).end()


def _vendor_shapes() -> list[Shape]:
    """detect-secrets' vendor token formats, as its plugins define them.

    Importing detect-secrets turns on logging.captureWarnings, which would send every later warning of the
    process (a user's pytest session's included: the plugin redacts) to a log instead of to whoever catches
    them; the warning hook in place before is put back.
    """
    shown = warnings.showwarning
    try:
        return _imported_vendor_shapes()
    finally:
        warnings.showwarning = shown


def _imported_vendor_shapes() -> list[Shape]:
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    plugins = (AWSKeyDetector, AzureStorageKeyDetector, DiscordBotTokenDetector, GitHubTokenDetector,
               GitLabTokenDetector, JwtTokenDetector, MailchimpDetector, OpenAIDetector, PypiTokenDetector,
               SendGridDetector, SlackDetector, SquareOAuthDetector, StripeDetector, TelegramBotTokenDetector,
               TwilioKeyDetector)
    return [Shape(pattern, by_groups=True, vendor=True) for plugin in plugins for pattern in plugin.denylist]


# The private-key armour of PEM, OpenSSH and PGP: `-----BEGIN RSA PRIVATE KEY-----`, `… PGP PRIVATE KEY BLOCK-----`.
_ARMOUR = r"-----{end} [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_BEGIN, _END = _ARMOUR.format(end="BEGIN"), _ARMOUR.format(end="END")
# Key material: base64 lines, and the `Proc-Type: 4,ENCRYPTED` headers of an encrypted PEM; the line breaks may be
# written as `\n` (an error message quotes an output tail with repr()).
_KEY_BODY = r"(?:[A-Za-z0-9+/=:,. \t\r\n-]|\\[nrt])"
_BREAK = r"(?:\s|\\[nrt])"

OWN_SHAPES = [
    # Anthropic (sk-ant-api03-…, sk-ant-admin01-…) and OpenAI (sk-proj-…, sk-svcacct-…, sk-admin-…, legacy sk-…).
    Shape(re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{16,}"), needle="sk-"),
    Shape(re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}"), needle="github_pat_"),
    Shape(re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}"), needle="AIza"),
    Shape(re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}"), needle="npm_"),
    Shape(re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})"), by_groups=True),
    # user:password@host in a URL; the user name stays readable.
    Shape(re.compile(r"://[^\s/:@\"'<>\\\x00]+:([^\s/@\"'<>\\\x00]+)@"), by_groups=True, needle="@"),
    # ... and in a host as a request names it, without the scheme (`user:password@proxy.example:3128`, a step's
    # note on a refused outbound request); a `mailto:joe@…` is an address, not a password.
    Shape(re.compile(r"(?<![^\s\"'(,=])(?!mailto:)[A-Za-z][^\s/:@\"'<>\\\x00]*:([^\s/@\"'<>\\\x00]+)@[A-Za-z0-9[]"),
          by_groups=True, needle="@"),
    # A whole block: everything between the armour lines, or to the end of the text when the END line is missing.
    Shape(re.compile(_BEGIN + r"(" + _KEY_BODY + r"+?)(?:(?=" + _END + r")|(?!" + _KEY_BODY + r"))"), by_groups=True,
          needle="PRIVATE KEY"),
    # The end of a block whose beginning was cut off (an output tail keeps only the last bytes).
    Shape(re.compile(r"(?<![A-Za-z0-9+/=])([A-Za-z0-9+/=]{16,}(?:" + _BREAK + r"+[A-Za-z0-9+/=]{4,})*" + _BREAK + r"*)(?="
                     + _END + r")"),
          by_groups=True, needle="PRIVATE KEY"),
]


def all_shapes() -> list[Shape]:
    return _vendor_shapes() + OWN_SHAPES
