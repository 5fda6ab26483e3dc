"""Deploy and run through a loopback pool whose board worker's FPGA is the Verilated RTL (emulated pynq).

The bitstream folders are what ``vdla fpga build --no-run`` writes (manifest + config): on an emulated
board the design is the RTL of the manifest's config with its build id, through the same
``vdla.runtime.fpga.open_board`` a board uses.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vdla.runtime.backends import run as run_local
from vdla.runtime.pool import PoolExecutor
from vdla.runtime.pool.deploy import board_workers
from vdla.runtime.pool.kinds import fpga_kind
from vdla.runtime.pool.tasks import submit_program
from vdla.runtime.random_programs import random_program
from vdla.runtime.system_programs import build_case
from vdla_hw.config import load_config

CLI = [sys.executable, "-m", "vdla.compiler.cli.main"]


def vdla(env: dict, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), env=env, capture_output=True, text=True, timeout=timeout, check=False)


def build_folder(env: dict, out: Path, config: str = "tiny") -> Path:
    r = vdla(env, "fpga", "build", "--board", "pynq-z2", "--config", config, "-o", str(out), "--no-run")
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory):
    """A scheduler and an emulated PYNQ-Z2 board worker, with the tiny config's bitstream deployed by the CLI."""
    from pool_harness import Pool

    tmp = tmp_path_factory.mktemp("deploy")
    p = Pool(tmp)
    sched = p.scheduler()
    p.worker(sched.address, "pynq1", "--board", "pynq-z2", "--emulate", "--store", str(tmp / "store"))
    folder = build_folder(p.env, tmp / "pynq-z2-tiny")
    r = vdla(p.env, "fpga", "deploy", "--board", "pynq-z2", "--bitstream", str(folder), "--pool", sched.address)
    yield sched.address, p, tmp, r
    p.stop()


def test_deploy_checks_then_advertises(deployed) -> None:
    address, p, _, r = deployed
    assert r.returncode == 0, r.stdout + r.stderr
    cfg = load_config("tiny")
    kind = fpga_kind("pynq_z2", cfg)
    assert f"pynq1: offers {kind}" in r.stdout
    checks = [line.strip() for line in r.stdout.splitlines() if line.strip().startswith("ok ")]
    assert len(checks) == 4 and "CONFIG_ID" in checks[0] and "BUILD_ID" in checks[1]
    assert "DRAM window" in checks[2] and "stopped by the design" in checks[2]
    assert "self-test 'gemm'" in checks[3] and "bit-exact vs fsim" in checks[3]
    with PoolExecutor(address) as ex:
        workers = {w["name"]: w for w in ex.workers(refresh=True).values()}
        assert workers["pynq1"]["resources"] == {kind: 1}
        assert [b.kind for b in board_workers(ex.client)] == [kind]
    status = vdla(p.env, "pool", "status", address)
    assert f"{kind}=1" in status.stdout and "pynq1: emulated board pynq_z2, bitstream of config 'tiny' checked" \
        in status.stdout


def test_programs_run_on_the_board_bit_exact(deployed) -> None:
    address, _, _, r = deployed
    assert r.returncode == 0, r.stderr
    cfg = load_config("tiny")
    programs = [random_program(cfg, seed) for seed in (3, 4)] + [build_case(cfg, "alu_chain")]
    with PoolExecutor(address) as ex:
        # no board named: the one board loaded with the programs' config
        for program in programs:
            remote = submit_program(ex, program, "fpga", timeout_s=600).result(timeout=900)
            assert remote.backend == "fpga"
            assert np.array_equal(remote.dram, run_local(program, "fsim").dram)


@pytest.mark.slow  # two more CLI processes (~10 s)
def test_sim_cli_runs_on_the_pool_board(deployed, tmp_path: Path) -> None:
    address, p, _, r = deployed
    assert r.returncode == 0, r.stderr
    program = random_program(load_config("tiny"), 7)
    program.save(tmp_path / "p.vdlaprog")
    local = vdla(p.env, "sim", str(tmp_path / "p.vdlaprog"), "--json")
    remote = vdla(p.env, "sim", str(tmp_path / "p.vdlaprog"), "--backend", "fpga", "--pool", address, "--json")
    assert remote.returncode == 0, remote.stderr
    assert json.loads(remote.stdout)["backend"] == "fpga" and local.returncode == 0


def test_a_run_for_a_config_no_board_holds_is_refused(deployed) -> None:
    address, _, _, _ = deployed
    program = random_program(load_config("default"), 1)
    with PoolExecutor(address) as ex:
        with pytest.raises(Exception, match="no board of the pool .* is loaded with config") as err:
            submit_program(ex, program, "fpga")
        assert "vdla fpga deploy" in err.value.hint


