"""Model importers: ONNX (``vdla.compiler.frontend.onnx.from_onnx``)."""
