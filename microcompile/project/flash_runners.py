"""Flash runners: the tools that write firmware to a real board, how each lists the debug probes
it can see, and which probe and runner `microcompile flash` picks.

Each runner is registered by `@runner(name)` and is used only when installed:

    pyocd                its Python API (the optional extra `microcompile[flash]`)
    openocd              the board's OpenOCD config; cannot list probes
    st-flash             stlink-tools; st-info lists ST-LINKs with the chip id they see
    stm32cubeprogrammer  STM32_Programmer_CLI; the chip id is read before writing
    nrfjprog             Nordic's command line tools; --ids and --deviceversion
    picotool             an RP2040 in BOOTSEL mode over USB
    uf2                  copy firmware.uf2 to a mounted RP2040 BOOTSEL drive (RPI-RP2)

`flash_firmware` lists the probes every installed runner of the board sees (in the board's order
of preference), picks the one probe (or the one `--probe` names), checks that it is attached to
the board's chip, and flashes with the first runner that sees it, verifying the write where the
runner can. Every failure is a DeviceError that says what to do.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from microcompile.errors import DeviceError
from microcompile.project import children
from microcompile.project.uf2 import to_uf2
from microcompile.target import Board, list_boards, load_board

TIMEOUT = 180.0   # seconds for one tool run (a 2 MiB chip erase and write is well within it)


@dataclass(frozen=True)
class FoundProbe:
    runner: str                 # the runner that saw it
    id: str                     # serial number (or drive path / "bootsel")
    description: str
    target: str | None = None   # what the probe reports of the chip it is attached to, if anything
    matches: bool | None = None  # does that chip match the board's MCU (None: the runner cannot tell)
    same: str | None = None     # a key shared by the runners that see one device in different ways

    @property
    def key(self) -> str:
        return self.same or self.id


class FlashFailure(Exception):
    """A runner's failure, classified: "no-probe", "mismatch", "verify" or "failed"."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind, self.detail = kind, detail


RUNNERS: dict[str, Runner] = {}


def runner(name: str):
    """Register a Runner subclass under `name` (the name board TOML files use)."""
    def deco(cls):
        cls.name = name
        RUNNERS[name] = cls()
        return cls
    return deco


def _tail(text: str, n: int = 6) -> str:
    lines = [ln for ln in text.replace("\r", "\n").splitlines() if ln.strip()]
    return "\n".join(lines[-n:]) or "(no output)"


def run_tool(cmd: list[str], progress: Callable[[float], None] | None = None, timeout: float = TIMEOUT) -> tuple[int, str]:
    """Run a tool to completion (killed on timeout or interrupt: never left behind), feeding any
    `NN%` it prints to `progress`. Returns (exit status, output)."""
    chunks: list[bytes] = []

    def pump(proc):
        for chunk in iter(lambda: proc.stdout.read1(4096), b""):
            chunks.append(chunk)
            for pct in (re.findall(rb"(\d{1,3}(?:\.\d+)?)\s*%", chunk) if progress is not None else []):
                progress(min(float(pct), 100.0) / 100.0)

    try:
        with children.spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL) as proc:
            reader = threading.Thread(target=pump, args=(proc,), daemon=True)
            reader.start()
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                raise FlashFailure("failed", f"{cmd[0]} did not finish within {timeout:g} s:\n"
                                             f"{_tail(b''.join(chunks).decode(errors='replace'))}") from None
            finally:
                children.stop(proc)   # its whole process group, on a timeout or an interrupt too
                reader.join(5)
    except OSError as e:   # the tool cannot be started
        raise FlashFailure("failed", f"cannot run {cmd[0]}: {e}") from None
    return rc, b"".join(chunks).decode(errors="replace")


