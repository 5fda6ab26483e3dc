"""The record of the live tasks' bounds, ``live_bounds.json``: what the solver refuted and what it proved.

Per config and liveness program (``finish``, ``legal``, ``fault``) the record holds

- the *candidate* (top-level keys, written by :func:`~vdla_hw.formal.live_bound.record_span` or
  :func:`record_refuted`): ``bound`` = the largest N refuted (a run still busy N cycles after its
  start) plus one, with ``refuted``, ``refuted_frame``, the frames and ABC seconds of the run that
  found it, the derived N and the RTL digest;
- ``proven``: an N at which the whole live task PASSED (BMC to its depth, no assertion failing):
  ``bound``, ``depth``, ``engine``, ``abc_seconds``, ``wall_seconds``, ``date``, ``rtl`` (the digest of
  the RTL and harness it passed on), ``how`` (the run);
- ``room_proven``: the depth to which the room task (no reduced queue fills) PASSED, likewise --
  what makes the reduced model's verdict the config's for every N up to ``depth - DRIVER_CYCLES -
  STATUS_CYCLES``.

:func:`proven_entry` reads a proof only when its digest is the shipped RTL's: a changed RTL or
harness may be slower, and then only a new run proves it. This module reads and writes the file
and nothing else (no solver, no model): :mod:`~vdla_hw.formal.liveness` takes N from it,
:mod:`~vdla_hw.formal.live_bound` and ``vdla hw prove --record`` write it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from vdla_hw.errors import BadFileError
from vdla_hw.rtl_build import RTL_DIR

# Beside this module: shipped with the package, so a fresh checkout's live tasks run at the proven N.
RECORD = Path(__file__).with_name("live_bounds.json")
# The harness whose text, with the RTL's, a record was found on.
LIVE_HARNESS = Path(__file__).with_name("vdla_formal_live.sv")


def rtl_digest(rtl_dir: Path | None = None) -> str:
    """A digest of the RTL files and the live harness a record was found on (a change may make runs slower or faster)."""
    h = hashlib.sha256()
    for p in [*sorted((rtl_dir or RTL_DIR).glob("vdla_*.sv")), LIVE_HARNESS]:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def read_record(path: Path | None = None) -> dict[str, dict[str, dict[str, object]]]:
    """The whole record (empty when the file does not exist); BadFileError for one that is not the record's JSON
    (e.g. truncated by a run killed while writing it)."""
    path = path or RECORD
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadFileError(f"{path} is not the live bounds record ({exc})",
                           hint=f"restore it: git checkout -- {path.name} (in vdla_hw/formal)") from None
    if not isinstance(data, dict):
        raise BadFileError(f"{path} is not the live bounds record (a JSON object per config expected)",
                           hint=f"restore it: git checkout -- {path.name} (in vdla_hw/formal)")
    return data


def write_record(data: dict[str, dict[str, dict[str, object]]], path: Path | None = None) -> None:
    """Write the record back, keys sorted (a stable diff)."""
    (path or RECORD).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def program_entry(config: str, kind: str, path: Path | None = None) -> dict[str, object] | None:
    """The record of ``config``'s program ``kind``, or None."""
    return read_record(path).get(config, {}).get(kind)


def proven_entry(config: str, kind: str, *, key: str = "proven", path: Path | None = None,
                 rtl: str | None = None) -> dict[str, object] | None:
    """``key`` (``proven`` or ``room_proven``) of ``config``'s program ``kind`` when it was found on the RTL
    of digest ``rtl`` (default: the shipped RTL's), else None."""
    entry = program_entry(config, kind, path) or {}
    proof = entry.get(key)
    if not isinstance(proof, dict) or proof.get("rtl") != (rtl or rtl_digest()):
        return None
    return proof


def record_proven(config: str, kind: str, proof: dict[str, object], *, key: str = "proven",
                  path: Path | None = None) -> dict[str, object]:
    """Keep ``proof`` (a PASS: ``bound`` or ``depth``, ``engine``, ``abc_seconds``, ``date``, ``rtl`` ...) as
    ``key`` of ``config``'s ``kind``. On the same RTL the stronger one stays: for ``proven`` the smaller
    N (a tighter claim), for ``room_proven`` the greater depth (it covers more N); an equal one replaces
    the old (the newer run's figures), and so does a proof on another RTL. Returns the entry kept."""
    missing = {"engine", "abc_seconds", "date", "rtl", "depth"} - proof.keys()
    if key == "proven":
        missing |= {"bound"} - proof.keys()
    if missing:
        raise ValueError(f"a {key} record needs {sorted(missing)}")
    data = read_record(path)
    entry = data.setdefault(config, {}).setdefault(kind, {})
    old = entry.get(key)
    if isinstance(old, dict) and old.get("rtl") == proof["rtl"]:
        better = (int(proof["bound"]) <= int(old["bound"])) if key == "proven" else (int(proof["depth"]) >= int(old["depth"]))
        if not better:
            return old
    entry[key] = dict(proof)
    write_record(data, path)
    return entry[key]


def record_refuted(config: str, kind: str, refuted: int, frame: int, *, derived: int, abc_seconds: float | None,
                   note: str, path: Path | None = None) -> dict[str, object]:
    """A live task at N = ``refuted`` failed ``a_live_done`` at ``frame`` (a run still busy N cycles after its
    start): the candidate becomes ``refuted + 1`` unless the record already refutes more on the same RTL.
    A proof on record at or below ``refuted`` on the same RTL contradicts it: raised as an error."""
    data = read_record(path)
    entry = data.setdefault(config, {}).setdefault(kind, {})
    digest = rtl_digest()
    proof = entry.get("proven")
    if isinstance(proof, dict) and proof.get("rtl") == digest and int(proof["bound"]) <= refuted:
        raise ValueError(f"{config}/{kind}: N = {refuted} refuted, but the record proves N = {proof['bound']} on the "
                         "same RTL; one of the two runs is wrong -- re-run both")
    if entry.get("rtl") == digest and int(entry.get("refuted", -1)) >= refuted:
        return entry
    entry.update({"bound": refuted + 1, "refuted": refuted, "refuted_frame": frame, "frames": frame + 1,
                  "abc_seconds": abc_seconds, "derived": derived, "rtl": digest, "note": note})
    entry.pop("open", None)  # the probe run's open bounds belong to an older candidate
    write_record(data, path)
    return entry
