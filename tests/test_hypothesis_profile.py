"""The suite's hypothesis profile (tests/conftest.py, issue 30): no per-example deadline, so a
busy machine cannot fail a property test that holds, and nothing else weakened -- each test
keeps the examples it asks for."""

from __future__ import annotations

from hypothesis import settings

from tests.protocol import test_frame, test_register  # modules: pytest collects test_ names


def test_the_suite_profile_has_no_deadline_and_the_default_examples() -> None:
    suite = settings.default
    assert suite is not None
    assert suite.deadline is None
    assert suite.max_examples == settings.get_profile("default").max_examples


def test_the_tests_that_missed_deadlines_keep_their_examples_without_one() -> None:
    """The two DeadlineExceeded of a busy `make test` (issue 30): their own @settings are
    built on the suite's profile."""
    for test, examples in [
        (test_frame.test_frames_round_trip_with_bodies, 100),
        (test_register.test_route_decoders_raise_only_value_error, 300),
    ]:
        chosen = test._hypothesis_internal_use_settings  # type: ignore[attr-defined]
        assert chosen.deadline is None, test.__name__
        assert chosen.max_examples == examples, test.__name__