class Runner:
    name = ""
    tool = ""            # the executable on PATH
    install = ""         # how to install it
    # Output patterns that classify a failure (case-insensitive regular expressions).
    no_probe: tuple[str, ...] = ()
    mismatch: tuple[str, ...] = ()
    verify: tuple[str, ...] = ()

    def available(self) -> bool:
        return shutil.which(self.tool) is not None

    def probes(self, board: Board) -> list[FoundProbe] | None:
        """The probes this runner sees, or None when it cannot list them."""
        return None

    def command(self, board: Board, files: dict[str, Path], probe: str | None) -> list[str] | None:
        """The command line that flashes `files` (elf, bin, hex, uf2) through `probe`; None when
        the runner is not a command (make flash cannot use it)."""
        return None

    def classify(self, rc: int, output: str) -> FlashFailure | None:
        if rc == 0 and not any(re.search(p, output, re.I) for p in self.verify):
            return None
        for kind, patterns in (("verify", self.verify), ("mismatch", self.mismatch), ("no-probe", self.no_probe)):
            if any(re.search(p, output, re.I) for p in patterns):
                return FlashFailure(kind, _tail(output))
        return FlashFailure("failed", f"exit status {rc}:\n{_tail(output)}")

    def flash(self, board: Board, files: dict[str, Path], probe: FoundProbe | None,
              progress: Callable[[float], None]) -> None:
        rc, out = run_tool(self.command(board, files, probe.id if probe else None), progress)
        failure = self.classify(rc, out)
        if failure is not None:
            raise failure


@runner("st-flash")
class StFlash(Runner):
    tool = "st-flash"
    install = "sudo apt-get install stlink-tools (Debian/Ubuntu) or brew install stlink"
    no_probe = (r"couldn'?t find any st-?link", r"no st-?link", r"found 0 stlink", r"unable to open")
    mismatch = (r"unknown (chip|device) id", r"unknown chip")
    verify = (r"verification of flash failed", r"verify failed", r"flash_loader_run.*fail")

    def probes(self, board: Board) -> list[FoundProbe] | None:
        if shutil.which("st-info") is None:
            return None
        rc, out = run_tool(["st-info", "--probe"], timeout=30)
        found = []
        for block in re.split(r"\n(?=\s*version:)", out):
            serial = re.search(r"serial:\s*([0-9A-Fa-f]+)", block)
            if not serial:
                continue
            chip = re.search(r"chipid:\s*(0x[0-9A-Fa-f]+)", block)
            descr = re.search(r"descr(?:iption)?:\s*(.+)", block)
            chip_id = int(chip.group(1), 16) if chip else None
            want = board.mcu.debug.chip_id
            found.append(FoundProbe(self.name, serial.group(1), f"ST-LINK ({descr.group(1).strip() if descr else 'unknown chip'})",
                                    f"chip id 0x{chip_id:03X}" if chip_id is not None else None,
                                    None if chip_id is None or want is None else chip_id == want))
        return found

    def command(self, board, files, probe):
        serial = ["--serial", probe] if probe else []
        return ["st-flash", "--reset", *serial, "write", str(files["bin"]), f"0x{board.mcu.flash.origin:08X}"]


@runner("stm32cubeprogrammer")
class CubeProgrammer(Runner):
    tool = "STM32_Programmer_CLI"
    install = "STM32CubeProgrammer from st.com (its bin/ folder, with STM32_Programmer_CLI, on PATH)"
    no_probe = (r"no st-?link (detected|available)", r"no debug probe detected", r"unable to get core id",
                r"error: no .*probe")
    mismatch = (r"device id.*not (supported|match)",)
    verify = (r"verif\w* (failed|error)", r"data mismatch", r"error: .*verif")

    def probes(self, board: Board) -> list[FoundProbe] | None:
        rc, out = run_tool([self.tool, "--list"], timeout=30)
        return [FoundProbe(self.name, sn, "ST-LINK") for sn in re.findall(r"ST-LINK SN\s*:\s*([0-9A-Fa-f]+)", out)]

    def _connect(self, probe: str | None) -> list[str]:
        return [self.tool, "-c", "port=SWD", *([f"sn={probe}"] if probe else [])]

    def command(self, board, files, probe):
        return [*self._connect(probe), "-w", str(files["hex"]), "-v", "-rst"]

    def flash(self, board, files, probe, progress):
        # Read the chip id before writing anything: a wrong chip must not be programmed.
        rc, out = run_tool(self._connect(probe.id if probe else None), timeout=60)
        failure = self.classify(rc, out)
        if failure is not None:
            raise failure
        found = re.search(r"Device ID\s*:\s*(0x[0-9A-Fa-f]+)", out)
        want = board.mcu.debug.chip_id
        if found and want is not None and int(found.group(1), 16) != want:
            raise FlashFailure("mismatch", f"chip id {found.group(1)}")
        super().flash(board, files, probe, progress)


