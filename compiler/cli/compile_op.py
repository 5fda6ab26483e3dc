"""vdla compile-op: compile one operator for a target and dump the program after every
schedule primitive and every lowering pass."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from vdla_hw.asm import disassemble
from vdla_hw.errors import UsageError

from vdla.compiler.tir import PrimFunc


def _shape(text: str) -> dict[str, int]:
    """``n=1,ic=64,h=56,w=56,oc=64,k=3,s=1,p=1`` -> dict (k/s/p are short for kernel, stride, pad)."""
    out = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if not value:
            raise argparse.ArgumentTypeError(f"bad shape item {item!r}: use key=value, e.g. n=1,ic=64,h=56,w=56,oc=64,k=3,s=1,p=1")
        out[key.strip()] = int(value)
    return out


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("compile-op", help="compile one operator and dump every lowering stage",
                              description=__doc__)
    p.add_argument("op", choices=("conv2d", "dense"), help="operator")
    p.add_argument("--shape", type=_shape, required=True,
                   help="conv2d: n=,ic=,h=,w=,oc=,k=,s=,p= (or a ResNet-18 layer: layer=9); dense: m=,k=,n=")
    p.add_argument("--target", default="vdla", choices=("vdla",), help="compilation target (default: vdla)")
    p.add_argument("--config", default="default", help="hardware preset name or .json path (default: default)")
    p.add_argument("--virtual-threads", type=int, default=2, help="virtual threads (default: 2)")
    p.add_argument("--shift", type=int, default=None, help="requantization shift (default: derived from the shape)")
    p.add_argument("--dump", metavar="DIR", help="write the program after each schedule primitive and each pass, and the disassembly, here")
    p.set_defaults(func=cmd_compile_op)


def cmd_compile_op(args: argparse.Namespace) -> int:
    from vdla.compiler.vdla.target import VdlaTarget
    from vdla.compiler.vdla.topi import Conv2dWorkload, Requantize, compile_conv2d, dense_workload, requant_shift, resnet18_layer

    s = args.shape
    try:
        if args.op == "dense":
            wl = dense_workload(s["m"], s["k"], s["n"])
        elif "layer" in s:
            wl = resnet18_layer(f"C{s['layer']}")
        else:
            wl = Conv2dWorkload(s.get("n", 1), s["ic"], s["h"], s["w"], s["oc"], s["k"], s["k"], s.get("s", 1), s.get("p", 0))
    except KeyError as exc:
        raise UsageError(f"--shape is missing {exc}; see vdla compile-op --help") from None
    dump_dir = Path(args.dump) if args.dump else None
    stages: list[str] = []

    def dump(name: str, func: PrimFunc) -> None:
        stages.append(name)
        if dump_dir is not None:
            dump_dir.mkdir(parents=True, exist_ok=True)
            slug = re.sub(r"[^A-Za-z0-9_.]+", "_", name).strip("_")
            (dump_dir / f"{len(stages) - 1:02d}_{slug}.tir").write_text(f"# {name}\n{func}\n")

    target = VdlaTarget.from_config(args.config)
    shift = args.shift if args.shift is not None else requant_shift(wl)
    compiled = compile_conv2d(wl, target, epilogue=Requantize(shift=shift, relu=args.op == "conv2d"),
                              virtual_threads=args.virtual_threads, dump=dump, pad_channels=True)
    program = compiled.module.program
    print(f"{args.op} {wl} on {target.config.name!r}: knobs {compiled.knobs}")
    steps = [st for st in stages if st.startswith("schedule: ")]
    print(f"  schedule: {len(steps) - 1} primitives ({', '.join(st.split(': ', 1)[1].split('(')[0] for st in steps[1:])})")
    print(f"  passes: {' -> '.join(st for st in stages if not st.startswith('schedule: '))}")
    print(f"  {program.insn_count} instructions, DRAM image {program.dram.size:,} bytes")
    if dump_dir is not None:
        uops = program.read("uops") if "uops" in program.buffers else []
        decoded = [target.config.isa.decode_uop(int(w)) for w in uops]
        (dump_dir / "program.asm").write_text(disassemble(program.instructions, decoded, numbered=True) + "\n")
        program.save(dump_dir / "program.vdlaprog")
        print(f"  wrote {len(stages)} stage listings, program.asm and program.vdlaprog to {dump_dir}")
    return 0
