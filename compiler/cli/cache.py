"""``vdla cache info|clear|trim``: the build cache (Verilator builds, synthesis runs) and its size cap."""

from __future__ import annotations

import argparse
import time

from vdla_hw.cache import (DEFAULT_MAX_GB, MAX_GB_ENV, cache_dir, clear, entries, human, max_bytes, total_size,
                           trim)
from vdla_hw.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("cache", help="show, trim or clear the build cache (RTL builds, synthesis)",
                                  description=f"The build cache folder is $VDLA_CACHE_DIR or ~/.cache/vdla; it is "
                                              f"kept under ${MAX_GB_ENV} gigabytes (default {DEFAULT_MAX_GB:g}) by "
                                              f"evicting the least recently used builds.")
    sub = group.add_subparsers(dest="cache_command", metavar="SUBCOMMAND", required=True)
    p = sub.add_parser("info", help="the cache folder, its entries (least recently used first) and total size")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("clear", help="delete the whole cache (everything is rebuilt on next use)")
    p.set_defaults(func=cmd_clear)
    p = sub.add_parser("trim", help="evict least recently used builds until the cache fits a size")
    p.add_argument("--max-gb", type=float, default=None, help=f"the size to fit (default: ${MAX_GB_ENV} or "
                                                              f"{DEFAULT_MAX_GB:g})")
    p.set_defaults(func=cmd_trim)


def cmd_info(args: argparse.Namespace) -> int:
    root = cache_dir()
    found = entries(root)
    print(f"cache: {root}")
    print(f"size:  {human(total_size(root))} in {len(found)} entries (cap {human(max_bytes())}, ${MAX_GB_ENV})")
    now = time.time()
    for entry in found:
        age = now - entry.last_used
        when = f"{age / 86400:.1f} d" if age >= 86400 else f"{age / 3600:.1f} h" if age >= 3600 else f"{age / 60:.0f} min"
        print(f"  {human(entry.size):>9}  used {when:>8} ago  {entry.path.name}")
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    root = cache_dir()
    print(f"cleared {root}: freed {human(clear(root))}")
    return 0


def cmd_trim(args: argparse.Namespace) -> int:
    if args.max_gb is not None and not args.max_gb >= 0:
        raise UsageError(f"--max-gb {args.max_gb} must be a size in gigabytes, 0 or more")
    limit = max_bytes() if args.max_gb is None else int(args.max_gb * 1e9)
    evicted = trim(limit)
    for entry in evicted:
        print(f"evicted {entry.path.name} ({human(entry.size)})")
    print(f"cache {cache_dir()}: {human(total_size())} (limit {human(limit)})")
    return 0