@runner("openocd")
class OpenOcd(Runner):
    tool = "openocd"
    install = "sudo apt-get install openocd (Debian/Ubuntu) or brew install open-ocd"
    no_probe = (r"open failed", r"no device found", r"unable to find a matching", r"no j-?link device found",
                r"couldn'?t find (any|a) ", r"error: .*adapter.*not found", r"libusb_open\(\) failed")
    mismatch = (r"unexpected idcode", r"cannot identify target", r"unknown device", r"device id = .*not supported")
    verify = (r"verify failed", r"\*\* verify failed \*\*", r"checksum mismatch")

    def command(self, board, files, probe):
        configs = board.probe.openocd_config if board.probe else ()
        if not configs:
            return None
        cmd = ["openocd"]
        for cfg in configs:
            cmd += ["-f", cfg]
        if probe:
            cmd += ["-c", f"adapter serial {probe}"]
        return cmd + ["-c", f"program {files['elf']} verify reset exit"]


@runner("nrfjprog")
class NrfJprog(Runner):
    tool = "nrfjprog"
    install = "nRF Command Line Tools from nordicsemi.com (nrfjprog, with the SEGGER J-Link software)"
    no_probe = (r"no debugger connected", r"there is no debugger", r"jlinkarm dll reported an error")
    mismatch = (r"does not match the device connected", r"wrong family")
    verify = (r"verify failed", r"write verify failed")

    def probes(self, board: Board) -> list[FoundProbe] | None:
        rc, out = run_tool([self.tool, "--ids"], timeout=30)
        found = []
        for sn in re.findall(r"^\s*(\d{6,})\s*$", out, re.M):
            _, version = run_tool([self.tool, "--deviceversion", "-s", sn], timeout=30)
            version = version.strip().splitlines()[-1].strip() if version.strip() else ""
            found.append(FoundProbe(self.name, sn, "SEGGER J-Link", version or None,
                                    _nrf_matches(version, board) if version else None))
        return found

    def command(self, board, files, probe):
        family = board.mcu.debug.nrfjprog_family or "UNKNOWN"
        serial = ["-s", probe] if probe else []
        return [self.tool, "-f", family, *serial, "--program", str(files["hex"]), "--sectorerase", "--verify",
                "--reset"]


def _nrf_matches(version: str, board: Board) -> bool:
    """`nrfjprog --deviceversion` names the part ("NRF52840_xxAA_REV2") or only the series
    ("NRF51xxx_xxAA_REV3")."""
    v = version.upper()
    family = (board.mcu.debug.nrfjprog_family or "").upper()
    return v.startswith(board.mcu.name.upper()) or (bool(family) and v.startswith(family + "XXX"))


@runner("picotool")
class Picotool(Runner):
    tool = "picotool"
    install = "sudo apt-get install picotool (Debian 12+/Ubuntu 23.04+), or build it from github.com/raspberrypi/picotool"
    no_probe = (r"no accessible rp\S* devices? in bootsel mode", r"no .*device.* (were )?found")
    mismatch = (r"not an rp2040", r"family id .* (does not|doesn'?t) match")
    verify = (r"verify failed", r"did not match", r"contents? did not match")

    def probes(self, board: Board) -> list[FoundProbe] | None:
        rc, out = run_tool([self.tool, "info"], timeout=30)
        if rc != 0 or re.search(self.no_probe[0], out, re.I):
            return []
        chip = re.search(r"\b(RP2040|RP2350)\b", out)
        return [FoundProbe(self.name, "bootsel", "RP2040 boot ROM (BOOTSEL mode, USB)", chip.group(1) if chip else None,
                           (chip.group(1) == "RP2040") if chip else None, same=BOOTSEL)]

    def command(self, board, files, probe):
        return [self.tool, "load", "-v", "-x", str(files["elf"])]


