"""Every parser with good and bad values; property tests where they fit."""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtune.config.declarations.pytorch import ROUNDUP_INTERVALS, RoundupDivisions
from memtune.config.types import (
    BitFlags,
    Bool,
    Bytes,
    Enum,
    Float,
    Int,
    InvalidValue,
    Option,
    OptionList,
    Path,
    Percent,
    Ratio,
    SizeOrFraction,
    SizeSpec,
    Str,
)

FEW = settings(max_examples=60, deadline=None)

# ------------------------------------------------------------------- Bool


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "True", "yes", "YeS", "on", "ON", " on "])
def test_bool_true(text):
    assert Bool().parse(text) is True


@pytest.mark.parametrize("text", ["0", "false", "FALSE", "no", "No", "off", "OFF", " 0 "])
def test_bool_false(text):
    assert Bool().parse(text) is False


@pytest.mark.parametrize("text", ["", "2", "-1", "t", "f", "y", "n", "enable", "disabled", "maybe", "none", "1.0", "00"])
def test_bool_rejects_everything_else(text):
    with pytest.raises(InvalidValue) as info:
        Bool().parse(text)
    assert "1, 0, true, false, yes, no, on, off" in info.value.accepted


_BOOL_WORDS = {"1", "0", "true", "false", "yes", "no", "on", "off"}


@FEW
@given(st.text(max_size=8))
def test_bool_property_only_the_eight_words(text):
    if text.strip().lower() in _BOOL_WORDS:
        assert Bool().parse(text) == (text.strip().lower() in {"1", "true", "yes", "on"})
    else:
        with pytest.raises(InvalidValue):
            Bool().parse(text)


def test_bool_convert_python_values():
    b = Bool()
    assert b.convert(True) is True and b.convert(0) is False and b.convert("off") is False
    for bad in (2, 1.0, None, [], "x"):
        with pytest.raises(InvalidValue):
            b.convert(bad)
    assert b.format(True) == "true" and b.parse(b.format(False)) is False


# -------------------------------------------------------------- Int/Float


def test_int_good_and_bad():
    t = Int(min=20, max=34)
    assert t.parse("24") == 24 and t.parse(" 20 ") == 20 and t.parse("+34") == 34
    for bad in ("19", "35", "2.5", "abc", "", "0x20", "1e3"):
        with pytest.raises(InvalidValue):
            t.parse(bad)
    assert t.convert(30) == 30 and t.convert(30.0) == 30
    for bad in (True, 30.5, None):
        with pytest.raises(InvalidValue):
            t.convert(bad)
    assert ">= 20 and <= 34" in t.accepted()


def test_int_power_of_two():
    t = Int(min=1, max=128, power_of_two=True)
    assert [t.parse(str(1 << i)) for i in range(8)] == [1 << i for i in range(8)]
    for bad in ("3", "0", "256", "96"):
        with pytest.raises(InvalidValue):
            t.parse(bad)


@FEW
@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_int_roundtrip(n):
    assert Int().parse(str(n)) == n
    assert Int().parse(Int().format(n)) == n


def test_float_bounds_and_forms():
    t = Float(min=0.0, max=1.0, max_exclusive=True)
    assert t.parse("0") == 0.0 and t.parse("0.5") == 0.5 and t.parse(".25") == 0.25 and t.parse("5e-1") == 0.5
    for bad in ("1", "1.0", "-0.1", "abc", "", "nan", "inf", "0.5.5"):
        with pytest.raises(InvalidValue):
            t.parse(bad)
    assert t.convert(0.75) == 0.75
    with pytest.raises(InvalidValue):
        t.convert(True)
    with pytest.raises(InvalidValue) as info:
        t.parse("abc")
    assert "a number" in info.value.accepted


@FEW
@given(st.floats(min_value=0, max_value=2, allow_nan=False))
def test_ratio_roundtrip(x):
    t = Ratio(max=2.0)
    assert t.parse(t.format(x)) == x


def test_ratio_is_nonnegative():
    with pytest.raises(InvalidValue):
        Ratio().parse("-0.5")
    assert Ratio().parse("3.5") == 3.5
    with pytest.raises(InvalidValue):
        Ratio(max=2.0).parse("2.01")


# ------------------------------------------------------------------ Bytes


@pytest.mark.parametrize(
    "text,expected",
    [("4096", 4096), ("2MB", 2_000_000), ("1.5GiB", 1_610_612_736), ("512KiB", 524_288), ("0", 0), ("1kB", 1000)],
)
def test_bytes_good(text, expected):
    assert Bytes().parse(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "2M", "1.5", "-4", "2 MBB", "1.2345B"])
