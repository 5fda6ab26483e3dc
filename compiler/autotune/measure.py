"""Measuring configs: a builder job and a runner job per config, on a pluggable executor.

For every config: an illegal one is rejected before anything is built (``invalid``); the builder
job (in a worker process, with a timeout) builds it into an artifact whose bytes come back, so the
runner may be another process or machine; the runner job checks the output against the NumPy
reference and times it (CPU: as the kernel runs in the model, with the epilogue its nodes fuse into it,
``Task.epilogue``, see :func:`time_cpu`, the fastest repeat as its cost, as an exclusive job; VDLA:
cycle-model cycles).  Every failure is classified: ``build_error``,
``runtime_error``, ``timeout``, ``wrong_result``.

An AVX-512 config whose kernel spills vector registers beyond :attr:`MeasureOptions.max_spill_reloads` is not
timed (``spills``, the count in its detail): its time depends on the stack position of the call, not only on the
config (:mod:`~vdla.compiler.autotune.spills`; AVX2 configs are timed, see ``REJECT_MIN_REGISTERS`` there).  The task's default is timed whatever it spills: it is what
runs without a log, the baseline every pick is judged against.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from .executor import JobExecutor, WorkerDied
from .space import Config
from .spills import REJECT_MIN_REGISTERS, SPILL_ARCHES, SpillCount, find_objdump, spills_of, warn_no_objdump
from .task import Task
from .template import RunOutcome, Template, template_for



class Status(str, Enum):
    OK = "ok"
    INVALID = "invalid"
    BUILD_ERROR = "build_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    WRONG_RESULT = "wrong_result"
    SPILLS = "spills"


#: The flush before a timed call when the model's weights do not fit the last-level cache (or the model is not
#: known): 32 MiB, this Zen 4's whole L3, so every operand is evicted.
FULL_FLUSH_BYTES = 32 << 20


#: The most ``ymm``/``zmm`` reloads from fixed stack slots (:class:`~.spills.SpillCount`) a timed x86 config's
#: kernel may have.  Over 24 call depths (``bench/spill_stack.py``, MobileNetV2's stem, AMD Zen 4): kernels with 0
#: and 2 reloads moved 2-4% (the 1 x 1 convs' 2-reload defaults 2%), one with 7 reloads 12%, the old 2 x 14 stem
#: tile's 17 reloads 39%.  Several 1 x 1 defaults of MobileNetV2 have 2 reloads.
MAX_SPILL_RELOADS = 2


def model_flush_bytes(weight_bytes: int) -> int:
    """The flush before each timed call of a task of a model whose weights take ``weight_bytes``
    (:func:`~vdla.compiler.autotune.footprint.model_weight_bytes`), at most :data:`FULL_FLUSH_BYTES`.

    Between two runs of a node the rest of the model's weights pass through the caches (its activations
    reuse the arena, whose lines the node's own producer and consumers keep warm), so a model whose
    weights fit the L3 finds a node's weights there, not in DRAM.  MobileNetV2 (13.3 MiB of weights): its
    depthwise nodes of 9-27 us ran 1.3-1.8x slower after the 32 MiB flush than in the model, and two
    timings of one kernel after it differed by 5-15% (a single call per repeat, its misses served by DRAM
    that the other core's jobs share); after a flush of 8-16 MiB, the same kernels ran within 0-14% of
    their in-model time and agreed with themselves to 0.5-3% (``bench/fidelity_noise.py``).  ResNet-18
    and ResNet-50 (45 and 97 MiB) keep the full flush."""
    if weight_bytes < 0:
        raise ValueError(f"a model's weight bytes are >= 0, got {weight_bytes}")
    return int(min(weight_bytes, FULL_FLUSH_BYTES))


@dataclass(frozen=True)
class MeasureOptions:
    """How to measure: timing repeats, warm-up runs, the cache-flush size (:data:`FULL_FLUSH_BYTES`, or a
    model's :func:`model_flush_bytes`), the cache state a timed call starts from (:data:`CACHE_STATES`),
    the job timeouts, and the most vector reloads from the stack a timed AVX-512 config may have
    (``max_spill_reloads``, :data:`MAX_SPILL_RELOADS`; ``None`` times every config, spilling or not)."""

    repeats: int = 7
    warmup: int = 2
    flush_bytes: int = FULL_FLUSH_BYTES
    build_timeout_s: float = 120.0
    run_timeout_s: float = 60.0
    cache: str = "model"
    max_spill_reloads: int | None = MAX_SPILL_RELOADS

    def __post_init__(self) -> None:
        if self.cache not in CACHE_STATES:
            raise ValueError(f"cache state {self.cache!r} is not one of {CACHE_STATES}")
        if self.flush_bytes < 0:
            raise ValueError(f"flush_bytes must be >= 0 (0: no flush), got {self.flush_bytes}")
        if self.max_spill_reloads is not None and self.max_spill_reloads < 0:
            raise ValueError(f"max_spill_reloads must be >= 0 (or None: time spilling configs), "
                             f"got {self.max_spill_reloads}")


#: The cache state a timed CPU call starts from (:func:`time_cpu`): ``model`` as in the model (weights
#: evicted, the input just written by its producer, one call per repeat); ``cold`` every operand evicted,
#: then as many calls as last ~1 ms (the tuner's measurement before issue 28: its later calls find the
#: weights in cache, which the model's never do).
CACHE_STATES = ("model", "cold")


@dataclass(frozen=True)
class MeasureResult:
    """One measured config: its status, costs (seconds or cycles) and what went wrong, if anything."""

    config: Config
    status: Status
    costs: tuple[float, ...] = ()
    detail: str = ""
    build_s: float = 0.0

    @property
    def cost(self) -> float:
        """The fastest repeat (:func:`config_cost`); infinite for a failed config."""
        return config_cost(self.costs) if self.status == Status.OK and self.costs else float("inf")


def config_cost(costs: Sequence[float]) -> float:
    """A config's cost from its repeats: the fastest.  A kernel's time only grows with interference
    (other processes, a cold line, a frequency dip), and after the flush the repeats of one config
    drift down by up to 30%, so the median ranked configs by where in that drift their middle repeat
    fell: on ResNet-18's 7x7 conv it preferred a config that runs 1.2x slower in the model, where the
    minimum kept the faster one."""
    return min(costs)


def time_cpu(call: Callable[[], None], repeats: int, warmup: int, flush_bytes: int,
             produced: Sequence[np.ndarray] = (), cache: str = "model") -> list[float]:
    """Seconds per call: ``warmup`` calls, then ``repeats`` timed ones, each from the cache state of
    ``cache`` (:data:`CACHE_STATES`).

    ``model`` (the default) times a call as it runs in the model: before each call the caches are
    flushed (``flush_bytes``: between two uses of a layer's weights the rest of the model's weights
    pass through, :func:`model_flush_bytes`), then ``produced`` (the kernel's activation inputs, an epilogue's residual
    among them) are rewritten in place, as the producing node leaves them (in L2/L3, its lines modified), and one call is timed.
    ``cold`` flushes everything and then times as many calls as last ~1 ms: the calls after the first
    find the weights and input in cache, and the first finds even the input evicted; the ranking of
    configs it gave did not hold in the model (a conv the tuner put 1.14x faster ran 1.02x faster in
    place, ``bench/tune_fidelity.py``).

    The clock is the calling thread's CPU time (the kernels run single-threaded in this thread): on
    a machine shared with other processes, wall time also counts the time they hold the core, which
    ranked configs by the load of the moment (identical programs differed 1.35x in wall time, 1.01x
    in CPU time)."""
    if cache not in CACHE_STATES:
        raise ValueError(f"cache state {cache!r} is not one of {CACHE_STATES}")
    flush = np.zeros(max(flush_bytes // 8, 1))
    once = 0.0
    for _ in range(max(warmup, 1)):
        t0 = time.thread_time()
        call()
        once = time.thread_time() - t0
    costs = []
    if cache == "cold":
        number = max(1, min(1000, int(1e-3 / max(once, 1e-9))))
        for _ in range(repeats):
            flush += 1.0  # evicts the operands from the caches
            t0 = time.thread_time()
            for _ in range(number):
                call()
            costs.append((time.thread_time() - t0) / number)
        return costs
    for _ in range(repeats):
        flush += 1.0  # evicts the weights (and everything else)
        for a in produced:
            np.multiply(a, 1.0, out=a)  # the producer's write: read for ownership, then modified, as a node's output
        t0 = time.thread_time()
        call()
        costs.append(time.thread_time() - t0)
    return costs


def build_job(task_json: dict[str, Any], hw_config: dict[str, Any] | None, config: dict[str, Any]) -> bytes:
    """Builder: the artifact of ``config`` (module-level, so any executor can ship it)."""
    template = template_for(Task.from_json(task_json), hw_config)
    with tempfile.TemporaryDirectory(prefix="vdla_tune_") as tmp:
        return template.build(template.space.from_dict(config), Path(tmp)).read_bytes()


def run_job(task_json: dict[str, Any], hw_config: dict[str, Any] | None, artifact: bytes,
            options: MeasureOptions) -> RunOutcome:
    """Runner: check and time an artifact built by :func:`build_job`."""
    template = template_for(Task.from_json(task_json), hw_config)
    with tempfile.TemporaryDirectory(prefix="vdla_tune_") as tmp:
        path = Path(tmp) / "artifact"
        path.write_bytes(artifact)
        return template.run(path, True, options.repeats, options.warmup, options.flush_bytes, cache=options.cache)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


class Measurer:
    """Measures configs of one task on an executor (builds of a batch run in parallel)."""

    def __init__(self, task: Task, executor: JobExecutor, options: MeasureOptions = MeasureOptions(),
                 hw_config: dict[str, Any] | None = None) -> None:
        self.task = task
        self.executor = executor
        self.options = options
        self.hw_config = hw_config
        self.template: Template = template_for(task, hw_config)
        arch = getattr(getattr(self.template, "target", None), "arch", None)
        registers = getattr(self.template, "registers", 0)
        #: Whether built configs are checked for spills (x86 CPU tasks of a target with at least
        #: :data:`~.spills.REJECT_MIN_REGISTERS` vector registers, with a reload limit).
        self.counts_spills = (options.max_spill_reloads is not None and arch in SPILL_ARCHES
                              and registers >= REJECT_MIN_REGISTERS)
        if self.counts_spills and find_objdump() is None:
            # Spill counting sharpens the search; without a disassembler the tuner still works, timing every
            # config as before it existed, and says once what it skips and how to get it back.
            warn_no_objdump()
            self.counts_spills = False
        self._default_key = self.template.default().key if self.counts_spills else ""

    def spill_rejection(self, config: Config, artifact: bytes) -> SpillCount | None:
        """The spill count of a built config that must not be timed (more reloads than the limit, not the
        default), or None when it is timed."""
        if not self.counts_spills or config.key == self._default_key:
            return None
        count = spills_of(artifact)
        limit = self.options.max_spill_reloads
        return count if limit is not None and count.reloads > limit else None

    def measure(self, configs: Sequence[Config]) -> list[MeasureResult]:
        """Measure ``configs`` (results in the same order)."""
        results: list[MeasureResult | None] = [None] * len(configs)
        builds: dict[int, tuple[Future[bytes], float]] = {}
        for i, config in enumerate(configs):
            why = self.template.space.why_illegal(config)
            if why is not None:
                results[i] = MeasureResult(config, Status.INVALID, detail=why)
                continue
            future = self.executor.submit(build_job, self.task.to_json(), self.hw_config, config.to_dict(),
                                          device_kind=self.task.device_kind, timeout_s=self.options.build_timeout_s)
            builds[i] = (future, time.perf_counter())
        # Every build (and its spill count, objdump in this process) is done before the first timing run is
        # submitted: nothing of this batch then competes with a timing for the cores.
        built: dict[int, tuple[bytes, float]] = {}
        for i, (future, t0) in builds.items():
            try:
                artifact = future.result()
            except TimeoutError as exc:
                results[i] = MeasureResult(configs[i], Status.TIMEOUT, detail=f"build: {_describe(exc)}")
                continue
            except Exception as exc:  # noqa: BLE001 - any failure of the build job is this config's build error
                results[i] = MeasureResult(configs[i], Status.BUILD_ERROR, detail=_describe(exc))
                continue
            build_s = time.perf_counter() - t0
            spilled = self.spill_rejection(configs[i], artifact)
            if spilled is not None:
                results[i] = MeasureResult(configs[i], Status.SPILLS, build_s=build_s, detail=(
                    f"not timed: {spilled.describe()}, over the limit of {self.options.max_spill_reloads} "
                    f"reloads (a spilling kernel's time moves with the stack position of its call)"))
                continue
            built[i] = (artifact, build_s)
        runs: dict[int, tuple[Future[RunOutcome], float]] = {}
        exclusive = self.template.unit == "s"
        for i, (artifact, build_s) in built.items():
            runs[i] = (self.executor.submit(run_job, self.task.to_json(), self.hw_config, artifact, self.options,
                                            device_kind=self.task.device_kind, timeout_s=self.options.run_timeout_s,
                                            exclusive=exclusive), build_s)
        for i, (future, build_s) in runs.items():
            try:
                outcome = future.result()
            except TimeoutError as exc:
                results[i] = MeasureResult(configs[i], Status.TIMEOUT, detail=f"run: {_describe(exc)}", build_s=build_s)
                continue
            except (WorkerDied, Exception) as exc:  # noqa: BLE001 - the run job failed: this config's runtime error
                results[i] = MeasureResult(configs[i], Status.RUNTIME_ERROR, detail=_describe(exc), build_s=build_s)
                continue
            status = Status.OK if outcome.correct else Status.WRONG_RESULT
            results[i] = MeasureResult(configs[i], status, outcome.costs, outcome.detail, build_s)
        return [r for r in results if r is not None]
