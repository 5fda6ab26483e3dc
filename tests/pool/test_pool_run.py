"""`vdla run model.vdla --pool`: a whole model whose VDLA nodes run on pool workers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "graph"))

from make_models import digits_split  # noqa: E402

from vdla.compiler.examples import MODEL_PATH  # noqa: E402


@pytest.mark.slow  # compiles a model (a minute or more on a shared 2-core machine)
def test_vdla_run_on_the_pool_matches_the_local_run(sim_pool, tmp_path: Path) -> None:
    address, p = sim_pool
    x_tr, _, x_te, _ = digits_split()
    np.savez(tmp_path / "calib.npz", x=x_tr[:16])
    np.save(tmp_path / "x.npy", x_te[:1])
    cli = [sys.executable, "-m", "vdla.compiler.cli.main"]
    model = tmp_path / "digits.vdla"
    subprocess.run(cli + ["compile", str(MODEL_PATH), "--target", "vdla", "--calibrate",
                          str(tmp_path / "calib.npz"), "-o", str(model)], env=p.env, check=True, capture_output=True)
    run = cli + ["run", str(model), "--input", str(tmp_path / "x.npy"), "--backend", "cycle", "--profile"]
    local = subprocess.run(run + ["--output", str(tmp_path / "local.npy")], env=p.env, check=True,
                           capture_output=True, text=True)
    remote = subprocess.run(run + ["--output", str(tmp_path / "pool.npy"), "--pool", address], env=p.env, check=True,
                            capture_output=True, text=True)
    np.testing.assert_array_equal(np.load(tmp_path / "pool.npy"), np.load(tmp_path / "local.npy"))

    def cycles(text: str) -> list[str]:  # the VDLA rows' cycle column of the profile table
        return [line.split()[3] for line in text.splitlines() if " vdla " in line]

    assert cycles(remote.stdout) == cycles(local.stdout) and cycles(local.stdout)
