"""The notice channel's wire format: PIP-385's commands in Pulsar's simple-command frame.

spec: pip-385-producer-throttle-protocol (New binary protocol commands); the message definitions are
`notices.proto` (field numbers as proposed; `notices_pb2` is generated from it with `protoc`, see
`tests/notices/test_protocol.py`, which checks the two agree). A frame is Pulsar's simple command
(`Commands.serializeWithSize`): a 4-byte big-endian total size, a 4-byte big-endian command size
(total = 4 + command size) and one serialized `NoticeCommand`.
"""

from __future__ import annotations

import struct
from enum import IntEnum

from google.protobuf.message import DecodeError

from quotaplane.notices import notices_pb2 as pb

# Pulsar's `Commands.DEFAULT_MAX_MESSAGE_SIZE` is 5 MiB; a command of the channel is a few bytes.
MAX_FRAME_SIZE = 5 * 1024 * 1024
_SIZE = struct.Struct(">I")


class Reason(IntEnum):
    """`CommandThrottleProducer.ThrottlingReason` (PIP-385), by the proposed numbers."""

    TopicProduceQuotaExceeded = 0
    ResourceGroupProduceQuotaExceeded = 1
    ConnectionPendingMessagesBreach = 2
    MessageBufferSizeBreach = 3
    BrokerProduceQuotaExceeded = 4

    @property
    def connection_level(self) -> bool:
        """Connection-level breaches pause the connection whatever the receipt (PIP-385)."""
        return self in (Reason.ConnectionPendingMessagesBreach, Reason.MessageBufferSizeBreach,
                        Reason.BrokerProduceQuotaExceeded)


class ProtocolError(Exception):
    """A frame that breaks the channel's format: the peer is disconnected, the service goes on."""


def frame(command: pb.NoticeCommand) -> bytes:
    """One command as a frame."""
    body = command.SerializeToString()
    return _SIZE.pack(4 + len(body)) + _SIZE.pack(len(body)) + body


class FrameReader:
    """Cuts frames out of a byte stream fed in pieces; `feed` returns the complete commands."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[pb.NoticeCommand]:
        self._buffer.extend(data)
        commands = []
        while len(self._buffer) >= 8:
            total, size = _SIZE.unpack_from(self._buffer, 0)[0], _SIZE.unpack_from(self._buffer, 4)[0]
            if total > MAX_FRAME_SIZE:
                raise ProtocolError(f"frame total size {total} above {MAX_FRAME_SIZE}")
            if size != total - 4:
                raise ProtocolError(f"command size {size} is not total size {total} - 4")
            if len(self._buffer) < 4 + total:
                break
            body = bytes(self._buffer[8:4 + total])
            del self._buffer[:4 + total]
            commands.append(parse(body))
        return commands


def parse(body: bytes) -> pb.NoticeCommand:
    """A serialized `NoticeCommand`; a `ProtocolError` when it is not one or lacks its payload."""
    command = pb.NoticeCommand()
    try:
        command.ParseFromString(body)
    except DecodeError as e:
        raise ProtocolError(f"not a NoticeCommand: {e}") from None
    if not command.IsInitialized():  # proto2 `required`; an unknown enum value leaves its field unset
        missing = ", ".join(command.FindInitializationErrors())
        raise ProtocolError(f"NoticeCommand without its required {missing}")
    payload = _PAYLOAD.get(command.type)
    if payload is None:
        raise ProtocolError(f"unknown command type {command.type}")
    if payload and not command.HasField(payload):
        raise ProtocolError(f"{pb.NoticeCommand.Type.Name(command.type)} without its {payload}")
    return command


_PAYLOAD = {
    pb.NoticeCommand.CONNECT: "connect",
    pb.NoticeCommand.CONNECTED: "connected",
    pb.NoticeCommand.REGISTER_PRODUCER: "register_producer",
    pb.NoticeCommand.THROTTLE_PRODUCER: "throttle_producer",
    pb.NoticeCommand.THROTTLE_PRODUCER_RECEIPT: "throttle_producer_receipt",
}


def connect(client_id: str, supports_throttle: bool) -> pb.NoticeCommand:
    flags = pb.FeatureFlags(supports_throttle_producer_commands=supports_throttle)
    return pb.NoticeCommand(type=pb.NoticeCommand.CONNECT,
                            connect=pb.CommandConnect(client_id=client_id, feature_flags=flags))


def connected(receipt_wait_ms: int) -> pb.NoticeCommand:
    return pb.NoticeCommand(type=pb.NoticeCommand.CONNECTED, connected=pb.CommandConnected(
        throttle_producer_receipt_wait_time_millis=receipt_wait_ms))


def register_producer(producer_id: int, topic: str, principal: str | None = None) -> pb.NoticeCommand:
    register = pb.CommandRegisterProducer(producer_id=producer_id, topic=topic)
    if principal is not None:
        register.principal = principal
    return pb.NoticeCommand(type=pb.NoticeCommand.REGISTER_PRODUCER, register_producer=register)


def throttle_producer(request_id: int, producer_id: int, reason: Reason,
                      pause_for_millis: int) -> pb.NoticeCommand:
    if pause_for_millis < 0:
        raise ValueError(f"pause_for_millis={pause_for_millis}: must be >= 0 (a uint64)")
    command = pb.CommandThrottleProducer(request_id=request_id, producer_id=producer_id,
                                         throttling_reason=int(reason), pause_for_millis=pause_for_millis)
    return pb.NoticeCommand(type=pb.NoticeCommand.THROTTLE_PRODUCER, throttle_producer=command)


def throttle_receipt(request_id: int) -> pb.NoticeCommand:
    return pb.NoticeCommand(type=pb.NoticeCommand.THROTTLE_PRODUCER_RECEIPT,
                            throttle_producer_receipt=pb.CommandThrottleProducerReceipt(request_id=request_id))
