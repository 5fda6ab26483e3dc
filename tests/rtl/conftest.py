"""Shared by every RTL test: puts ``tests/rtl`` on ``sys.path`` so tests can import :mod:`rtl_configs`."""
