"""The calculator tool and the tool-use loop.

A tool round trip is where launchers most often mangle history (lost
tool_use ids, roles that stop alternating), so the agent carries one real tool
whose results are exact and checkable. Evaluation walks the AST: arithmetic
only, never eval().
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

from .errors import ProtocolError, ToolLoopLimit
from .session import add_assistant_reply

CALCULATOR_TOOL = {
    "name": "calculator",
    "description": "Evaluate an arithmetic expression.",
    "input_schema": {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
}
TOOLS = [CALCULATOR_TOOL]
MAX_REQUESTS_PER_TURN = 10

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_MAX_BITS = 10_000  # keeps 9**9**9 from hanging a run; well inside int->str limits
_MAX_LENGTH = 1000


class CalculatorError(ValueError):
    pass


def calculate(expression: str) -> int | float:
    if not isinstance(expression, str):
        raise CalculatorError("expression must be a string")
    if len(expression) > _MAX_LENGTH:
        raise CalculatorError("expression is too long")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise CalculatorError(f"not an arithmetic expression: {expression!r}") from None
    return _evaluate(tree.body)


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and _power_too_large(left, right):
            raise CalculatorError("result is too large")
        try:
            result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
        except OverflowError:
            raise CalculatorError("result is too large") from None
        if isinstance(result, complex):
            raise CalculatorError("result is not a real number")
        if isinstance(result, float) and not math.isfinite(result):
            raise CalculatorError("result is too large")
        if isinstance(result, int) and result.bit_length() > _MAX_BITS:
            raise CalculatorError("result is too large")
        return result
    raise CalculatorError(f"unsupported syntax: {ast.dump(node)[:80]}")


def _power_too_large(base: float, exponent: float) -> bool:
    if abs(exponent) > _MAX_BITS:
        return True
    return isinstance(base, int) and exponent > 0 and abs(base).bit_length() * exponent > _MAX_BITS


def format_number(value: float) -> str:
    return str(value)


def run_tool(block: dict) -> dict:
    """One tool_use block in, one tool_result block out; failures become is_error results."""
    result = {"type": "tool_result", "tool_use_id": block.get("id")}
    tool_input = block.get("input")
    try:
        if block.get("name") != CALCULATOR_TOOL["name"]:
            raise CalculatorError(f"unknown tool: {block.get('name')!r}")
        if not isinstance(tool_input, dict) or "expression" not in tool_input:
            raise CalculatorError("missing required input 'expression'")
        result["content"] = format_number(calculate(tool_input["expression"]))
    except CalculatorError as exc:
        result["content"] = f"Error: {exc}"
        result["is_error"] = True
    return result


def tool_results(reply: dict) -> list[dict]:
    return [run_tool(b) for b in reply.get("content", []) if b.get("type") == "tool_use"]


def run_tool_loop(
    messages: list[dict],
    send: Callable[[list[dict]], dict],
    *,
    max_requests: int = MAX_REQUESTS_PER_TURN,
) -> tuple[dict, int]:
    """Send until a reply is not tool_use; return it (NOT appended) and the request count.

    The final reply is left to the caller because when it is appended relative to
    saving is itself a behaviour under test (see the forget-last-reply defect).
    """
    for sent in range(1, max_requests + 1):
        reply = send(messages)
        if reply.get("stop_reason") != "tool_use":
            return reply, sent
        results = tool_results(reply)
        if not results:
            raise ProtocolError("stop_reason is tool_use but the reply has no tool_use block")
        add_assistant_reply(messages, reply)
        messages.append({"role": "user", "content": results})
    raise ToolLoopLimit(f"the model was still calling tools after {max_requests} requests in one turn")
