"""`python -m tests.support.pulsar` (`make pulsar`): one Pulsar standalone for people, until Ctrl-C.

Prints the admin and service URLs, the super-user token, how long it took to start and its memory.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from tests.support.pulsar.launcher import DEFAULT_TIMEOUT_S, PulsarStartError, start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.pulsar", description=__doc__)
    parser.add_argument("--check-interval", type=int, default=1, metavar="S",
                        help="backlogQuotaCheckIntervalInSeconds (default 1)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                        help=f"give up starting after this many seconds (default {DEFAULT_TIMEOUT_S:g})")
    args = parser.parse_args(argv)
    try:
        standalone = start(args.check_interval, args.timeout)
    except PulsarStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    memory = standalone.memory_kib()
    print(f"Pulsar standalone up in {standalone.started_in_s:.1f} s "
          f"(resident {memory.get('VmRSS', 0) // 1024} MiB)\n"
          f"  admin:   {standalone.admin_url}\n  service: {standalone.service_url}\n"
          f"  token:   {standalone.token}\n  data:    {standalone.data_dir}\n"
          "export QUOTAPLANE_PULSAR_ADMIN, QUOTAPLANE_PULSAR_URL and QUOTAPLANE_PULSAR_TOKEN with these "
          "to run "
          "the tests against it. Ctrl-C stops it.", flush=True)
    try:
        while not stop.wait(0.5):
            if standalone.process.poll() is not None:
                print(f"error: the broker exited ({standalone.process.returncode}); its log ends:\n"
                      f"{standalone.log_tail()}", file=sys.stderr)
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        standalone.stop()
    print("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
