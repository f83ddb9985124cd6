"""Make the two small PyTorch MobileNets the QDQ tests quantize (fixture script: needs torch,
which neither the package nor CI needs; the .onnx files it writes are committed next to it).

    python tests/frontend/torch_mobilenets/make_models.py      # in an environment with torch

mobilenet_v2_tiny: MobileNetV2's inverted residuals (1x1 expand + ReLU6, 3x3 depthwise +
ReLU6, 1x1 project, residual add), width 8..24, 32x32 input, global average pool, linear.
mobilenet_v3_tiny: MobileNetV3-small's blocks (hardswish and ReLU, squeeze-and-excite with
hardsigmoid and a broadcast multiply, 5x5 depthwise), 48x48 input, hardswish head.

The weights are PyTorch's default initialization (seeded); batch-norm statistics are
gathered on random normal inputs in train mode, then folded by the exporter (eval mode), so
every layer's activations have the spread of a trained network's. Exported with the
TorchScript exporter at opset 13 (as `torch.onnx.export(..., dynamo=False)` writes them:
Clip for ReLU6, HardSigmoid + Mul for hardswish, GlobalAveragePool, Gemm).
"""

from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent


def conv_bn(i, o, k, s=1, groups=1, act=nn.ReLU6):
    layers = [nn.Conv2d(i, o, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(o)]
    return layers + ([act()] if act else [])


class InvertedResidual(nn.Module):
    def __init__(self, i, o, s, t):
        super().__init__()
        h = i * t
        self.conv = nn.Sequential(*(conv_bn(i, h, 1) if t != 1 else []), *conv_bn(h, h, 3, s, groups=h),
                                  *conv_bn(h, o, 1, act=None))
        self.residual = s == 1 and i == o

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2Tiny(nn.Module):
    # (expansion, out channels, repeats, first stride)
    CFG = ((1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2), (6, 24, 2, 2))

    def __init__(self, classes=10):
        super().__init__()
        layers, c = conv_bn(3, 8, 3, 2), 8
        for t, o, n, s in self.CFG:
            for k in range(n):
                layers.append(InvertedResidual(c, o, s if k == 0 else 1, t))
                c = o
        self.features = nn.Sequential(*layers, *conv_bn(c, 64, 1))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


class SqueezeExcite(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, 8, 1), nn.Conv2d(8, c, 1)

    def forward(self, x):
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(x, 1)))))


class Bneck(nn.Module):
    def __init__(self, i, k, e, o, se, hs, s):
        super().__init__()
        act = nn.Hardswish if hs else nn.ReLU
        layers = conv_bn(i, e, 1, act=act) if e != i else []
        layers += conv_bn(e, e, k, s, groups=e, act=act)
        layers += [SqueezeExcite(e)] if se else []
        self.block = nn.Sequential(*layers, *conv_bn(e, o, 1, act=None))
        self.residual = s == 1 and i == o

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV3Tiny(nn.Module):
    # (in, kernel, expanded, out, squeeze-excite, hardswish, stride), MobileNetV3-small narrowed
    CFG = ((16, 3, 16, 16, True, False, 2), (16, 3, 48, 24, False, False, 2), (24, 3, 64, 24, False, False, 1),
           (24, 5, 64, 32, True, True, 2), (32, 5, 96, 32, True, True, 1))

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(*conv_bn(3, 16, 3, 2, act=nn.Hardswish))
        self.blocks = nn.Sequential(*[Bneck(*c) for c in self.CFG])
        self.last = nn.Sequential(*conv_bn(32, 96, 1, act=nn.Hardswish))
        self.head = nn.Sequential(nn.Linear(96, 64), nn.Hardswish(), nn.Linear(64, classes))

    def forward(self, x):
        x = self.last(self.blocks(self.stem(x)))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


MODELS = {"mobilenet_v2_tiny": (MobileNetV2Tiny, 32, 0), "mobilenet_v3_tiny": (MobileNetV3Tiny, 48, 1)}


def main() -> None:
    for name, (cls, size, seed) in MODELS.items():
        torch.manual_seed(seed)
        model = cls()
        model.train()
        with torch.no_grad():           # batch-norm statistics of random inputs
            for _ in range(20):
                model(torch.randn(16, 3, size, size))
        model.eval()
        path = HERE / f"{name}.onnx"
        torch.onnx.export(model, (torch.randn(1, 3, size, size),), str(path), opset_version=13,
                          input_names=["input"], output_names=["logits"], dynamo=False)
        print(f"wrote {path} ({path.stat().st_size:,} bytes, "
              f"{sum(p.numel() for p in model.parameters()):,} parameters)")


if __name__ == "__main__":
    main()
