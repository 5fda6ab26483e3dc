"""Differential fuzzing of the VDLA backends (``vdla fuzz``): random legal programs, shrinking, coverage."""
