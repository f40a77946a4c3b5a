"""`harness import PATH`: what a user has from an incident, as a scenario that replays it.

Four artefacts are read (harness/importing/<format>.py each): a Claude Code
session transcript, a harness journal, an Inspect eval log of inspect_swe,
and a plain JSONL of captured request bodies. Each becomes a Draft: the steps
the artefact shows, the caller's appended text where it can be found, and a
note for everything that had to be assumed (harness/importing/draft.py).
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import InputError
from harness.importing import claude_transcript, inspect_log, journal, request_log
from harness.importing.appended import infer_append
from harness.importing.calls import Call, infer_steps, system_blocks
from harness.importing.draft import Draft

FORMATS = ("claude-transcript", "journal", "inspect-log", "requests")
INSPECT_CHECKS = ("launch_appended_exactly_once", "launch_prompt_from_caller")


def detect_format(path: Path) -> str:
    """Which artefact this is, from its content (not its name)."""
    if not path.is_file():
        raise InputError("no such file" if not path.exists() else "not a file", path)
    if inspect_log.looks_like_inspect_log(path):
        return "inspect-log"
    records = journal.read_jsonl(path)
    if not records:
        raise InputError("empty file: nothing to import", path)
    first = records[0]
    if journal.is_journal_line(first):
        return "journal"
    if any(claude_transcript.is_transcript_line(r) for r in records[:20]):
        return "claude-transcript"
    if request_log.is_request_body(request_log.body_of(first)):
        return "requests"
    raise InputError(
        "not an artefact harness import reads: expected a Claude Code transcript, a harness journal, an Inspect "
        f"eval log or one request body per line (line 1 has keys {', '.join(sorted(first)[:8])})", path)


def read_draft(path: Path, fmt: str | None = None, append: str | None = None, sample: str | None = None) -> Draft:
    fmt = fmt or detect_format(path)
    if sample is not None and fmt != "inspect-log":
        raise InputError(f"--sample picks a sample of an Inspect log; this file is read as {fmt}", path)
    if fmt == "inspect-log":
        return _from_inspect(path, append, sample)
    records = journal.read_jsonl(path)
    if fmt == "claude-transcript":
        return _from_transcript(path, records, append)
    if fmt == "journal":
        return _from_calls(path, journal.calls_from_journal(path, records), "a harness journal",
                           "the journaled requests' system prompts", append)
    if fmt == "requests":
        draft = _from_calls(path, request_log.calls_from_requests(path, records), "a log of captured request bodies",
                            "the captured requests' system prompts", append)
        draft.note("The log holds requests only: replies are taken from the history each later request repeats.")
        return draft
    raise InputError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def _from_transcript(path: Path, records: list[dict], append: str | None) -> Draft:
    notes: list[str] = []
    steps = claude_transcript.steps_from_transcript(path, records, notes)
    versions = sorted({r["version"] for r in records if isinstance(r.get("version"), str)})
    draft = Draft(source=f"a Claude Code session transcript ({', '.join(versions) or 'version not recorded'})",
                  steps=steps, notes=notes)
    systems = claude_transcript.system_prompts(records)
    text, note = infer_append(systems, append, "the system prompts in the transcript")
    draft.append = text
    draft.note(note)
    draft.note("A prompt sent again after a wrong answer looks like any other resume in a transcript: "
               "such steps are written as `resume` (for Claude Code the same command as a retry).")
    return draft


def _from_calls(path: Path, calls: list[Call], source: str, where: str, append: str | None) -> Draft:
    if not calls:
        raise InputError("no model request in this file: nothing to import", path)
    notes: list[str] = []
    steps = infer_steps(calls, notes)
    draft = Draft(source=source, steps=steps, notes=notes)
    text, note = infer_append(system_blocks(calls), append, where)
    draft.append = text
    draft.note(note)
    return draft


def _from_inspect(path: Path, append: str | None, wanted: str | None) -> Draft:
    header, samples = inspect_log.read_inspect_log(path)
    if not samples:
        raise InputError("the Inspect log holds no samples: nothing to import", path)
    sample = inspect_log.pick_sample(path, samples, wanted)
    calls = inspect_log.calls_from_sample(path, sample)
    if not calls:
        raise InputError(f"sample {sample.get('id')!r} made no model call: nothing to import", path)
    solver = inspect_log.solvers(header)
    notes: list[str] = []
    if len(samples) > 1:
        notes.append(f"The log holds {len(samples)} samples; sample {inspect_log.sample_name(sample)} was imported.")
    if not any(s.startswith("inspect_swe/") for s in solver):
        notes.append(f"The log's solver is {', '.join(solver) or 'not recorded'}, not inspect_swe's: "
                     f"its agent spans are still read as Claude Code launches.")
    steps = infer_steps(calls, notes)
    draft = Draft(source="an Inspect eval log (inspect_swe)", steps=steps, notes=notes, extra_checks=INSPECT_CHECKS)
    caller = inspect_log.caller_text(sample)
    if append is not None or caller is None:
        text, note = infer_append(system_blocks(calls), append, "the logged requests' system prompts")
    else:
        text, note = caller, ("The appended text is the sample's system message, which inspect_swe passes to "
                              "Claude Code with --append-system-prompt.")
    draft.append = text
    draft.note(note)
    draft.note("A retry is inferred where the log scores an answer incorrect and the agent runs again.")
    return draft
