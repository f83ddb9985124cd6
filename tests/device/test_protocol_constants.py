"""microcompile/device/protocol.py and frame.py restate the C headers' numbers; they must agree."""

import re

from microcompile.device import frame as fr
from microcompile.device import protocol as P
from microcompile.resources import resource_dir

RUNTIME = resource_dir("runtime_c")


def _defines(path) -> dict[str, int]:
    out = {}
    for name, value in re.findall(r"^#define (MC_\w+) \(?(0x[0-9A-Fa-f]+|\d+)u?\)?\s", path.read_text(), re.M):
        out[name] = int(value, 0)
    return out


def test_commands_statuses_and_framing_agree_with_the_c_headers():
    c = {**_defines(RUNTIME / "agent" / "mc_agent.h"), **_defines(RUNTIME / "agent" / "mc_frame.h"),
         **_defines(RUNTIME / "include" / "mc_platform.h")}
    pairs = {"MC_FRAME_VERSION": fr.VERSION, "MC_FRAME_SEQ_NONE": fr.SEQ_NONE,
             "MC_AGENT_INFO_FORMAT": P.INFO_FORMAT, "MC_AGENT_REPLY": P.REPLY,
             "MC_AGENT_RUN_PROFILE": P.RUN_PROFILE, "MC_AGENT_RUN_ALL": P.RUN_ALL,
             "MC_AGENT_MSG_BOOT": P.MSG_BOOT, "MC_AGENT_MSG_ERROR": P.MSG_ERROR, "MC_AGENT_OK": P.OK,
             "MC_COUNTER_CYCLES": 0, "MC_COUNTER_INSTRUCTIONS": 1, "MC_COUNTER_NANOSECONDS": 2}
    for name in c:
        if name.startswith("MC_AGENT_CMD_"):
            pairs[name] = getattr(P, "CMD_" + name[len("MC_AGENT_CMD_"):])
        elif name.startswith("MC_AGENT_ERR_"):
            pairs[name] = getattr(P, "ERR_" + name[len("MC_AGENT_ERR_"):])
    assert len([n for n in pairs if n.startswith("MC_AGENT_CMD_")]) == 8
    assert len([n for n in pairs if n.startswith("MC_AGENT_ERR_")]) == 11
    for name, value in pairs.items():
        assert c[name] == value, name
    assert [P.UNITS[c[f"MC_COUNTER_{u}"]] for u in ("CYCLES", "INSTRUCTIONS", "NANOSECONDS")] == \
        ["cycles", "instructions", "ns"]
    assert fr.MIN_BYTES == c["MC_FRAME_MIN_BYTES"] if "MC_FRAME_MIN_BYTES" in c else fr.MIN_BYTES == 8
