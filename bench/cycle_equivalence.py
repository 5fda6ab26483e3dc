"""Equivalence check for speed work on the simulators: same cycles, memory and counters, program by program.

Speed work on the cycle model (and on the semantics fsim shares with it) must not change a
single result.  This script runs a fixed corpus on the cycle model and records, per program,
the cycle count, a SHA-256 of the final DRAM image, the work counters, the timing statistics
(every unit's busy / wait counters) and the tokens left in the queues; then it compares two
such records exactly.  The corpus: ``--count`` fuzz programs spread over the presets
(``tiny`` / ``default`` / ``wide``, seeds 0, 1, ... per preset, as ``vdla fuzz`` draws them),
the im2col GEMM of ResNet-18's 56x56 64->64 3x3 layer that ``bench/cycle_sim.py`` times, and
ResNet-18's 1x1 layers C3 and C5 as the VDLA compiler emits them (``--no-layers`` skips
the layers).  Every program carries a digest of its instructions and initial DRAM, so two trees
whose program generators differ are reported as such rather than as a timing difference.

Ways to run it:

* ``--peer REV``: the corpus on commit ``REV``'s simulators (the tree ``git archive``d into a
  temporary folder, this script run there in a subprocess) and on this tree's, compared;
* ``--record FILE``: write this tree's record (JSON); ``--against FILE``: compare with one.

``tests/cycle/test_cycle_equivalence.py`` replays a small sample against
``tests/cycle/data/cycle_equivalence.json`` (written with ``--record`` by the reference code;
refresh it, after checking with ``--peer``, when a timing change is intended).

Run: ``python bench/cycle_equivalence.py --count 300 --peer main``; exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from tqdm import tqdm

PRESETS = ("tiny", "default", "wide")
LAYERS = ("C3", "C5")


def digest(*arrays: np.ndarray | bytes) -> str:
    """SHA-256 over the bytes of ``arrays``, hex (first 24 digits: collisions are not a concern here)."""
    h = hashlib.sha256()
    for a in arrays:
        h.update(a if isinstance(a, bytes) else np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:24]


def corpus(count: int, layers: bool, presets: tuple[str, ...] = PRESETS) -> Iterator[tuple[str, Any]]:
    """``(name, Program)`` of the corpus, built lazily by this tree's generators."""
    from vdla.fuzz.generator import build_program, draw_plan
    from vdla_hw.config import load_config

    for k in range(count):
        preset = presets[k % len(presets)]
        seed = k // len(presets)
        cfg = load_config(preset)
        yield f"fuzz {preset} seed {seed}", build_program(cfg, draw_plan(cfg, seed, max_rounds=6))[0]
    if not layers:
        return
    from vdla.runtime.workloads import GemmTiling, tiled_gemm_program

    cfg = load_config("default")
    yield "cycle_sim im2col GEMM 3136x576x64 vt2", tiled_gemm_program(
        cfg, 56 * 56, 64 * 9, 64, virtual_threads=2, tiling=GemmTiling(8, 4, 4))[0]
    from vdla.compiler.vdla.target import VdlaTarget
    from vdla.compiler.vdla.topi import RESNET18_CONVS, Requantize, compile_conv2d, random_conv_data, requant_shift

    target = VdlaTarget.from_config("default")
    for name in LAYERS:
        wl = RESNET18_CONVS[name]
        compiled = compile_conv2d(wl, target, epilogue=Requantize(shift=requant_shift(wl)))
        yield f"resnet18 {name} compiled", compiled.module.bind(*compiled.pack_inputs(*random_conv_data(wl)))


