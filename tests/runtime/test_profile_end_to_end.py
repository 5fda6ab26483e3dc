"""``vdla run --backend cycle --profile``'s totals: VDLA time at the config clock plus host time."""

from __future__ import annotations

import pytest

from vdla.runtime.graph_executor import NodeProfile, Profile


def test_end_to_end_is_vdla_time_at_the_clock_plus_host_time() -> None:
    nodes = (NodeProfile("stem", "cpu", "conv2d", 0.002), NodeProfile("c1", "vdla", "conv2d", 1.5, cycles=300_000),
             NodeProfile("add", "vdla", "qadd", 0.2, cycles=5_000), NodeProfile("fc", "cpu", "dense", 0.0005))
    prof = Profile(nodes, clock_mhz=100.0)
    assert prof.vdla_seconds == pytest.approx(305_000 / 100e6)
    assert prof.end_to_end_seconds == pytest.approx(305_000 / 100e6 + 0.0025)
    text = prof.table()
    assert "end to end: 5.550 ms = VDLA 3.050 ms at the config clock + host 2.500 ms" in text
    assert prof.to_json()["end_to_end_seconds"] == pytest.approx(0.00555)
    assert "end to end" in prof._repr_html_()


def test_no_end_to_end_figure_from_an_untimed_backend() -> None:
    prof = Profile((NodeProfile("c1", "vdla", "conv2d", 1.5), NodeProfile("fc", "cpu", "dense", 0.001)), 100.0)
    assert prof.end_to_end_seconds is None and "end to end" not in prof.table()
