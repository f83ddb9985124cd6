"""Talk to a board that runs the agent firmware (runtime_c/agent/): framing, transports and
the session API. Standard library and pyserial only, so that it runs on a lab PC by itself:

    from microcompile.device import Session, SerialTransport
    with Session(SerialTransport("/dev/ttyACM0")) as s:
        print(s.info().model)
        outputs = s.run([x])            # x: bytes or a numpy array per input
        profile = s.profile()           # per-kernel counts of a run with the last inputs
"""

from microcompile.device.protocol import Info, KernelSpec, TensorSpec
from microcompile.device.session import (AgentError, BuildIdMismatch, DeviceTimeout, LinkError, Output, Profile,
                                         Session, Stats)
from microcompile.device.transport import (LinkClosed, PipeTransport, SerialTransport, SocketTransport, UsbId,
                                           find_serial_ports)

__all__ = ["AgentError", "BuildIdMismatch", "DeviceTimeout", "Info", "KernelSpec", "LinkClosed", "LinkError",
           "Output", "PipeTransport", "Profile", "SerialTransport", "Session", "SocketTransport", "Stats",
           "TensorSpec", "UsbId", "find_serial_ports"]
