"""Seeded random hardware configs for the property tests: every field the config has, drawn over
ranges wide enough that validation refuses some draws (the tests redraw those)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vdla_hw.config import ConfigError, HwConfig, from_dict


def draw_config(rng: np.random.Generator, name: str = "random") -> dict[str, Any]:
    """One config as a dict, legal or not.  Buffer sizes are drawn as depths (elements) over the
    element size, so a legal draw holds a small conv's tiles."""
    def r(lo: int, hi: int) -> int:
        return int(rng.integers(lo, hi + 1))

    widths = {"log_inp_width": r(3, 4), "log_wgt_width": r(3, 4), "log_acc_width": r(4, 5), "log_out_width": r(3, 4)}
    shape = {"log_batch": r(0, 1), "log_block_in": r(1, 4), "log_block_out": r(1, 4)}
    batch, bi, bo = (1 << shape[k] for k in ("log_batch", "log_block_in", "log_block_out"))
    elem_bytes = {"uop": 4, "inp": batch * bi * (1 << widths["log_inp_width"]) // 8,
                  "wgt": bo * bi * (1 << widths["log_wgt_width"]) // 8,
                  "acc": batch * bo * (1 << widths["log_acc_width"]) // 8}
    log_depth = {"uop": r(7, 10), "inp": r(6, 9), "wgt": r(5, 8), "acc": r(6, 9)}
    sizes = {f"log_{b}_buff_size": max(0, int(elem_bytes[b]).bit_length() - 1) + log_depth[b] for b in elem_bytes}
    return {
        "name": name, **widths, **shape, **sizes, "log_bus_width": r(5, 7),
        "cmd_queue_depth": 1 << r(0, 5), "dep_queue_depth": 1 << r(0, 5), "clock_mhz": float(r(50, 300)),
        "gemm_lut_macs": r(0, 24),
        "timing": {"dram_latency": r(0, 40), "dram_burst_bytes": 1 << r(3, 9), "gemm_pipeline_depth": r(2, 6),
                   "alu_pipeline_depth": r(2, 5), "alu_ii": r(1, 5), "sram_write_cycles": r(1, 3),
                   "insn_overhead": r(2, 5), "queue_latency": r(1, 3), "dma_start_cycles": r(2, 5),
                   "dma_max_bursts": r(1, 8), "dma_narrow_rows": r(1, 6)},
    }


def legal_configs(seed: int, count: int) -> tuple[list[HwConfig], list[tuple[dict[str, Any], ConfigError]]]:
    """``count`` configs that validate, and every refused draw on the way with its error."""
    rng = np.random.default_rng(seed)
    legal: list[HwConfig] = []
    refused: list[tuple[dict[str, Any], ConfigError]] = []
    while len(legal) < count:
        data = draw_config(rng, f"random{len(legal)}")
        try:
            legal.append(from_dict(data))
        except ConfigError as exc:
            refused.append((data, exc))
    return legal, refused
