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
until the cache fits in ``$VDLA_CACHE_MAX_GB`` (default :data:`DEFAULT_MAX_GB`).

Eviction never takes an entry from under a process that uses it. A user *pins* its entry
(:func:`use_entry`, which every build folder's lookup calls): a shared ``flock`` on the entry's lock
file ``<cache>/locks/<entry>.lock``, held until the process ends (the kernel drops it then, even on a
crash). Eviction takes the exclusive lock without waiting; an entry someone pins is skipped. Holding
that lock, the evictor renames the entry into ``<cache>/trash/`` (one atomic step) and deletes it
from there after releasing the lock, so a user who pins the entry next waits at most for the
rename and then finds either the whole entry or none (and builds afresh), never a half-deleted one.
A time stamp alone cannot do this: a harness build on a loaded machine took over 20 minutes, and a
fuzz worker runs one library for hours. Entries used in the last :data:`IN_USE_SECONDS` are kept
too (a process of an older version, which does not pin, may be using them).
"""

from __future__ import annotations

import fcntl
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
LOCKS = "locks"
"""``<cache>/locks/``: one lock file per entry (never evicted, a few bytes each)."""
TRASH = "trash"
"""``<cache>/trash/``: evicted entries, renamed there before they are deleted."""

_pinned: dict[str, int] = {}
"""Lock file -> descriptor holding its shared lock, for every entry this process pinned."""


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


def entry_of(path: Path, root: Path | None = None) -> Path:
    """The cache entry ``path`` lies in (``path`` itself when it is not inside one)."""
    root = (root or cache_dir()).absolute()
    path = Path(path).absolute()
    try:
        rel = path.relative_to(root).parts
    except ValueError:
        return path
    if len(rel) >= 2 and rel[0] == ENTRY_PARENT:
        return root / ENTRY_PARENT / rel[1]
    if rel and rel[0] in WHOLE_ENTRIES:
        return root / rel[0]
    return path


def lock_file(entry: Path, root: Path | None = None) -> Path:
    """The lock file of ``entry``: ``<cache>/locks/<path under the cache, '/' as '__'>.lock``."""
    root = (root or cache_dir()).absolute()
    entry = entry_of(entry, root)
    try:
        name = "__".join(entry.relative_to(root).parts)
    except ValueError:  # outside the cache: a lock keyed by the whole path
        name = "__".join(entry.parts[1:])
    return root / LOCKS / f"{name}.lock"


def pin(entry: Path) -> None:
    """Keep ``entry`` from eviction until this process ends (or :func:`unpin`).

    Takes a shared lock on the entry's lock file; waits only while an eviction of the entry is
    renaming it away. Call it *before* looking into the entry: what is there afterwards stays.
    """
    lock = lock_file(entry)
    key = str(lock)
    if key in _pinned:
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except BaseException:
        os.close(fd)
        raise
    _pinned[key] = fd


def unpin(entry: Path) -> None:
    """Release this process's pin of ``entry`` (no-op when it holds none)."""
    fd = _pinned.pop(str(lock_file(entry)), None)
    if fd is not None:
        os.close(fd)  # closing the descriptor drops its lock


def use_entry(entry: Path) -> Path:
    """Pin ``entry`` (:func:`pin`), create it if missing and mark it used now; returns it."""
    pin(entry)
    mark_used(entry)
    return entry


def in_use(entry: Path, root: Path | None = None) -> bool:
    """Whether some process pins ``entry`` (this one included)."""
    lock = lock_file(entry, root)
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops the exclusive lock if it was taken
    return False


def evict(entry: Path, root: Path | None = None) -> bool:
    """Remove ``entry`` unless a process pins it; True when it was removed (by this call)."""
    root = root or cache_dir()
    lock = lock_file(entry, root)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        trash = root / TRASH / f"{entry.name}.{os.getpid()}.{time.time_ns()}"
        trash.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(entry, trash)
        except FileNotFoundError:  # another evictor was first
            return False
    finally:
        os.close(fd)
    shutil.rmtree(trash, ignore_errors=True)
    return True


def empty_trash(root: Path | None = None) -> None:
    """Delete what evictions left in ``<cache>/trash`` (an evictor killed between rename and delete)."""
    trash = (root or cache_dir()) / TRASH
    if trash.is_dir():
        for item in trash.iterdir():
            shutil.rmtree(item, ignore_errors=True)


def _last_used(entry: Path) -> float:
    mark = entry / USED_MARK
    return (mark if mark.exists() else entry).stat().st_mtime


def entries(root: Path | None = None) -> list[CacheEntry]:
    """Every entry, least recently used first."""
    root = root or cache_dir()
    parent = root / ENTRY_PARENT
    folders = [p for p in parent.iterdir() if p.is_dir()] if parent.is_dir() else []
    folders += [root / name for name in WHOLE_ENTRIES if (root / name).is_dir()]
    found = []
    for p in folders:
        try:
            found.append(CacheEntry(p, folder_size(p), _last_used(p)))
        except FileNotFoundError:  # evicted by another process while we listed
            pass
    return sorted(found, key=lambda e: e.last_used)


def total_size(root: Path | None = None) -> int:
    """Bytes of everything under the cache root."""
    root = root or cache_dir()
    return folder_size(root) if root.is_dir() else 0


def trim(limit: int, root: Path | None = None, *, now: float | None = None) -> list[CacheEntry]:
    """Evict least recently used entries until the cache holds at most ``limit`` bytes; returns them.

    Entries a process pins (:func:`pin`) and entries used within :data:`IN_USE_SECONDS` of ``now``
    stay, even when the cache is then still above the limit.
    """
    root = root or cache_dir()
    now = time.time() if now is None else now
    empty_trash(root)
    size = total_size(root)
    evicted: list[CacheEntry] = []
    for entry in entries(root):
        if size <= limit:
            break
        if now - entry.last_used < IN_USE_SECONDS:
            continue
        if evict(entry.path, root):
            size -= entry.size
            evicted.append(entry)
    return evicted


def clear(root: Path | None = None) -> int:
    """Remove the whole cache, pinned entries included (an explicit request); returns the bytes freed."""
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


__all__ = ["ARM64_USERLAND", "CacheEntry", "LOCKS", "TRASH", "WHOLE_ENTRIES", "cache_dir", "clear", "empty_trash",
           "enforce_cap", "entries", "entry_of", "evict", "human", "in_use", "lock_file", "mark_used", "max_bytes", "pin",
           "total_size", "trim", "unpin", "use_entry"]
