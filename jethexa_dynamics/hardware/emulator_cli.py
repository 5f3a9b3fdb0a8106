"""``jethexa-bus-emulator``: serve an emulated JetHexa servo bus on a pty until SIGINT/SIGTERM.

The first line on stdout is the pty path (point ``DirectUartBus``/``RrcBoardBus``, the servo_driver node or
any serial client at it). Example::

    jethexa-bus-emulator --faults "11:vanish@5,3:corrupt=0.2"
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Optional, Sequence

from .emulator import BusEmulator
from .errors import ParameterError
from .servo_faults import FAULT_KINDS, parse_faults
from .servo_table import load_servo_table


def build_parser() -> argparse.ArgumentParser:
    """The options, each checked while parsing: one line naming the option, exit status 2."""
    from jethexa_dynamics.cli_args import ArgumentParser, checked, existing_file, number, output_file

    p = ArgumentParser(prog="jethexa-bus-emulator", description=__doc__.split("\n\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="fault kinds: %s\nspec: SERVO:KIND[=VALUE][@T], SERVO = ID or joint name"
                              % ", ".join(FAULT_KINDS))
    p.add_argument("--config", type=existing_file,
                   help="servo table YAML (default: the bundled config/servos.yaml)")
    p.add_argument("--faults", default="", type=checked(parse_faults),
                   help="comma-separated fault specs, e.g. '5:no_reply,11:vanish@2.0'")
    p.add_argument("--transport", choices=("uart", "rrc"), default="uart",
                   help="uart: 0x55 0x55 servo frames (Jetson Nano JetHexa); rrc: STM32 board packets")
    p.add_argument("--imu-rate", type=number(0.0, 1000.0, unit="Hz"), default=100.0,
                   help="rrc: the board's IMU reports per second, unasked, of a robot at rest (0: a board that "
                        "streams no IMU; default %(default)s)")
    p.add_argument("--battery-rate", type=number(0.0, 1000.0, unit="Hz"), default=1.0,
                   help="rrc: the board's battery reports per second (default %(default)s)")
    p.add_argument("--link", type=output_file, help="also create this symlink to the pty (removed on exit)")
    p.add_argument("--seed", type=number(0, 2 ** 32 - 1, integer=True), default=0,
                   help="random seed of probabilistic faults")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a bad option (one line printed) or --help
        return exc.code
    try:
        table = load_servo_table(args.config, urdf=False)
        em = BusEmulator(table, faults=parse_faults(args.faults), transport=args.transport, seed=args.seed,
                         imu_rate=args.imu_rate, battery_rate=args.battery_rate)
    except (ParameterError, OSError) as exc:
        print("jethexa-bus-emulator: %s" % exc, file=sys.stderr)
        return 2
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    em.start()
    try:
        if args.link:
            if os.path.lexists(args.link):
                os.unlink(args.link)
            os.symlink(em.port, args.link)
        print(em.port, flush=True)
        print("serving %d servos (%s) on %s; faults: %s; Ctrl-C to stop"
              % (len(table), args.transport, em.port, args.faults or "none"), file=sys.stderr, flush=True)
        while not done.wait(0.5):
            pass
    finally:
        em.stop()
        if args.link and os.path.islink(args.link):
            os.unlink(args.link)
    return 0


if __name__ == "__main__":
    sys.exit(main())