def outcome(program: Any) -> dict[str, Any]:
    """What the cycle model gives for ``program``, in comparable JSON form."""
    from vdla.simulator.cycle import run_cycle

    # Illegal programs (fuzz draws none) would not encode; their repr identifies them as well.
    try:
        words: np.ndarray | bytes = program.config.isa.encode_program(program.instructions)
    except Exception:  # noqa: BLE001
        words = repr(program.instructions).encode()
    record: dict[str, Any] = {"program": digest(words, program.dram)}
    try:
        r = run_cycle(program.config, program.instructions, program.dram, insn_addr=program.insn_addr)
    except Exception as exc:  # noqa: BLE001 - an error is a result to compare like any other
        record["error"] = f"{type(exc).__name__}: {exc}"
        return record
    record.update(cycles=int(r.stats.cycles), dram=digest(r.dram), counters=dict(r.counters),
                  tokens_left=dict(r.tokens_left), stats=json.loads(json.dumps(asdict(r.stats))))
    return record


def record(count: int, layers: bool, quiet: bool = False) -> dict[str, dict[str, Any]]:
    """Run the corpus on this tree: ``{program name: outcome}``."""
    out: dict[str, dict[str, Any]] = {}
    total = count + (1 + len(LAYERS) if layers else 0)
    for name, program in tqdm(corpus(count, layers), total=total, desc="cycle model", unit="prog", disable=quiet):
        out[name] = outcome(program)
    return out


def compare(ref: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[str]:
    """Lines describing every difference between two records (empty when they agree exactly)."""
    lines = []
    for name in ref.keys() | new.keys():
        a, b = ref.get(name), new.get(name)
        if a is None or b is None:
            lines.append(f"{name}: only in the {'new' if a is None else 'reference'} record")
        elif a["program"] != b["program"]:
            lines.append(f"{name}: the two trees build different programs (generator changed); not comparable")
        else:
            for key in sorted(a.keys() | b.keys()):
                if a.get(key) != b.get(key):
                    lines.append(f"{name}: {key} differs: reference {_short(a.get(key))} vs new {_short(b.get(key))}")
    return sorted(lines)


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) < 300 else text[:300] + "..."


def run_peer(rev: str, count: int, layers: bool) -> dict[str, dict[str, Any]]:
    """The corpus on commit ``rev``'s code: this script run in an archived copy of that tree."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # this file may be loaded by path (the test does)
    from peer_tree import peer_tree

    with peer_tree(rev, prefix="cycle_equiv_peer_") as (commit, tree):
        out = tree.parent / "peer.json"
        args = [sys.executable, str(Path(__file__).resolve()), "--count", str(count), "--record", str(out), "--quiet"]
        if not layers:
            args.append("--no-layers")
        env = dict(os.environ, PYTHONPATH=str(tree))
        proc = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"peer {rev} ({commit}) failed:\n{proc.stderr[-2000:]}")
        return json.loads(out.read_text())["programs"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=300, help="fuzz programs, spread over the presets (default 300)")
    parser.add_argument("--no-layers", action="store_true", help="skip the ResNet-18 GEMM and compiled layers")
    parser.add_argument("--peer", metavar="REV", help="compare with the simulators of commit REV, run now")
    parser.add_argument("--against", metavar="FILE", help="compare with a record written by --record")
    parser.add_argument("--record", metavar="FILE", help="write this tree's record to FILE")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args()
    layers = not args.no_layers
    if args.peer:
        print(f"running the corpus on {args.peer} ...", file=sys.stderr)
        ref = run_peer(args.peer, args.count, layers)
    elif args.against:
        ref = json.loads(Path(args.against).read_text())["programs"]
    else:
        ref = None
    mine = record(args.count, layers, args.quiet)
    if args.record:
        Path(args.record).write_text(json.dumps({"count": args.count, "layers": layers, "programs": mine}, indent=1,
                                                sort_keys=True))
    if ref is None:
        return 0
    diffs = compare(ref, mine)
    for line in diffs:
        print(line)
    same = len(ref) - len({d.split(":")[0] for d in diffs})
    print(f"{same} of {len(ref)} programs identical (cycles, DRAM digest, counters, stats, tokens left)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
