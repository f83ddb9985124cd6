"""A built project: where it is, its ELF, its sizes and its fit on the board."""

from __future__ import annotations

from pathlib import Path

from ..deploy import Built


class Firmware:
    """A standalone Makefile project, built (`make` in `project_dir` rebuilds it without
    microcompile): `elf`, `sizes` (text/data/bss, flash, ram), `fit` (what each memory bank
    holds and whether it fits; None on the host), `build_id` for agent builds."""

    def __init__(self, built: Built):
        self.built = built

    @property
    def project_dir(self) -> Path:
        return self.built.project_dir

    @property
    def elf(self) -> Path:
        """firmware.elf (`firmware` on the host board)."""
        host = self.project_dir / "firmware"
        return host if self.built.board.is_host else self.project_dir / "firmware.elf"

    @property
    def compiled(self):
        """The compiled model the firmware holds (graph, plan, kernels)."""
        return self.built.compiled

    @property
    def sizes(self):
        return self.built.sizes

    @property
    def fit(self):
        return self.built.fit

    @property
    def build_id(self) -> str | None:
        from ..project import read_marker
        return read_marker(self.project_dir).get("build_id")

    def __repr__(self) -> str:
        return (f"<Firmware {self.project_dir} for {self.built.board.name}: flash {self.sizes.flash:,} B, "
                f"RAM {self.sizes.ram:,} B>")
