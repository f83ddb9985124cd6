"""microcompile: compile TFLite/ONNX models to standalone C for microcontrollers."""

__version__ = "0.1.0"
