"""``vdla cache``: the build cache's entries, sizes, LRU trimming under a cap, and clearing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from vdla.compiler.cli.main import main
from vdla_hw import cache
from vdla_hw.errors import BadConfigError
from vdla_hw.rtl_build import build_dir


def _entry(root: Path, name: str, size: int, age_s: float) -> Path:
    entry = root / "rtl" / name
    (entry / "harness").mkdir(parents=True)
    (entry / "harness" / "lib.so").write_bytes(b"\0" * size)
    cache.mark_used(entry)
    then = time.time() - age_s
    os.utime(entry / cache.USED_MARK, (then, then))
    return entry


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.MAX_GB_ENV, raising=False)
    return tmp_path / "cache"


def test_info_lists_entries_least_recently_used_first(root: Path, capsys) -> None:
    _entry(root, "tiny-aaaa", 3000, age_s=7200)
    _entry(root, "default-bbbb", 5000, age_s=600)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"cache: {root}" in out and "in 2 entries" in out
    assert out.index("tiny-aaaa") < out.index("default-bbbb")
    assert [e.path.name for e in cache.entries()] == ["tiny-aaaa", "default-bbbb"]
    assert cache.total_size() >= 8000


def test_trim_evicts_the_least_recently_used_whole_entries(root: Path, capsys) -> None:
    old = _entry(root, "tiny-old", 400_000, age_s=86400)
    mid = _entry(root, "wide-mid", 400_000, age_s=3600)
    new = _entry(root, "default-new", 400_000, age_s=10)  # in use: never evicted
    assert main(["cache", "trim", "--max-gb", "0.0009"]) == 0  # 900 kB: one entry must go
    assert not old.exists() and mid.exists() and new.exists()
    assert "evicted tiny-old" in capsys.readouterr().out
    assert [e.path.name for e in cache.trim(0)] == ["wide-mid"]
    assert new.exists(), "an entry used in the last minutes is kept even above the cap"


def test_the_cap_comes_from_the_environment(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _entry(root, "tiny-old", 2_000_000, age_s=86400)
    keep = _entry(root, "tiny-new", 2_000_000, age_s=3600)
    monkeypatch.setenv(cache.MAX_GB_ENV, "0.003")
    assert [e.path.name for e in cache.enforce_cap()] == ["tiny-old"]
    assert keep.exists()
    monkeypatch.setenv(cache.MAX_GB_ENV, "lots")
    with pytest.raises(BadConfigError, match="VDLA_CACHE_MAX_GB='lots'"):
        cache.enforce_cap()


def test_clear_removes_everything(root: Path, capsys) -> None:
    _entry(root, "tiny-aaaa", 1000, age_s=10)
    assert main(["cache", "clear"]) == 0
    assert not root.exists() and "freed" in capsys.readouterr().out
    assert main(["cache", "info"]) == 0 and "in 0 entries" in capsys.readouterr().out


def test_each_build_folder_use_marks_its_entry(root: Path) -> None:
    folder = build_dir("tiny", "probe", sources=[])
    entry = folder.parent
    assert (entry / cache.USED_MARK).exists()
    assert [e.path for e in cache.entries()] == [entry]


def test_the_arm64_userland_is_one_entry_listed_trimmed_and_cleared(root: Path, capsys) -> None:
    userland = root / cache.ARM64_USERLAND
    (userland / "root" / "usr" / "bin").mkdir(parents=True)
    (userland / "root" / "usr" / "bin" / "python3").write_bytes(b"\0" * 600_000)
    cache.mark_used(userland)
    then = time.time() - 86400
    os.utime(userland / cache.USED_MARK, (then, then))
    build = _entry(root, "tiny-newer", 400_000, age_s=3600)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "in 2 entries" in out and out.index(cache.ARM64_USERLAND) < out.index("tiny-newer")
    assert [(e.path, e.size) for e in cache.entries()][0] == (userland, 600_000)
    assert main(["cache", "trim", "--max-gb", "0.0009"]) == 0  # 900 kB: the older userland goes, whole
    assert f"evicted {cache.ARM64_USERLAND}" in capsys.readouterr().out
    assert not userland.exists() and build.exists()
    cache.mark_used(userland)
    assert main(["cache", "clear"]) == 0 and not root.exists()


# --- eviction against processes that use the entries (the campaign's crash:rtl on wide seed 20) ---

_USER = r"""
import os, sys, time
from pathlib import Path
from vdla_hw import cache
from vdla_hw.rtl_build import build_dir

