"""The build cache: what is in it, how big it is, and a size cap with least-recently-used eviction.

Everything the tools build once and reuse lives under :func:`cache_dir` (``$VDLA_CACHE_DIR``, else
``~/.cache/vdla``): Verilator builds and synthesis runs in ``rtl/<config>-<hash>/`` (one *entry*
per design and parameter set, see :func:`vdla_hw.rtl_build.build_dir`), generated packages of
custom configs in ``rtl/pkg/``, and the compiler wrappers of the ``ziglang`` fallback in
``toolchain/``, and the arm64 Debian userland the slow tests run board modules in (``arm64-userland/``,
one entry of its own: over 100 MB, rebuilt from a Debian mirror on next use). Entries are evicted
whole: a build folder is useless in part.

Each use of an entry touches its :data:`USED_MARK`, so its modification time is the entry's last
use. :func:`enforce_cap` runs after every build and evicts the least recently used entries
until the cache fits in ``$VDLA_CACHE_MAX_GB`` (default :data:`DEFAULT_MAX_GB`); entries used in
the last :data:`IN_USE_SECONDS` are never evicted, as another process may be building or
running them.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from vdla_hw.errors import BadConfigError

CACHE_ENV = "VDLA_CACHE_DIR"
MAX_GB_ENV = "VDLA_CACHE_MAX_GB"
DEFAULT_MAX_GB = 5.0
USED_MARK = ".last_used"
IN_USE_SECONDS = 120.0
ENTRY_PARENT = "rtl"
"""Entries are the folders directly under ``<cache>/rtl`` (``pkg`` included, as one entry) ..."""
ARM64_USERLAND = "arm64-userland"
WHOLE_ENTRIES = (ARM64_USERLAND,)
"""... and these folders directly under the cache root, each one entry."""


@dataclass(frozen=True)
class CacheEntry:
    """One evictable folder of the cache: its path, size in bytes and last use (epoch seconds)."""

    path: Path
    size: int
    last_used: float


def cache_dir() -> Path:
    """The cache root: ``$VDLA_CACHE_DIR`` or ``~/.cache/vdla``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "vdla")


def max_bytes() -> int:
    """The cap from ``$VDLA_CACHE_MAX_GB`` (default :data:`DEFAULT_MAX_GB`), in bytes."""
    raw = os.environ.get(MAX_GB_ENV, "").strip()
    try:
        gb = float(raw) if raw else DEFAULT_MAX_GB
    except ValueError:
        gb = -1.0
    if not gb > 0:
        raise BadConfigError(f"{MAX_GB_ENV}={raw!r} is not a positive number of gigabytes",
                             hint=f"e.g. {MAX_GB_ENV}=2.5, or unset it for {DEFAULT_MAX_GB:g}")
    return int(gb * 1e9)


def folder_size(path: Path) -> int:
    """Bytes of the files under ``path`` (symbolic links are not followed)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:  # removed by a concurrent build while we walked
                pass
    return total


def mark_used(entry: Path) -> None:
    """Record that ``entry`` (a folder under ``<cache>/rtl``, or one of :data:`WHOLE_ENTRIES`) was used now."""
    entry.mkdir(parents=True, exist_ok=True)
    (entry / USED_MARK).touch()


def _last_used(entry: Path) -> float:
    mark = entry / USED_MARK
    return (mark if mark.exists() else entry).stat().st_mtime


def entries(root: Path | None = None) -> list[CacheEntry]:
    """Every entry, least recently used first."""
    root = root or cache_dir()
    parent = root / ENTRY_PARENT
    folders = [p for p in parent.iterdir() if p.is_dir()] if parent.is_dir() else []
    folders += [root / name for name in WHOLE_ENTRIES if (root / name).is_dir()]
    return sorted((CacheEntry(p, folder_size(p), _last_used(p)) for p in folders), key=lambda e: e.last_used)


def total_size(root: Path | None = None) -> int:
    """Bytes of everything under the cache root."""
    root = root or cache_dir()
    return folder_size(root) if root.is_dir() else 0


def trim(limit: int, root: Path | None = None, *, now: float | None = None) -> list[CacheEntry]:
    """Evict least recently used entries until the cache holds at most ``limit`` bytes; returns them.

    Entries used within :data:`IN_USE_SECONDS` of ``now`` stay, even when the cache is then
    still above the limit.
    """
    root = root or cache_dir()
    now = time.time() if now is None else now
    size = total_size(root)
    evicted: list[CacheEntry] = []
    for entry in entries(root):
        if size <= limit:
            break
        if now - entry.last_used < IN_USE_SECONDS:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        size -= entry.size
        evicted.append(entry)
    return evicted


def clear(root: Path | None = None) -> int:
    """Remove the whole cache; returns the bytes freed."""
    root = root or cache_dir()
    size = total_size(root)
    if root.is_dir():
        shutil.rmtree(root)
    return size


def enforce_cap() -> list[CacheEntry]:
    """:func:`trim` to :func:`max_bytes`; called after each build."""
    return trim(max_bytes())


def human(size: float) -> str:
    """``size`` bytes as a short human-readable string (1000-based, like the cap)."""
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


__all__ = ["ARM64_USERLAND", "CacheEntry", "WHOLE_ENTRIES", "cache_dir", "clear", "enforce_cap", "entries", "human",
           "mark_used", "max_bytes", "total_size", "trim"]
