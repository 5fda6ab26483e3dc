"""The vdla compiler: tensor expressions (``te``), schedules (``schedule``), the loop IR and
its passes (``tir``), and code generators (``codegen``). Subpackages load on import."""
