"""Model importers: ONNX (``compiler.frontend.onnx.from_onnx``)."""
