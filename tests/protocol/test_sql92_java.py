"""SQL92 selectors against Apache's own answers: 320 random selectors (grammar-built,
mutated, token soup) with 4 property maps each, and what Apache 5.3.3's SelectorParser and
evaluate() answered for them (/work/oracle/sql92-check/gen.py seed 7, kept per outcome:
each kind of refusal, each mix of TRUE / FALSE / null / exception).

A line: {"expr", "props": [map, ...], "error": Java's remark or null, "results": ["true" |
"false" | "null" | "error", ...]}.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiorocketmq.remoting.protocol.sql92 import SelectorError
from aiorocketmq.remoting.protocol.sql92.evaluator import EvalError, build
from aiorocketmq.remoting.protocol.sql92.parser import parse

ANSWERS = Path(__file__).with_name("sql92_java_answers.jsonl")
CASES = [json.loads(line) for line in ANSWERS.read_text(encoding="utf-8").splitlines()]


def java_result(fn: object, properties: dict[str, str]) -> str:
    assert callable(fn)
    try:
        value = fn(properties)
    except EvalError:
        return "error"
    return {True: "true", False: "false", None: "null"}[value]


def test_the_answers_cover_every_outcome() -> None:
    errors = {case["error"].split(":")[0] for case in CASES if case["error"]}
    assert errors == {
        "java.lang.ClassCastException",
        "java.lang.RuntimeException",
        "org.apache.rocketmq.filter.parser.ParseException",
        "org.apache.rocketmq.filter.parser.TokenMgrError",
    }
    results = {result for case in CASES for result in case["results"]}
    assert results == {"true", "false", "null", "error"}


@pytest.mark.parametrize("case", CASES, ids=[repr(case["expr"])[:60] for case in CASES])
def test_same_answer_as_java(case: dict[str, object]) -> None:
    expression = case["expr"]
    assert isinstance(expression, str)
    try:
        fn = build(parse(expression))
    except SelectorError as exc:
        assert str(exc) == case["error"]
        return
    assert case["error"] is None
    properties = case["props"]
    assert isinstance(properties, list)
    assert [java_result(fn, p) for p in properties] == case["results"]
