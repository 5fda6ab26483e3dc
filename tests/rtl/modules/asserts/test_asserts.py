"""Every RTL assertion (docs/rtl.md, "Assertions") fires on a broken stimulus.

One build of tb_asserts (the asserting modules side by side) and one simulation serve every
case: the cocotb tests of asserts_cocotb.py each reset the bench and drive one violation,
with Verilator's error limit raised so a failed assertion is reported without ending the
run. The log section of each test must hold exactly its assertion, naming the instance it
fired in, and the simulator must exit with an error. a_fifo_count guards the FIFO's own
bookkeeping, which no port stimulus can break: its case runs on a mutant vdla_fifo whose
in_ready admits one entry too many.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from rtl_configs import configs_under_test

from vdla_hw.cache import cache_dir
from vdla_hw.rtl_build import RTL_DIR, cocotb_build

HERE = Path(__file__).parent
MODULES_DIR = HERE.parent
REPO = HERE.parents[3]
MODULES = ["vdla_fifo", "vdla_skid", "vdla_dep_gate", "vdla_sram_range", "vdla_sum_le", "vdla_tile_loader", "vdla_uop_loop", "vdla_addr_window",
           "vdla_axi_check"]

# cocotb test -> (assertion label, instance of tb_asserts it fires in)
CASES = {
    "fifo_overflow": ("a_fifo_overflow", "u_fifo"),
    "fifo_underflow": ("a_fifo_underflow", "u_fifo"),
    "fifo_in_stable": ("a_fifo_in_stable", "u_queue"),
    "skid_in_stable": ("a_skid_in_stable", "u_skid"),
    "window_span_end": ("a_window_span_end", "u_window"),
    "window_verdict": ("a_window_verdict", "u_window"),
    "gate_cmd_stable": ("a_gate_cmd_stable", "u_gate"),
    "gate_token_held": ("a_gate_token_held", "u_gate"),
    "gate_exec_done": ("a_gate_exec_done", "u_gate"),
    "axi_ar_burst": ("a_axi_ar_burst", "u_axi"),
    "axi_aw_burst": ("a_axi_aw_burst", "u_axi"),
    "axi_ar_stable": ("a_axi_ar_stable", "u_axi"),
    "axi_aw_stable": ("a_axi_aw_stable", "u_axi"),
    "axi_w_stable": ("a_axi_w_stable", "u_axi"),
    "axi_wlast": ("a_axi_wlast", "u_axi"),
}
FIFO_IN_READY = "assign in_ready = count < CNT_W'(DEPTH);"


@pytest.fixture(scope="module", params=configs_under_test(["tiny"]))
def config(request) -> str:
    return request.param


def _fired(config: str, testcases: list[str], out: Path, rtl_dir: Path | None = None) -> dict[str, list[str]]:
    """Run cocotb cases in one simulation, which must fail; returns each case's assertion lines."""
    from vdla_hw.config import load_config

    cfg = load_config(config)
    runner, _ = cocotb_build(cfg, "tb_asserts", modules=MODULES, extra_sources=[HERE / "tb_asserts.sv"],
                             rtl_dir=rtl_dir, purpose="cocotb-tb_asserts" + ("-mutant" if rtl_dir else ""))
    out.mkdir(parents=True, exist_ok=True)
    paths = [HERE, MODULES_DIR, REPO]
    env = {"VDLA_CONFIG": cfg.name, "VDLA_CONFIG_JSON": cfg.to_json(),
           "PYTHONPATH": os.pathsep.join([str(p) for p in paths] + [os.environ.get("PYTHONPATH", "")])}
    # A failed assertion ends the simulator process with exit code 1, which the runner raises.
    # (A cocotb test that ends without the assertion firing fails its own way: SystemExit.)
    with pytest.raises(RuntimeError, match="Command failed with return code: 1"):
        runner.test(test_module="asserts_cocotb", hdl_toplevel="tb_asserts", testcase=testcases, test_dir=out,
                    extra_env=env, results_xml=str(out / "results.xml"), log_file=out / "sim.log",
                    plusargs=[f"+verilator+error+limit+{10 * len(testcases) + 10}"])
    fired: dict[str, list[str]] = {}
    case = None
    for line in (out / "sim.log").read_text().splitlines():
        started = re.search(r"running asserts_cocotb\.(\w+) ", line)
        if started:
            case = started[1]
            fired[case] = []
        elif "Assertion failed" in line and case is not None:
            fired[case].append(line)
    return fired


def test_each_broken_stimulus_trips_its_assertion(config, tmp_path) -> None:
    fired = _fired(config, list(CASES), tmp_path)
    assert set(fired) == set(CASES), f"cases that did not run: {sorted(set(CASES) - set(fired))}"
    for case, (label, instance) in CASES.items():
        lines = fired[case]
        assert lines, f"{case}: {label} did not fire"
        assert all(re.search(rf"Assertion failed in \S*\.{instance}\.{label}: ", line) for line in lines), \
            f"{case}: expected only {instance}.{label}, got:\n" + "\n".join(lines)


def _mutant_rtl() -> Path:
    """A copy of the RTL with the FIFO's in_ready off by one, in a fixed cache folder: the
    Verilator build keeps its source paths, so a rerun reuses it. Files are rewritten only
    when their text changed."""
    rtl = cache_dir() / "mutants" / "fifo_in_ready"
    rtl.mkdir(parents=True, exist_ok=True)
    for src in RTL_DIR.glob("*.sv"):
        text = src.read_text()
        if src.name == "vdla_fifo.sv":
            assert FIFO_IN_READY in text
            text = text.replace(FIFO_IN_READY, "assign in_ready = count <= CNT_W'(DEPTH);")
        dst = rtl / src.name
        if not dst.exists() or dst.read_text() != text:
            dst.write_text(text)
    return rtl


def test_fifo_count_trips_on_a_mutant(config, tmp_path) -> None:
    rtl = _mutant_rtl()
    lines = _fired(config, ["fifo_count"], tmp_path / "run", rtl_dir=rtl)["fifo_count"]
    # The count check fires first; the overflow check follows once the counter has gone past DEPTH.
    assert lines and re.search(r"Assertion failed in \S*\.u_fifo\.a_fifo_count: ", lines[0]), lines
