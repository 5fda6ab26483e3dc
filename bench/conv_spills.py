"""Benchmark (object code, not time): the vector spills of one conv layer's schedule configs, per target.

Per layer (a ``conv2d_nchwc`` task, blocked as ``bench/conv_knobs.py`` blocks it) and per ``--target``, each
config is built as the tuner builds it (``measure.build_job``) and its shared object disassembled
(``objdump -d``): a vector instruction (an ``xmm``/``ymm``/``zmm`` operand) whose memory operand is a fixed
offset from ``%rsp`` or ``%rbp`` (no index register: the stack's padded rows are read with one) is a spill
store when that operand is its destination and a reload otherwise (reloads folded into FMAs count too).
A kernel that does not spill still has a store or two and a reload in its prologue (1 and 2 here).
Such a kernel's time moves with the stack position of its call (``bench/spill_stack.py``).

Configs are ``name:knob=value,...`` over each target's default (``default`` alone: the default as it is);
``TARGET/name:...`` applies to one target only.

Run: ``python bench/conv_spills.py --layer 3,32,224,224,3,2 --nchw-input --config default --config ow8:ow_block=8
[--target "llvm -mcpu=znver4" --target "llvm -mcpu=haswell"]``; writes ``bench/results/conv_spills.json``.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from conv_knobs import layer_task, parse_config
from host import host_line, host_record

from vdla.compiler.autotune.measure import build_job
from vdla.compiler.autotune.template import template_for

ROOT = Path(__file__).resolve().parents[1]
#: A fixed stack offset: ``0x40(%rsp)``, ``-0x80(%rbp)``, ``(%rsp)``; an indexed ``(%rsp,%rax,4)`` does not match.
_STACK_SLOT = re.compile(r"(?:-?0x[0-9a-f]+)?\(%r[sb]p\)")
_VECTOR = re.compile(r"%[xyz]mm\d+")


def count_spills(disassembly: str) -> tuple[int, int]:
    """``(reloads, stores)``: vector instructions of ``objdump -d`` (AT&T syntax) text reading from or writing to
    a fixed stack offset."""
    reloads = stores = 0
    for line in disassembly.splitlines():
        instruction = line.split("\t")[-1].strip()
        _, _, operands = instruction.partition(" ")
        if not _VECTOR.search(operands) or not _STACK_SLOT.search(operands):
            continue
        if _STACK_SLOT.search(operands.rsplit(",", 1)[-1]):
            stores += 1
        else:
            reloads += 1
    return reloads, stores


def spills_of(artifact: bytes) -> tuple[int, int]:
    """:func:`count_spills` of a built shared object."""
    with tempfile.NamedTemporaryFile(suffix=".so") as f:
        f.write(artifact)
        f.flush()
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f.name], capture_output=True, text=True,
                             check=True).stdout
    return count_spills(dis)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layer", action="append", required=True, metavar="C,K,H,W,KH,STRIDE")
    ap.add_argument("--config", action="append", required=True, metavar="[TARGET/]NAME:KNOB=VALUE,...")
    ap.add_argument("--target", action="append", metavar="LLVM_TARGET",
                    help="compile targets (default: llvm -mcpu=znver4 and llvm -mcpu=haswell)")
    ap.add_argument("--nchw-input", action="store_true", help="the layers are a model's first conv (NCHW input)")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "conv_spills.json"))
    args = ap.parse_args()
    if shutil.which("objdump") is None:
        raise SystemExit("objdump is missing: apt-get install binutils")
    targets = args.target or ["llvm -mcpu=znver4", "llvm -mcpu=haswell"]
    print(f"{host_line()}; object code only (nothing timed)")
    print(f"{'layer':<18} {'target':<20} {'config':<14} {'reloads':>7} {'stores':>6}  knobs")
    rows = []
    for spec in args.layer:
        for target in targets:
            task = layer_task(spec, target, args.nchw_input)
            template = template_for(task)
            default = template.default().to_dict()
            configs = {}
            for c in args.config:
                only, sep, body = c.rpartition("/") if "/" in c.split(":", 1)[0] else ("", "", c)
                if sep and only != target:
                    continue
                name, cfg = parse_config(body, default)
                why = template.space.why_illegal(template.space.from_dict(cfg))
                if why:
                    raise SystemExit(f"{spec} on {target}: config {name!r} is not legal: {why}")
                configs[name] = cfg
            for name, cfg in configs.items():
                reloads, stores = spills_of(build_job(task.to_json(), None, cfg))
                knobs = {k: v for k, v in cfg.items() if v != default.get(k) or name == "default"}
                print(f"{spec:<18} {target:<20} {name:<14} {reloads:>7} {stores:>6}  {knobs}")
                rows.append({"layer": spec, "target": target, "config_name": name, "config": cfg,
                             "reloads": reloads, "stores": stores})
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"host": host_record(), "nchw_input": args.nchw_input, "results": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