def test_bytes_bad(text):
    with pytest.raises(InvalidValue) as info:
        Bytes().parse(text)
    assert "KiB" in info.value.accepted


@FEW
@given(st.integers(min_value=0, max_value=1 << 50), st.sampled_from(["B", "KiB", "MiB", "GiB", "kB", "MB", "GB"]))
def test_bytes_units_scale(n, unit):
    scale = {"B": 1, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30, "kB": 1000, "MB": 10**6, "GB": 10**9}[unit]
    assert Bytes().parse(f"{n}{unit}") == n * scale


def test_bytes_bounds_and_python_values():
    t = Bytes(min=1)
    with pytest.raises(InvalidValue):
        t.parse("0")
    assert t.convert(10) == 10 and t.convert("1KiB") == 1024
    for bad in (-1, True, 1.5, None):
        with pytest.raises(InvalidValue):
            t.convert(bad)


# --------------------------------------------------------- SizeOrFraction


def test_size_or_fraction_forms():
    t = SizeOrFraction()
    assert t.parse("90%") == SizeSpec(fraction=0.9)
    assert t.parse("0.9") == SizeSpec(fraction=0.9)
    assert t.parse("4GiB") == SizeSpec(bytes=4 << 30)
    assert t.parse("4096") == SizeSpec(bytes=4096)
    assert t.parse("0").is_zero and not t.parse("0%") and t.parse("1%")
    for bad in ("101%", "1.5", "abc", "%", "-5%", "", "90 percent"):
        with pytest.raises(InvalidValue):
            t.parse(bad)


def test_size_spec_resolve():
    assert SizeSpec(fraction=0.9).resolve(1000) == 900
    assert SizeSpec(bytes=123).resolve(1000) == 123
    assert SizeSpec(bytes=0).resolve(1000) == 0
    assert str(SizeSpec(fraction=0.9)) == "90%" and str(SizeSpec(bytes=5)) == "5"


@FEW
@given(st.integers(min_value=0, max_value=100), st.integers(min_value=0, max_value=1 << 40))
def test_percent_resolves_to_share(pct, total):
    spec = SizeOrFraction().parse(f"{pct}%")
    assert spec.resolve(total) == int(pct / 100 * total)
    assert SizeOrFraction().parse(str(spec)) == spec


def test_fraction_only_variant():
    t = SizeOrFraction(allow_bytes=False)
    assert t.parse("50%").fraction == 0.5 and t.parse("1").fraction == 1.0
    with pytest.raises(InvalidValue):
        t.parse("4GiB")


def test_percent_type():
    t = Percent(integer=True)
    assert t.parse("5") == 5 and t.parse("5%") == 5 and t.parse("100") == 100
    for bad in ("101", "5.5", "-1", "x", ""):
        with pytest.raises(InvalidValue):
            t.parse(bad)
    assert Percent().parse("2.5%") == 2.5
    assert t.convert(7) == 7
    with pytest.raises(InvalidValue):
        t.convert(True)


# ----------------------------------------------------------- Enum/Str/Path


def test_enum_case_insensitive_canonical():
    t = Enum("Naive", "Round", "Unpooled")
    assert t.parse("round") == "Round" and t.parse("NAIVE") == "Naive" and t.parse(" Unpooled ") == "Unpooled"
    with pytest.raises(InvalidValue) as info:
        t.parse("Rond")
    assert "did you mean 'Round'" in info.value.reason
    assert "Naive, Round, Unpooled" in info.value.accepted
    with pytest.raises(InvalidValue):
        t.convert(1)


@FEW
@given(st.sampled_from(["Naive", "Round", "Unpooled"]), st.lists(st.booleans(), min_size=8, max_size=8))
def test_enum_any_case(choice, upper):
    text = "".join(c.upper() if u else c.lower() for c, u in zip(choice, upper * 2))
    assert Enum("Naive", "Round", "Unpooled").parse(text) == choice


def test_str_and_path():
    assert Str().parse("  x ") == "x" and Str().parse("") == ""
    with pytest.raises(InvalidValue):
        Str(allow_empty=False).parse("  ")
    p = Path().parse("~/out.json")
    assert isinstance(p, pathlib.Path) and "~" not in str(p)
    assert Path().convert(pathlib.Path("a/b")) == pathlib.Path("a/b")
    for bad in ("", "a\x00b"):
        with pytest.raises(InvalidValue):
            Path().parse(bad)
    with pytest.raises(InvalidValue):
        Path().convert(3)


# --------------------------------------------------------------- BitFlags

