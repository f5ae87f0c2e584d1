"""A connection's options (shared by every channel of a server or client) and how its peer's
address is written."""

from __future__ import annotations

from dataclasses import dataclass

from aiorocketmq.remoting.limits import MemoryLimits
from aiorocketmq.remoting.protocol.frame import DEFAULT_MAX_FRAME, IDLE_KEEP


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelOptions:
    """Per-connection limits, shared by every channel of a server or client."""

    max_frame: int = DEFAULT_MAX_FRAME
    frame_keep: int = IDLE_KEEP  # the frame buffer kept when no frame is pending (FrameDecoder)
    max_in_flight: int = 1024  # requests being handled; reading pauses at the cap
    write_stall_timeout: float = 30.0  # seconds a peer may leave our writes unread
    pause_reading_on_write_stall: bool = True  # servers: a peer that does not read, is not read
    limits: MemoryLimits | None = None  # a server's caps over all its connections


def peer_addr(info: object) -> str:
    """``host:port`` (``[host]:port`` for IPv6) of a socket address, else its text."""
    if isinstance(info, tuple) and len(info) >= 2:
        host = str(info[0])
        return f"[{host}]:{info[1]}" if ":" in host else f"{host}:{info[1]}"
    return str(info)
