"""Issue 25, work in progress: a small CNN from torch.export, through the ATen -> ONNX-node
translation and the ONNX reader, equals torch within 1e-5 of the largest output."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="not-installed: torch (the torch extra)")

import microcompile as mc  # noqa: E402
from microcompile.frontend.pytorch import load_exported_program  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.c1, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2, self.p, self.fc = nn.Conv2d(8, 8, 3, stride=2, groups=8), nn.MaxPool2d(2), nn.Linear(8, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.c1(x)))
        y = self.p(torch.nn.functional.hardswish(self.c2(y)) + 0.5)
        return torch.softmax(self.fc(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)), dim=1)


def test_a_small_cnn_equals_torch_on_the_host(tmp_path):
    torch.manual_seed(0)
    m = Net().eval()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-1, 1)
        m.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(1, 3, 16, 16)
    cm = mc.compile(load_exported_program(torch.export.export(m, (x,)), name="net"), "host")
    want = m(x).detach().numpy()
    np.testing.assert_allclose(cm.reference(x.numpy())[0], want, rtol=0, atol=1e-5 * np.abs(want).max())
    r = cm.deploy(tmp_path / "p", inputs=x.numpy())
    assert r.verified
