"""What each module of the RTL is working on, from ``vdla_top``'s ``dbg_*`` outputs.

The watchdogs of the ``rtl`` backend and of the cocotb system tests call
:func:`describe_machine` when a run does not finish, so the report names the
instruction fetch, load, compute and store were each stuck on and the queue
contents, the same way the simulators' deadlock reports do.

The debug outputs (see ``docs/rtl.md``):

* ``dbg_fetch_count``: instructions fetch has dispatched;
* ``dbg_<module>_count``: instructions the module has taken from its command queue;
* ``dbg_<module>_state``: 0 idle, 1 popping tokens, 2 executing, 3 pushing tokens;
* ``dbg_cmd_<module>``: entries in the module's command queue;
* ``dbg_tok_<queue>``: tokens in the dependency queue ``l2c``, ``c2l``, ``c2s``, ``s2c``.

Any other ``dbg_*`` output is listed with its raw value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vdla_hw.asm import format_insn
from vdla_hw.isa import DEP_QUEUE_NAMES, FLAG_QUEUES, Insn, Module, module_of

STATES = ("idle", "waiting to pop its tokens", "executing", "waiting for room to push its tokens")
TOKEN_QUEUES = DEP_QUEUE_NAMES


def module_programs(insns: Sequence[Insn]) -> dict[Module, list[int]]:
    """Program indices of each module's instructions, in program order."""
    out: dict[Module, list[int]] = {m: [] for m in Module}
    for k, insn in enumerate(insns):
        out[module_of(insn)].append(k)
    return out


def _flags_text(insn: Insn, module: Module, popping: bool, debug: Mapping[str, int]) -> str:
    """The queues an instruction pops (or pushes) and their occupancy."""
    queues = FLAG_QUEUES[module]
    names = ("pop_prev", "pop_next") if popping else ("push_prev", "push_next")
    parts = []
    for flag in names:
        queue = queues.get(flag)
        if queue and getattr(insn.deps, flag):
            held = debug.get(f"tok_{queue}")
            parts.append(f"{queue} (holds {held})" if held is not None else queue)
    return ", ".join(parts)


def describe_module(module: Module, insns: Sequence[Insn], program: Sequence[int], debug: Mapping[str, int]) -> str:
    """One line: what ``module`` is doing according to ``debug``."""
    name = module.name.lower()
    state = debug.get(f"{name}_state")
    count = debug.get(f"{name}_count")
    if state is None or count is None:
        return "no debug outputs"
    if state != 0:
        if not 0 < count <= len(program):
            return f"{STATES[state]} on its instruction #{count} (the program gives it only {len(program)})"
        idx = program[count - 1]
        insn = insns[idx]
        text = f"{STATES[state]} on instruction {idx} ({format_insn(insn)})"
        if state in (1, 3):
            text += f" [{_flags_text(insn, module, state == 1, debug)}]"
        return text
    if count < len(program):
        return f"idle, waiting for instruction {program[count]} from fetch ({count}/{len(program)} taken)"
    return f"idle, all {len(program)} of its instructions taken"


def describe_modules(insns: Sequence[Insn], debug: Mapping[str, int]) -> dict[str, str]:
    """Module name -> what it is doing (see :func:`describe_module`)."""
    programs = module_programs(insns)
    return {m.name.lower(): describe_module(m, insns, programs[m], debug) for m in Module}


def describe_machine(insns: Sequence[Insn], debug: Mapping[str, int], cmd_queue_depth: int | None = None,
                     dep_queue_depth: int | None = None) -> str:
    """A multi-line report of every module and queue (``debug`` without the ``dbg_`` prefix)."""
    lines = []
    fetched = debug.get("fetch_count")
    if fetched is not None:
        if fetched < len(insns):
            target = module_of(insns[fetched]).name.lower()
            held = debug.get(f"cmd_{target}")
            room = f" (its queue holds {held}/{cmd_queue_depth})" if held is not None and cmd_queue_depth else ""
            lines.append(f"fetch: dispatched {fetched}/{len(insns)}; next is instruction {fetched} "
                         f"({format_insn(insns[fetched])}) for the {target} command queue{room}")
        else:
            lines.append(f"fetch: dispatched all {len(insns)} instructions")
    lines += [f"{name}: {text}" for name, text in describe_modules(insns, debug).items()]
    toks = [f"{q}={debug[f'tok_{q}']}" for q in TOKEN_QUEUES if f"tok_{q}" in debug]
    cmds = [f"{m.name.lower()}={debug[f'cmd_{m.name.lower()}']}" for m in Module if f"cmd_{m.name.lower()}" in debug]
    if toks:
        lines.append("dependency queues: " + " ".join(toks) + (f" (depth {dep_queue_depth})" if dep_queue_depth else ""))
    if cmds:
        lines.append("command queues: " + " ".join(cmds) + (f" (depth {cmd_queue_depth})" if cmd_queue_depth else ""))
    known = {"fetch_count"} | {f"tok_{q}" for q in TOKEN_QUEUES}
    known |= {f"{m.name.lower()}_{k}" for m in Module for k in ("state", "count")}
    known |= {f"cmd_{m.name.lower()}" for m in Module}
    other = [f"{k}={v}" for k, v in sorted(debug.items()) if k not in known]
    if other:
        lines.append("other debug outputs: " + " ".join(other))
    if not debug:
        lines.append("(vdla_top has no dbg_* outputs: no per-module state is available)")
    return "\n".join(lines)