BOOTSEL = "bootsel"   # an RP2040 in BOOTSEL mode: picotool sees it over USB, and its drive mounts


def uf2_mount_roots() -> list[Path]:
    """Where mounted USB drives appear: /media/<user>/*, /run/media/<user>/*, /Volumes/*, and
    the mount points in /proc/mounts."""
    roots = []
    for pattern in ("/media/*/*", "/run/media/*/*", "/media/*", "/Volumes/*"):
        roots += [Path(p) for p in sorted(Path("/").glob(pattern.lstrip("/")))]
    try:
        roots += [Path(line.split()[1]) for line in Path("/proc/mounts").read_text().splitlines() if len(line.split()) > 1]
    except OSError:
        pass
    return list(dict.fromkeys(roots))


@runner("uf2")
class Uf2Copy(Runner):
    tool = ""
    install = "nothing to install: hold BOOTSEL while plugging the board in, so that its RPI-RP2 drive mounts"

    def available(self) -> bool:
        return True

    def probes(self, board: Board) -> list[FoundProbe] | None:
        found = []
        for root in uf2_mount_roots():
            info = root / "INFO_UF2.TXT"
            try:
                text = info.read_text(errors="replace") if info.is_file() else None
            except OSError:
                continue
            if text is None:
                continue
            board_id = re.search(r"Board-ID:\s*(\S+)", text)
            want = board.mcu.debug.uf2_board_id
            found.append(FoundProbe(self.name, str(root), "UF2 boot loader drive",
                                    board_id.group(1) if board_id else None,
                                    None if board_id is None or want is None else board_id.group(1) == want))
        if len(found) == 1:   # one drive: the same board picotool sees in BOOTSEL mode
            found = [dataclasses.replace(found[0], same=BOOTSEL)]
        return found

    def flash(self, board, files, probe, progress):
        if probe is None:
            raise FlashFailure("no-probe", "no UF2 drive is mounted")
        dest = Path(probe.id) / "firmware.uf2"
        data = files["uf2"].read_bytes()
        try:
            # O_NOFOLLOW: the drive is found by its INFO_UF2.TXT at any mount point (/tmp is one);
            # a firmware.uf2 planted there as a link must not take the write elsewhere.
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
            with os.fdopen(fd, "wb") as f:
                for i in range(0, len(data), 64 * 1024):
                    f.write(data[i:i + 64 * 1024])
                    progress(min(1.0, (i + 64 * 1024) / len(data)))
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise FlashFailure("failed", f"copying to {dest} failed: {e}") from None
        # The boot loader flashes the blocks as they arrive and reboots; there is nothing to read
        # back, so a UF2 copy is not verified.


@runner("pyocd")
class PyOcd(Runner):
    tool = "pyocd"
    install = "pip install 'microcompile[flash]' (pyocd; STM32 parts also need `pyocd pack install <part>`)"

    def _api(self):
        try:
            helpers = importlib.import_module("pyocd.core.helpers")
            programmer = importlib.import_module("pyocd.flash.file_programmer")
        except ImportError:
            return None
        return helpers.ConnectHelper, programmer.FileProgrammer

    def available(self) -> bool:
        return self._api() is not None

    def probes(self, board: Board) -> list[FoundProbe] | None:
        connect, _ = self._api()
        found = []
        for p in connect.get_all_connected_probes(blocking=False, print_wait_message=False):
            info = getattr(p, "associated_board_info", None)
            target = getattr(info, "target", None) if info else None
            want = board.mcu.debug.pyocd_target
            matches = None
            if target and want:
                matches = want.lower().startswith(target.lower()) or target.lower().startswith(want.lower())
            found.append(FoundProbe(self.name, p.unique_id, p.description, target, matches))
        return found

    def command(self, board, files, probe):
        if board.mcu.debug.pyocd_target is None:
            return None
        serial = ["--uid", probe] if probe else []
        return ["pyocd", "flash", "--target", board.mcu.debug.pyocd_target, *serial, str(files["hex"])]

    def flash(self, board, files, probe, progress):
        connect, programmer = self._api()
        try:
            session = connect.session_with_chosen_probe(blocking=False, return_first=probe is None,
                                                       unique_id=probe.id if probe else None,
                                                       target_override=board.mcu.debug.pyocd_target)
        except Exception as e:   # pyocd reports an unknown target or a USB problem as its own errors
            text = str(e)
            kind = "mismatch" if re.search(r"target.*(not recognized|unknown)", text, re.I) else "failed"
            raise FlashFailure(kind, text) from None
        if session is None:
            raise FlashFailure("no-probe", "pyocd found no probe")
        with session:
            programmer(session, progress=progress).program(str(files["hex"]))
            image, base = files["bin"].read_bytes(), board.mcu.flash.origin
            back = bytes(session.target.read_memory_block8(base, len(image)))
            if back != image:
                first = next(i for i, (a, b) in enumerate(zip(back, image)) if a != b)
                raise FlashFailure("verify", f"read back differs from firmware.bin at 0x{base + first:08X}")
            session.target.reset()


