"""`python -m tests.support.kafka.fill`: a producer that fills one broker's volume at a steady rate,
printing every 5 seconds what the brokers let through and the throttle time they answered with
(README.md, "Try it on a real Kafka").

It writes to a topic whose one partition has its one replica on `--broker` (created if missing), so
only that broker's volume grows. Ctrl-C (or `--seconds`) stops it.
"""

from __future__ import annotations

import argparse
import sys
import time

from confluent_kafka import KafkaException, Producer

from tests.support.kafka.admin import create_topic

MIB = 1 << 20
REPORT_S = 5  # seconds per printed line: throttled deliveries come in bursts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.kafka.fill", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT[,...]")
    parser.add_argument("--broker", type=int, required=True, help="the node id whose volume fills")
    parser.add_argument("--topic", help="default: fill-broker-<id>")
    parser.add_argument("--rate-mib", type=float, default=2.0, help="MiB/s offered (default 2)")
    parser.add_argument("--message-bytes", type=int, default=10_000, help="default 10000")
    parser.add_argument("--client-id", default="filler")
    parser.add_argument("--seconds", type=float, help="stop after this long (default: Ctrl-C)")
    args = parser.parse_args(argv)
    if args.rate_mib <= 0 or args.message_bytes <= 0:
        parser.error("--rate-mib and --message-bytes must be above 0")
    topic = args.topic or f"fill-broker-{args.broker}"
    try:
        create_topic(args.bootstrap_servers, topic, assignment=[[args.broker]])
    except KafkaException as error:
        if "TOPIC_ALREADY_EXISTS" not in str(error):
            print(f"cannot create {topic} on broker {args.broker}: {error}", file=sys.stderr)
            return 1
    delivered = [0]
    throttled_ms = [0.0]

    def on_delivery(error: object, message: object) -> None:
        if error is None:
            delivered[0] += args.message_bytes

    def on_throttle(event: object) -> None:
        throttled_ms[0] = max(throttled_ms[0], event.throttle_time * 1000)  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": args.bootstrap_servers, "client.id": args.client_id,
                         "linger.ms": 5, "batch.size": 65536, "throttle_cb": on_throttle,
                         "queue.buffering.max.kbytes": 16384})
    payload = b"\0" * args.message_bytes
    rate = args.rate_mib * MIB
    started = last = time.monotonic()
    offered = 0
    print(f"filling broker {args.broker} through topic {topic} at {args.rate_mib:g} MiB/s as client "
          f"{args.client_id!r}; Ctrl-C stops", flush=True)
    try:
        while args.seconds is None or time.monotonic() - started < args.seconds:
            now = time.monotonic()
            while offered < rate * (now - started):
                try:
                    producer.produce(topic, payload, on_delivery=on_delivery)
                except BufferError:  # the brokers hold it back and the local queue is full: skip
                    offered = int(rate * (now - started))
                    break
                offered += args.message_bytes
            producer.poll(0.05)
            if now - last >= REPORT_S:
                print(f"{now - started:6.0f} s  delivered {delivered[0] / MIB / (now - last):6.2f} MiB/s  "
                      f"longest throttle {throttled_ms[0]:6.0f} ms", flush=True)
                delivered[0], throttled_ms[0], last = 0, 0.0, now
    except KeyboardInterrupt:
        pass
    producer.purge()
    producer.flush(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
