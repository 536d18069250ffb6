"""The one typed decoder (harp_lib.core.typed) and its two sites: what each accepts, converts and
rejects, as the decoders before it did (record.py's ``_decode``, config/validate.py's
``_check_value``; the table was checked against both, issue 39)."""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal, Mapping, Optional, Union

import pytest

from harp_lib.config.validate import _check_value
from harp_lib.core.record import SchemaError, _decode
from harp_lib.core.schema import Plan, PlanSet
from harp_lib.core.typed import DecodeError, decode

REJECT = object()

#: (type, JSON value, as a record reads it (convert=True), as params.yaml keeps it (convert=False));
#: REJECT: a problem.  An accepted value is compared with its type (1 is not 1.0 here).  Rows marked
#: "records: new" are types no record field has (list[...], dict[...], a Union that is not Optional,
#: Literal): the old record decoder passed such values through unchecked; the old params check
#: raised TypeError on a Literal (params.yaml has none).  Every other cell is what the old ones did.
TABLE = [
    (float, 1, 1.0, 1),                      # an integer widens to float in a record, stays an int in params
    (float, 2.5, 2.5, 2.5),
    (float, True, REJECT, REJECT),           # true/false is never a number
    (float, "1.5", REJECT, REJECT),
    (float, float("inf"), REJECT, float("inf")),   # records: finite numbers only
    (float, 2 ** 1100, REJECT, 2 ** 1100),   # too large for a float
    (int, 3, 3, 3),
    (int, 3.0, 3, REJECT),                   # a float with no fraction narrows in a record only
    (int, 2.5, REJECT, REJECT),
    (int, False, REJECT, REJECT),
    (bool, True, True, True),
    (bool, 1, REJECT, REJECT),
    (str, "x", "x", "x"),
    (str, 1, REJECT, REJECT),
    (str, None, REJECT, REJECT),             # null only where the type is Optional
    (Optional[str], None, None, None),
    (Optional[float], 2, 2.0, 2),
    (Optional[int], "5", REJECT, REJECT),
    (Any, None, None, None),
    (Any, [1, "a"], [1, "a"], [1, "a"]),
    (tuple[str, ...], ["a", "b"], ("a", "b"), ["a", "b"]),
    (tuple[str, ...], ["a", 1], REJECT, REJECT),
    (tuple[str, ...], "ab", REJECT, REJECT),
    (list[int], (1, 2), [1, 2], (1, 2)),     # a list may be given as a tuple (records: new)
    (list[str], [], [], []),
    (dict, {"a": [1]}, {"a": [1]}, {"a": [1]}),
    (dict, [], REJECT, REJECT),
    (dict[str, float], {"a": 1}, {"a": 1.0}, {"a": 1}),                 # records: new
    (dict[str, float], {"a": "x"}, REJECT, REJECT),                     # records: new
    (dict[str, list[str]], {"a": ["x", 2]}, REJECT, REJECT),            # records: new
    (Union[str, dict[str, str]], {"a": "b"}, {"a": "b"}, {"a": "b"}),
    (Union[str, dict[str, str]], {"a": 1}, REJECT, REJECT),             # records: new
    (Union[str, None, dict[str, Optional[str]]], {"a": None}, {"a": None}, {"a": None}),
    (Union[int, float], 2, 2, 2),            # the first alternative that fits
    (Literal["rule", "llm"], "llm", "llm", "llm"),                      # params: new
    (Literal[1, 2], True, REJECT, REJECT),                              # records, params: new
]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isinf(a):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("convert", [True, False], ids=["record", "params"])
@pytest.mark.parametrize("tp, value, as_record, as_written", TABLE,
                         ids=lambda x: "REJECT" if x is REJECT else repr(x)[:30])
def test_table(tp, value, as_record, as_written, convert):
    want = as_record if convert else as_written
    if want is REJECT:
        with pytest.raises(DecodeError):
            decode(value, tp, "k", convert=convert)
    else:
        assert _same(decode(value, tp, "k", convert=convert), want)


def test_as_written_keeps_the_very_object():
    v = {"a": [1, 2]}
    assert decode(v, dict[str, list[int]], convert=False) is v
    assert decode(v, dict[str, list[int]]) is not v          # a record gets its own copy


def test_record_messages_name_the_field():
    cases = [(float, "zero", "f", "expected a number, got 'zero'"),
             (float, float("nan"), "f", "expected a finite number, got nan"),
             (float, 10 ** 400, "f", "number too large"),
             (int, 2.5, "f", "expected an integer, got 2.5"),
             (bool, "yes", "f", "expected true/false, got 'yes'"),
             (Optional[str], 5, "f", "expected a string, got 5"),
             (str, None, "f", "is null but a value is required"),
             (dict, [1], "f", "expected an object, got list"),
             (tuple[str, ...], {}, "f", "expected a list, got dict"),
             (tuple[str, ...], ["a", 2], "f[1]", "expected a string, got 2"),
             (Plan, {"sets": [{"localize": "x", "keywrd": 1}]}, "f.sets[0].keywrd",
              "unknown field for PlanSet (known: "),
             (Optional[Plan], {"sets": [{"localize": "x", "start": 5, "end": 1}]}, "f.sets[0].end",
              "plan set window ends (1.0) before it starts (5.0)")]
    for tp, value, field, msg in cases:
        with pytest.raises(SchemaError) as e:
            _decode(value, tp, "f")
        assert e.value.field == field and str(e.value).startswith(f"field '{field}': {msg}"), (tp, value, str(e.value))
    assert _decode({"sets": [{"localize": "x"}]}, Plan, "f") == Plan((PlanSet("x"),))


@dataclasses.dataclass
class _Section:
    n: int
    name: str = "x"


def test_params_messages_list_every_problem():
    errors: list[str] = []
    out = _check_value(["a", 1, None], list[str], "domains", errors)
    assert out == ["a", 1, None] and errors == ["domains[1] = 1 has the wrong type; expected a string",
                                                "domains[2] = None has the wrong type; expected a string"]
    errors = []
    _check_value("5", Optional[int], "limit", errors)
    _check_value(3, _Section, "sec", errors)
    _check_value({"a": 1}, Union[str, dict[str, str]], "m", errors)
    assert errors == ["limit = '5' has the wrong type; expected an integer or null",
                      "sec = 3 is not a section; expected a mapping of n, name",
                      "m = {'a': 1} has the wrong type; expected a string or a mapping to strings"]


def test_the_plain_build_and_its_problems():
    assert decode({"n": 2}, _Section) == _Section(2)
    with pytest.raises(DecodeError, match=r"^s\.n: expected an integer, got 'two'"):
        decode({"n": "two"}, _Section, "s")
    with pytest.raises(DecodeError, match=r"^s\.m: unknown key \(known: n, name\)"):
        decode({"n": 1, "m": 1}, _Section, "s")
    with pytest.raises(DecodeError, match=r"^s\.n: missing"):
        decode({}, _Section, "s")


def test_mappings_and_fixed_tuples():
    assert decode({"a": 1}, Mapping[str, float]) == {"a": 1.0}
    assert decode([1, "a"], tuple[int, str]) == (1, "a")
    with pytest.raises(DecodeError, match="expected a list of 2 values, got 3"):
        decode([1, "a", 2], tuple[int, str])
    with pytest.raises(DecodeError, match="expected one of 'rule', 'llm', got 'gpt'"):
        decode("gpt", Literal["rule", "llm"])
