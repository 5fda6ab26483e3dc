"""Automatic schedule optimization (autotvm-style): task / space / measure / tuner / database.

Kept import-free: the graph lowerings import :mod:`vdla.compiler.autotune.dispatch` from here.
"""
