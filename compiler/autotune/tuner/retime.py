"""Re-timing a task's leaders side by side before the tuning log names a winner.

A timed config's cost is the fastest of its repeats, measured once, in whatever state the machine was in
during its batch. One lucky batch can crown a config that is slower in the model: on ResNet-18's 56x56
stride-2 conv the tuner kept a config that ran 0.73-0.75x of the default when both were re-timed (issue 28).
So, after the search, the ``k`` best configs and the default are measured again in one round of two passes
(forward, then reversed, so neither end of the list always runs first), and the log's best is decided by
that round alone, each config by its slower pass (``database.ranked``). Cycle-counted (simulated) tasks are
deterministic and are not re-timed.

Two passes were not enough on a 2-core host at load 5-9: a ResNet-50 run (issue 28, AMD Zen 3) named
configs 1.23-1.43x faster than the default on three strided convs that took 0.81-0.99x its speed when
timed again in 9 interleaved rounds (``bench/conv_knobs.py``).  ``passes`` is therefore a parameter
(``vdla tune --retime-passes``); a round's cost of a config is the upper median of its passes (the slower
of two, the median of more), and ``vdla tune --retime-again`` runs a new round on a log that measured
nothing new.  The default is always a leader: a default the log never measured (a rule changed since)
is built and timed in the round.
"""

from __future__ import annotations

from ..database import RETIMED, Database, Record, ranked
from ..measure import Measurer, Status
from ..space import Config


def leaders(db: Database, measurer: Measurer, k: int) -> list[Config]:
    """The ``k`` fastest measured configs of the task, best first, and the default (measured before or not:
    the fair comparison is against what the lowering builds without a log)."""
    space, template = measurer.template.space, measurer.template
    standing = sorted(ranked(db.of_task(measurer.task)).values(), key=lambda r: r.cost)
    configs = [space.from_dict(r.config) for r in standing[:k]]
    default = template.default()
    if default.key not in {c.key for c in configs}:
        configs.append(default)
    return configs


def retime_leaders(db: Database, measurer: Measurer, k: int = 3, passes: int = 2) -> Record | None:
    """Measure the task's leaders again (``passes`` alternating-order passes, one round) and log them as
    ``retime`` records; returns the task's best record after the round (each config by the upper median
    of its passes, :func:`~vdla.compiler.autotune.database.ranked`)."""
    if passes < 1:
        raise ValueError(f"a re-timing round needs at least one pass, got {passes}")
    task, template = measurer.task, measurer.template
    if template.unit != "s":
        return db.best(task)
    configs = leaders(db, measurer, k)
    if len(configs) < 2:
        return db.best(task)
    done = {r.detail for r in db.of_task(task) if r.tuner == RETIMED}
    detail = f"round {len(done) + 1}"
    for p in range(passes):
        order = configs if p % 2 == 0 else configs[::-1]
        for res in measurer.measure(order):
            ok = res.status == Status.OK
            db.append(Record.make(task, res.config, res.status.value, res.costs, template.unit,
                                  detail if ok else f"{detail}: {res.detail}", RETIMED,
                                  template.features(res.config) if ok else ()))
    return db.best(task)