@pytest.mark.slow  # compiles the digits CNN for the tiny config and runs its VDLA nodes on the emulated board
def test_vdla_run_of_a_module_on_the_board_matches_fsim(deployed, tmp_path: Path) -> None:
    address, p, _, r = deployed
    assert r.returncode == 0, r.stderr
    sys.path.insert(0, str(Path(__file__).parents[1] / "graph"))
    from make_models import digits_split

    from vdla.compiler.examples import MODEL_PATH

    x_tr, _, x_te, _ = digits_split()
    np.savez(tmp_path / "calib.npz", x=x_tr[:16])
    np.save(tmp_path / "x.npy", x_te[:1])
    model = tmp_path / "digits.vdla"
    built = vdla(p.env, "compile", str(MODEL_PATH), "--target", "vdla", "--config", "tiny", "--calibrate",
                 str(tmp_path / "calib.npz"), "-o", str(model))
    assert built.returncode == 0, built.stderr
    run = ["run", str(model), "--input", str(tmp_path / "x.npy")]
    local = vdla(p.env, *run, "--output", str(tmp_path / "fsim.npy"))
    board = vdla(p.env, *run, "--backend", "fpga", "--pool", address, "--output", str(tmp_path / "fpga.npy"))
    assert local.returncode == 0 and board.returncode == 0, local.stderr + board.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "fpga.npy"), np.load(tmp_path / "fsim.npy"))
    # The module's kernels are this host's code and the emulated board worker runs on this host: the whole
    # module runs there (CPU kernels and VDLA nodes), not node by node from here.
    assert "running the whole module on board worker pynq1 (pynq_z2): its x86_64 processor" in board.stdout
    # Kernels for the PYNQ-Z2's Cortex-A9: no worker of the pool runs ARMv7, so the split is kept and said,
    # and this x86 machine then refuses the ARM kernels by name.
    arm = tmp_path / "digits_arm.vdla"
    built = vdla(p.env, "compile", str(MODEL_PATH), "--target", "vdla", "--config", "tiny", "--board", "pynq-z2",
                 "--calibrate", str(tmp_path / "calib.npz"), "-o", str(arm))
    assert built.returncode == 0, built.stderr
    split = vdla(p.env, "run", str(arm), "--input", str(tmp_path / "x.npy"), "--backend", "fpga", "--pool", address)
    assert split.returncode == 2
    assert "the module's CPU kernels are arm code (cortex-a9)" in split.stdout
    assert "was compiled for arm (cortex-a9); this host is x86_64" in split.stderr


@pytest.mark.slow  # restarts the board worker
def test_a_restarted_board_worker_checks_its_bitstream_again_and_offers_it(deployed) -> None:
    address, p, tmp, r = deployed
    assert r.returncode == 0, r.stderr
    old = next(n for n in p.nodes if "pynq1" in " ".join(n.proc.args))
    old.kill(signal.SIGTERM)
    node = p.worker(address, "pynq1", "--board", "pynq-z2", "--emulate", "--store", str(tmp / "store"))
    kind = fpga_kind("pynq_z2", load_config("tiny"))
    assert f"offering {kind}" in node.ready
    assert "checking the deployed bitstream" in node.log.read_text()
    program = random_program(load_config("tiny"), 11)
    with PoolExecutor(address) as ex:
        remote = submit_program(ex, program, "fpga", timeout_s=600).result(timeout=900)
        assert np.array_equal(remote.dram, run_local(program, "fsim").dram)


def _retarget(folder: Path, other: Path) -> None:
    """Make ``folder``'s bit file a design of ``other``'s config while its manifest keeps its own config.

    On the emulated board "loading a .bit" loads the design its folder's manifest describes; putting
    ``other``'s manifest and config beside the bit file is a bitstream of another config under this
    manifest -- what a wrongly copied ``vdla.bit`` is on a board.
    """
    out = folder / "out"
    out.mkdir()
    shutil.copyfile(other / "bitstream.json", out / "bitstream.json")
    shutil.copyfile(other / "config.json", out / "config.json")
    (out / "vdla.bit").write_bytes(b"the other config's design")
    manifest = json.loads((folder / "bitstream.json").read_text())
    manifest["files"] = {"bit": "out/vdla.bit", "design": "out/bitstream.json", "design_config": "out/config.json"}
    manifest["sha256"] = {role: hashlib.sha256((folder / rel).read_bytes()).hexdigest()
                          for role, rel in manifest["files"].items()}
    (folder / "bitstream.json").write_text(json.dumps(manifest, indent=1))


@pytest.mark.slow  # builds the RTL of a second config (the default preset)
def test_a_bitstream_of_another_config_is_refused_and_the_board_keeps_nothing(deployed) -> None:
    address, p, tmp, _r = deployed
    folder = build_folder(p.env, tmp / "mislabeled")
    _retarget(folder, build_folder(p.env, tmp / "pynq-z2-default", "default"))
    bad = vdla(p.env, "fpga", "deploy", "--board", "pynq-z2", "--bitstream", str(folder), "--pool", address)
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "CONFIG_ID/BUILD_ID check: the loaded bitstream is not the design its manifest describes" in bad.stderr
    assert "default" in bad.stderr and "tiny" in bad.stderr and "Traceback" not in bad.stderr
    with PoolExecutor(address) as ex:
        assert [b.kind for b in board_workers(ex.client)] == [None]  # unadvertised after a failed deploy
    # a good deploy afterwards restores the board
    good = vdla(p.env, "fpga", "deploy", "--board", "pynq-z2", "--bitstream", str(tmp / "pynq-z2-tiny"),
                "--pool", address)
    assert good.returncode == 0, good.stderr
