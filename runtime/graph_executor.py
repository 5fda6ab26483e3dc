"""The graph executor: runs a compiled model with only the runtime installed.

A :class:`GraphModule` holds the graph description (see :mod:`vdla.runtime.module_format`),
the parameters, the CPU kernels (a :class:`~vdla.runtime.cpu_module.CpuModule`) and one VDLA
program per VDLA node.  ``run`` executes the nodes in order: CPU nodes call their kernel
on views of one statically planned arena (argument pointers are packed once, so a call
costs one ctypes call), VDLA nodes copy their input into the program's DRAM image and
run it on the chosen backend (fsim, cycle, rtl) -- bit-identical on all of them.

``profile`` runs once more and reports each node: wall time for CPU nodes; cycles, GEMM
utilization and simulated time at the config clock for VDLA nodes on a timed backend;
and it can merge the VDLA nodes' timelines into one Chrome trace.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from vdla_hw.config import HwConfig, from_dict

from vdla.runtime.backends import run as run_program
from vdla.runtime.cpu_module import (CpuModule, ForeignArchitecture, Function, aligned_pack, aligned_zeros,
                                load_module_bytes)
from vdla.runtime.display import html_table
from vdla.runtime.memory import to_bytes
from vdla.runtime.module_format import ModuleParts, read_module, write_module
from vdla.runtime.program import Program
from vdla_hw.errors import UsageError


class GraphExecutorError(UsageError):
    """Bad inputs for a model, or a model whose description is inconsistent."""


@dataclass(frozen=True)
class NodeProfile:
    """One node of a profiled run."""

    name: str
    device: str
    ops: str
    seconds: float
    """Wall-clock time on this host (for VDLA nodes: the simulation's)."""
    cycles: int | None = None
    gemm_utilization: float | None = None
    macs: int = 0


@dataclass(frozen=True)
class Profile:
    """Per-node figures of one run, with totals."""

    nodes: tuple[NodeProfile, ...]
    clock_mhz: float | None
    trace: str | None = None
    host_clock: str = "wall"
    """How CPU nodes were timed: ``"wall"`` (wall clock) or ``"thread"`` (the calling thread's CPU time)."""

    @property
    def cpu_seconds(self) -> float:
        return sum(n.seconds for n in self.nodes if n.device == "cpu")

    @property
    def vdla_cycles(self) -> int | None:
        cycles = [n.cycles for n in self.nodes if n.device == "vdla"]
        return None if not cycles or None in cycles else sum(cycles)  # type: ignore[arg-type]

    @property
    def vdla_seconds(self) -> float | None:
        """Simulated accelerator time at the config clock."""
        c = self.vdla_cycles
        return None if c is None or not self.clock_mhz else c / (self.clock_mhz * 1e6)

    @property
    def end_to_end_seconds(self) -> float | None:
        """The model's modeled latency: VDLA time at the config clock plus the host kernels' time (the
        nodes run one after the other); None without a timed VDLA backend."""
        v = self.vdla_seconds
        if v is None and any(n.device == "vdla" for n in self.nodes):
            return None
        return (v or 0.0) + self.cpu_seconds

    def device_seconds(self, node: NodeProfile) -> float | None:
        """A VDLA node's time on the accelerator: its cycles at the config clock (None if untimed)."""
        if node.cycles is None or not self.clock_mhz:
            return None
        return node.cycles / (self.clock_mhz * 1e6)

    def table(self) -> str:
        """A fixed-width per-node table with a total line.

        ``host ms`` is time on this machine: the kernel itself for a CPU node (wall clock, or the thread's
        CPU time when profiled with ``clock="thread"``, which the total line says), the *simulation* (wall
        clock) for a VDLA node. ``VDLA cycles`` and ``VDLA ms`` are the accelerator's own time, at the
        config's clock, reported by a timed backend (cycle, rtl).
        """
        clock = f"@{self.clock_mhz:g}MHz" if self.clock_mhz else ""
        device_ms = f"VDLA ms{clock}"
        rows = [f"{'node':<28} {'device':<6} {'host ms':>9} {'VDLA cycles':>11} {device_ms:>16} {'util':>6}  ops"]
        for n in self.nodes:
            cyc = f"{n.cycles:,}" if n.cycles is not None else "-"
            dev = self.device_seconds(n)
            dev_ms = f"{1e3 * dev:.3f}" if dev is not None else "-"
            util = f"{n.gemm_utilization:.1%}" if n.gemm_utilization is not None else "-"
            rows.append(f"{n.name[:28]:<28} {n.device:<6} {1e3 * n.seconds:>9.3f} {cyc:>11} {dev_ms:>16} {util:>6}"
                        f"  {n.ops}")
        n_cpu = sum(n.device == "cpu" for n in self.nodes)
        n_vdla = sum(n.device == "vdla" for n in self.nodes)
        what = "host CPU time of the calling thread" if self.host_clock == "thread" else "host time (wall clock)"
        total = f"total: CPU {1e3 * self.cpu_seconds:.3f} ms {what} over {n_cpu} nodes"
        if n_vdla:
            sim_ms = 1e3 * sum(n.seconds for n in self.nodes if n.device == "vdla")
            if self.vdla_cycles is not None:
                total += (f"; VDLA {self.vdla_cycles:,} cycles = {1e3 * (self.vdla_seconds or 0):.3f} ms device time "
                          f"at {self.clock_mhz:g} MHz over {n_vdla} nodes")
            else:
                total += f"; VDLA {n_vdla} nodes on an untimed backend (no device time)"
            total += f", simulated in {sim_ms:.3f} ms host time"
        if self.end_to_end_seconds is not None:
            total += (f"\nend to end: {1e3 * self.end_to_end_seconds:.3f} ms = VDLA {1e3 * (self.vdla_seconds or 0):.3f} ms "
                      f"at the config clock + host {1e3 * self.cpu_seconds:.3f} ms (one after the other)")
        return "\n".join(rows + [total])

    def __repr__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        rows = []
        for n in self.nodes:
            dev = self.device_seconds(n)
            rows.append((n.name, n.device, 1e3 * n.seconds, n.cycles, None if dev is None else 1e3 * dev,
                         None if n.gemm_utilization is None else f"{n.gemm_utilization:.1%}", n.ops))
        clock = f" @{self.clock_mhz:g} MHz" if self.clock_mhz else ""
        return html_table(("node", "device", "host ms", "VDLA cycles", f"VDLA ms{clock}", "util", "ops"), rows,
                          caption="profile", footer=" ".join(self.table().splitlines()[len(self.nodes) + 1:]))

    def to_json(self) -> dict[str, Any]:
        return {"clock_mhz": self.clock_mhz, "host_clock": self.host_clock, "cpu_seconds": self.cpu_seconds, "vdla_cycles": self.vdla_cycles,
                "vdla_seconds": self.vdla_seconds, "end_to_end_seconds": self.end_to_end_seconds, "trace": self.trace,
                "nodes": [{**n.__dict__, "device_seconds": self.device_seconds(n)} for n in self.nodes]}


def _params_by_first_use(graph: Mapping[str, Any], params: Mapping[str, Any]) -> list[str]:
    """The names of ``params`` in the order the graph's nodes first read them (the unread ones last): packed
    so, the weights of a run stream through memory front to back."""
    order = dict.fromkeys(a["param"] for n in graph["nodes"] for a in n.get("args", ()) if "param" in a)
    return [k for k in order if k in params] + [k for k in params if k not in order]


def _inverse(perm: Sequence[int]) -> list[int]:
    return [list(perm).index(i) for i in range(len(perm))]


class GraphModule:
    """A runnable model: build one with ``vdla.compiler.graph.build_model`` or :meth:`load` a file."""

    def __init__(self, graph: Mapping[str, Any], params: Mapping[str, np.ndarray], library: CpuModule | None,
                 programs: Mapping[str, Program], library_bytes: bytes | None = None,
                 program_bytes: Mapping[str, bytes] | None = None, library_error: str | None = None,
                 huge_pages: bool = True) -> None:
        """``library_error`` (with ``library`` None) says why the CPU kernels cannot run in this process (a
        module cross-compiled for a board's CPU): :meth:`run` raises it, everything else works.

        The parameters (packed in one buffer, in the order the nodes first read them) and the arena live
        in memory advised to use transparent huge pages (:mod:`vdla.runtime.huge_pages`: fewer TLB misses
        on the weight streams); ``huge_pages=False`` allocates them as runtimes before that did (to time a
        before / after in one process)."""
        self.graph = dict(graph)
        self._huge_pages = huge_pages
        # Private, writable copies: kernels take every argument as a writable buffer.
        packed = aligned_pack({k: np.asarray(params[k]) for k in _params_by_first_use(graph, params)},
                              huge_pages=huge_pages)
        self.params = {k: packed[k] for k in params}
        self.library = library
        self.programs = dict(programs)
        self.config: HwConfig | None = from_dict(graph["config"]) if graph.get("config") else None
        # The files this module was loaded from, re-written unchanged by ``export``.
        self._library_bytes = library_bytes
        self._program_bytes = dict(program_bytes or {})
        self._values = {k: (tuple(v["shape"]), np.dtype(v["dtype"])) for k, v in graph["values"].items()}
        self._inputs = {i["name"]: (tuple(i["shape"]), np.dtype(i["dtype"])) for i in graph["inputs"]}
        self._arena = aligned_zeros(max(1, int(graph["arena"]["bytes"])), np.uint8, huge_pages=huge_pages)
        self._slots = {name: self._slot(name, off) for name, off in graph["arena"]["offsets"].items()}
        self._input_bufs = {k: aligned_zeros(s, d) for k, (s, d) in self._inputs.items()}
        self._library_error = library_error if library is None else None
        self._calls = [self._prepare(n) if n["device"] == "cpu" and self._library_error is None else None
                       for n in graph["nodes"]]
        self._run_program: Callable[..., Any] = run_program

    def with_library(self, library: Any) -> GraphModule:
        """This model with another kernel library (e.g. a cross-built one run under emulation, which has the
        interface of :class:`~vdla.runtime.cpu_module.CpuModule`)."""
        return GraphModule(self.graph, self.params, library, self.programs, self._library_bytes,
                           self._program_bytes, huge_pages=self._huge_pages)

    def _require_library(self) -> None:
        if self._library_error is not None and any(n["device"] == "cpu" for n in self.graph["nodes"]):
            raise ForeignArchitecture(self._library_error)

    # ---- construction ------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, config: HwConfig | None = None, huge_pages: bool = True) -> GraphModule:
        """Load a model file written by ``export``, checking every member against its manifest.

        Refuses a CPU lacking the kernels' features and, with ``config``, a module compiled
        for another hardware config.  ``huge_pages``: see :class:`GraphModule`.
        """
        parts: ModuleParts = read_module(path, config)
        library = None
        if parts.library is not None:
            library = load_module_bytes(parts.library, f"{path}:kernels.so")
        programs = {m: Program.from_bytes(b, f"{path}:{m}", parts.config) for m, b in parts.programs.items()}
        return cls(parts.graph, parts.params, library, programs, parts.library, parts.programs,
                   huge_pages=huge_pages)

    def export(self, path: str | Path, library: str | Path | None = None) -> Path:
        """Write this model as one file that :meth:`load` reads on a runtime-only machine.

        ``library`` is the kernel library to include (default: the one this module was loaded from).
        """
        library_bytes = Path(library).read_bytes() if library is not None else self._library_bytes
        with tempfile.TemporaryDirectory(prefix="vdla_export_") as tmp:
            files = {}
            for member, program in self.programs.items():
                data = self._program_bytes.get(member)
                if data is None:
                    data = program.save(Path(tmp) / f"{len(files)}.vdlaprog").read_bytes()
                files[member] = data
            return write_module(path, self.graph, self.params, library_bytes, files)

    def _slot(self, name: str, offset: int) -> np.ndarray:
        shape, dtype = self._values[name]
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return self._arena[offset: offset + nbytes].view(dtype).reshape(shape)

    def _array(self, ref: Mapping[str, str]) -> np.ndarray:
        if "param" in ref:
            return self.params[ref["param"]]
        name = ref["value"]
        if name in self._input_bufs:
            return self._input_bufs[name]
        return self._slots[name]

    def _prepare(self, node: Mapping[str, Any]) -> tuple[Function, Any]:
        if self.library is None:
            raise GraphExecutorError(f"node {node['name']!r} runs on the CPU but the model has no kernel library")
        fn = self.library[node["function"]]
        arrays = tuple(self._array(a) for a in node["args"]) + (self._slots[node["name"]],)
        fn.check(arrays)
        return fn, fn.pack(arrays)

    # ---- running -------------------------------------------------------------------------------------
    @property
    def input_names(self) -> list[str]:
        return list(self._inputs)

    @property
    def output_names(self) -> list[str]:
        return [ref.get("value") or ref["name"] for ref in self.graph["outputs"]]

    def kernel_calls(self) -> list[tuple[str, Function, Any]]:
        """(node name, kernel, packed arguments) of every CPU node, in run order: the calls :meth:`run`
        makes, for a bench that makes them its own way (``bench/stack_offsets.py``: from other stack
        positions).  The arguments point into this module's arena, parameters and input buffers."""
        self._require_library()
        return [(n["name"], *call) for n, call in zip(self.graph["nodes"], self._calls) if call is not None]

    def set_program_runner(self, runner: Callable[..., Any]) -> None:
        """Run the VDLA programs with ``runner(program, backend, **options)`` instead of in this process
        (e.g. :func:`vdla.runtime.pool.tasks.pool_runner` for the device pool)."""
        self._run_program = runner

    def set_num_threads(self, n: int) -> None:
        """Threads of the CPU kernels' parallel loops (0 = OpenMP's default)."""
        if self.library is not None:
            self.library.set_num_threads(n)

    def _bind(self, inputs: Mapping[str, np.ndarray] | np.ndarray) -> None:
        if isinstance(inputs, np.ndarray):
            if len(self._inputs) != 1:
                raise GraphExecutorError(f"the model has inputs {self.input_names}; pass a dict of arrays")
            inputs = {self.input_names[0]: inputs}
        unknown, missing = sorted(set(inputs) - set(self._inputs)), sorted(set(self._inputs) - set(inputs))
        if unknown or missing:
            raise GraphExecutorError(f"the model's inputs are {self.input_names}; missing {missing}, unknown {unknown}")
        for name, (shape, dtype) in self._inputs.items():
            x = np.asarray(inputs[name])
            if x.shape != shape or x.dtype != dtype:
                raise GraphExecutorError(f"input {name!r} must be {dtype}{list(shape)}, got {x.dtype}{list(x.shape)}"
                                         f"; convert it with .astype(np.{dtype}) / reshape it")
            self._input_bufs[name][...] = x

    def _run_vdla(self, node: Mapping[str, Any], x: np.ndarray, backend: str, options: Mapping[str, Any],
                  lookup: Callable[[Mapping[str, str]], np.ndarray] | None = None) -> tuple[np.ndarray, Any]:
        """Run a VDLA node on input ``x`` (further inputs read with ``lookup``, default the arena): its
        output value and the backend's run result."""
        program = self.programs[node["program"]]
        inp, out = node["input"], node["output"]
        if inp["perm"] is not None:
            x = x.transpose(inp["perm"])
        spec = program.buffers[inp["buffer"]]
        dram = program.dram.copy()
        dram[spec.offset: spec.offset + spec.nbytes] = to_bytes(program.config, spec, x.reshape(spec.shape))
        for more in node.get("more_inputs", ()):  # a residual add's second operand
            spec = program.buffers[more["buffer"]]
            v = (lookup or self._array)(more)
            dram[spec.offset: spec.offset + spec.nbytes] = to_bytes(program.config, spec, v.reshape(spec.shape))
        bound = Program(program.config, program.instructions, dram, program.insn_addr, program.buffers)
        result = self._run_program(bound, backend, **options)
        y = result.read(out["buffer"]).reshape(out["shape"])
        if out["perm"] is not None:
            y = y.transpose(_inverse(out["perm"]))
        return y, result

    def _vdla_step(self, node: Mapping[str, Any], backend: str, options: Mapping[str, Any]) -> Any:
        y, result = self._run_vdla(node, self._array(node["input"]), backend, options)
        self._slots[node["name"]][...] = y
        return result

    def _outputs(self) -> list[np.ndarray]:
        return [self._array(ref).copy() for ref in self.graph["outputs"]]

    def run(self, inputs: Mapping[str, np.ndarray] | np.ndarray, backend: str = "fsim",
            **options: Any) -> list[np.ndarray]:
        """The model's outputs for ``inputs`` (a dict by input name, or one array), VDLA nodes on ``backend``."""
        self._require_library()
        self._bind(inputs)
        for node, call in zip(self.graph["nodes"], self._calls):
            if call is not None:
                call[0].call_unchecked(call[1])
            elif node["device"] == "vdla":
                self._vdla_step(node, backend, options)
            # "placed": a concatenation by placement, its operands already written into its buffer
        return self._outputs()

    def profile(self, inputs: Mapping[str, np.ndarray] | np.ndarray, backend: str = "fsim",
                trace: str | Path | None = None, warmup: int = 1, repeat: int = 1, clock: str = "wall",
                **options: Any) -> tuple[list[np.ndarray], Profile]:
        """Run the model, timing every node where it runs; on ``cycle`` with ``trace`` also merge the
        VDLA timelines.

        ``warmup`` runs of the CPU nodes come first, so first-call costs (thread pool start, page
        faults of the arena) are not charged to a node.  A CPU node's time is the best of ``repeat``
        whole runs of the model, each node timed in its place: its weights and inputs are as warm
        as the nodes before it left them, as in :meth:`run` and in onnxruntime's profiler (calling
        one node over and over instead keeps its weights in cache, which hid up to 0.4 ms per
        ResNet-18 layer4 conv).  VDLA nodes run once, in the first run: the simulators take seconds.

        ``clock="wall"`` times CPU nodes by the wall clock; ``clock="thread"`` by the calling thread's
        CPU time, which leaves out the time other processes hold the core.  On a loaded host use the
        latter: a 3-7 ms node is preempted for a scheduler slice (~4 ms at load 4-5 on 2 cores) so often
        that even its best of 20 wall-clock runs can be 2x its CPU time, and for some nodes of one build
        and not another (``docs/cpu_speed.md``).  It needs the kernels on one thread
        (``set_num_threads(1)``): the pool's other threads' time would be missing.
        """
        if clock not in ("wall", "thread"):
            raise GraphExecutorError(f"unknown profile clock {clock!r}: use 'wall' or 'thread'")
        if clock == "thread" and self.library is not None and self.library.num_threads != 1:
            raise GraphExecutorError("clock='thread' times the calling thread only, and the kernels run on "
                                     f"{self.library.num_threads or 'all'} threads: call set_num_threads(1) "
                                     "first, or profile with clock='wall'")
        now = time.thread_time if clock == "thread" else time.perf_counter
        if trace is not None and backend != "cycle":
            raise GraphExecutorError(f"a timeline needs the cycle backend, not {backend!r}; pass backend='cycle'")
        self._require_library()
        self._bind(inputs)
        for _ in range(warmup):
            for call in self._calls:
                if call is not None:
                    call[0].call_unchecked(call[1])
        nodes = self.graph["nodes"]
        best = [float("inf")] * len(nodes)
        vdla_rows: dict[int, NodeProfile] = {}
        traces = []
        # Re-running the CPU nodes alone is a whole run only when no VDLA node feeds them.
        runs = max(1, repeat) if all(n["device"] != "vdla" for n in nodes) else 1
        with tempfile.TemporaryDirectory(prefix="vdla_trace_") as tmp:
            for _ in range(runs):
                for k, (node, call) in enumerate(zip(nodes, self._calls)):
                    if call is not None:
                        t0 = now()
                        call[0].call_unchecked(call[1])
                        best[k] = min(best[k], now() - t0)
                        continue
                    if node["device"] == "placed":
                        best[k] = 0.0
                        continue
                    t0 = time.perf_counter()
                    opts = dict(options)
                    if trace is not None:
                        opts["trace"] = os.path.join(tmp, f"{k}.json")
                    result = self._vdla_step(node, backend, opts)
                    stats = result.extra.get("stats") or {}
                    vdla_rows[k] = NodeProfile(node["name"], "vdla", "+".join(node["ops"]), time.perf_counter() - t0,
                                               result.cycles, stats.get("gemm_utilization"), int(node.get("macs", 0)))
                    if trace is not None:
                        traces.append((node["name"], json.loads(Path(opts["trace"]).read_text())))
        rows = [vdla_rows[k] if k in vdla_rows else
                NodeProfile(n["name"], "placed" if n["device"] == "placed" else "cpu", "+".join(n["ops"]), best[k])
                for k, n in enumerate(nodes)]
        clock_mhz = self.config.clock_mhz if self.config is not None else None
        written = None
        if trace is not None:
            written = str(write_merged_trace(trace, traces, [r for r in rows if r.device == "vdla"]))
        return self._outputs(), Profile(tuple(rows), clock_mhz, written, host_clock=clock)

    def run_all(self, inputs: Mapping[str, np.ndarray] | np.ndarray, backend: str = "fsim",
                **options: Any) -> dict[str, np.ndarray]:
        """Every node's value after a run, by name (a debugging aid: slower, no arena reuse)."""
        self._bind(inputs)
        values = {k: v.copy() for k, v in self._input_bufs.items()}
        for node, call in zip(self.graph["nodes"], self._calls):
            if call is not None:
                fn = call[0]
                args = [values[a["value"]] if "value" in a else self.params[a["param"]] for a in node["args"]]
                shape, dtype = self._values[node["name"]]
                out = np.zeros(shape, dtype)
                fn(*args, out)
                values[node["name"]] = out
            elif node["device"] == "placed":  # what the arena holds in its buffer after the operands' kernels
                values[node["name"]] = np.concatenate([values[v] for v in node["inputs"]], axis=node["axis"])
            else:
                y, _ = self._run_vdla(node, values[node["input"]["value"]], backend, options,
                                      lambda ref: values[ref["value"]])
                values[node["name"]] = np.array(y, order="C")
        for ref in self.graph["outputs"]:
            if "param" in ref:
                values[ref["name"]] = self.params[ref["param"]].copy()
        return values


def write_merged_trace(path: str | Path, traces: Sequence[tuple[str, dict[str, Any]]],
                       rows: Sequence[NodeProfile]) -> Path:
    """One Chrome trace of the VDLA nodes back to back: their unit tracks plus a track of layers."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": "VDLA nodes (cycle model)"}},
        {"ph": "M", "pid": 1, "tid": 0, "name": "thread_name", "args": {"name": "layer"}},
    ]
    offset = 0.0
    for (name, trace), row in zip(traces, rows):
        end = offset
        for ev in trace.get("traceEvents", []):
            if ev.get("ph") == "M":
                if offset == 0.0:
                    events.append({**ev, "pid": 1})
                continue
            shifted = {**ev, "pid": 1, "ts": ev["ts"] + offset}
            events.append(shifted)
            end = max(end, shifted["ts"] + ev.get("dur", 0.0))
        events.append({"ph": "X", "pid": 1, "tid": 0, "name": name, "cat": "layer", "ts": offset, "dur": end - offset,
                       "args": {"cycles": row.cycles, "gemm_utilization": row.gemm_utilization, "ops": row.ops}})
        offset = end
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))
    return path


def load(path: str | Path, config: HwConfig | None = None, huge_pages: bool = True) -> GraphModule:
    """Load a model file (see :meth:`GraphModule.load`)."""
    return GraphModule.load(path, config, huge_pages)
