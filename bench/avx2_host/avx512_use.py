"""Did this process run any AVX-512 instruction? The kernel's record, the check behind the AVX2 shim.

Linux records per thread (x86 ``/proc/<pid>/task/<tid>/arch_status``, ``AVX512_elapsed_ms``) how long ago
the thread's AVX-512 state -- zmm upper halves, zmm16-31, opmask registers -- was last seen in use when
the thread was switched out, -1 if never. That state stays in use once touched, so every later switch
renews the record: a thread that ran any AVX-512 instruction in this process shows a time shorter than
the process's age. A fork copies the parent's record, so a time older than the process (by more than
:data:`START_SLACK_MS`: the clock-tick resolution of the start time, and the loader's first
instructions) is the parent's, not this process's.

Run as a script, it checks a process like ``bench/models.py``'s: ResNet-18 (an ONNX file, e.g. from
``bench/models.py --export-onnx DIR``) through our ``llvm`` build, onnxruntime and torch eager, then
prints the record; under ``bench/avx2_host/run.py`` the answer should be ``False``::

    python bench/avx2_host/run.py -- python bench/avx2_host/avx512_use.py DIR/resnet18.onnx
"""

from __future__ import annotations

import glob
import os
import sys
import time
from pathlib import Path

#: A record older than the process's age minus this is inherited from the parent (see above).
START_SLACK_MS = 20


def process_age_ms() -> float:
    """Milliseconds since this process started (clock-tick resolution)."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    start = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return (float(Path("/proc/uptime").read_text().split()[0]) - start) * 1000


def avx512_records() -> list[int]:
    """Every thread's ``AVX512_elapsed_ms`` now (empty where the kernel does not report it)."""
    time.sleep(0.05)  # every thread is switched out at least once, so the records are current
    return [int(line.split()[1]) for path in glob.glob("/proc/self/task/*/arch_status")
            for line in Path(path).read_text().splitlines() if line.startswith("AVX512_elapsed_ms:")]


def used_avx512() -> bool | None:
    """Whether any thread of this process used AVX-512 state after start-up; None if the kernel cannot tell."""
    records = avx512_records()
    if not records:
        return None
    age = process_age_ms()
    return any(0 <= ms < age - START_SLACK_MS for ms in records)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print(__doc__, file=sys.stderr)
        return 2
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    import torchvision

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from vdla.compiler.frontend.onnx import from_onnx
    from vdla.compiler.graph.build import build_model

    model = onnx.load(argv[0])
    name = model.graph.input[0].name
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours = build_model(from_onnx(model), target="llvm")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    torch.set_num_threads(1)
    net = torchvision.models.resnet18().eval()  # torch's kernels on the same shapes (its own weights)
    for _ in range(3):
        a = ours.run({name: x})[0]
        b = session.run(None, {name: x})[0]
        with torch.inference_mode():
            net(torch.from_numpy(x))
    print(f"ours vs onnxruntime: max abs error {float(np.abs(a - b).max() / np.abs(b).max()):.2e} of max |output|")
    records = avx512_records()
    print(f"process age {process_age_ms():.0f} ms; AVX512_elapsed_ms of its {len(records)} threads: {sorted(records)}")
    print(f"used AVX-512 in this process: {used_avx512()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
