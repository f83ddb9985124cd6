"""The knobs: every tunable decision a default schedule records in its trace (knob(name,
value)), by name, with its declared domain. This table is the search space the tuner (tune/)
walks; the knob primitive refuses a name that is not declared here or a value outside its domain.

Each schedule module declares its own knobs where it uses them:

    COL_BYTES_DOMAIN = declare_knob("col_bytes_max", (256, 512, ...), "the im2col buffer's cap, bytes")
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Knob:
    name: str
    domain: tuple
    doc: str


KNOBS: dict[str, Knob] = {}


def declare_knob(name: str, domain, doc: str) -> tuple:
    """Declare knob `name` with its domain (the values the tuner may try; the default schedule's
    choice among them); returns the domain. Declaring a name twice with another domain is an error."""
    knob = Knob(name, tuple(domain), doc)
    if KNOBS.setdefault(name, knob) != knob:
        raise ValueError(f"knob {name!r} declared twice with different domains")
    return knob.domain