name, stop, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
deadline = time.time() + 300  # a watchdog: the test creates `stop` once the evictor is done


def running() -> bool:
    return not stop.exists() and time.time() < deadline

rounds = bad = 0
if mode == "hold":
    # One long use, as a worker running one harness library for hours: pin, build, keep reading.
    folder = build_dir("tiny", "work", sources=[], extra={"user": name})
    (folder / "lib.so").write_bytes(bytes(range(256)) * 800)
    hour_ago = time.time() - 3600  # the use began long ago: a time stamp no longer protects it
    os.utime(folder.parent / cache.USED_MARK, (hour_ago, hour_ago))
    print("ready", flush=True)
    while running():
        rounds += 1
        try:
            if (folder / "lib.so").read_bytes() != bytes(range(256)) * 800:
                bad += 1
        except FileNotFoundError:
            bad += 1
        time.sleep(0.005)
else:
    # Short uses racing the evictor: each finds the whole entry or none, never a part of one.
    entry = Path(os.environ[cache.CACHE_ENV]) / cache.ENTRY_PARENT / name
    print("ready", flush=True)
    while running():
        rounds += 1
        cache.use_entry(entry)
        files = sorted(p.name for p in entry.iterdir() if p.name != cache.USED_MARK)
        if "complete" in files and files != sorted(["complete", *(f"part{i}" for i in range(20))]):
            bad += 1
        if "complete" not in files:  # (re)build it: the parts, then the marker
            for i in range(20):
                (entry / f"part{i}").write_bytes(b"x" * 4096)
            (entry / "complete").touch()
        hour_ago = time.time() - 3600
        os.utime(entry / cache.USED_MARK, (hour_ago, hour_ago))
        cache.unpin(entry)
print(f"rounds={rounds} bad={bad}", flush=True)
sys.exit(1 if bad or not rounds or not stop.exists() else 0)
"""

_EVICTOR = r"""
import sys, time
from vdla_hw import cache
deadline = time.time() + float(sys.argv[1])
evicted = 0
while time.time() < deadline:
    evicted += len(cache.trim(0))
print(f"evicted={evicted}", flush=True)
"""


def test_eviction_spares_entries_that_running_processes_use(root: Path) -> None:
    """Real processes: three hold their entries, two race short uses, one evicts in a loop (cap 0).

    Before entries were pinned, the evictor deleted the held entries (their last use was an hour
    ago) and the holders saw their library vanish; a short user could find half an entry.
    """
    import subprocess
    import sys

    stale = _entry(root, "tiny-stale", 1000, age_s=7200)  # nobody uses it: must go
    env = {**os.environ, cache.CACHE_ENV: str(root)}
    stop = root.parent / "stop"  # the users run until the evictor is done, however slow the machine
    holders = [subprocess.Popen([sys.executable, "-c", _USER, f"h{i}", str(stop), "hold"], env=env,
                                stdout=subprocess.PIPE, text=True) for i in range(3)]
    racers = [subprocess.Popen([sys.executable, "-c", _USER, "tiny-shared", str(stop), "race"], env=env,
                               stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in holders + racers:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    evictor = subprocess.run([sys.executable, "-c", _EVICTOR, "4"], env=env, capture_output=True, text=True, timeout=120)
    stop.touch()
    assert evictor.returncode == 0, evictor.stderr
    outs = [(proc.communicate(timeout=120)[0], proc.returncode) for proc in holders + racers]
    for out, code in outs:
        assert code == 0, f"a user lost (part of) its entry to eviction: {out.strip()}"
    assert not stale.exists(), "an entry nobody uses must still be evicted"
    assert int(evictor.stdout.split("=")[1]) >= 1
    held = [e.path.name for e in cache.entries() if e.path.name.startswith("tiny-") and e.path.name != "tiny-shared"]
    assert len(held) == 3, f"the three held entries survived: {held}"
    # The users have exited, so the kernel dropped their pins: now everything can go.
    assert not any(cache.in_use(root / "rtl" / name) for name in held)
    cache.trim(0, now=time.time() + 2 * cache.IN_USE_SECONDS)
    assert cache.entries() == [] and not any((root / cache.TRASH).iterdir())
