"""Float32 conv2d and fully_connected cases for the FPU GEMM kernel's tests
(tests/schedule/test_gemm_f32.py): overrides of random float cases, chosen for the tails of its
4x4 register tile."""

from __future__ import annotations

from support.lower_cases import build_graph, cases

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")

CONV = [
    dict(hw=6, cin=3, cout=5, kernel=3, stride=1, dilation=1, padding="SAME", rect=True),    # 6x7 plane, m 5
    dict(hw=5, cin=8, cout=8, kernel=1, stride=1, dilation=1, padding="VALID", rect=False),  # pointwise
    dict(hw=7, cin=2, cout=6, kernel=3, stride=2, dilation=1, padding="SAME", rect=True),    # stride 2
    dict(hw=8, cin=3, cout=7, kernel=3, stride=1, dilation=2, padding="SAME", rect=False),   # dilation
    dict(hw=9, cin=1, cout=9, kernel=5, stride=2, dilation=1, padding="VALID", rect=True),   # k 25, m 9
    dict(hw=11, cin=4, cout=4, kernel=2, stride=1, dilation=1, padding="SAME", rect=False),  # 121 pixels
    dict(hw=5, cin=11, cout=12, kernel=3, stride=1, dilation=1, padding="SAME", rect=True),  # copy runs of 11
]
# the CONV cases whose im2col copy runs (channels) are long enough for mc_copy_f32
COPIED = (1, 6)

def conv_graph(k: int, over: dict):
    case = dict(cases("conv2d", "float32", 1, seed=100 + k)[0], batch=1, activation=ACTIVATIONS[k % 4], **over)
    return build_graph(case)


def fc_graphs():
    return [build_graph(c) for c in cases("fully_connected", "float32", 6, seed=7)]
