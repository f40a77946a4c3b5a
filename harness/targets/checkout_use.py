"""A revision target must run its revision: a command that reaches nothing of the checkout is refused at load.

`repo:` and `rev:` promise that the agent's code comes from REV. A command
that never mentions `{checkout}` (a console script installed from the working
tree, say) runs the same installed program at every revision: two revisions
of such a target are one program judged twice, and the gate passes whatever
the branch did. Each command must name the checkout in its own arguments or
through `env` (which every command gets).

Naming it is no proof that the code runs from there
(`[my-agent, --config, "{checkout}/c.json"]` passes); naming nothing is proof
that it does not, and that is the case refused.

`{target_dir}` counts as the checkout when it is a folder of the tree the code
runs from (the caller says; see _TargetReader.target_dir_is_code): a target
file read at REV lies in REV's worktree, so `{target_dir}/agent.py` is REV's
agent.py as surely as `{checkout}/agent.py` would be, and refusing it would
only make users spell one path two ways. A target file read from the working
tree for a revision has its folder in the working tree: `{target_dir}` there
is the same code at every revision and does not count.
"""

from __future__ import annotations

from typing import Mapping

from harness.targets.base import template_fields


def command_without_checkout(commands: Mapping[str, tuple[str, ...]], env: Mapping[str, str],
                             target_dir_is_code: bool) -> tuple[str, str] | None:
    """(kind, why) for the first command that runs nothing of the checkout, or None when every command reaches it."""
    reaches = {"checkout", "target_dir"} if target_dir_is_code else {"checkout"}
    if any(reaches & set(template_fields(value)) for value in env.values()):
        return None
    for kind, argv in commands.items():
        names = {name for item in argv for name in template_fields(item)}
        if reaches & names:
            continue
        aside = ""
        if "target_dir" in names:
            aside = (" ({target_dir} is the target file's folder in the working tree, the same at every revision, "
                     "since the file was read from the working tree)")
        return kind, (
            f"runs nothing of the agent's code that `repo:` names: neither this command nor `env` uses {{checkout}}"
            f"{aside}, so it runs the same installed program at every revision and comparing two revisions would "
            "judge one program twice; run the agent from the checkout, for example "
            "[\"{python}\", \"{checkout}/agent.py\", ...], or put the checkout on its path through `env` "
            "(PYTHONPATH: \"{checkout}\" with [\"{python}\", -m, my_agent]); an agent not in git needs no `repo:`"
        )
    return None
