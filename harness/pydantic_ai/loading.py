"""Finding the user's factory, and the disposable world a factory is called in outside a step process.

Shared by the target (which calls the factory once up front, so a typo or a
factory returning something else fails before any run) and by both step modes.
A module given as a file is loaded once per process under a name derived from
its path, exactly as an import would cache it: in-process steps therefore see
the module-level state earlier steps left, as a long-lived host process would.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import Any, Callable


COMPACT_HOOK = "compact"  # module-level `compact(agent, messages) -> messages`, sync or async


class LoadError(Exception):
    """The module, the factory or what it returned is not usable; the message says which and why."""


def is_file_reference(module: str) -> bool:
    return module.endswith(".py") or "/" in module or os.sep in module


def load_module(module: str, search_path: str | None = None) -> Any:
    """A dotted module (found from `search_path` first) or a .py file, imported once per process."""
    if is_file_reference(module):
        path = Path(module).resolve()
        if not path.is_file():
            raise LoadError(f"no such file: {module}")
        name = "harness_user_agent_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
        if name in sys.modules:
            return sys.modules[name]
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))  # the agent's sibling modules import as they would from its folder
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise LoadError(f"cannot load {module} as a Python module")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        try:
            spec.loader.exec_module(loaded)
        except BaseException as exc:
            del sys.modules[name]
            raise LoadError(f"importing {module} raised {type(exc).__name__}: {exc}") from exc
        return loaded
    if search_path and search_path not in sys.path:
        sys.path.insert(0, search_path)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            raise LoadError(f"no module named {module!r} (looked in {search_path or 'sys.path'} first)") from exc
        raise LoadError(f"importing {module} raised {type(exc).__name__}: {exc}") from exc
    except BaseException as exc:
        raise LoadError(f"importing {module} raised {type(exc).__name__}: {exc}") from exc


def factory_of(module_obj: Any, module: str, function: str) -> Callable[[], Any]:
    factory = getattr(module_obj, function, None)
    if factory is None:
        raise LoadError(f"{module} has no function {function!r}")
    if not callable(factory):
        raise LoadError(f"{module}:{function} is not callable ({type(factory).__name__}); expected a function returning a pydantic_ai.Agent")
    return factory


def build_agent(factory: Callable[[], Any], where: str) -> Any:
    """Call the factory; anything but an agent (pydantic_ai's AbstractAgent, Agent included) is refused."""
    from pydantic_ai.agent import AbstractAgent

    try:
        agent = factory()
    except Exception as exc:
        raise LoadError(f"{where}() raised {type(exc).__name__}: {exc}") from exc
    if inspect.isawaitable(agent):
        if inspect.iscoroutine(agent):
            agent.close()  # never awaited, on purpose
        raise LoadError(f"{where} is async; it must return a pydantic_ai.Agent directly")
    if not isinstance(agent, AbstractAgent):
        raise LoadError(f"{where}() returned {type(agent).__module__}.{type(agent).__name__}, not a pydantic_ai.Agent")
    return agent


def compact_hook(module_obj: Any) -> Callable[..., Any] | None:
    hook = getattr(module_obj, COMPACT_HOOK, None)
    return hook if callable(hook) else None
