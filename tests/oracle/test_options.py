"""The command line's readers of option values (``oracle.options``): every number
is read by the settings' one rule (``policy.adapters.settings.setting_number``),
and every refusal is one line quoting the value short."""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oracle import options
from oracle.cli import main
from policy.adapters.settings import setting_number

#: Texts near numbers: ASCII and other scripts' digits, signs, separators, exponents.
NEAR_NUMBERS = st.text(alphabet="0123456789-+._ e\u0663\u0665\uff11\u00b2inf", max_size=8)

READERS: dict[str, Callable[[str], object]] = {
    "positive": options.positive,
    "whole": options.whole,
    "seed": options.seed,
    "timeout": options.timeout,
}


def _read(reader: Callable[[str], object], text: str) -> object | None:
    try:
        return reader(text)
    except argparse.ArgumentTypeError as refused:
        message = str(refused)
    assert "\n" not in message
    return None


@pytest.mark.parametrize("name", sorted(READERS))
@given(text=NEAR_NUMBERS)
def test_an_option_takes_a_number_only_as_a_setting_does(name: str, text: str) -> None:
    # Issue 30: --jobs took '\u0663' (3), --seed '1_0' and ' 5', --timeout '1_0' and
    # '1e3', each a number no setting takes.
    read = _read(READERS[name], text)
    if read is None:
        return
    assert setting_number("option", text) == read
    single = _read(options.whole_list, text)
    assert single is None or single == (read,)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (
            ["verify", "--jobs", "\u0663"],
            "argument --jobs: must be a whole number >= 1, not '\u0663'",
        ),
        (
            ["simulate", "--seed", "1_0"],
            "argument --seed: the seed must be a whole number >= 0, not",
        ),
        (["simulate", "--seed", "9" * 5000], "not '9999"),
        (["verify", "--jobs", "x" * 10_000], "... (10,000 characters)"),
    ],
    ids=["other digits", "underscore", "5000 digits", "10,000 characters"],
)
def test_a_refused_number_is_one_short_line_exit_2(
    arguments: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(arguments, out=io.StringIO())
    assert exited.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert said in last
    assert len(last) < 300
