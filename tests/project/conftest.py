"""Fixtures for project tests."""

from pathlib import Path

import numpy as np
import pytest

from support.fake_artifact import benchmark_input, write_artifact


@pytest.fixture(scope="session")
def artifact(tmp_path_factory) -> Path:
    return write_artifact(tmp_path_factory.mktemp("artifact"))


@pytest.fixture(scope="session")
def test_input() -> np.ndarray:
    return benchmark_input((1, 4, 4, 1))
