"""What `harness init` writes into a team's repository, as text: the configuration, the target file, two scenarios.

Kept as strings in the package (no package data to forget in the wheel), each
commented key by key: the files are the team's first documentation of the
harness, read in their own editor, so each says what it does where it is set.
Every text here is read back by the harness's own readers in the tests
(config.read, load_target_file, load_scenario): a template the harness itself
refuses would be the worst first contact.
"""

from __future__ import annotations

SCENARIOS_DIR = "harness-scenarios"
TARGET_FILE = "harness-target.yaml"
REPORT_DIR = "harness-reports"
INBOX = f"{SCENARIOS_DIR}/found"
IMPORTS = f"{SCENARIOS_DIR}/imported"
WIRE_FORMATS = ("anthropic", "openai-chat", "openai-responses", "gemini")
DEFAULT_WIRE_FORMAT = "anthropic"


def config_body(top_level: bool) -> str:
    """The keys of the table, commented; `top_level`: harness.toml, where they stand without a header."""
    where = "this file" if top_level else "this pyproject.toml"
    header = "" if top_level else "[tool.harness]\n"
    return f"""{header}# The harness's defaults for this repository, written by `harness init`. Every key is optional
# (leave one out for its default) and a command-line flag overrides it; an unknown key is an error.
# Relative paths are relative to the folder of {where}, from whichever subfolder you run harness.

# scenarios: the scenario files and folders `harness run`, `harness diff` and pytest use when none is named.
scenarios = ["{SCENARIOS_DIR}"]
# targets: what `harness run` and pytest run them against when no --target is given: a target file
# (FILE, or FILE@REV for the agent's code at a git revision) or a built-in target (`harness targets`).
targets = ["{TARGET_FILE}"]
# report_dir: where each run writes its report folder (run-<time>-<pid>, diff-..., and `latest`).
report_dir = "{REPORT_DIR}"
# explore_inbox: where `harness explore` writes the failing sequences it finds; never run by default.
explore_inbox = "{INBOX}"
# imports_dir: where `harness import` writes the scenarios it makes from an incident's artefacts.
imports_dir = "{IMPORTS}"
# workers: runs `harness run` takes at once, each with its own fake API and HOME ("auto": one per CPU).
workers = 1
# tools_dir: where `harness install` puts agent builds and git worktrees of FILE@REV targets;
# the environment variable HARNESS_TOOLS_DIR overrides it.
# tools_dir = "~/.cache/harness/tools"
"""


# --------------------------------------------------------------------------- the target file

# Per wire format: the path the agent posts to, what every step's environment already says, and the `env:`
# the format needs on top of it (Gemini's clients read a variable the harness does not set for every agent).
_FORMATS = {
    "anthropic": (
        "POST {base_url}/v1/messages (Anthropic Messages; streaming or not)",
        ["ANTHROPIC_BASE_URL={base_url}  (the agent posts to $ANTHROPIC_BASE_URL/v1/messages)",
         "ANTHROPIC_API_KEY={api_key}    (a fake key; the fake API accepts any)"],
        "env: {}",
    ),
    "openai-chat": (
        "POST {base_url}/v1/chat/completions (OpenAI Chat Completions; streaming or not)",
        ["OPENAI_BASE_URL={base_url}/v1  (the agent posts to $OPENAI_BASE_URL/chat/completions)",
         "OPENAI_API_KEY={api_key}       (a fake key; the fake API accepts any)"],
        "env: {}",
    ),
    "openai-responses": (
        "POST {base_url}/v1/responses (the OpenAI Responses API; streaming or not)",
        ["OPENAI_BASE_URL={base_url}/v1  (the agent posts to $OPENAI_BASE_URL/responses)",
         "OPENAI_API_KEY={api_key}       (a fake key; the fake API accepts any)"],
        "env: {}",
    ),
    "gemini": (
        "POST {base_url}/v1beta/models/MODEL:generateContent (or :streamGenerateContent; Gemini)",
        ["nothing Gemini-specific: Gemini clients read GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY,",
         "which the `env:` below sets (ANTHROPIC_* and OPENAI_* are set too, for agents that read those)"],
        'env:\n  GOOGLE_GEMINI_BASE_URL: "{base_url}"\n  GEMINI_API_KEY: "{api_key}"',
    ),
}


