"""Re-prove the per-kind liveness tasks in one command (issue 30): every ``live_<kind>_l2`` and its room twin.

``python -m vdla_hw.formal.live_kinds --config tiny --record`` runs, for each instruction kind of
:data:`~vdla_hw.formal.liveness.KINDS` (or those named with ``--kind``), the live task at its N from
``live_bounds.json`` (:func:`~vdla_hw.formal.liveness.live_bound`: the proof on this RTL, else the N
proven on an earlier RTL or the refuted N + 1, whichever is larger) and the room task at the same
depth, prints the verdicts and, with ``--record``, keeps what each run settles
(:func:`~vdla_hw.formal.live_bound.record_result`). After an RTL change (a merge) the record's proofs
no longer apply; this is the command that proves them again. Each task takes minutes (docs/rtl.md,
"Per-kind liveness").
"""

from __future__ import annotations

from collections.abc import Sequence

from vdla_hw.formal.liveness import KINDS, LIVE_LATENCY
from vdla_hw.formal.sby import ProofResult
from vdla_hw.formal.tasks import ProofTask, live_tasks


def kind_tasks(cfg: str, kinds: Sequence[str] = KINDS, *, room: bool = True) -> list[ProofTask]:
    """The live task of each kind in ``kinds``, each followed by its room twin (``room``)."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown instruction kind(s) {unknown}; choose from {', '.join(KINDS)}")
    by_name = {t.name: t for t in live_tasks(cfg)}
    names = [n for k in kinds for n in (f"live_{k}_l{LIVE_LATENCY}", f"live_room_{k}_l{LIVE_LATENCY}")[:2 if room else 1]]
    return [by_name[n] for n in names]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the per-kind tasks; exit status 0 when every one passed."""
    import argparse

    from vdla_hw.formal.live_bound import record_result
    from vdla_hw.formal.prove import format_results, prove

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="tiny")
    p.add_argument("--kind", action="append", choices=KINDS, help="only this kind (repeatable; default: all)")
    p.add_argument("--no-room", action="store_true", help="the live tasks only, not their room twins")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per task (default: %(default)s)")
    p.add_argument("--record", action="store_true", help="keep each pass (or refuted N) in live_bounds.json")
    args = p.parse_args(argv)
    tasks = kind_tasks(args.config, args.kind or KINDS, room=not args.no_room)
    results: list[ProofResult] = prove(args.config, tasks, timeout=args.timeout)
    print(format_results(results))
    if args.record:
        for r in results:
            line = record_result(args.config, r)
            if line:
                print(f"recorded: {line}")
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
