"""Code generators: TIR to native code (``llvm``)."""