def make_command(board: Board, name: str) -> list[str] | None:
    """The command line `make flash` runs for runner `name` (files named as in the project)."""
    files = {k: Path(f"firmware.{k}") for k in ("elf", "bin", "hex", "uf2")}
    r = RUNNERS.get(name)
    return r.command(board, files, None) if r is not None else None


def _install_hint(board: Board) -> str:
    return "; ".join(f"{n}: {RUNNERS[n].install}" for n in board.flash_runners if n in RUNNERS)


def _boards_for(probe: FoundProbe, board: Board) -> list[str]:
    """Boards whose MCU has the chip id the probe reports."""
    m = re.search(r"chip id (0x[0-9A-F]+)", probe.target or "")
    if not m:
        return []
    names = []
    for name in list_boards():
        b = load_board(name)
        if b.mcu.debug.chip_id == int(m.group(1), 16) and b.name != board.name:
            names.append(b.name)
    return names


def find_probes(board: Board) -> tuple[list[str], dict[str, list[FoundProbe]], list[str]]:
    """(installed runners in preference order, probes per runner that can list them, runners that cannot)."""
    for name in board.flash_runners:
        if name not in RUNNERS:
            raise DeviceError(f"board {board.name} lists unknown flash runner {name!r}",
                              hint=f"known runners: {', '.join(sorted(RUNNERS))}")
    installed = [n for n in board.flash_runners if RUNNERS[n].available()]
    seen, blind = {}, []
    for n in installed:
        try:
            found = RUNNERS[n].probes(board)
        except FlashFailure:
            found = []
        if found is None:
            blind.append(n)
        else:
            seen[n] = found
    return installed, seen, blind


