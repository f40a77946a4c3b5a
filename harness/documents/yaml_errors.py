"""PyYAML's own errors, worded for the person who wrote the file: the line, the column and what was wrong.

PyYAML words a syntax error as a context and a problem, each with its own mark,
and a reader error as a character position; a scenario or target file's author
needs one line number and one sentence, like every other InputError.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.errors import InputError


def yaml_input_error(error: yaml.YAMLError, text: str, path: str | Path | None) -> InputError:
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        problem = (error.problem or "").strip()
        context = (error.context or "").strip()
        if context and error.context_mark is not None and (
            mark is None or error.context_mark.line != mark.line or not problem
        ):
            context += f" started on line {error.context_mark.line + 1}"
        if problem and context:
            # PyYAML pairs them as "<context>, <problem>" ("expected a single
            # document in the stream ..., but found another document").
            detail = f"{context}, {problem}" if problem.startswith("but ") else f"{problem} ({context})"
        else:
            detail = problem or context or "malformed YAML"
        where = f" at column {mark.column + 1}" if mark is not None else ""
        return InputError(f"invalid YAML{where}: {detail}", path, mark.line + 1 if mark is not None else None)
    if isinstance(error, yaml.reader.ReaderError):
        before = text[: error.position]
        line = before.count("\n") + 1
        column = error.position - (before.rfind("\n") + 1) + 1
        return InputError(
            f"invalid YAML at column {column}: {error.reason} (character #x{error.character:04x})", path, line
        )
    return InputError(f"invalid YAML: {error}", path)
