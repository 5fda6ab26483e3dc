"""Another commit's tree, unpacked for a benchmark's same-run peer.

A peer is the same workload run on the code of an earlier commit, in a subprocess whose
``PYTHONPATH`` is that commit's tree (``git archive``), so both sides share the machine's state.
"""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def peer_tree(rev: str, prefix: str = "peer_") -> Iterator[tuple[str, Path]]:
    """Yield ``(short commit, tree directory)`` for ``rev``; the directory is removed on exit."""
    found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "--verify", "--quiet", f"{rev}^{{commit}}"],
                           capture_output=True, text=True)
    if found.returncode:
        raise SystemExit(f"--peer {rev}: no such commit in {ROOT} (give a commit, tag or branch; `git log` lists them)")
    commit = found.stdout.strip()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit], check=True,
                                 capture_output=True).stdout
        tar_path = Path(tmp) / "tree.tar"
        tar_path.write_bytes(archive)
        with tarfile.open(tar_path) as tar:
            tar.extractall(Path(tmp) / "tree", filter="data")
        yield commit, Path(tmp) / "tree"