def target_file(wire_format: str, in_git: bool) -> str:
    """The commented target-file template; `in_git`: the folder is in a git work tree, so `repo: .` can be on."""
    endpoint, environment, env_key = _FORMATS[wire_format]
    told = "\n".join(f"#     {line}" for line in environment)
    repo = "repo: ." if in_git else ("# repo: .        # turn on once this folder is in a git repository "
                                     "(a `repo:` outside git is refused when the file is loaded)")
    return f"""# {TARGET_FILE}: how the harness runs your agent, one fresh process per step of a scenario.
# Written by `harness init` for the {wire_format} wire format. Make launch, resume, retry and compact run
# your agent, then try it: `harness doctor {TARGET_FILE}` runs one launch and one resume against the
# fake API and says what it saw and what to change here. The full contract is the harness's reference page
# "the target-file contract".

# name: the target's name in every report; with `repo:` it carries the revision (my-agent@main).
name: my-agent

# protocol: the wire format the agent speaks (anthropic, openai-chat, openai-responses, gemini). It
# documents this file: the fake API reads the format off each request's path. This agent posts to
#   {endpoint}
protocol: {wire_format}

# repo / rev: the agent's own code in git. `repo:` is its repository's folder (relative to this file).
# `harness diff --baseline {TARGET_FILE}@main --candidate {TARGET_FILE}@my-branch` then runs each
# revision's code, checked out into a detached worktree (your branches and working tree are never touched),
# with this file as it is at that revision. `rev: REV` pins a revision here; FILE@REV overrides it.
# With `repo:`, every command must reach the revision's code: name {{checkout}} (the repo folder at the
# revision) or {{target_dir}} (this file's folder, which is the revision's too) in it.
{repo}
# rev: main

# The commands are argv lists, one item per argument (no shell). Placeholders in argv items and env values:
#   {{prompt}}      the step's prompt: the user's message of this turn
#   {{append}}      the text the caller appends to the agent's system prompt; every launch, resume and retry
#                 must pass it, and appended_exactly_once wants it exactly once in every turn's instructions
#   {{temporary}}   text given to this step only (empty unless the scenario's step has `temporary:`)
#   {{session_id}}  the session id read from the previous step's output (for resume, retry and compact)
#   {{base_url}}    the fake API's address, http://127.0.0.1:PORT
#   {{api_key}}     a fake API key
#   {{home}}        this run's HOME, kept across its steps and fresh for every run
#   {{workdir}}     the working directory the agent runs in
#   {{target_dir}}  this file's folder
#   {{python}}      the interpreter the harness runs on
#   {{checkout}}    the agent's code at the revision (with `repo:` only)
# Write {{{{ and }}}} for literal braces. An unknown placeholder is an error when the file is loaded.

# launch: the first step, which starts a session. Replace python3 "{{target_dir}}/agent.py" and its flags
# with your agent's command line.
launch:  [python3, "{{target_dir}}/agent.py", -p, "{{prompt}}", --append-system-prompt, "{{append}}"]
# resume: the next turn of that session, in a fresh process.
resume:  [python3, "{{target_dir}}/agent.py", -p, "{{prompt}}", --resume, "{{session_id}}", --append-system-prompt, "{{append}}"]
# retry: a new try after a wrong answer, in a fresh process; `resume`'s command unless set.
# retry: [python3, "{{target_dir}}/agent.py", -p, "{{prompt}}", --resume, "{{session_id}}", --append-system-prompt, "{{append}}"]
# compact: compact the session's history in a fresh process (scenarios with a `compact` step need it).
compact: [python3, "{{target_dir}}/agent.py", --compact, --resume, "{{session_id}}", --append-system-prompt, "{{append}}"]

# session_id: how the session id is read after every step, in one of three forms:
#   {{stdout_json: KEY}}       the last JSON object on stdout holding KEY, e.g. {{"session_id": "..."}}
#   {{stdout_regex: "REGEX"}}  a regex searched in stdout: its group named session_id, else its first group,
#                            else the whole match
#   {{header: NAME}}           a header of the agent's own requests (e.g. x-session-id)
# Every step must print one in that form (a launcher reads it after each process).
session_id: {{stdout_json: session_id}}
# steps_without_session_id: step kinds (resume, retry, compact) whose output carries no id by the agent's
# design; the previous id carries over. The launch must always print one.
# steps_without_session_id: [compact]

# identity: a regex finding the agent's identity line in its system prompt, searched block by block;
# identity_stable wants the same line in every turn.
identity: {{regex: "(?m)^You are [^\\\\n]*"}}

# side_calls: requests that are not turns of the conversation (a title, a router, a classifier): recorded,
# never judged. A request matching every pattern of one rule ({{model, system, prompt}}, regexes) is one.
# side_calls:
#   - {{system: "^Write a short title"}}

# env: variables added to every step's environment (values may use placeholders). Every step already gets
{told}
#   a HOME, XDG_* folders and TMPDIR of this run, proxy variables pointing at the fake API (traffic meant
#   for other hosts is journaled and refused), and PATH, LANG, LC_*, TERM, TZ, USER, LOGNAME and SHELL from
#   yours. Nothing else of your environment reaches the agent: no keys, tokens or credentials.
{env_key}

# timeout_s: seconds one step may take before its process group is killed (an agent waiting for input
# hangs until then).
timeout_s: 60
"""


