"""Shrinking a failing plan to a small one that fails the same way, and saving it as a regression.

Greedy delta debugging over the :class:`~vdla.fuzz.plan.Plan`: try a list of smaller
plans (drop halves of the rounds, single rounds, fewer threads, single
instructions; then simplify operations: no padding, one row and column, unit
strides (element strides included), single-iteration loops, zero factors, one micro-op, small immediates,
small data values), keep the first that is legal (:func:`check_plan`) and still
fails with the same signature (kind and culprit backend), and start over until no
candidate is accepted or the budget of runs is spent.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from vdla_hw.asm import disassemble, format_uop
from vdla_hw.config import HwConfig

from vdla.runtime.program import Program
from vdla.fuzz.generator import Origin, build_program
from vdla.fuzz.plan import AluStep, GemmOp, LoadOp, Loop, Plan, Round, StoreOp, UopLoadOp, is_legal
from vdla.fuzz.runner import Failure, Outcome, Runner

DEFAULT_BUDGET = 600
"""Most candidate runs per shrink."""


@dataclass(frozen=True)
class Shrunk:
    """The smallest failing plan found, its program and failure, and how many runs it took."""

    plan: Plan
    program: Program
    failure: Failure
    runs: int


def shrink_plan(cfg: HwConfig, plan: Plan, failure: Failure, runner: Runner, *, budget: int = DEFAULT_BUDGET,
                progress: Callable[[Plan], None] | None = None) -> Shrunk:
    """Shrink ``plan`` (which fails with ``failure`` on ``runner``) to a smaller plan failing the same way."""
    seen: set[Plan] = {plan}
    runs = 0
    best, best_failure = plan, failure
    improved = True
    while improved and runs < budget:
        improved = False
        for cand in candidates(best):
            if cand in seen or not is_legal(cfg, cand):
                continue
            seen.add(cand)
            runs += 1
            outcome = _judge(cfg, cand, runner)
            if outcome.failure is not None and outcome.failure.signature == failure.signature:
                best, best_failure, improved = cand, outcome.failure, True
                if progress:
                    progress(best)
                break
            if runs >= budget:
                break
    program, _ = build_program(cfg, best)
    return Shrunk(best, program, best_failure, runs)


def _judge(cfg: HwConfig, plan: Plan, runner: Runner) -> Outcome:
    program, _ = build_program(cfg, plan)
    return runner.run(program)[0]


# ---- candidates ------------------------------------------------------------------------


def candidates(plan: Plan) -> Iterator[Plan]:
    """Smaller variants of ``plan``, biggest cuts first (legality is checked by the caller)."""
    rounds = plan.rounds
    n = len(rounds)
    if n > 1:
        yield replace(plan, rounds=rounds[: n // 2])
        yield replace(plan, rounds=rounds[n // 2:])
        for k in range(n):
            yield replace(plan, rounds=rounds[:k] + rounds[k + 1:])
    for t in range(1, plan.threads):
        yield replace(plan, threads=t)
    for k, rnd in enumerate(rounds):
        for variant in _round_variants(rnd):
            yield replace(plan, rounds=rounds[:k] + (variant,) + rounds[k + 1:])
    for amplitude in (1, 3, 15, 127):
        if amplitude < plan.data.amplitude:
            yield replace(plan, data=replace(plan.data, amplitude=amplitude))


def _round_variants(rnd: Round) -> Iterator[Round]:
    for attr in ("loads", "computes", "stores"):
        ops = getattr(rnd, attr)
        for k in range(len(ops)):
            if len(ops) > 1:
                yield replace(rnd, **{attr: ops[:k] + ops[k + 1:]})
            for simpler in _op_variants(ops[k]):
                yield replace(rnd, **{attr: ops[:k] + (simpler,) + ops[k + 1:]})


def _op_variants(op: object) -> Iterator[object]:
    if isinstance(op, LoadOp):
        if op.elem_stride > 1:
            yield replace(op, elem_stride=1)
        yield replace(op, pad=(0, 0, 0, 0))
        yield replace(op, y=1)
        yield replace(op, x=1, stride=max(1, op.stride - op.x + 1))
        yield replace(op, stride=op.x)
        yield replace(op, offset=0)
    elif isinstance(op, StoreOp):
        if op.bias is not None:  # a bias row needs its accumulator tile written: one LOAD less to keep
            yield replace(op, bias=None)
        yield replace(op, y=1)
        yield replace(op, x=1)
        yield replace(op, stride=op.x)
        yield replace(op, offset=0)
    elif isinstance(op, UopLoadOp):
        for k in range(len(op.uops)):
            if len(op.uops) > 1:
                yield replace(op, uops=op.uops[:k] + op.uops[k + 1:])
    elif isinstance(op, (GemmOp, AluStep)):
        for loop in _loop_variants(op.loop):
            yield replace(op, loop=loop)
        if isinstance(op, AluStep) and op.imm not in (None, 0, 1):
            yield replace(op, imm=1)
            yield replace(op, imm=0)


def _loop_variants(loop: Loop) -> Iterator[Loop]:
    yield replace(loop, iter_out=1, iter_in=1, dst=(0, 0), src=(0, 0), wgt=(0, 0))
    yield replace(loop, iter_out=1)
    yield replace(loop, iter_in=1)
    yield replace(loop, dst=(0, 0), src=(0, 0), wgt=(0, 0))
    if loop.end - loop.bgn > 1:
        yield replace(loop, end=loop.bgn + 1)
        yield replace(loop, bgn=loop.end - 1)


# ---- saving ----------------------------------------------------------------------------


def assembly_text(program: Program, failure: Failure, origins: tuple[Origin | None, ...] = ()) -> str:
    """The program as assembly: instructions (with the plan round and module they come from),
    micro-op lists and buffers as comments."""
    isa = program.config.isa
    lines = [f"# {failure.kind} on {failure.backend} (config {program.config.name})"]
    lines += ["# " + line for line in failure.detail.splitlines()]
    lines.append("# buffers: " + ", ".join(f"{n}@{s.offset}+{s.nbytes}" for n, s in program.buffers.items()))
    for name, spec in program.buffers.items():
        if spec.kind == "uop":
            words = program.dram[spec.offset:spec.offset + spec.nbytes].view("<u4")
            lines.append(f"# {name} (DRAM element {spec.addr}): " + "; ".join(format_uop(isa.decode_uop(int(w)))
                                                                               for w in words))
    body = disassemble(program.instructions, numbered=True).splitlines()
    for k, origin in enumerate(origins[: len(body)]):
        if origin is not None:
            body[k] += f"  round {origin.round} {origin.module} {origin.index}"
    return "\n".join(lines + body) + "\n"


_TEST_TEMPLATE = '''\
"""Regression test written by `vdla fuzz`: {kind} on {backend} (config {config}).

