"""What microcompile tells a user about a compiled model: the memory report (arena, flash, RAM,
stack; `memory.py`), the per-kernel profile (`profile.py`) and the layer-by-layer comparison of
`verify` (`layers.py`)."""
