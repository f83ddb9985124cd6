import pytest

from microcompile import resources
from microcompile.resources import resource_dir


@pytest.mark.parametrize("name", ["runtime_c", "boards", "templates"])
def test_source_checkout_layout(name):
    assert resource_dir(name).is_dir()


def test_wheel_layout_wins(tmp_path, monkeypatch):
    pkg = tmp_path / "site-packages" / "microcompile"
    (pkg / "_data" / "boards").mkdir(parents=True)
    monkeypatch.setattr(resources, "_PACKAGE_DIR", pkg)
    assert resource_dir("boards") == pkg / "_data" / "boards"
    with pytest.raises(FileNotFoundError):
        resource_dir("templates")


def test_unknown_resource():
    with pytest.raises(ValueError):
        resource_dir("secrets")