{detail}
"""

from pathlib import Path

import numpy as np

from vdla.runtime.backends import run
from vdla.runtime.program import Program

PROGRAM = Path(__file__).with_name("{name}.vdlaprog")
BACKENDS = {backends!r}
OPTIONS = {options!r}
"""Backend options of the fuzz run (e.g. the rtl backend's rtl_dir, the RTL under test)."""
CYCLE_THRESHOLD = {threshold!r}


def test_{name}() -> None:
    program = Program.load(PROGRAM)
    results = {{b: run(program, b, **OPTIONS.get(b, {{}})) for b in BACKENDS}}
    ref = results[BACKENDS[0]]
    for b in BACKENDS[1:]:
        differ = np.flatnonzero(results[b].dram != ref.dram)
        assert differ.size == 0, f"{{b}} differs from {{BACKENDS[0]}} at DRAM bytes {{differ[:8].tolist()}}"
    if "cycle" in results and "rtl" in results:
        error = (results["cycle"].cycles - results["rtl"].cycles) / results["rtl"].cycles
        assert abs(error) <= CYCLE_THRESHOLD, f"cycle model off the RTL by {{error:+.1%}}"
'''


def save_regression(shrunk: Shrunk, out_dir: str | Path, name: str, reference: str, cycle_threshold: float,
                    options: Mapping[str, Mapping[str, Any]] | None = None) -> list[Path]:
    """Write ``<name>.vdlaprog``, ``<name>.s`` and ``test_<name>.py`` into ``out_dir``; returns the paths.

    ``options`` are the backend options the test passes on (e.g. ``{"rtl": {"rtl_dir": ...}}``).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    prog = shrunk.program.save(out / f"{name}.vdlaprog")
    asm = out / f"{name}.s"
    asm.write_text(assembly_text(shrunk.program, shrunk.failure, build_program(shrunk.program.config, shrunk.plan)[1]))
    backends = tuple(dict.fromkeys((reference, shrunk.failure.backend) if shrunk.failure.kind != "cycles"
                                   else ("fsim", "cycle", "rtl")))
    detail = textwrap.indent(shrunk.failure.detail, "    ").strip()
    test = out / f"test_{name}.py"
    test.write_text(_TEST_TEMPLATE.format(kind=shrunk.failure.kind, backend=shrunk.failure.backend,
                                          config=shrunk.program.config.name, detail=detail, name=name,
                                          backends=backends, threshold=cycle_threshold,
                                          options={k: dict(v) for k, v in (options or {}).items() if v}))
    return [prog, asm, test]
