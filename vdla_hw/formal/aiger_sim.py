"""ABC's counterexample replayed on the AIGER model it was found on: a check by simulation and a VCD.

ABC (``bmc3``) writes its counterexample as an AIGER witness: the latches' initial values, then the
inputs of every frame. :func:`replay_witness` simulates the binary AIGER model (``design_aiger.aig``,
written by SymbiYosys) on those inputs, gate by gate, and reports the frames at which each
bad-state output is 1 -- an independent check of the solver's claim, by plain evaluation -- and
:func:`write_vcd` writes every named latch and input of the model (``design_aiger.aim``) per frame.
This replaces re-solving the failing step with an SMT solver, which took over ten minutes for the
whole-machine live tasks (docs/rtl.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Aiger:
    """A binary AIGER model: inputs, latches (next-state literal, reset value), outputs and AND gates."""

    inputs: int
    latches: tuple[tuple[int, int], ...]
    outputs: tuple[int, ...]
    """Outputs, then bad-state properties, then constraints, in the file's order (SymbiYosys writes its
    assertions as the outputs)."""
    constraints: int
    ands: tuple[tuple[int, int, int], ...]


def read_aiger(path: Path) -> Aiger:
    """Parse a binary (``aig``) AIGER file."""
    data = path.read_bytes()
    nl = data.index(b"\n")
    head = data[:nl].split()
    if not head or head[0] != b"aig":
        raise ValueError(f"{path} is not a binary AIGER file (header {data[:nl][:40]!r})")
    _m, n_in, n_lat, n_out, n_and, *rest = (int(x) for x in head[1:])
    n_bad = rest[0] if len(rest) > 0 else 0
    n_cons = rest[1] if len(rest) > 1 else 0
    pos = nl + 1
    lines = []
    for _ in range(n_lat + n_out + n_bad + n_cons):
        end = data.index(b"\n", pos)
        lines.append(data[pos:end].split())
        pos = end + 1
    latches = tuple((int(ln[0]), int(ln[1]) if len(ln) > 1 else 0) for ln in lines[:n_lat])
    outputs = tuple(int(ln[0]) for ln in lines[n_lat:])
    ands = []
    for k in range(n_and):
        deltas = []
        for _ in range(2):
            x = shift = 0
            while True:
                byte = data[pos]
                pos += 1
                x |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            deltas.append(x)
        lhs = 2 * (n_in + n_lat + k + 1)
        rhs0 = lhs - deltas[0]
        ands.append((lhs, rhs0, rhs0 - deltas[1]))
    return Aiger(n_in, latches, outputs, n_cons, tuple(ands))


def read_witness(path: Path, model: Aiger) -> tuple[str, list[str]]:
    """(latch initial values, per-frame input values) of an ABC witness (``write_cex -a``: with or without
    the ``1``/``b<i>`` header and the closing ``.``, frames may end in a ``#`` comment)."""
    rows = [ln.split("#")[0].strip() for ln in path.read_text().splitlines()]
    rows = [r for r in rows if r and set(r) <= {"0", "1", "x"}]
    # ABC's `fold` (the constraints folded into the property) appends one latch to the model it solves
    n = len(model.latches)
    at = next((k for k, r in enumerate(rows) if len(r) in (n, n + 1)), None)
    if at is None:
        raise ValueError(f"{path}: no line of {n} latch values")
    init, frames = rows[at][:n], rows[at + 1:]
    if not frames or any(len(f) != model.inputs for f in frames):
        raise ValueError(f"{path}: the frames do not hold {model.inputs} input values each")
    return init, frames


def replay_witness(model: Aiger, init: str, frames: Sequence[str]) -> tuple[list[list[int]], list[list[int]]]:
    """Simulate ``model`` from the latch values ``init`` on the inputs of ``frames`` (``x`` read as 0).

    Returns (per frame the value of every output literal, per frame every latch's value)."""
    n_in, lat = model.inputs, model.latches
    size = 2 * (n_in + len(lat) + len(model.ands) + 1)
    state = [1 if c == "1" else 0 for c in init]
    outs, states = [], []
    for frame in frames:
        v = [0] * size
        for i, c in enumerate(frame):
            v[2 * (i + 1)] = c == "1"
        for j, s in enumerate(state):
            v[2 * (n_in + j + 1)] = s
        for lhs, a, b in model.ands:
            v[lhs] = (v[a & ~1] ^ (a & 1)) & (v[b & ~1] ^ (b & 1))
        outs.append([int(v[o & ~1] ^ (o & 1)) for o in model.outputs])
        states.append(state)
        state = [int(v[nxt & ~1] ^ (nxt & 1)) for nxt, _ in lat]
    return outs, states


def bad_frames(outs: Sequence[Sequence[int]], n_bad: int, n_cons: int) -> tuple[list[int | None], int | None]:
    """Per bad-state property the first frame it is 1 at, among the frames where every constraint held so far;
    and the first frame a constraint fails (None: none), after which nothing counts."""
    first: list[int | None] = [None] * n_bad
    broken = None
    for f, row in enumerate(outs):
        cons = row[len(row) - n_cons:] if n_cons else []
        if any(c == 0 for c in cons):
            broken = f
            break
        for i in range(n_bad):
            if row[i] and first[i] is None:
                first[i] = f
    return first, broken


def write_vcd(path: Path, names: Path, init_frames: tuple[list[list[int]], Sequence[str]], model: Aiger) -> None:
    """A VCD of every named input and latch (``design_aiger.aim``: ``input|latch <index> <bit> <name>``), one
    time step per frame."""
    states, frames = init_frames
    signals: dict[str, dict[int, tuple[str, int]]] = {}
    for line in names.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] in ("input", "latch"):
            signals.setdefault(" ".join(parts[3:]).replace(" ", "_"), {})[int(parts[2])] = (parts[0], int(parts[1]))
    ids = {name: f"s{k}" for k, name in enumerate(sorted(signals))}
    out = ["$timescale 1ns $end", "$scope module top $end"]
    for name in sorted(signals):
        width = max(signals[name]) + 1
        out.append(f"$var wire {width} {ids[name]} {name} $end")
    out += ["$upscope $end", "$enddefinitions $end"]
    last: dict[str, str] = {}
    for f, (state, frame) in enumerate(zip(states, frames)):
        out.append(f"#{10 * f}")
        for name in sorted(signals):
            bits = signals[name]
            val = "".join(str(int(frame[i] == "1") if kind == "input" else state[i])
                          for b in range(max(bits), -1, -1) for kind, i in [bits.get(b, ("latch", -1))]
                          if i >= 0) or "0"
            if last.get(name) != val:
                out.append(f"b{val} {ids[name]}")
                last[name] = val
    path.write_text("\n".join(out) + "\n")