def choose(board: Board, probe_id: str | None = None) -> tuple[str, FoundProbe | None]:
    """The runner and probe to flash `board` with; DeviceError when there is none, or more than
    one probe and no `probe_id`, or the probe is attached to another chip."""
    if not board.flash_runners:
        raise DeviceError(f"board {board.name} cannot be flashed (emulator only)",
                          hint="run it in QEMU with --emulate")
    installed, seen, blind = find_probes(board)
    if not installed:
        raise DeviceError(f"no flash tool for {board.name} is installed (it can use: {', '.join(board.flash_runners)})",
                          hint=f"install one: {_install_hint(board)}")
    probes: dict[str, list[FoundProbe]] = {}
    for n in installed:
        for p in seen.get(n, []):
            probes.setdefault(p.key, []).append(p)
    if probe_id is not None:
        named = {k: ps for k, ps in probes.items() if probe_id == k or any(p.id == probe_id for p in ps)}
        if named:
            candidates = named
        elif blind:
            return blind[0], FoundProbe(blind[0], probe_id, "given with --probe")
        else:
            attached = ", ".join(f"{i} ({ps[0].description})" for i, ps in probes.items()) or "none"
            raise DeviceError(f"no attached probe has id {probe_id!r}; attached: {attached}",
                              hint="pass one of the ids above to --probe, or leave it out")
    else:
        candidates = probes
    if not candidates:
        if blind:   # a runner that cannot list probes finds out by trying
            return blind[0], None
        usb = (f" (USB ID {board.probe.usb_vid:04x}:{board.probe.usb_pid:04x})"
               if board.probe and board.probe.usb_vid is not None else "")
        what = board.probe.name if board.probe else "debug probe"
        raise DeviceError(f"no {what} found for {board.name} (looked with {', '.join(seen)})",
                          hint=f"connect the board's {what} over USB{usb}, check the cable and that your user may "
                               "open it (udev rules), or run it in the emulator with --emulate")
    if len(candidates) > 1:
        listing = "; ".join(f"{i}: {ps[0].description}" + (f", {ps[0].target}" if ps[0].target else "")
                            for i, ps in candidates.items())
        raise DeviceError(f"{len(candidates)} debug probes are attached ({listing})",
                          hint="choose one with --probe ID")
    (pid, views), = candidates.items()
    mismatched = [p for p in views if p.matches is False]
    if mismatched:
        p = mismatched[0]
        others = _boards_for(p, board)
        raise DeviceError(f"probe {pid} is attached to a chip that is not {board.name}'s {board.mcu.name} "
                          f"({p.runner} reports {p.target})",
                          hint=(f"this looks like {', '.join(others)}: pass --board={others[0]}" if others else
                                "check which board is plugged in, or pick its board with --board"))
    chosen = next(n for n in installed if any(p.runner == n for p in views))
    return chosen, next(p for p in views if p.runner == chosen)


def uf2_file(board: Board, files: dict[str, Path], out: Path) -> Path:
    """firmware.uf2 from firmware.bin, at the code bank's origin."""
    family = board.mcu.debug.uf2_family_id
    if family is None:
        raise DeviceError(f"{board.mcu.name} has no UF2 family id in its board data")
    out.write_bytes(to_uf2(files["bin"].read_bytes(), board.mcu.flash.origin, family))
    return out


def flash_firmware(board: Board, files: dict[str, Path], probe_id: str | None = None,
                   progress: Callable[[float], None] = lambda f: None) -> tuple[str, FoundProbe | None]:
    """Flash `files` (elf, bin, hex, and uf2 for UF2 boards) to `board`: pick the runner and probe
    (`choose`), write, verify where the runner can. Returns (runner, probe)."""
    name, probe = choose(board, probe_id)
    flash_with(board, files, name, probe, progress)
    return name, probe


def flash_with(board: Board, files: dict[str, Path], name: str, probe: FoundProbe | None,
               progress: Callable[[float], None] = lambda f: None) -> None:
    """Write and verify with runner `name` through `probe` (as `choose` picked them)."""
    r = RUNNERS[name]
    if r.command(board, files, None) is None and type(r).flash is Runner.flash:
        raise DeviceError(f"runner {name} has no command for {board.name} (its board data lacks the runner's settings)")
    try:
        r.flash(board, files, probe, progress)
    except FlashFailure as f:
        where = f"{board.name} with {name}" + (f" (probe {probe.id})" if probe else "")
        if f.kind == "verify":
            raise DeviceError(f"flashing {where} failed verification: the chip does not hold the firmware\n{f.detail}",
                              hint="retry; if it persists, erase the chip (e.g. `st-flash erase`, `nrfjprog -e`), and "
                                   "check the board's power and the flash's write or readout protection") from None
        if f.kind == "no-probe":
            usb = (f" (USB ID {board.probe.usb_vid:04x}:{board.probe.usb_pid:04x})"
                   if board.probe and board.probe.usb_vid is not None else "")
            raise DeviceError(f"no probe attached: {name} found no debug probe for {board.name}\n{f.detail}",
                              hint=f"connect the board's probe over USB{usb}, or run it in the emulator with --emulate") from None
        if f.kind == "mismatch":
            raise DeviceError(f"the probe is attached to a chip that is not {board.name}'s {board.mcu.name} "
                              f"({name}: {f.detail})", hint="check which board is plugged in, or pick its board with --board") from None
        raise DeviceError(f"flashing {where} failed: {f.detail}",
                          hint="see the tool's message above; `make flash` in the project runs the same tool") from None
