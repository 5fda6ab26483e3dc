"""``vdla asm`` and ``vdla disasm``: VDLA assembly text <-> binary instruction and micro-op images."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from vdla_hw.asm import assemble, disassemble
from vdla_hw.config import load_config
from vdla.runtime.raw_program import read_instruction_image, read_uop_image
from vdla_hw.isa import IsaError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "asm",
        help="assemble VDLA assembly into binary instructions (and micro-ops)",
        description="Assemble a .s file (syntax: docs/isa.md#assembly-syntax) into 16-byte little-endian instruction words.",
    )
    p.add_argument("source", type=Path, help="assembly file")
    p.add_argument("-o", "--output", type=Path, help="instruction image to write (default: SOURCE with suffix .bin)")
    p.add_argument("--uops-out", type=Path, help="also write the .uops section as 4-byte little-endian micro-op words")
    p.add_argument("--config", default="default", help="hardware preset name or config .json path (default: default)")
    p.set_defaults(func=_asm)

    p = subparsers.add_parser(
        "disasm",
        help="print binary VDLA instructions (and micro-ops) as assembly text",
        description="Disassemble 16-byte little-endian instruction words into canonical assembly text.",
    )
    p.add_argument("binary", type=Path, help="instruction image")
    p.add_argument("--uops", type=Path, help="micro-op image to print as the .uops section")
    p.add_argument("--config", default="default", help="hardware preset name or config .json path (default: default)")
    p.add_argument("--numbered", action="store_true", help="append each line's index as a comment")
    p.set_defaults(func=_disasm)


def _asm(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    try:
        insns, uops = assemble(args.source.read_text(), cfg)
    except IsaError as exc:
        raise IsaError(f"{args.source}: {exc}") from None
    out = args.output or args.source.with_suffix(".bin")
    out.write_bytes(cfg.isa.encode_program(insns).tobytes())
    print(f"{out}: {len(insns)} instructions ({cfg.name})")
    if args.uops_out:
        args.uops_out.write_bytes(cfg.isa.encode_uops(uops).tobytes())
        print(f"{args.uops_out}: {len(uops)} micro-ops")
    elif uops:
        print(f"warning: {len(uops)} micro-ops in {args.source} were not written; pass --uops-out FILE", file=sys.stderr)
    return 0


def _disasm(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    try:
        insns = cfg.isa.decode_program(read_instruction_image(args.binary))
    except IsaError as exc:
        raise IsaError(f"{args.binary}: {exc}", hint=f"was it assembled for config {cfg.name!r}?") from None
    uops = None
    if args.uops:
        words = np.frombuffer(read_uop_image(args.uops, cfg), dtype="<u4")
        uops = [cfg.isa.decode_uop(int(w)) for w in words]
    sys.stdout.write(disassemble(insns, uops, numbered=args.numbered))
    return 0
