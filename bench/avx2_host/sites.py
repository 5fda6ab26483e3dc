"""Where the libraries of a Python process execute CPUID and XGETBV: the patch mode's site table.

Without CPUID faulting the AVX2 shim cannot trap CPUID itself; instead its audit library rewrites
each such instruction of the libraries that choose kernels by it (``ud2`` in its place, handled by a
SIGILL handler that answers as an AVX2-only CPU).  This module finds those instructions offline with
``objdump -d`` (a linear sweep of the executable sections, as the CPU decodes them) and writes the
table the audit library reads.  Disassembling torch's 450 MB ``libtorch_cpu.so`` takes a minute, so
each file's sites are cached under ``cache_dir()/avx2_host/sites`` keyed by its path, size and mtime.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from vdla_hw.cache import cache_dir

#: An objdump line of one of them: "  12150b2:\tcpuid" (addresses in hex, no raw bytes).
_LINE = re.compile(r"^\s*([0-9a-f]+):\s+(cpuid|xgetbv)\s*$")

#: The cache's format; bump when a table's meaning changes.
_VERSION = 1


@dataclass(frozen=True)
class Site:
    """One instruction to patch: its file, virtual address (as linked) and kind (``cpuid``/``xgetbv``)."""

    path: Path
    vaddr: int
    kind: str


def dispatching_libraries() -> list[Path]:
    """The shared objects whose CPU dispatch the shim must reach, those of the installed packages.

    onnxruntime's Python extension (MLAS is linked into it), llvmlite's LLVM, torch's own libraries,
    numpy's extension modules, xgboost's library (the tuner's cost model), and the libraries each
    package's wheel vendors in ``<package>.libs`` (numpy's OpenBLAS picks its kernels by CPUID too);
    packages that are not installed are left out.
    """
    found: list[Path] = []
    for package, patterns in (("onnxruntime", ["capi/*.so"]), ("llvmlite", ["binding/*.so"]),
                              ("torch", ["lib/*.so", "lib/*.so.*"]), ("numpy", ["**/*.so"]),
                              ("scipy", []), ("xgboost", ["lib/*.so"])):
        spec = find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        globs = [root.glob(p) for p in patterns] + [root.parent.glob(f"{package}{tail}.libs/*.so*") for tail in ("", "_*")]
        for paths in globs:
            found.extend(sorted(p.resolve() for p in paths if p.is_file()))
    return list(dict.fromkeys(found))


def _cache_file(path: Path) -> Path:
    st = path.stat()
    key = hashlib.sha256(f"{_VERSION}:{path}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:20]
    return cache_dir() / "avx2_host" / "sites" / f"{path.name}-{key}.json"


def _disassemble(path: Path) -> list[Site]:
    """The CPUID/XGETBV instructions of one file, from ``objdump -d``'s listing."""
    objdump = shutil.which("objdump")
    if objdump is None:
        raise RuntimeError("objdump not found: the patch mode finds CPUID sites with it; install binutils")
    proc = subprocess.Popen([objdump, "-d", "--no-show-raw-insn", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1 << 20)
    sites = []
    assert proc.stdout is not None
    for line in proc.stdout:
        # Most lines are other instructions: a substring test first keeps this at objdump's speed.
        if "cpuid" in line or "xgetbv" in line:
            m = _LINE.match(line)
            if m:
                sites.append(Site(path, int(m.group(1), 16), m.group(2)))
    if proc.wait() != 0:
        raise RuntimeError(f"objdump -d {path} exited {proc.returncode}")
    return sites


def sites_of(path: Path) -> list[Site]:
    """The sites of ``path``, from the cache when the file is unchanged."""
    cached = _cache_file(path)
    if cached.exists():
        return [Site(path, int(v), k) for v, k in json.loads(cached.read_text())]
    sites = _disassemble(path)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps([[s.vaddr, s.kind] for s in sites]))
    tmp.replace(cached)
    return sites


def all_sites(paths: list[Path], progress: bool = True) -> list[Site]:
    """The sites of every file; a progress bar (on stderr) over the files that must be disassembled."""
    todo = [p for p in paths if not _cache_file(p).exists()]
    if todo and progress:
        try:
            from tqdm import tqdm
        except ImportError:  # a Python without the project's dependencies: plain lines instead
            for p in todo:
                print(f"avx2_host: finding CPUID sites in {p} (objdump, cached)", file=sys.stderr, flush=True)
                sites_of(p)
            return [s for p in paths for s in sites_of(p)]
        total = sum(p.stat().st_size for p in todo)
        with tqdm(total=total, unit="B", unit_scale=True, file=sys.stderr,
                  desc="avx2_host: finding CPUID sites (objdump, cached)") as bar:
            for p in todo:
                bar.set_postfix_str(p.name)
                sites_of(p)
                bar.update(p.stat().st_size)
    return [s for p in paths for s in sites_of(p)]


def write_table(sites: list[Site]) -> Path:
    """The audit library's table, under the cache, named by its content's digest (so concurrent
    launchers of different environments never overwrite each other's).

    Per file a line ``O <dev> <inode> <path>``, then one ``C|X <hex vaddr>`` per site (``C`` cpuid,
    ``X`` xgetbv), ascending. Objects are matched by device and inode (what ``stat`` of the loaded
    name gives), so symlinked or relative names of the same file are found; files without sites are
    left out.
    """
    lines = []
    by_file: dict[Path, list[Site]] = {}
    for s in sites:
        by_file.setdefault(s.path, []).append(s)
    for path, group in by_file.items():
        st = path.stat()
        lines.append(f"O {st.st_dev} {st.st_ino} {path}")
        lines.extend(f"{'C' if s.kind == 'cpuid' else 'X'} {s.vaddr:x}" for s in sorted(group, key=lambda s: s.vaddr))
    text = "\n".join(lines) + "\n"
    out = cache_dir() / "avx2_host" / f"sites-{hashlib.sha256(text.encode()).hexdigest()[:16]}.txt"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(out)
    return out
