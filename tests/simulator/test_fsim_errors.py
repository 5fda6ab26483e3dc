"""Every bad program raises its specific error, naming the instruction; nothing hangs."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.runtime.program import ProgramBuilder
from vdla.simulator import (
    DeadlockError,
    MemoryAccessError,
    ProtocolError,
    SimTimeoutError,
    run_fsim,
)
from vdla_hw.config import load_config
from vdla_hw.isa import AluInsn, AluOp, DepFlags, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop


@pytest.fixture
def cfg():
    return load_config("tiny")


def _run(pb: ProgramBuilder, **kw):
    prog = pb.build()
    return run_fsim(prog.config, prog.instructions, prog.dram, **kw)


def _builder(cfg) -> tuple[ProgramBuilder, object, object]:
    pb = ProgramBuilder(cfg)
    inp = pb.alloc("inp", "inp", (4 * cfg.batch, cfg.block_in), np.ones((4 * cfg.batch, cfg.block_in), int))
    out = pb.alloc("out", "out", (4 * cfg.batch, cfg.block_out))
    return pb, inp, out


def test_sram_out_of_range_names_instruction_buffer_and_range(cfg) -> None:
    pb, inp, _ = _builder(cfg)
    pb.load(MemType.INP, cfg.inp_buff_depth - 2, inp.addr, 1, 4, 4)
    pb.finish()
    with pytest.raises(MemoryAccessError, match=rf"instruction 0 \(LOAD INP.*INP SRAM elements \[{cfg.inp_buff_depth - 2}, "
                       rf"{cfg.inp_buff_depth + 1}\].*\[0, {cfg.inp_buff_depth - 1}\]"):
        _run(pb)


def test_dram_out_of_range_names_addresses(cfg) -> None:
    pb, inp, _ = _builder(cfg)
    pb.load(MemType.INP, 0, inp.addr, 2, 4, 1000)
    pb.finish()
    # Without --window the job's window is the whole DRAM image, and the window check names it.
    with pytest.raises(MemoryAccessError, match=r"instruction 0 .*DRAM INP elements \[0, 1003\] \(bytes \[0, \d+\)\) "
                       r"are outside the DRAM window \[0, \d+\)"):
        _run(pb)


def test_store_dram_out_of_range(cfg) -> None:
    pb, _, out = _builder(cfg)
    pb.store(0, out.addr + 100_000, 1, 1, 1, push_prev=True)
    pb.finish(pop_next=True)
    with pytest.raises(MemoryAccessError, match=r"instruction 0 \(STORE OUT"):
        _run(pb)


def test_gemm_index_out_of_range_from_loop_factors(cfg) -> None:
    pb, _, _ = _builder(cfg)
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))
    pb.gemm(0, 1, iter_out=3, dst_factor=(cfg.acc_buff_depth // 2, 0))
    pb.finish()
    with pytest.raises(MemoryAccessError, match=r"instruction 1 \(GEMM.*loop iteration 2 .*ACC SRAM element"):
        _run(pb)


def test_deadlock_names_blocked_instruction_and_queues(cfg) -> None:
    pb, inp, _ = _builder(cfg)
    pb.load(MemType.INP, 0, inp.addr, 1, 1, 1)  # forgets push_next
    pb.gemm(0, 0, pop_prev=True)
    pb.finish()
    with pytest.raises(DeadlockError) as info:
        _run(pb)
    err = info.value
    assert "instruction 1 (GEMM" in str(err) and "pop l2c" in str(err)
    assert "instruction 1" in err.blocked["compute"]
    assert err.queues["l2c"] == 0 and set(err.queues) >= {"l2c", "c2l", "c2s", "s2c", "cmd_load"}


def test_deadlock_on_full_queue_push(cfg) -> None:
    pb, inp, _ = _builder(cfg)
    for _ in range(cfg.dep_queue_depth + 1):  # one more token than l2c holds, never popped
        pb.load(MemType.INP, 0, inp.addr, 1, 1, 1, push_next=True)
    pb.gemm(0, 0, pop_next=True)  # waits for store, which never pushes
    pb.finish()
    with pytest.raises(DeadlockError, match=r"push l2c \(full: 16/16"):
        _run(pb)


def test_deadlock_when_fetch_blocks_on_a_full_command_queue() -> None:
    cfg = load_config("tiny").replace(cmd_queue_depth=2)
    pb, inp, _ = _builder(cfg)
    pb.load(MemType.INP, 0, inp.addr, 1, 1, 1, pop_next=True)  # waits for compute's token ...
    for _ in range(3):
        pb.load(MemType.INP, 0, inp.addr, 1, 1, 1)
    pb.gemm(0, 0, push_prev=True)  # ... which fetch can never dispatch: the load queue is full
    pb.finish()
    with pytest.raises(DeadlockError) as info:
        _run(pb)
    assert "fetch" in info.value.blocked and "load command queue" in info.value.blocked["fetch"]


def test_missing_finish(cfg) -> None:
    pb, _, _ = _builder(cfg)
    pb.gemm(0, 0)
    with pytest.raises(ProtocolError, match="has no FINISH"):
        _run(pb)


def test_finish_not_last(cfg) -> None:
    pb, _, _ = _builder(cfg)
    pb.finish()
    pb.gemm(0, 0)
    with pytest.raises(ProtocolError, match="FINISH at instruction 0 is not the last"):
        _run(pb)


def test_finish_racing_a_pending_store(cfg) -> None:
    pb, _, out = _builder(cfg)
    pb.gemm(0, 0, push_next=True)
    pb.store(0, out.addr, 1, 1, 1, pop_prev=True)
    pb.finish()  # does not wait for the store
    with pytest.raises(ProtocolError, match=r"FINISH \(instruction 2\) retired while the store module"):
        _run(pb, zeroed_sram=True)


@pytest.mark.parametrize(
    "insn, pattern",
    [
        (MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1, 1, 1, deps=DepFlags(pop_prev=True)), "load module, which has no prev"),
        (MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 1, 1, 1, deps=DepFlags(push_next=True)), "store module, which has no next"),
        (MemInsn(Opcode.STORE, MemType.ACC, 0, 0, 1, 1, 1), "STORE of memory type ACC"),
        (MemInsn(Opcode.LOAD, MemType.OUT, 0, 0, 1, 1, 1), "LOAD of memory type OUT"),
        (MemInsn(Opcode.LOAD, MemType.UOP, 0, 0, 1, 1, 1, 1, 0, 0, 0), "micro-op loads cannot pad"),
        (MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 1, 1, 1, 0, 0, 1, 0), "STORE cannot pad"),
        (GemmInsn(False, 3, 2, 1, 1, 0, 0, 0, 0, 0, 0), "uop_end 2 < uop_bgn 3"),
        (AluInsn(AluOp.ADD, True, 1, 5, 1, 1, 1, 0, 0, 0, 0), "uop_end 1 < uop_bgn 5"),
    ],
)
def test_illegal_instruction_is_a_protocol_error(cfg, insn, pattern: str) -> None:
    with pytest.raises(ProtocolError, match=rf"instruction 0 .*{pattern}"):
        run_fsim(cfg, [insn, FinishInsn()], np.zeros(256, np.uint8))


def test_store_shift_beyond_the_accumulator_is_a_protocol_error(cfg) -> None:
    store = MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 1, 1, 1, shift=cfg.acc_width)
    with pytest.raises(ProtocolError, match=rf"STORE shift {cfg.acc_width} is not below the {cfg.acc_width}-bit"):
        run_fsim(cfg, [store, FinishInsn()], np.zeros(256, np.uint8))


def test_watchdog(cfg) -> None:
    pb, _, _ = _builder(cfg)
    for _ in range(10):
        pb.gemm(0, 0)
    pb.finish()
    with pytest.raises(SimTimeoutError, match="watchdog: 5 instructions"):
        _run(pb, max_steps=5)


def test_reserved_uop_bits_rejected(cfg) -> None:
    pb, _, _ = _builder(cfg)
    spec = pb.alloc("bad", "raw", 1, np.array([0xFFFFFFFF], np.uint32), dtype="uint32")
    pb.load(MemType.UOP, 0, spec.offset // 4, 1, 1, 1)
    pb.finish()
    if cfg.isa.uop.used_bits < 32:
        with pytest.raises(ProtocolError, match="reserved bits"):
            _run(pb)
