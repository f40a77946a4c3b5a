"""inspect_swe's agents as targets: `inspect-swe[@VERSION|@latest][+agent=AGENT][+CLI@X.Y.Z][+pin|+no-pin|+*][+replace][+checkout=PATH[#REV]]`.

The first seed's incident was in this launcher: the caller's system messages
went to Claude Code on a session's first launch only, and a bridge-side pin
hid that from the model until a compaction. So the name says everything a
verdict depends on: the release (its virtualenv: inspect-ai, inspect-swe and
the Anthropic SDK from the package index), the Claude Code build it launches,
whether the pin runs, and whether the launcher's code comes from a checkout
(a folder, or a git revision of it) so a fix can be judged against the
release ("fails on the release, passes on the branch").

`+agent=` picks which of the release's launchers runs (harness/inspect_swe/agents.py):
claude_code (the default, whose names carry no `+agent=`), codex_cli,
gemini_cli, opencode, kimi_code, mini_swe_agent or antigravity, each launching the harness's own pinned
build of its CLI (`+codex@`, `+gemini-cli@`, `+opencode@`, `+kimi-code@`, `+mini-swe-agent@`; antigravity's SDK
`+google-antigravity@`). The pin is claude_code()'s
alone: the other agents' names carry no pin part, and asking for one is an error.
`+replace` (claude_code only) gives the scenario's text as claude_code(replace_system_prompt=...), Claude Code's
whole system prompt (`--system-prompt`), instead of a system message of the sample (`--append-system-prompt`).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InputError
from harness.execution.launcher import LauncherSteps
from harness.inspect_swe.agents import AGENTS, CLAUDE_CODE, DEFAULT, MINI_SWE_AGENT, OPENCODE
from harness.inspect_swe.launcher import InspectLauncher, package_root
from harness.targets import antigravity, claude_code, codex, gemini_cli, kimi_code, mini_swe_agent, opencode
from harness.targets.base import SessionIdSource, Target
from harness.targets.family import SpecFamily, option_lines
from harness.targets.installs import VERSION_RE, install_key, install_record, pip_latest_version, pip_venv_dir

NAME = "inspect-swe"
PACKAGE = "inspect-swe"
# The eval framework and the SDK its Anthropic provider needs: for the measured release, the versions it was
# measured with (inspect-ai changes often); for any other, the newest the package index had when that release came
# out (an old release with today's companions may not even import: 0.2.45 and agent-client-protocol 0.12), recorded
# in the tool folder's resolved.txt (harness/targets/installs.py).
MEASURED_COMPANIONS = ("inspect-ai==0.3.285", "anthropic==2.14.0")
COMPANIONS = ("inspect-ai", "anthropic")
# The Inspect bridge translates codex's Responses requests with the OpenAI SDK and gemini's with google-genai (it
# refuses to start without them); the eval's own model stays Anthropic's. The other agents get a virtualenv of
# their own, so the measured claude_code() install stays as it was measured.
AGENTS_TOOL = "inspect-swe-agents"
MEASURED_AGENT_COMPANIONS = ("openai==3.57.0", "google-genai==3.6.1")
AGENT_COMPANIONS = ("openai", "google-genai")
LATEST = "latest"
# The release the scenarios' expectations and docs/findings/inspect-swe.md's table were measured on (the newest on 2026-11-30);
# `inspect-swe` alone means the newest release, whatever it is by then.
MEASURED_VERSION = "0.2.72"
PINS = {"pin": "inspect_swe's bridge-side system-prompt pin on, as released",
        "no-pin": "the pin switched off: the requests show what each launch sent"}
DEFAULT_PIN = "pin"
EVERY_PIN = "*"
# claude_code(replace_system_prompt=TEXT), inspect_swe 0.2.68 and later: the scenario's text replaces Claude Code's prompt
REPLACE = "replace"
WITH_OPTION = "with="  # +with=NAME==X: a companion pinned by the spec, installed with the release in a folder of its own
STEP_TIMEOUT_S = 180.0  # one launch, as claude_code() runs it; the eval gets the sum and its own start-up
AGENT_OPTION = "agent="
# Each agent's CLI: the family whose pinned build it launches, and how that build is run.
CLI_FAMILIES = {"claude-code": claude_code, "codex": codex, "gemini-cli": gemini_cli, "opencode": opencode,
                "kimi-code": kimi_code, "mini-swe-agent": mini_swe_agent, "google-antigravity": antigravity}
CLI_OF = {name: agent.cli for name, agent in AGENTS.items()}
USAGE = (f"expected {NAME}[@VERSION|@latest][+agent={'|'.join(AGENTS)}][+CLI@X.Y.Z][+pin|+no-pin|+*][+{REPLACE}][+{WITH_OPTION}NAME==X]...[+checkout=PATH[#REV]] "
         f"where CLI is the agent's (claude-code, codex, gemini-cli, opencode, kimi-code, mini-swe-agent, google-antigravity) "
         f"and the pin and +{REPLACE} claude_code's only "
         f"(e.g. {NAME}@0.2.72+claude-code@{claude_code.OLDER_VERSION}+no-pin, {NAME}@0.2.72+agent=codex_cli+codex@{codex.PINNED_VERSION})")


@dataclass(frozen=True)
class Spec:
    version: str
    agent: str
    cli_version: str
    pins: list[str]  # empty for an agent without the pin
    checkout: Path | None
    revision: str | None
    replace: bool = False  # the scenario's text as replace_system_prompt=, not a system message
    withs: tuple[str, ...] = ()  # companions pinned by the spec (`+with=NAME==X`), where the release's time is not enough


def targets(spec: str) -> list[Target]:
    parsed = parse(spec)
    version = pip_latest_version(PACKAGE) if parsed.version == LATEST else parsed.version
    companions = MEASURED_COMPANIONS if version == MEASURED_VERSION else COMPANIONS
    if parsed.agent != DEFAULT:
        companions += MEASURED_AGENT_COMPANIONS if version == MEASURED_VERSION else AGENT_COMPANIONS
    tool = NAME if parsed.agent == DEFAULT else AGENTS_TOOL
    venv = pip_venv_dir(tool, PACKAGE, version, companions=companions, pinned=parsed.withs)
    if not (venv / "bin" / "inspect").is_file():
        raise InputError(f"{NAME}@{version}: the install has no {venv / 'bin' / 'inspect'}; remove {venv.parent} to reinstall it")
    command = cli_argv(parsed.agent, parsed.cli_version)
    checkout, revision = parsed.checkout, parsed.revision
    commit = _commit(checkout, revision) if checkout is not None and revision is not None else None
    if checkout is not None and commit is None:
        package_root(checkout)
    record = install_record(tool, install_key(version, parsed.withs))
    return [dataclasses.replace(build(version, parsed.cli_version, pin, venv, command, checkout, revision, commit,
                                      agent=parsed.agent, replace=parsed.replace, withs=parsed.withs), installed=record)
            for pin in (parsed.pins or [None])]


def cli_argv(agent: str, version: str) -> tuple[str, ...]:
    """The argv prefix of the agent's CLI build, from the harness's own tools folder (installed on first use)."""
    cli = CLI_OF[agent]
    family = CLI_FAMILIES[cli]
    if hasattr(family, "cli_command"):  # the CLIs run by node (or a launcher script), antigravity's SDK by its python
        return family.cli_command(version)
    return (family.cli_binary(version),)


def parse(spec: str) -> Spec:
    """Everything a spec names; nothing installed."""
    head, _, rest = spec.partition("+")
    version = LATEST
    if head != NAME:
        if not head.startswith(NAME + "@") or not (head[len(NAME) + 1:] == LATEST or VERSION_RE.fullmatch(head[len(NAME) + 1:])):
            raise InputError(f"bad target {spec!r}: {USAGE}")
        version = head[len(NAME) + 1:]
    checkout_part = None
    if "+checkout=" in "+" + rest:
        rest, _, checkout_part = ("+" + rest).partition("+checkout=")
        rest = rest[1:]
    parts = [p for p in rest.split("+") if p]
    agent = DEFAULT
    replace = False
    withs: list[str] = []
    for part in parts:
        if part.startswith(AGENT_OPTION):
            agent = part[len(AGENT_OPTION):]
            if agent not in AGENTS:
                raise InputError(f"bad target {spec!r}: unknown agent {agent!r}; {USAGE}")
    cli = CLI_OF[agent]
    cli_version, pins = CLI_FAMILIES[cli].PINNED_VERSION, [DEFAULT_PIN] if AGENTS[agent].has_pin else []
    for part in parts:
        if part.startswith(AGENT_OPTION):
            continue
        if part.startswith(cli + "@") and VERSION_RE.fullmatch(part[len(cli) + 1:]):
            cli_version = part[len(cli) + 1:]
        elif (part in PINS or part == EVERY_PIN) and not AGENTS[agent].has_pin:
            raise InputError(f"bad target {spec!r}: +{part}: the pin is claude_code()'s alone; {agent}() has none; {USAGE}")
        elif part.startswith(WITH_OPTION):
            requirement = part[len(WITH_OPTION):]
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][0-9A-Za-z.!+-]*", requirement):
                raise InputError(f"bad target {spec!r}: +{part}: expected +{WITH_OPTION}NAME==X.Y.Z, one exact release "
                                 f"of a package to install beside it; {USAGE}")
            withs.append(requirement)
        elif part == REPLACE:
            if agent != DEFAULT:
                raise InputError(f"bad target {spec!r}: +{REPLACE}: replace_system_prompt= is claude_code()'s alone; {USAGE}")
            replace = True
        elif part in PINS:
            pins = [part]
        elif part == EVERY_PIN:
            pins = list(PINS)
        else:
            raise InputError(f"bad target {spec!r}: unknown part {part!r}; {USAGE}")
    checkout, revision = None, None
    if checkout_part is not None:
        path, _, revision = checkout_part.partition("#")
        if not path:
            raise InputError(f"bad target {spec!r}: +checkout= needs a folder; {USAGE}")
        checkout = Path(path).expanduser().resolve()
        if not checkout.is_dir():
            raise InputError(f"target {spec!r}: checkout folder {checkout} does not exist")
        revision = revision or None
    return Spec(version, agent, cli_version, pins, checkout, revision, replace, tuple(sorted(withs)))


def parse_spec(spec: str) -> tuple[str, str, list[str], Path | None, str | None]:
    """Version, CLI version, pin variants, checkout folder and revision a spec names; nothing installed."""
    parsed = parse(spec)
    return parsed.version, parsed.cli_version, parsed.pins, parsed.checkout, parsed.revision


def name_problem(name: str) -> str | None:
    """Reports always name the release, the agent (unless claude_code), its CLI build and, for claude_code, the pin."""
    try:
        parsed = parse(name)
    except InputError as exc:
        return str(exc)
    parts = name.split("+checkout=")[0].split("+")[1:]
    cli = CLI_OF[parsed.agent]
    named_agent = any(p.startswith(AGENT_OPTION) for p in parts)
    if parsed.agent == DEFAULT:
        if (parsed.version == LATEST or named_agent or not any(p.startswith("claude-code@") for p in parts)
                or not any(p in PINS for p in parts)):
            return (f"target {name!r}: an {NAME} target is always named {NAME}@VERSION+claude-code@X.Y.Z+pin|no-pin"
                    f"[+checkout=...] (claude_code, the default agent, is not named)")
    elif parsed.version == LATEST or not any(p.startswith(cli + "@") for p in parts):
        return (f"target {name!r}: an {NAME} target of {parsed.agent}() is always named "
                f"{NAME}@VERSION+agent={parsed.agent}+{cli}@X.Y.Z[+checkout=...] (no pin: it has none)")
    return None


def _commit(checkout: Path, revision: str) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--verify", "--quiet", revision + "^{commit}"],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise InputError(f"{checkout}: no git revision {revision!r} (git rev-parse found no commit)")
    return done.stdout.strip()


def build(version: str, cli_version: str, pin: str | None, venv: Path, command: tuple[str, ...],
          checkout: Path | None, revision: str | None, commit: str | None, agent: str = DEFAULT,
          replace: bool = False, withs: tuple[str, ...] = ()) -> Target:
    kind = AGENTS[agent]
    name = f"{NAME}@{version}" + ("" if agent == DEFAULT else f"+agent={agent}") + f"+{kind.cli}@{cli_version}"
    name += f"+{pin}" if pin is not None else ""
    name += f"+{REPLACE}" if replace else ""
    name += "".join(f"+{WITH_OPTION}{requirement}" for requirement in withs)
    if checkout is not None:
        name += f"+checkout={checkout}" + (f"#{revision}" if revision else "")
    launcher = InspectLauncher(venv=venv, claude=command, pin=pin != "no-pin", checkout=checkout, revision=commit,
                               binary=kind.binary, replace=replace, **({} if agent == DEFAULT else
                                                      {"agent": agent, "cli_version": cli_version, **_offline(agent)}))
    return Target(
        name=name,
        commands={},
        session_id=SessionIdSource("stdout_json", "session_id"),  # unused: the agent keeps the session
        identity_regex=r"(?m)^You are [^\n]*",
        timeout_s=STEP_TIMEOUT_S,
        side_calls=claude_code.SIDE_CALLS if agent == DEFAULT else getattr(CLI_FAMILIES[kind.cli], "SIDE_CALLS", ()),
        compaction_calls=() if agent == DEFAULT else getattr(CLI_FAMILIES[kind.cli], "COMPACTION_CALLS", ()),
        prompt_flags=kind.prompt_flags if agent != DEFAULT else Target.prompt_flags,
        checkout=checkout,
        revision=commit,
        executor=LauncherSteps(launcher),
    )


def _offline(agent: str) -> dict:
    """What the agent's CLI needs from the eval's environment to stay offline, as its own family sets it up."""
    if agent == MINI_SWE_AGENT.name:  # litellm's price map from its own package, not GitHub (the agent inherits it)
        return {"env": tuple(sorted(mini_swe_agent.OFFLINE_ENV.items()))}
    if agent != OPENCODE.name:
        return {}
    # opencode() looks for ripgrep with `command -v rg` and downloads it from GitHub when absent: the one the Codex
    # build bundles is put on PATH. The config folder's npm state keeps opencode from installing its plugin package.
    rg = Path(codex.cli_binary(codex.PINNED_VERSION)).parent.parent / "codex-path"
    lock = '{"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}\n'
    return {"env": tuple(sorted(opencode.OFFLINE_ENV.items())), "path": (str(rg),) if (rg / "rg").is_file() else (),
            "home_files": ((".config/opencode/package.json", '{"private": true}\n'),
                           (".config/opencode/package-lock.json", lock), (".config/opencode/node_modules/.harness", ""))}


FAMILY = SpecFamily(
    NAME, "'inspect-swe[@VERSION][+agent=AGENT][+CLI@X.Y.Z][+pin|+no-pin][+checkout=PATH[#REV]]'", targets, name_problem,
    lines=(f"{NAME}[@VERSION|@latest][+agent=AGENT][+CLI@X.Y.Z][+PIN][+checkout=PATH[#REV]]  an inspect_swe agent in a real "
           f"`inspect eval` (default: the newest release; measured: {MEASURED_VERSION})",
           *(f"  +agent={name:<24} launches {agent.cli} (+{agent.cli}@X.Y.Z, default its pinned build)"
             + (" (default)" if name == DEFAULT else "") for name, agent in AGENTS.items()),
           *option_lines(PINS, (DEFAULT_PIN,), "one target per pin setting (claude_code only: the others have no pin)"),
           f"  +{REPLACE:<30} the scenario's text as replace_system_prompt= (--system-prompt), not a system message "
           f"(claude_code only; inspect_swe 0.2.68 and later)",
           "  +with=NAME==X                   a companion pinned beside the release, where resolving as of its upload "
           "is not enough (its own install)",
           "  +checkout=PATH[#REV]            the launcher's code from that folder, or that git revision of it"),
    # `make tools`: the measured release with claude_code(), and the virtualenv the other agents share.
    # kimi_code's CLI and its Node.js are npm packages of their own; mini_swe_agent's mini-swe-agent and
    # antigravity's SDK (its engine inside) each a virtualenv of its own, installed apart from that virtualenv.
    defaults=(f"{NAME}@{MEASURED_VERSION}", *(f"{NAME}@{MEASURED_VERSION}+agent={agent}"
                                            for agent in ("codex_cli", "kimi_code", "mini_swe_agent", "antigravity"))),
    releases=("pypi", PACKAGE),
)