FLAGS = BitFlags(PROFILING=1, ALLOCATIONS=2, RECYCLES=4, RELEASES=8, LARGE_ONLY=16)


def test_bitflags_names_and_integers():
    assert FLAGS.parse("ALLOCATIONS|RECYCLES") == 6
    assert FLAGS.parse("allocations | large_only") == 18
    assert FLAGS.parse("ALLOCATIONS,RELEASES") == 10
    assert FLAGS.parse("31") == 31 and FLAGS.parse("0x1f") == 31 and FLAGS.parse("0") == 0
    for bad in ("32", "ALLOCATION", "ALLOCATIONS|", "", "-1", "0x20"):
        with pytest.raises(InvalidValue):
            FLAGS.parse(bad)
    with pytest.raises(InvalidValue) as info:
        FLAGS.parse("RECYLES")
    assert "RECYCLES" in info.value.reason


@FEW
@given(st.integers(min_value=0, max_value=31))
def test_bitflags_roundtrip(n):
    assert FLAGS.parse(FLAGS.format(n)) == n
    assert FLAGS.parse(str(n)) == n


# ------------------------------------------------------------- OptionList

OPTS = OptionList(
    {
        "size_mb": Option(Int(min=20), None, "a size"),
        "flag": Option(Bool(), False, "a flag"),
        "mode": Option(Enum("native", "cudaMallocAsync"), "native", "a mode"),
        "div": Option(RoundupDivisions(), (0,) * ROUNDUP_INTERVALS, "divisions"),
    }
)


def test_option_list_fills_defaults():
    assert OPTS.parse("") == {"size_mb": None, "flag": False, "mode": "native", "div": (0,) * 16}
    got = OPTS.parse("size_mb:128, flag:True ,mode:cudamallocasync")
    assert got == {"size_mb": 128, "flag": True, "mode": "cudaMallocAsync", "div": (0,) * 16}


def test_option_list_bracketed_values_keep_commas():
    got = OPTS.parse("div:[256:1,512:2,>:8],flag:1")
    assert got["flag"] is True
    assert got["div"] == (1,) * 9 + (2,) + (8,) * 6


def test_option_list_errors_name_the_key():
    with pytest.raises(InvalidValue) as info:
        OPTS.parse("size_mb:10")
    assert info.value.key == "size_mb" and info.value.value == "10"
    with pytest.raises(InvalidValue) as info:
        OPTS.parse("siz_mb:30")
    assert info.value.key == "siz_mb" and "did you mean size_mb" in info.value.reason
    for bad in ("size_mb", "size_mb:", "div:[1:1", "div:1:1]"):
        with pytest.raises(InvalidValue):
            OPTS.parse(bad)


def test_option_list_reports_every_bad_key():
    with pytest.raises(InvalidValue) as info:
        OPTS.parse("size_mb:1,flag:maybe,mode:x")
    assert [e.key for e in info.value.errors] == ["size_mb", "flag", "mode"]


def test_option_list_accepts_a_dict_and_formats_back():
    got = OPTS.convert({"size_mb": 64, "flag": True})
    assert got["size_mb"] == 64 and got["flag"] is True
    assert OPTS.parse(OPTS.format(got)) == got


# ----------------------------------------------------- roundup divisions


def test_roundup_single_value():
    assert RoundupDivisions().parse("4") == (4,) * 16
    for bad in ("3", "0", "x", "-4"):
        with pytest.raises(InvalidValue):
            RoundupDivisions().parse(bad)


def test_roundup_list_follows_pytorch():
    # intervals before the first one named take its value; '>' fills after the last one named
    assert RoundupDivisions().parse("[256:1,512:2,1024:4,>:8]") == (1,) * 9 + (2, 4) + (8,) * 5
    # intervals skipped between two named ones keep 0, exactly as c10's parser leaves them
    assert RoundupDivisions().parse("[64:8,256:4,1024:4,>:1]") == (8,) * 7 + (0, 4, 0, 4) + (1,) * 5
    assert RoundupDivisions().parse("[1:2]") == (2,) + (0,) * 15
    assert RoundupDivisions().parse("[65536:2]") == (2,) * 16  # clamped to the last interval
    for bad in ("[3:1]", "[256:3]", "[256]", "[]", "[256:1", "[x:1]"):
        with pytest.raises(InvalidValue):
            RoundupDivisions().parse(bad)


@FEW
@given(st.lists(st.sampled_from([0, 1, 2, 4, 8, 16]), min_size=16, max_size=16))
def test_roundup_format_roundtrip(values):
    t = RoundupDivisions()
    assert t.parse(t.format(tuple(values))) == tuple(values)
