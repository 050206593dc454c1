"""Hostile approval inputs, derived from what breaks parsers rather than only random text.

Numbers are written the ways a person, a spreadsheet or an attacker writes them: exponents (1e309),
more digits than a Decimal context or the 30-digit limit keeps (9×10^40), other scripts' digits
(Bengali ৪, fullwidth １２, Arabic-Indic, Devanagari, mathematical bold), NaN and infinities,
thousands and decimal separators, signs, padding. Text comes in the Unicode categories that
confuse terminals and pages (controls, format characters such as bidirectional overrides, private
use, combining marks), and at lengths either side of each limit the approval inputs enforce.

``fuzzed`` makes a property test for `make test`: 25 examples in the inner loop, 150 in CI and
`make check` (the Makefile sets ``LOCKGATE_FUZZ_EXAMPLES``), so CI runs each property once.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.approvals.decisions import MAX_REASON_CHARS
from lockgate.approvals.pages import MAX_FORM_BYTES
from lockgate.approvals.versions import MAX_EDITED_CHARS

# Zero through nine in scripts that str.isdigit() accepts and int() or Decimal() may read.
DIGITS = {
    "ascii": "0123456789",
    "bengali": "০১২৩৪৫৬৭৮৯",
    "devanagari": "०१२३४५६७८९",
    "arabic-indic": "٠١٢٣٤٥٦٧٨٩",
    "persian": "۰۱۲۳۴۵۶۷۸۹",
    "fullwidth": "０１２３４５６７８９",
    "thai": "๐๑๒๓๔๕๖๗๘๙",
    "math-bold": "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗",
    "superscript": "⁰¹²³⁴⁵⁶⁷⁸⁹",
}
SIGNS = ("", "", "", "-", "+", "−", "--", "+-", "﹣")
POINTS = (".", ".", ",", "٫", "．", "·")
PADDING = ("", "", " ", "\t", "\n", "\u00a0", "\u2003", "\u200b", "\x1f", "\x00", "\ufeff")
# Numbers every edit channel has met: the crash (1e309, anything from about 1e26), the
# 30-digit limit's edges, NaN and infinities, and digits that read like others (Bengali ৪ is 4).
KNOWN_NUMBERS = (
    "1e309", "-1e309", "1E309", "9e40", "9" + "0" * 40, "9" * 41, "1" + "0" * 40, "1e26", "1e-309",
    "4e1", "4.0E+1", "9" * 30, "9" * 31, "0." + "0" * 29 + "1", "0." + "1" * 31, "NaN", "nan", "-NaN",
    "sNaN", "inf", "-inf", "Infinity", "∞",
    "৪0.00", "৪০", "１２", "４０．００", "٤٠", "𝟒𝟎", "⁴⁰", "½", "Ⅳ", "④",
    "1,000.00", "40,00", "1_000", "0x28", "+40", "−40", "--40", "40.", ".40", "40..0", "4 0",
    "", " ", "\t", "40\x00", "40\u200b", " 40.00 ", "40.001", "0", "-0", "0.00", "500", "500.00",
    "500.01", "100", "100.01", "1000.01", "80.0", "080.00", "40", "40.00", "0.01",
)  # fmt: skip
LIMITS = (63, 64, 65, 127, 128, 129, 255, 256, 299, 300, 301, MAX_REASON_CHARS, MAX_REASON_CHARS + 1,
          MAX_EDITED_CHARS, MAX_EDITED_CHARS + 1, MAX_FORM_BYTES + 1)  # fmt: skip
# Controls, format (bidi overrides, zero-width), private use, unassigned, combining marks, separators,
# digits and numbers of every script, symbols, letters with no case.
ODD_CATEGORIES: tuple[Any, ...] = ("Cc", "Cf", "Co", "Cn", "Mn", "Me", "Zs", "Zl", "Zp", "Nd", "No", "Nl",
                                   "So", "Lo")  # fmt: skip


@st.composite
def written_numbers(draw: st.DrawFn) -> str:
    """A number as text: a sign, digits of one or several scripts, a decimal part, an exponent, padding."""
    scripts = draw(st.lists(st.sampled_from(sorted(DIGITS)), min_size=1, max_size=2))
    digit = st.sampled_from(scripts).flatmap(lambda script: st.sampled_from(DIGITS[script]))
    whole = "".join(draw(st.lists(digit, min_size=0, max_size=45)))
    text = draw(st.sampled_from(SIGNS)) + whole
    if draw(st.booleans()):
        text += draw(st.sampled_from(POINTS)) + "".join(draw(st.lists(digit, max_size=35)))
    if draw(st.integers(0, 3)) == 0:
        text += (
            draw(st.sampled_from("eE"))
            + draw(st.sampled_from(("", "+", "-")))
            + str(draw(st.integers(0, 400)))
        )
    return draw(st.sampled_from(PADDING)) + text + draw(st.sampled_from(PADDING))


def number_texts() -> st.SearchStrategy[str]:
    """Anything typed where a number is expected."""
    return st.one_of(
        st.sampled_from(KNOWN_NUMBERS),
        written_numbers(),
        st.decimals(allow_nan=True, allow_infinity=True).map(str),  # 1E+309, sNaN, -Infinity
        st.floats().map(repr),  # 1e+300, inf, nan
        st.integers(min_value=-(10**45), max_value=10**45).map(str),
        hostile_text(),
    )


def long_text() -> st.SearchStrategy[str]:
    """A run of one character at a length either side of a limit (in characters, not bytes)."""
    return st.builds(
        lambda char, n: char * n,
        st.sampled_from(("a", "9", "é", "€", "𝟒", "\u202e", " ")),
        st.sampled_from(LIMITS),
    )


def hostile_text(max_size: int = 40) -> st.SearchStrategy[str]:
    """Text from any code point a UTF-8 request can carry (no surrogates), weighted to odd categories."""
    return st.one_of(
        st.text(st.characters(codec="utf-8"), max_size=max_size),
        st.text(st.characters(codec="utf-8", categories=ODD_CATEGORIES), max_size=max_size),
        st.sampled_from(("", " ", "\r\n", "\x00", "\u202egnp.exe", "<script>", "'\"", "%00", "%ff", "../..")),
        long_text(),
    )


def content_types() -> st.SearchStrategy[str]:
    """What a Content-Type header may say: the form's, with odd parameters and cases, and others."""
    return st.one_of(
        st.sampled_from(
            (
                "application/x-www-form-urlencoded",
                "APPLICATION/X-WWW-FORM-URLENCODED; charset=UTF-8",
                "application/x-www-form-urlencoded; charset=latin-1",
                "application/x-www-form-urlencoded;;;",
                "application/json",
                "multipart/form-data; boundary=x",
                "text/plain",
                "",
                ";",
            )
        ),
        hostile_text(),
    )


EXAMPLES = int(os.environ.get("LOCKGATE_FUZZ_EXAMPLES") or 25)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def fuzzed(**strategies: st.SearchStrategy[Any]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A property over ``strategies``, ``EXAMPLES`` examples (see the module's docstring)."""

    def make(test: Callable[..., None]) -> Callable[..., None]:
        return FUZZ(given(**strategies)(test))

    return make
