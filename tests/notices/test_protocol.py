"""The notice channel's wire format (docs/notices.md "The protocol"): Pulsar's simple-command frame
around a `NoticeCommand`, the format's errors, and `notices_pb2.py` generated from `notices.proto`."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from quotaplane.notices import notices_pb2 as pb
from quotaplane.notices import protocol
from quotaplane.notices.protocol import MAX_FRAME_SIZE, FrameReader, ProtocolError, Reason

SRC = Path(__file__).resolve().parents[2] / "src"
PROTO = Path("quotaplane") / "notices" / "notices.proto"


def raw_frame(body: bytes, total: int | None = None, size: int | None = None) -> bytes:
    total = 4 + len(body) if total is None else total
    return struct.pack(">II", total, len(body) if size is None else size) + body


COMMANDS = [
    protocol.connect("client-1", True),
    protocol.connect("", False),
    protocol.connected(100),
    protocol.register_producer(0, "persistent://public/default/t", "User:alice"),
    protocol.register_producer(2**64 - 1, "t"),
    protocol.throttle_producer(1, 7, Reason.TopicProduceQuotaExceeded, 250),
    protocol.throttle_producer(2**64 - 1, 0, Reason.BrokerProduceQuotaExceeded, 0),
    protocol.throttle_receipt(1),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: pb.NoticeCommand.Type.Name(c.type))
def test_a_frame_round_trips(command: pb.NoticeCommand) -> None:
    data = protocol.frame(command)
    total, size = struct.unpack(">II", data[:8])
    assert (total, size, len(data)) == (4 + size, len(data) - 8, 4 + total)
    assert FrameReader().feed(data) == [command]


def test_frames_fed_byte_by_byte_and_several_at_once() -> None:
    stream = b"".join(protocol.frame(c) for c in COMMANDS)
    reader = FrameReader()
    got = [c for i in range(len(stream)) for c in reader.feed(stream[i:i + 1])]
    assert got == COMMANDS
    assert FrameReader().feed(stream) == COMMANDS
    reader = FrameReader()
    assert reader.feed(stream[:11]) == [] and reader.feed(stream[11:]) == COMMANDS


def test_the_proposed_field_numbers_and_reasons() -> None:
    fields = {f.name: f.number for f in pb.CommandThrottleProducer.DESCRIPTOR.fields}
    assert fields == {"request_id": 1, "producer_id": 2, "throttling_reason": 4, "pause_for_millis": 5}
    receipt = pb.CommandThrottleProducerReceipt.DESCRIPTOR.fields
    assert {f.name: f.number for f in receipt} == {"request_id": 1}
    assert pb.FeatureFlags.DESCRIPTOR.fields_by_name["supports_throttle_producer_commands"].number == 6
    assert {r.name: r.value for r in Reason} == dict(pb.CommandThrottleProducer.ThrottlingReason.items())


def test_an_oversize_frame_is_refused_before_it_is_read() -> None:
    with pytest.raises(ProtocolError, match=f"frame total size {MAX_FRAME_SIZE + 1} above {MAX_FRAME_SIZE}"):
        FrameReader().feed(struct.pack(">II", MAX_FRAME_SIZE + 1, MAX_FRAME_SIZE - 3))


def test_a_command_size_that_is_not_total_minus_4() -> None:
    body = protocol.throttle_receipt(1).SerializeToString()
    with pytest.raises(ProtocolError, match=f"command size {len(body) + 1} is not total size"):
        FrameReader().feed(raw_frame(body, size=len(body) + 1))


def test_bytes_that_are_no_command() -> None:
    with pytest.raises(ProtocolError, match="not a NoticeCommand"):
        FrameReader().feed(raw_frame(b"\xff\xff\xff"))


def test_an_unknown_command_type() -> None:
    body = pb.NoticeCommand(type=pb.NoticeCommand.CONNECT).SerializeToString()
    body = body.replace(b"\x08\x01", b"\x08\x09")  # field 1 (type), varint 9: no such type
    with pytest.raises(ProtocolError, match="required type"):
        FrameReader().feed(raw_frame(body))


@pytest.mark.parametrize(("command", "missing"), [
    (pb.NoticeCommand(type=pb.NoticeCommand.CONNECT), "CONNECT without its connect"),
    (pb.NoticeCommand(type=pb.NoticeCommand.THROTTLE_PRODUCER_RECEIPT),
     "THROTTLE_PRODUCER_RECEIPT without its throttle_producer_receipt"),
    (pb.NoticeCommand(type=pb.NoticeCommand.REGISTER_PRODUCER,
                      register_producer=pb.CommandRegisterProducer(producer_id=1)),
     "required register_producer.topic"),
])
def test_a_missing_required_field(command: pb.NoticeCommand, missing: str) -> None:
    with pytest.raises(ProtocolError, match=missing):
        FrameReader().feed(raw_frame(command.SerializePartialToString()))


def test_an_unknown_reason_value_is_a_missing_reason() -> None:
    body = protocol.throttle_producer(1, 2, Reason.BrokerProduceQuotaExceeded, 5).SerializeToString()
    assert b"\x20\x04" in body  # field 4, varint, value 4
    with pytest.raises(ProtocolError, match=r"throttle_producer\.throttling_reason"):
        FrameReader().feed(raw_frame(body.replace(b"\x20\x04", b"\x20\x07")))


def test_a_negative_pause_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="pause_for_millis=-1: must be >= 0"):
        protocol.throttle_producer(1, 2, Reason.TopicProduceQuotaExceeded, -1)


def test_the_generated_module_is_regenerated_from_the_proto_byte_for_byte(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools", reason="grpcio-tools (a dev dependency) is not installed")
    result = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", str(SRC),
                             f"--python_out={tmp_path}", str(SRC / PROTO)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    generated = (tmp_path / PROTO).with_name("notices_pb2.py").read_bytes()
    assert generated == (SRC / PROTO).with_name("notices_pb2.py").read_bytes(), \
        "notices_pb2.py differs from notices.proto: regenerate it with `python -m grpc_tools.protoc -I src " \
        "--python_out=src src/quotaplane/notices/notices.proto`"
