"""Formal proofs of the RTL with SymbiYosys (``vdla hw prove``).

:mod:`vdla_hw.formal.tasks` lists the proof tasks of a config (which module is the top,
its parameters, the method and depth); :mod:`vdla_hw.formal.sby` writes each task's
``.sby`` file, runs ``yowasp-sby`` with a pip-installed solver and reads its verdict.
The properties themselves sit beside the modules in ``vdla_hw/rtl`` under `` `ifdef FORMAL ``.
"""
