"""Design-space exploration: sweep hardware configs against workloads (``vdla dse``, docs/dse.md).

:mod:`.sweep` parses a sweep into points, :mod:`.workloads` compiles and times the layers,
:mod:`.evaluate` measures one point (hardware cost from :mod:`vdla_hw.hw_cost`, cached),
:mod:`.run` runs the points in parallel, :mod:`.pareto`, :mod:`.plots` and :mod:`.report` turn the
results into fronts, PNGs, a table and JSON.
"""
