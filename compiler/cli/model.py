"""``vdla compile`` and ``vdla run``: whole models, from an ONNX file to a deployable module and back.

    vdla compile model.onnx --target vdla --config default --calibrate data.npz -o model.vdla
    vdla compile model.onnx --target vdla --board pynq-z2 --bitstream DIR --calibrate data.npz -o m.vdla
    vdla run model.vdla --input x.npy --backend cycle --profile --trace vdla.json --output y.npy

``--board B`` compiles the CPU kernels for the board's processor (``--cpu-target board:B``: ARMv7 for the
PYNQ-Z2, AArch64 for the Ultra96-V2 and ZCU104) and, with ``--bitstream DIR``, takes the VDLA config
from the board's bitstream folder, refusing another ``--config`` and a folder built for another board.

``run`` needs only the runtime: it never imports the compiler.
"""

from __future__ import annotations

import argparse
import json
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from vdla.runtime.file_checks import load_arrays, load_npy
from vdla.compiler.cli.pool import add_pool_options, pool_executor
from vdla_hw.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("compile", help="compile an ONNX model into a deployable module (.vdla)",
                              description="Compile an ONNX model for the CPU (llvm) or the VDLA (int8) into one file.")
    p.add_argument("model", help="the ONNX file")
    p.add_argument("--target", choices=("llvm", "vdla"), default="llvm", help="llvm (CPU, fp32) or vdla (int8)")
    p.add_argument("--config", default=None, help="hardware preset name or .json path (vdla; default: the "
                   "--bitstream folder's config, else default)")
    p.add_argument("--board", help="compile for this board: its processor's CPU kernels (--cpu-target board:B) and, "
                   "with --bitstream, the config its bitstream is built with")
    p.add_argument("--bitstream", metavar="DIR", help="with --board: the folder `vdla fpga build` wrote for the "
                   "board; the module is compiled for the config of that bitstream")
    p.add_argument("--calibrate", metavar="DATA.npz",
                   help="calibration inputs for int8 quantization (vdla): arrays named like the model's inputs, "
                        "their first axis the sample index (a .npy file for a one-input model)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="fix a symbolic input shape, e.g. x=1,3,224,224 (repeatable)")
    p.add_argument("--quantize-first-conv", action="store_true", help="quantize the first conv too (default: float)")
    p.add_argument("--calibration", default="max", metavar="METHOD",
                   help="int8 calibration (vdla): max, percentile[:P] (default P 99.99) or kl (default: max)")
    p.add_argument("--placement", choices=("cost", "all"), default="cost",
                   help="vdla: 'cost' keeps a residual add / pool / clamp on the VDLA only when the cost rule finds it "
                        "faster there (default); 'all' places every kernel the VDLA can run")
    p.add_argument("--cost-host", choices=("board", "native"), default="board",
                   help="vdla, placement 'cost': the host the rule judges against: 'board' (default: a ~1 GHz ARM "
                        "core, the host a VDLA model is deployed beside) or 'native' (this machine, its clock)")
    p.add_argument("--per-tensor", action="store_true",
                   help="one power-of-two scale per weight tensor instead of per-channel scales (vdla)")
    p.add_argument("--cpu-target", default=None, help="LLVM target of the CPU kernels: 'llvm' (this host, the "
                   "default), 'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53', or board:NAME")
    p.add_argument("--tuning-log", metavar="TUNE.jsonl",
                   help="apply the best config per task from a `vdla tune` log (others keep the default)")
    p.add_argument("-o", "--output", required=True, help="the module file to write (.vdla)")
    p.set_defaults(func=cmd_compile)

    p = subparsers.add_parser("run", help="run a compiled module (.vdla) on an input",
                              description="Run a module written by `vdla compile`; the VDLA part on any backend.")
    p.add_argument("module", help="the .vdla file")
    p.add_argument("--input", action="append", required=True, metavar="[NAME=]X.npy",
                   help="an input array (.npy); NAME= is needed when the model has several inputs")
    p.add_argument("--backend", default="fsim", help="backend of the VDLA nodes: fsim, cycle, rtl, fpga (default: fsim)")
    p.add_argument("--config", help="hardware preset name or .json path of the device; a module compiled for "
                                    "another config is refused (default: the module's own)")
    p.add_argument("--profile", action="store_true", help="print per-node times (CPU) and cycles/utilization (VDLA)")
    p.add_argument("--trace", metavar="OUT.json", help="with --backend cycle: a Chrome timeline of the VDLA nodes")
    p.add_argument("--threads", type=int, default=1, help="threads of the CPU kernels (0 = all; default: 1)")
    p.add_argument("--clock", choices=("auto", "thread", "wall"), default="auto",
                   help="with --profile: time CPU nodes by the thread's CPU time (leaves out the time other processes "
                        "hold the core; one thread only) or the wall clock; auto: thread with --threads 1, else wall")
    p.add_argument("--repeat", type=int, default=1, help="with --profile: whole runs of the CPU nodes, each node's best "
                                                        "kept (default: 1)")
    p.add_argument("--output", metavar="Y.npy", help="write the (first) output here")
    p.add_argument("--json", metavar="OUT.json", help="write the profile as JSON (implies --profile)")
    add_pool_options(p)
    p.add_argument("--board", help="with --backend fpga: the board to run on (with --pool: default the one board of "
                   "the pool loaded with the module's config, see vdla fpga deploy; ulx3s: driven over --port)")
    p.add_argument("--port", help="with --backend fpga: the serial port of a board driven over USB (ulx3s), e.g. "
                   "/dev/ttyUSB0, or 'sim' for the simulated ULX3S SoC")
    p.add_argument("--bitstream", metavar="DIR", help="with --backend fpga: the folder vdla fpga build wrote")
    p.set_defaults(func=cmd_run)


SQNR_SHOWN = 10  # layers `vdla compile` lists (the worst)


def _shapes(items: list[str]) -> dict[str, tuple[int, ...]]:
    out = {}
    for item in items:
        name, _, dims = item.partition("=")
        try:
            out[name] = tuple(int(d) for d in dims.split(","))
        except ValueError:
            raise UsageError(f"bad --shape {item!r}: use NAME=D0,D1,..., e.g. x=1,3,224,224") from None
    return out


def _calibration(path: str, input_names: list[str]) -> list[dict[str, np.ndarray]]:
    data = load_arrays(path, "calibration data (.npz, or .npy for a one-input model)")
    if isinstance(data, np.ndarray):
        if len(input_names) != 1:
            raise UsageError(f"{path}: the model has inputs {input_names}; use an .npz with one array per input")
        arrays = {input_names[0]: data}
    else:
        arrays = data
    missing = sorted(set(input_names) - set(arrays))
    if missing:
        raise UsageError(f"{path} has arrays {sorted(arrays)} but the model's inputs {missing} are missing")
    count = len(arrays[input_names[0]])
    return [{k: arrays[k][i] for k in input_names} for i in range(count)]


def board_options(board: str | None, bitstream: str | None, config: str | None, cpu_target: str | None
                  ) -> tuple[str, str]:
    """``(config, cpu target)`` of ``vdla compile``'s options: ``--board`` sets the CPU target to the board's
    processor, ``--bitstream`` the config to its bitstream's; contradicting options are refused."""
    from vdla_hw.config import load_config
    from vdla_hw.fpga.boards import get_board

    if board is None:
        if bitstream is not None:
            raise UsageError("--bitstream names a board's bitstream folder: pass --board too")
        return config or "default", cpu_target or "llvm"
    b = get_board(board)
    if b.host_cpu is None:
        raise UsageError(f"board {b.name} has no processor of its own to run the CPU kernels: its host is the "
                         f"workstation it is attached to", hint="compile without --board (--cpu-target llvm)")
    if cpu_target is not None and cpu_target not in (f"board:{b.name}", b.host_cpu.llvm_target):
        raise UsageError(f"--board {b.name} runs the CPU kernels on its {b.host_cpu.title}, but --cpu-target says "
                         f"{cpu_target!r}", hint="drop --cpu-target (--board sets it)")
    if bitstream is None:
        return config or "default", f"board:{b.name}"
    from vdla.runtime.pool.bundle import check_board, check_folder

    manifest, built = check_folder(Path(bitstream))
    check_board(manifest, b.name, bitstream)
    if config is not None and load_config(config).digest != built.digest:
        raise UsageError(f"--config {config} is not the config the bitstream in {bitstream} is built with "
                         f"({built.label()}): the module's VDLA programs would not run on it",
                         hint="drop --config (the bitstream's config is used), or build a bitstream for it")
    return str(Path(bitstream) / "config.json") if (Path(bitstream) / "config.json").is_file() else built.name, \
        f"board:{b.name}"


def cmd_compile(args: argparse.Namespace) -> int:
    from vdla.compiler.frontend.onnx import from_onnx
    from vdla.compiler.graph.build import build_model
    from vdla.compiler.graph.passes.calibration import parse_calibration
    from vdla.compiler.graph.passes.sqnr import format_sqnr

    args.config, args.cpu_target = board_options(args.board, args.bitstream, args.config, args.cpu_target)
    graph = from_onnx(args.model, shapes=_shapes(args.shape) or None)
    samples = None
    calibration = parse_calibration(args.calibration)  # a bad method is refused before any work
    if args.target == "vdla":
        if not args.calibrate:
            raise UsageError("--target vdla quantizes to int8: pass --calibrate data.npz with sample inputs")
        names = [n.name for n in graph.input_nodes]
        samples = _calibration(args.calibrate, names)
        for s in samples:
            for n in graph.input_nodes:
                s[n.name] = np.asarray(s[n.name], n.type.dtype).reshape(n.type.shape)
    from contextlib import nullcontext

    from vdla.compiler.autotune.database import ApplyBest, read_log
    from vdla.compiler.autotune.dispatch import dispatching

    if args.tuning_log and not Path(args.tuning_log).is_file():
        raise UsageError(f"tuning log {args.tuning_log} does not exist", hint="write one with `vdla tune`")
    apply = (ApplyBest(read_log(args.tuning_log), args.target, args.cpu_target, args.config)
             if args.tuning_log else None)
    with dispatching(apply) if apply is not None else nullcontext():
        compiled = build_model(graph, target=args.target, config=args.config, calibrate=samples,
                               skip_first_conv=not args.quantize_first_conv, cpu_target=args.cpu_target,
                               name=Path(args.model).stem, calibration=calibration,
                               per_channel=not args.per_tensor, placement=args.placement,
                               cost_host=args.cost_host)
    path = compiled.export(args.output)
    where = ", ".join(f"{k} {v}" for k, v in sorted(compiled.placement().items()))
    print(f"compiled {args.model} for {args.target} in {compiled.compile_seconds:.2f} s: {where} nodes -> {path}")
    if compiled.llvm_module is not None:
        tgt = compiled.llvm_module.target
        where = f" (board {args.board})" if args.board else ""
        print(f"CPU kernels: {tgt.arch} {tgt.cpu}{where}, {tgt.vector_bits}-bit vectors, "
              f"{tgt.vector_registers} vector registers")
    if args.target == "vdla":
        from vdla.runtime.partition_report import format_partition

        print(format_partition(compiled.partition()))
        scheme = "per-tensor" if args.per_tensor else "per-channel"
        print(f"int8 ({scheme}, calibration {calibration}): per-layer SQNR on the calibration inputs, worst first")
        print(format_sqnr(compiled.sqnr, limit=SQNR_SHOWN))
    if apply is not None:
        print(f"tuning log {args.tuning_log}: best config applied to {len(apply.applied)} tasks, "
              f"default kept for {len(apply.fallbacks)}")
        for name, key in sorted(apply.applied.items()):
            print(f"  tuned {name}: {key}")
        for name, reason in sorted(apply.fallbacks.items()):
            print(f"  default {name}: {reason}")
    return 0


def _inputs(items: list[str], names: list[str]) -> dict[str, np.ndarray]:
    out = {}
    for item in items:
        name, sep, file = item.rpartition("=")
        if not sep:
            if len(names) != 1:
                raise UsageError(f"the model has inputs {names}: name each one, --input NAME=X.npy")
            name = names[0]
        out[name] = load_npy(file, f"an input array (.npy) for --input {item}")
    return out


def cmd_run(args: argparse.Namespace) -> int:
    from vdla.runtime.graph_executor import load

    from vdla_hw.config import load_config

    config = load_config(args.config) if args.config else None
    if args.pool and args.backend == "fpga" and not (args.profile or args.trace or args.json):
        outputs = _run_on_board_worker(args, config)
        if outputs is not None:
            return _report(args, outputs)
    module = load(args.module, config)
    module.set_num_threads(args.threads)
    inputs = _inputs(args.input, module.input_names)
    options = {}
    if not args.pool:
        fpga = {"board": args.board, "port": args.port, "bitstream": args.bitstream}
        given = {k: v for k, v in fpga.items() if v is not None}
        if given and args.backend != "fpga":
            raise UsageError(f"--{'/--'.join(given)} only go with --backend fpga", hint="add --backend fpga")
        options = given
    elif args.port or args.bitstream:
        raise UsageError("with --pool the board worker holds the port and the bitstream",
                         hint="drop --port/--bitstream (start the worker with them: vdla pool worker ADDR --board B "
                              "--port P)")
    with ExitStack() as stack:
        if args.pool:
            from vdla.runtime.pool.tasks import pool_runner

            # Each VDLA node's program runs on a pool worker offering the backend; CPU nodes stay here.
            module.set_program_runner(pool_runner(stack.enter_context(pool_executor(args)), board=args.board))
        if args.profile or args.trace or args.json:
            clock = args.clock if args.clock != "auto" else ("thread" if args.threads == 1 else "wall")
            if clock == "thread" and args.threads != 1:
                raise UsageError(f"--clock thread times the calling thread only, and the kernels run on "
                                 f"{args.threads or 'all'} threads", hint="add --threads 1, or use --clock wall")
            if args.repeat < 1:
                raise UsageError(f"--repeat {args.repeat}: give at least one run", hint="e.g. --repeat 5")
            outputs, profile = module.profile(inputs, backend=args.backend, trace=args.trace, clock=clock,
                                              repeat=args.repeat, **options)
            print(profile.table())
            if profile.trace:
                print(f"timeline of the VDLA nodes: {profile.trace} (open it in ui.perfetto.dev)")
            if args.json:
                Path(args.json).write_text(json.dumps(profile.to_json(), indent=1))
        else:
            outputs = module.run(inputs, backend=args.backend, **options)
    return _report(args, list(zip(module.output_names, outputs)))


def _run_on_board_worker(args: argparse.Namespace, config) -> list[tuple[str, np.ndarray]] | None:  # type: ignore[no-untyped-def]
    """``vdla run --backend fpga --pool``: the whole module on a board worker whose processor its CPU kernels
    were compiled for (CPU kernels there, VDLA nodes on its board); None (after saying why) to keep the split,
    where each VDLA node's program is shipped to the board and the CPU kernels run here."""
    from vdla.runtime.module_format import read_module
    from vdla.runtime.pool.deploy import board_workers
    from vdla.runtime.pool.tasks import run_whole_module, whole_module_worker

    parts = read_module(args.module, config)
    inputs = _inputs(args.input, [i["name"] for i in parts.graph["inputs"]])
    with pool_executor(args) as executor:
        worker, why = whole_module_worker(board_workers(executor.client), parts.config,
                                          dict(parts.kernels) if parts.kernels else None, args.board)
        if worker is None:
            print(f"running the CPU kernels here and each VDLA node on the board: {why}")
            return None
        print(f"running the whole module on board worker {worker.name} ({worker.board}): {why}")
        outputs = run_whole_module(executor, worker, Path(args.module).read_bytes(), inputs, args.threads)
    names = [ref.get("value") or ref["name"] for ref in parts.graph["outputs"]]
    return list(zip(names, outputs))


def _report(args: argparse.Namespace, outputs: list[tuple[str, np.ndarray]]) -> int:
    for name, y in outputs:
        flat = y.reshape(-1)
        head = np.array2string(flat[:8], precision=4, separator=", ")
        print(f"{name}: {y.dtype}{list(y.shape)} {head}{' ...' if flat.size > 8 else ''}"
              + (f" argmax {int(flat.argmax())}" if flat.size > 1 else ""))
    if args.output:
        np.save(args.output, outputs[0][1])
    return 0