# --------------------------------------------------------------------------- the starter scenarios

_KEYS = """\
# name: how reports and `harness run` name this scenario (letters, digits, '.', '_' and '-').
# description: what the scenario guards, for whoever reads its failure.
# append: the text the caller appends to the agent's system prompt ({append} in the target file).
# steps: one fresh process each, in order. `launch` starts the session (first step only); `resume` and
#   `retry` continue it from its session id; `compact` compacts it. `prompt` is the user's message
#   ({prompt}); `reply` is what the fake model answers (a string, or a list: one reply per request);
#   `summary` is the fake model's answer to a compaction request.
# checks: the properties judged over every turn's request, each a pass or a fail with the bytes as evidence.
#   Left out, every check the scenario has what it needs for is judged.
# expect: known verdicts of named targets, so a known failure does not fail the gate, e.g.
#   expect:
#     my-agent@old-release: {appended_exactly_once: fail}
"""

RETRY_SCENARIO = f"""\
# A starter scenario written by `harness init`: the incident the harness was first built for, in miniature.
{_KEYS}
name: retry-after-wrong-answer
description: >
  A wrong answer, a retry in a fresh process, then a resume. Every turn must keep the agent's identity
  line, the caller's appended text (exactly once) and the cacheable prefix, and carry the turns before it.
append: "Task prompt: answer with one number."
steps:
  - launch:  {{prompt: "What is 6*7?", reply: "41"}}
  - retry:   {{prompt: "Your answer was incorrect. Try again.", reply: "42"}}
  - resume:  {{prompt: "What is 2+2?", reply: "4"}}
checks: [identity_stable, appended_exactly_once, prefix_stable, history_preserved]
"""

COMPACTION_SCENARIO = f"""\
# A starter scenario written by `harness init`: compaction in its own process, then the session resumed.
{_KEYS}
name: compaction-then-resume
description: >
  Two turns, an explicit compaction in its own process, then two more turns. After the compaction the
  history is the summary, but the instructions, the identity and the prefix must be what they were.
append: "Rules: never delete files; report every command you run."
steps:
  - launch:  {{prompt: "List the three primary colours.", reply: "Red, yellow and blue."}}
  - resume:  {{prompt: "Now the secondary ones.", reply: "Orange, green and purple."}}
  - compact: {{summary: "The user asked for primary then secondary colours; both lists were given."}}
  - resume:  {{prompt: "Which of those is a mix of red and blue?", reply: "Purple."}}
  - resume:  {{prompt: "And of yellow and blue?", reply: "Green."}}
checks: [identity_stable, appended_exactly_once, prefix_stable, history_preserved]
"""

SCENARIOS = {"retry-after-wrong-answer.yaml": RETRY_SCENARIO, "compaction-then-resume.yaml": COMPACTION_SCENARIO}