def replay_parallel(model: Aiger, init: Sequence[int], frames: Sequence[Sequence[int]],
                    width: int) -> tuple[list[list[int]], list[list[int]]]:
    """:func:`replay_witness` for ``width`` runs at once: every value is an integer whose bit k is run k's.

    ``init``: per latch its initial values; ``frames``: per frame, per input its values. Returns (per frame
    every output literal's values, per frame every latch's values). Python's integers make each AND gate
    one operation for all runs, so a few hundred DRAM schedules cost about what one does."""
    mask = (1 << width) - 1
    n_in, lat = model.inputs, model.latches
    size = 2 * (n_in + len(lat) + len(model.ands) + 1)
    state = [int(s) & mask for s in init]
    outs, states = [], []
    for frame in frames:
        v = [0] * size
        v[1] = mask  # literal 1: constant true
        for i, x in enumerate(frame):
            v[2 * (i + 1)], v[2 * (i + 1) + 1] = x & mask, ~x & mask
        for j, s in enumerate(state):
            v[2 * (n_in + j + 1)], v[2 * (n_in + j + 1) + 1] = s, ~s & mask
        for lhs, a, b in model.ands:
            x = v[a] & v[b]
            v[lhs], v[lhs + 1] = x, ~x & mask
        outs.append([v[o] for o in model.outputs])
        states.append(state)
        state = [v[nxt] for nxt, _ in lat]
    return outs, states
