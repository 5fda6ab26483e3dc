"""Offline: how the conv template's analytic prior orders measured ground truths, and how stable those are.

The prior (``Conv2dNCHWcTemplate.prior_estimate``, :mod:`vdla.compiler.autotune.conv_cost`) is a pure
function of the workload and the config, so it is checked against the tables ``bench/tuner.py`` wrote
(``bench/results/<out>.json``, each row's ``table``: config key -> measured cost) in seconds, without
measuring or searching anything.  Per table: the prior's Spearman rank correlation with the measured
costs, its ranks of the configs within 95% of the best (1 + the configs it puts strictly before
each; ``ties``: how many share its estimate), and the measured cost of its first 8 picks relative
to the best (what the xgb tuner's first batch draws from).

Two tables of the same task (``--twin``: two independent measurements, e.g. ``--gt-replicate a`` and
``b``) also give how reproducible the ground truth is: the Spearman of one against the other (the
ceiling of any prior's agreement with either) and the overlap of their sets of configs within 95%,
90%, 85% and 80% of each one's best.

Run: ``python bench/tuner_prior.py c2=bench/results/tuner_c2_znver4_prior2.json c2mid=... [--twin
c2small=a.json,b.json] [--out tuner_prior]``; task names are ``bench/tuner.py``'s (``c2``, ``c2small``,
``c2mid``, ``c9``, ``cpu``).  Prints a table and writes ``bench/results/<out>.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vdla.compiler.autotune.task import make_task  # noqa: E402
from vdla.compiler.autotune.template import Template, template_for  # noqa: E402
from host import host_line, host_record  # noqa: E402
from tuner import CONV_TASKS, RESULTS, spearman  # noqa: E402

#: The xgb tuner's batch: its first batch is drawn from the prior's best.
FIRST_BATCH = 8
#: Fractions of the best at which two measurements' sets of near-best configs are compared.
MARGINS = (0.95, 0.90, 0.85, 0.80)


def read_table(path: Path, name: str) -> dict[str, float]:
    """The measured table (config key -> cost, failures left out) of the row of task ``name`` (its
    table name, e.g. ``C2 mid cpu``) in a ``bench/tuner.py`` results file."""
    rows = [r for r in json.loads(path.read_text())["rows"] if r["task"] == name]
    if not rows:
        names = [r["task"] for r in json.loads(path.read_text())["rows"]]
        raise SystemExit(f"{path}: no row of task {name!r}; its rows: {names}")
    return {k: float(v) for k, v in rows[0]["table"].items() if v is not None and math.isfinite(v)}


def prior_of(template: Template, keys: list[str]) -> np.ndarray:
    """The template's prior estimate of each config key (lower is predicted faster)."""
    space = template.space
    index = {space.get(i).key: i for i in space.legal_indices()}
    missing = [k for k in keys if k not in index]
    if missing:
        raise SystemExit(f"{len(missing)} table configs are not legal configs of today's space (e.g. {missing[0]}): "
                         f"the table was measured on another space; re-measure it with bench/tuner.py")
    return np.asarray([template.prior_estimate(space.get(index[k])) for k in keys], np.float64)


def agreement(template: Template, table: dict[str, float]) -> dict:
    """The prior against one measured table (see the module doc)."""
    keys = list(table)
    cost = np.asarray([table[k] for k in keys])
    prior = prior_of(template, keys)
    best = cost.min()
    within = np.flatnonzero(cost <= best / 0.95)
    ranks = sorted((int((prior < prior[k]).sum()) + 1, int((prior == prior[k]).sum())) for k in within)
    first = np.argsort(prior, kind="stable")[:FIRST_BATCH]
    return {"configs": len(keys), "within_95": len(within), "spearman": round(spearman(prior, cost), 3),
            "ranks_within_95": [r for r, _ in ranks], "ties": [t for _, t in ranks],
            "first_picks": [round(float(cost[k] / best), 3) for k in first],
            "first_pick_within_95": int(sum(cost[k] <= best / 0.95 for k in first))}


def reproducibility(a: dict[str, float], b: dict[str, float]) -> dict:
    """Two measurements of one table: Spearman of one against the other, and their 95% sets' overlap
    (shared configs over the union)."""
    keys = sorted(set(a) & set(b))
    ca, cb = np.asarray([a[k] for k in keys]), np.asarray([b[k] for k in keys])
    sa = {k for k in keys if a[k] <= ca.min() / 0.95}
    sb = {k for k in keys if b[k] <= cb.min() / 0.95}
    margins = {}
    for margin in MARGINS:
        ma = {k for k in keys if a[k] <= ca.min() / margin}
        mb = {k for k in keys if b[k] <= cb.min() / margin}
        margins[str(margin)] = {"within": [len(ma), len(mb)], "shared": len(ma & mb),
                                "overlap": round(len(ma & mb) / len(ma | mb), 3)}
    return {"configs": len(keys), "spearman": round(spearman(ca, cb), 3), "within_95": [len(sa), len(sb)],
            "shared_95": len(sa & sb), "overlap_95": round(len(sa & sb) / len(sa | sb), 3),
            "best_a_in_b_95": min(sa, key=a.__getitem__) in sb, "best_b_in_a_95": min(sb, key=b.__getitem__) in sa,
            "best_ratio": round(float(cb.min() / ca.min()), 3), "margins": margins}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tables", nargs="*", help="task=results.json (task: a bench/tuner.py conv task name)")
    ap.add_argument("--twin", action="append", default=[],
                    help="task=a.json,b.json: two independent measurements of one task's table")
    ap.add_argument("--out", default="", help="write bench/results/<out>.json")
    args = ap.parse_args()
    print(host_line())
    rows = []
    for spec in args.tables:
        code, path = spec.split("=", 1)
        if code not in CONV_TASKS:
            ap.error(f"{code!r}: choose a task of {','.join(CONV_TASKS)}")
        name, workload = CONV_TASKS[code]
        template = template_for(make_task("conv2d_nchwc", workload), None)
        row = {"task": code, "table": path, **agreement(template, read_table(Path(path), name))}
        rows.append(row)
    twins = []
    for spec in args.twin:
        code, paths = spec.split("=", 1)
        a, b = paths.split(",")
        name = CONV_TASKS[code][0]
        twins.append({"task": code, "tables": [a, b], **reproducibility(read_table(Path(a), name),
                                                                        read_table(Path(b), name))})
    print(f"\n{'task':<9}{'configs':>8}{'<=95%':>6}{'spearman':>9}  {'first 8 (cost / best)':<48}ranks of the 95% set")
    for r in rows:
        picks = " ".join(f"{x:.2f}" for x in r["first_picks"])
        print(f"{r['task']:<9}{r['configs']:>8}{r['within_95']:>6}{r['spearman']:>9.3f}  {picks:<48}"
              f"{r['ranks_within_95'][:12]}{' ...' if len(r['ranks_within_95']) > 12 else ''}")
    for t in twins:
        print(f"{t['task']}: two measurements, Spearman {t['spearman']:.3f}; 95% sets {t['within_95']}, "
              f"{t['shared_95']} shared (overlap {t['overlap_95']:.2f}); each best within the other's 95%: "
              f"{t['best_a_in_b_95']}, {t['best_b_in_a_95']}; best b / best a {t['best_ratio']}")
        for margin, m in t["margins"].items():
            print(f"  within {float(margin):.0%} of each best: {m['within']}, {m['shared']} shared "
                  f"(overlap {m['overlap']:.2f})")
    if args.out:
        out = RESULTS / f"{args.out}.json"
        out.write_text(json.dumps({"host": host_record(), "rows": rows, "twins": twins}, indent=1))
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
