"""The ``vdla`` command line: one module per command group, each exposing ``register``."""
