"""mkdocs hook: the CLI reference and the exit codes, rendered from the code at build time.

A hand-written copy of `--help` drifts the day someone adds an option; this page
is built from `harness.cli.build_parser()` itself, so a new subcommand or option
appears by itself, and the exit codes from the constants the commands return.
A page holds a marker comment where the generated text goes.
"""

from __future__ import annotations

import argparse
import html
import re

CLI_MARKER = "<!-- generated: cli -->"
EXIT_MARKER = "<!-- generated: exit-codes -->"
PYTEST_MARKER = "<!-- generated: pytest-options -->"
INCIDENTS_MARKER = "<!-- generated: incidents -->"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, render_cli())
    if EXIT_MARKER in markdown:
        markdown = markdown.replace(EXIT_MARKER, render_exit_codes())
    if PYTEST_MARKER in markdown:
        markdown = markdown.replace(PYTEST_MARKER, render_pytest_options())
    if INCIDENTS_MARKER in markdown:
        markdown = markdown.replace(INCIDENTS_MARKER, render_incidents())
    return markdown


def _text(value: str) -> str:
    """argparse help as Markdown: code spans kept, everything else escaped (`<time>` is no HTML tag, `*` no emphasis)."""
    parts = re.split(r"(`[^`]*`)", value)
    return "".join(part if part.startswith("`") and part.endswith("`") and len(part) > 1
                   else re.sub(r"([\\*_\[\]|#])", r"\\\1", html.escape(part, quote=False))
                   for part in parts)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return " ".join(parser._get_formatter()._expand_help(action).split())


def _subcommands(parser: argparse.ArgumentParser) -> tuple[argparse._SubParsersAction, dict[str, str]]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return action, helps


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    lines = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            metavar = "" if action.nargs == 0 else " " + parser._get_formatter()._format_args(action, action.dest.upper())
            names = ", ".join(f"`{option}{metavar}`" for option in action.option_strings)
        else:
            names = f"`{parser._get_formatter()._format_args(action, action.dest)}`"
        described = _text(_help(parser, action))
        # argparse marks a `*` positional required; only an option that must be given is worth saying so.
        tail = " (required)" if action.required and (action.option_strings or action.nargs not in ("?", "*")) else ""
        lines.append(f"- {names}: {described}{tail}".rstrip(": "))
    return lines


def _usage(parser: argparse.ArgumentParser) -> str:
    usage = parser.format_usage().strip()
    return "```\n" + usage + "\n```"


def render_cli() -> str:
    from harness.cli import COMMANDS, build_parser

    parser = build_parser()
    action, helps = _subcommands(parser)
    out = [_usage(parser), ""]
    if parser.epilog:
        out += ["```", parser.epilog.strip(), "```", ""]
    out += ["Options of `harness` itself:", "", *_arguments(parser), ""]
    out += ["| command | what it does |", "|---|---|"]
    out += [f"| [`harness {name}`](#harness-{name}) | {_text(helps.get(name, ''))} |" for name in COMMANDS]
    out.append("")
    for name in COMMANDS:
        sub = action.choices[name]
        out += [f"## `harness {name}` {{#harness-{name}}}", "", _text(helps.get(name, "")), "", _usage(sub), ""]
        if sub.description:
            out += [_text(" ".join(sub.description.split())), ""]
        arguments = _arguments(sub)
        out += (arguments or ["No arguments."]) + [""]
        if sub.epilog:
            out += ["```", sub.epilog.strip(), "```", ""]
    return "\n".join(out)


def render_exit_codes() -> str:
    """harness --help's own table (harness.cli.EXIT_CODES), with each code's constant; a constant it leaves out stops
    the build, so the page and the help never say different things."""
    from harness.cli import EXIT_CODES
    from harness.commands import common

    names = {value: name for name, value in vars(common).items() if name.startswith("EXIT_") and isinstance(value, int)}
    missing = sorted(set(names) - {code for code, _ in EXIT_CODES})
    if missing:
        raise ValueError(f"harness.cli.EXIT_CODES does not say what exit code(s) {missing} mean")
    out = ["| code | constant | meaning |", "|---|---|---|"]
    out += [f"| **{code}** | `{names[code]}` | {meaning} |" for code, meaning in EXIT_CODES]
    return "\n".join(out)


class _Options:
    """Stands in for pytest's parser: records what the plugin's pytest_addoption declares."""

    def __init__(self):
        self.options: list[tuple[tuple[str, ...], dict]] = []
        self.ini: list[tuple[str, str]] = []

    def getgroup(self, name: str, description: str = "", **_):
        return self

    def addoption(self, *names: str, **kwargs) -> None:
        self.options.append((names, kwargs))

    def addini(self, name: str, help: str, **_) -> None:
        self.ini.append((name, help))


def render_pytest_options() -> str:
    from harness import pytest_plugin

    recorded = _Options()
    pytest_plugin.pytest_addoption(recorded)
    out = []
    for names, kwargs in recorded.options:
        metavar = "" if kwargs.get("action") in ("store_true", "store_false") else "=" + kwargs.get("metavar", "VALUE")
        shown = ", ".join(f"`{name}{metavar}`" for name in names)
        out.append(f"- {shown}: {_text(' '.join(str(kwargs.get('help', '')).split()))}")
    for name, help_text in recorded.ini:
        out.append(f"- ini option `{name}`: {_text(' '.join(help_text.split()))}")
    return "\n".join(out)


def render_incidents() -> str:
    """The catalog's table, read from incidents/*.yaml by the scenario reader: an entry the reader refuses stops the
    build, and the table can never say other verdicts than the entries' `expect:` (what make incidents holds)."""
    from pathlib import Path

    import harness.targets  # noqa: F401 - installs the reader's target-name rule, as every command does
    from harness.scenario.reader import load_scenario

    root = Path(__file__).resolve().parent.parent.parent / "incidents"
    out = ["| incident | affected → fixed | verdicts recorded | outcome | what the bytes show |", "|---|---|---|---|---|"]
    for path in sorted(root.glob("*.yaml")):
        scenario = load_scenario(path)
        incident = scenario.incident
        source = incident.source
        verdicts = []
        for target in incident.targets:
            failing = [check for check in scenario.checks if scenario.expected_verdict(target, check) == "fail"]
            verdicts.append(f"`{target}`: " + (", ".join(f"{check} fail" for check in failing) or "all pass"))
        releases = ", ".join(incident.affected) + " → " + (incident.fixed or "not fixed")
        title = _text(f"{source.reference} ({source.kind}): {source.title}")
        cells = [f"[{title}]({source.link}) <br>`incidents/{path.name}`", _text(releases), "<br>".join(verdicts),
                 incident.outcome, _text(" ".join(incident.bytes_show.split()))]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)
