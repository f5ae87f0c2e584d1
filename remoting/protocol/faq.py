"""FAQUrl.suggestTodo: the suffix 4.9.8 servers append to some remarks (every FAQ constant of
4.9.8 is the same address)."""

from __future__ import annotations

from typing import Final

FAQ_URL: Final = "http://rocketmq.apache.org/docs/faq/"


def suggest_todo(url: str = FAQ_URL) -> str:
    """``"\\nSee <url> for further details."``, as FAQUrl.suggestTodo."""
    return f"\nSee {url} for further details."


SUGGEST_TODO: Final = suggest_todo()
