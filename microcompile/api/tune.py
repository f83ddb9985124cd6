"""`tune`: search each kernel's schedule knobs on the device; the records make later compiles
faster (`compile(..., records=...)`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..deploy import Link
from ..target import Board
from ..autotune.records import load_selection, read_records, select
from ..autotune.run import TuneOptions, parse_budget, tune_model
from .cache import cache_root
from .common import as_progress


class Records:
    """Tuning records (one dict per measurement) and the JSON-lines file that holds them.
    Give them to :func:`microcompile.compile` (``records=``)."""

    def __init__(self, path, result=None, workloads=None):
        self.path = Path(path)
        self.result = result          # tune.TuneResult of the run that wrote them (None when loaded)
        self.workloads = workloads    # the model's workloads in that run

    @classmethod
    def load(cls, path) -> Records:
        """The records of a file `microcompile tune` wrote."""
        read_records(path)            # a UserError now for a missing or unreadable file
        return cls(path)

    @property
    def records(self) -> list[dict]:
        return read_records(self.path)[0]

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"<Records {self.path}: {len(self)} measurement(s)>"


def selection_for(records, board: Board, progress: Callable[[str], None]):
    """The best record per workload for `board` (tune.records.Selection) of a records file or
    a Records object."""
    if isinstance(records, Records):
        records = records.path
    if isinstance(records, (str, os.PathLike)):
        return load_selection(records, board, progress)
    from ..autotune.records import environment
    return select(list(records), environment(board))


def tune(model, trials: int | None = 200, jobs: int = 1, *, records=None, minutes: float | None = None,
         link: Link | None = None, options: TuneOptions | None = None, progress=False) -> Records:
    """Tune every kernel of a compiled model on the board's QEMU twin (the default `link`) or
    on the board, and write the records. With ``patch="auto"`` (the compile option's default)
    the patch stage is searched first: the model is measured whole without a stage and with
    the best-ranked ones, and the smallest arena within 10 % of the instructions without a
    stage is recorded and taken.

    Parameters
    ----------
    model : CompiledModel
        What :func:`microcompile.compile` returned (its records, if any, are not applied while
        tuning: every candidate is measured against the default schedules).
    trials, minutes : int, float
        The budget: measurements, and/or wall time.
    jobs : int
        Measurements at once (QEMU twins; or real boards, one each).
    records : path, optional
        The JSON-lines file to write (default: the per-user cache, resumed when it exists).
    link : Link, optional
        Where to measure: ``Link(emulate=True)`` (the default), or a real board's port, probe
        and timeout.
    options : TuneOptions, optional
        Strategy, seed, batch mode, arena and scratch budgets, executor, real boards; when
        given, its budget and jobs are used instead of `trials`, `minutes` and `jobs`.

    Returns
    -------
    Records
        The file's records, with the run's result (`.result`) and workloads (`.workloads`).

    Examples
    --------
    >>> records = mc.tune(cm, trials=200, jobs=2)                 # doctest: +SKIP
    >>> fast = mc.compile("kws.tflite", board="stm32", records=records)   # doctest: +SKIP
    """
    from dataclasses import replace

    progress = as_progress(progress)
    if options is None:
        options = TuneOptions(parse_budget(trials, None if minutes is None else f"{minutes}m"), jobs=jobs)
    path = Path(records) if records is not None else \
        cache_root().parent / "records" / f"{model.name}-{model.board.name}.jsonl"
    if records is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        options = replace(options, resume=True)
    result, workloads = tune_model(model.artifact, path, options, link or Link(emulate=True), progress=progress)
    return Records(path, result, workloads)


def check_tune(board: Board, records, options: TuneOptions, link: Link | None = None) -> None:
    """Before any work: what `tune` would refuse (the link, boards, jobs, cost model, executor,
    the records file and the work directory)."""
    from ..autotune.run import check_request
    check_request(board, records, options, link or Link(emulate=True))
