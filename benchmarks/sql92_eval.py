"""SQL92 selector evaluation against the broker's per-message work for a TAG filter.

Run ``python -m benchmarks.sql92_eval [--repeat N] [--seconds S]``. Each row is evaluations
per second (median of the repeats) of one selector against a message's 10 properties, beside
baselines measured in the same run: the TAG filter's check (a consume-queue unit's tags hash
in the subscription's set), a dict lookup, and decoding the properties from their wire text
(the work an SQL92 filter adds before it can evaluate anything). The ratio is the row's rate
over the TAG check's. Also the compile time of the largest selectors the limits accept.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable

from aiorocketmq.remoting.protocol import sql92
from aiorocketmq.remoting.protocol.message import decode_properties
from aiorocketmq.remoting.protocol.msgid import tags_code

PROPERTIES = {
    "TAGS": "TagA",
    "KEYS": "order-1001",
    "UNIQ_KEY": "7F0000010D2A18B4AAC27A2B0F1C0000",
    "WAIT": "true",
    "region": "eu-west",
    "price": "42",
    "weight": "3.5",
    "vip": "true",
    "channel": "web",
    "retries": "0",
}
WIRE = "".join(f"{k}\x01{v}\x02" for k, v in PROPERTIES.items())
SELECTORS = {
    "3 terms, TRUE": "region = 'eu-west' AND price > 10 AND weight BETWEEN 1.0 AND 5.0",
    "3 terms, FALSE at the first": "region = 'us-east' AND price > 10 AND vip = TRUE",
    "3 terms, missing property": "missing = 'x' AND price > 10 AND vip = TRUE",
    "IN + OR": "channel IN ('web', 'app', 'mini') OR price < 5",
}
# the largest selectors the limits accept, by kind
WORST = {
    f"{sql92.MAX_NODES // 4}-term OR chain": " OR ".join(["a=1"] * (sql92.MAX_NODES // 4)),
    f"IN list of {sql92.MAX_IN_LIST}": "a IN (" + ",".join(["'x'"] * sql92.MAX_IN_LIST) + ")",
    "nesting 15 x '+('": "+(" * 15 + "a=1" + ")" * 15,
}


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn`` over about ``seconds`` (batches of 1000)."""
    calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(1000):
            fn()
        calls += 1000
        now = time.perf_counter()
        if now >= deadline:
            return calls / (now - start)


def compile_ms(text: str, repeat: int) -> float:
    """Median milliseconds to compile ``text`` (past the cache)."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            sql92.compile_uncached(text)
        except sql92.SelectorError as exc:
            raise SystemExit(f"not accepted: {exc}") from exc
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.3)
    args = parser.parse_args()
    codes = frozenset({tags_code("TagA"), tags_code("TagB")})
    unit_code = tags_code("TagA")
    cases: dict[str, Callable[[], object]] = {
        "baseline: TAG check (hash in set)": lambda: unit_code in codes,
        "baseline: dict lookup": lambda: PROPERTIES.get("region") == "eu-west",
        "baseline: decode 10 properties": lambda: decode_properties(WIRE),
    }
    for name, text in SELECTORS.items():
        cases[f"sql92: {name}"] = functools.partial(
            sql92.compile_selector(text).matches, PROPERTIES
        )
    rates: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, fn in cases.items():
            rates[name].append(rate(fn, args.seconds))
    tag = statistics.median(rates["baseline: TAG check (hash in set)"])
    print(f"{'case':45} {'evals/s':>12} {'vs TAG':>8}")
    result: dict[str, object] = {}
    for name, samples in rates.items():
        median = statistics.median(samples)
        result[name] = round(median)
        print(f"{name:45} {median:12,.0f} {median / tag:8.3f}")
    print(f"\n{'largest accepted selector':45} {'compile ms':>12}")
    for name, text in WORST.items():
        ms = compile_ms(text, args.repeat)
        result[f"compile: {name}"] = round(ms, 3)
        print(f"{name:45} {ms:12.3f}")
    print(json.dumps({"benchmark": "sql92_eval", **result}))


if __name__ == "__main__":
    main()
