"""Compiled keys give exactly the values of ``evaluate``, and scans its selection.

Every comparison of values is bit-exact (``same_value``: a float, NaN equals NaN,
-0.0 differs from 0.0). The exhaustive bounded check lives in
``oracle.checks.compiled_keys``; here it runs at a smaller bound, and is shown to
catch deliberately wrong compilers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FunctionType

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from oracle.checks.compiled_keys import CompiledMismatch, check_compiled, same_value
from oracle.strategies import (
    ATTRIBUTES,
    AWKWARD,
    CONSTANTS,
    STAGES,
    awkward_trees,
    constant_values,
    huge_integers,
    key_trees,
)
from policy.waiting import (
    Attr,
    Binary,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    Expr,
    Num,
    Scope,
    Unary,
    Var,
    ascend_fcfs_lanes,
    evaluate,
    key_list_order,
    parse_expression,
)
from policy.waiting.fast import compiled as compiled_module
from policy.waiting.fast import rows as row_layout
from policy.waiting.fast.compiled import (
    MAX_INLINE_KEYS,
    MAX_NESTING,
    ExpressionFunction,
    Values,
    compile_expression,
    compile_keys,
    compile_scan,
    compile_sort_keys,
    entry_values,
    generated_source,
    sort_key,
)

NAN, INF = math.nan, math.inf

# ----------------------------------------------------------------------------- inputs


def make_row(values: Values, serial: object, enqueued_at: float) -> row_layout.Row:
    """A row (policy.waiting.fast.rows) with these values, serial and enqueue time."""
    return ("r", (), values, serial, enqueued_at, False, None, 0, None)  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Point:
    """The arguments of a compiled key, and the scope ``evaluate`` reads them as."""

    order: tuple[str, ...]
    values: Values
    serial: object
    now: float
    waited: float
    budget_left: Mapping[str, float]
    constants: Mapping[str, float]

    @property
    def scope(self) -> Scope:
        return Scope(
            attributes_of(self.order, self.values),
            self.serial,  # type: ignore[arg-type]
            self.now,
            self.waited,
            self.budget_left,
            self.constants,
        )

    def call(self, function: ExpressionFunction) -> float:
        return function(self.values, self.serial, self.now, self.waited, self.budget_left)


def attributes_of(order: Sequence[str], values: Values) -> dict[str, float | bool]:
    """The attribute map of ``values``: a name listed twice reads its first value."""
    attributes: dict[str, float | bool] = {}
    for name, value in zip(order, values, strict=True):
        attributes.setdefault(name, value)
    return attributes


#: Orders that miss names the trees read (NaN), list one twice, or are empty.
ORDERS: tuple[tuple[str, ...], ...] = (
    ATTRIBUTES,
    ("prompt", "a"),
    ("b", "a", "b", "prompt", "extra"),
    (),
)
attribute_values = st.one_of(st.sampled_from(AWKWARD), st.booleans(), st.floats())
floats = st.one_of(st.sampled_from(AWKWARD), st.floats())
serials = st.one_of(st.sampled_from([0, 1, -3]), st.integers(), huge_integers, st.booleans())
budgets = st.dictionaries(st.sampled_from([*STAGES, "unread"]), floats)
constant_maps = st.dictionaries(st.sampled_from(CONSTANTS), constant_values)


@st.composite
def points(draw: st.DrawFn) -> Point:
    order = draw(st.sampled_from(ORDERS))
    return Point(
        order,
        tuple(draw(attribute_values) for _ in order),
        draw(serials),
        draw(floats),
        draw(floats),
        draw(budgets),
        draw(constant_maps),
    )


any_trees = st.one_of(key_trees("selection"), awkward_trees)


def mismatch(
    compiler: Callable[[Expr, Mapping[str, float], Sequence[str]], ExpressionFunction],
    tree: Expr,
    point: Point,
) -> str | None:
    expected = evaluate(tree, point.scope)
    got = point.call(compiler(tree, point.constants, point.order))
    if same_value(expected, got):
        return None
    return f"evaluate {expected!r}, compiled {got!r}"


# ----------------------------------------------------------------------------- one expression


@given(any_trees, points())
def test_a_compiled_expression_is_evaluate_bit_for_bit(tree: Expr, point: Point) -> None:
    found = mismatch(compile_expression, tree, point)
    assert found is None, (found, generated_source([tree], point.constants, point.order, "keys"))


@given(st.lists(any_trees, max_size=4), points())
def test_compiled_keys_are_each_key_evaluated(keys: list[Expr], point: Point) -> None:
    got = compile_keys(keys, point.constants, point.order)(
        point.values, point.serial, point.now, point.waited, point.budget_left
    )
    expected = [evaluate(key, point.scope) for key in keys]
    assert len(got) == len(keys)
    assert all(same_value(e, g) for e, g in zip(expected, got, strict=True)), (expected, got)


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("-a", (False,), -0.0),  # -False is the int 0 in Python
        ("-a", (True,), -1.0),
        ("a + a", (True,), 2.0),  # True + True is the int 2
        ("a * a", (False,), 0.0),
        ("a", (True,), 1.0),  # a bool attribute is returned as a float
        ("!k ? a : 0", (True,), 1.0),  # k is -0.0: false
        ("a ? a : a", (False,), 0.0),
        ("a && a", (NAN,), 1.0),  # NaN is true
        ("a || 0", (-0.0,), 0.0),  # -0.0 is false
        ("!a", (NAN,), 0.0),
        ("a == 0", (-0.0,), 1.0),
        ("a != a", (NAN,), 1.0),
        ("1 / a", (-0.0,), -INF),
        ("-1 / a", (False,), -INF),
        ("a / 0", (NAN,), NAN),
        ("0 / a", (0.0,), NAN),
        ("a / k", (2.0,), -INF),  # k is -0.0, inlined
        ("k", (0.0,), -0.0),
        ("-k", (0.0,), 0.0),
        ("min(a, 0)", (-0.0,), -0.0),
        ("min(0, a)", (-0.0,), -0.0),
        ("max(a, -0)", (0.0,), 0.0),
        ("max(-0, a)", (False,), 0.0),
        ("min(a, 1, 2)", (NAN,), NAN),
        ("max(a)", (True,), 1.0),
        ("a - a", (INF,), NAN),
        ("a * 2 * 2", (1e308,), INF),  # overflow is infinity, never an exception
        ("(a < 1) + (a < 2)", (0.0,), 2.0),
        ("-(a < 1)", (5.0,), -0.0),
        ("-(a && 1)", (0.0,), -0.0),
        # found by branch coverage: a truth divided by a constant, and a choice by a
        # constant test (which side it takes)
        ("(a > 1) / 2", (2.0,), 0.5),
        ("(a > 1) / -2", (NAN,), -0.0),
        ("1 ? a : 1 / 0", (True,), 1.0),
        ("k ? 1 / 0 : -a", (0.0,), -0.0),  # k is -0.0: false
    ],
)
def test_the_ieee_and_boolean_corners(text: str, values: Values, expected: float) -> None:
    tree = parse_expression(text, {"k"}).unwrap()
    got = compile_expression(tree, {"k": -0.0}, ("a",))(values, 0, 0.0, 0.0, {})
    assert same_value(expected, got), got
    assert same_value(evaluate(tree, Scope({"a": values[0]}, 0, 0.0, 0.0, {}, {"k": -0.0})), got)


def test_names_the_scope_lacks_read_nan_and_context_variables_are_converted() -> None:
    tree = parse_expression("u + z").unwrap()  # u: not in the order; z: no constant
    assert math.isnan(compile_expression(tree, {}, ("a",))((1.0,), 0, 0.0, 0.0, {}))
    stage = compile_expression(BudgetLeft("engine"), {}, ())
    assert math.isnan(stage((), 0, 0.0, 0.0, {}))
    assert same_value(-0.0, stage((), 0, 0.0, 0.0, {"engine": -0.0}))
    serial = compile_expression(Var("serial"), {}, ())
    assert [serial((), s, 0.0, 0.0, {}) for s in (10**400, -(10**400), True, 3)] == [
        INF,
        -INF,
        1.0,
        3.0,
    ]
    # an int where a float is expected (mypy lets it through) is read as a float
    clock = compile_keys([Var("now"), Var("waited")], {}, ())
    assert clock((), 0, 2, True, {}) == (2.0, 1.0)
    assert all(type(value) is float for value in clock((), 0, 2, True, {}))


def test_constants_are_inlined_and_non_finite_ones_are_names() -> None:
    tree = parse_expression("k + short_tokens", {"k", "short_tokens"}).unwrap()
    source = generated_source([tree], {"k": -0.0, "short_tokens": 1e300}, (), "expression")
    assert "return 1e+300" in source  # folded: -0.0 + 1e300
    for value in (NAN, INF, -INF, -0.0, 5e-324, -1.5e-300):
        constant = compile_expression(Const("k"), {"k": value}, ())
        assert same_value(value, constant((), 0, 0.0, 0.0, {}))
        negated = compile_expression(
            Unary("-", Binary("*", Const("k"), Attr("a"))), {"k": value}, ("a",)
        )
        assert same_value(-(value * 1.0), negated((1.0,), 0, 0.0, 0.0, {}))


def test_no_text_of_the_policy_reaches_the_source() -> None:
    tree = Binary("+", Attr("secret_attribute"), BudgetLeft("secret_stage"))
    source = generated_source([tree], {}, ("secret_attribute",), "scan")
    assert "secret" not in source
    function = compile_expression(tree, {}, ("secret_attribute",))
    assert function((1.0,), 0, 0.0, 0.0, {"secret_stage": 2.0}) == 3.0


def test_entry_values_reads_like_evaluate() -> None:
    values = entry_values({"a": True, "b": 10**400, "c": 3}, ("a", "b", "c", "missing"))
    assert values[:3] == (True, INF, 3.0)
    assert math.isnan(values[3])
    assert type(values[2]) is float


# ----------------------------------------------------------------------------- deep trees


def _chain(op: str, count: int, leaf: Expr) -> Expr:
    tree = leaf
    for _ in range(count):
        tree = Binary(op, tree, leaf)  # type: ignore[arg-type]
    return tree


def _nested(count: int, wrap: Callable[[int, Expr], Expr]) -> Expr:
    tree: Expr = Attr("a")
    for index in range(count):
        tree = wrap(index, tree)
    return tree


A, B = Attr("a"), Attr("b")
DEEP: dict[str, Expr] = {
    "a + a + ... (5000 terms)": _chain("+", 5000, A),
    "a && ... (3000)": _chain("&&", 3000, A),
    "b || ... (3000)": _chain("||", 3000, B),
    "a < a < ... (3000)": _chain("<", 3000, A),
    "a / (a - b) / ... (2000)": _nested(
        2000, lambda i, t: Binary("/", B, t) if i % 2 else Binary("/", t, Binary("-", A, B))
    ),
    "conditionals nested in both branches (3000)": _nested(
        3000, lambda i, t: Cond(A, Num(float(i)), t) if i % 2 else Cond(B, t, Num(-0.0))
    ),
    "prefix operators (4000)": _nested(4000, lambda i, t: Unary("!" if i % 3 == 0 else "-", t)),
    "min/max of 2 and 3 (2000)": _nested(
        2000,
        lambda i, t: Call("min" if i % 2 else "max", (t, B) if i % 3 else (B, t, Num(0.0))),
    ),
}


def _nesting_of(source: str) -> int:
    depth = deepest = 0
    for character in source:
        if character == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif character == ")":
            depth -= 1
    return deepest


@pytest.mark.parametrize("name", sorted(DEEP))
def test_deep_trees_compile_within_the_nesting_limit_and_agree(name: str) -> None:
    tree = DEEP[name]
    order = ("a", "b")
    function = compile_expression(tree, {}, order)
    assert isinstance(function, FunctionType)
    assert function.__code__.co_filename.startswith("<policy.waiting.compiled")  # no fallback
    assert _nesting_of(generated_source([tree], {}, order, "expression")) <= MAX_NESTING + 1
    for a, b in [(NAN, 0.5), (-0.0, True), (1.0, -0.0), (INF, 2.0), (False, NAN), (3.0, 3.0)]:
        expected = evaluate(tree, Scope({"a": a, "b": b}, 0, 0.0, 0.0, {}, {}))
        assert same_value(expected, function((a, b), 0, 0.0, 0.0, {})), (a, b)


@given(st.lists(any_trees, min_size=1, max_size=3), points())
def test_operands_computed_into_temporaries_keep_every_value(
    keys: list[Expr], point: Point
) -> None:
    # With a nesting limit of 2, almost every operand goes into a temporary, computed
    # even where a conditional or && would not need it: the values must not change.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled_module, "MAX_NESTING", 2)
        got = compile_keys(keys, point.constants, point.order)(
            point.values, point.serial, point.now, point.waited, point.budget_left
        )
        source = generated_source(keys, point.constants, point.order, "scan")
    expected = [evaluate(key, point.scope) for key in keys]
    assert all(same_value(e, g) for e, g in zip(expected, got, strict=True)), (expected, got)
    assert _nesting_of(source) <= 2 + 2


def test_when_compile_refuses_the_source_evaluate_is_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(_program: object) -> None:
        raise compiled_module._Uncompilable("refused for the test")

    monkeypatch.setattr(compiled_module, "_function", refuse)
    tree = parse_expression("-a / b + min(a, waited) + budget_left(engine) + serial").unwrap()
    rows = [
        make_row((-0.0, 0.0), 1, 0.0),
        make_row((1.0, 1.0), True, 3.0),
        make_row((NAN, 2.0), 10**400, 1.0),
    ]
    for a, b in [(0.0, -0.0), (True, 1.0), (NAN, INF)]:
        point = Point(("a", "b"), (a, b), 7, 4.0, 2.0, {"engine": 1.0}, {})
        assert same_value(
            evaluate(tree, point.scope), point.call(compile_expression(tree, {}, point.order))
        )
        keys = compile_keys([tree, tree], {}, point.order)  # its fallback too (branch coverage)
        assert not keys.__code__.co_filename.startswith("<policy.waiting.compiled")
        got = keys(point.values, point.serial, point.now, point.waited, point.budget_left)
        assert len(got) == 2
        assert all(same_value(evaluate(tree, point.scope), value) for value in got)
    case = Case([tree, Attr("a")], {}, ("a", "b"), rows, 4.0, {"engine": -0.0})
    assert same_selection(case.scan(), case.reference_scan())
    assert case.sort_keys() == case.reference_sort_keys()


# ----------------------------------------------------------------------------- scans


@dataclass(frozen=True, slots=True)
class Case:
    """A scan: keys, constants, attribute order, rows and the moment."""

    keys: Sequence[Expr]
    constants: Mapping[str, float]
    order: tuple[str, ...]
    rows: Sequence[row_layout.Row]
    now: float
    budget_left: Mapping[str, float]

    def keys_of(self, row: row_layout.Row) -> tuple[float, ...]:
        scope = Scope(
            attributes_of(self.order, row[row_layout.VALUES]),
            row[row_layout.SERIAL],
            self.now,
            self.now - row[row_layout.ENQUEUED_AT],
            self.budget_left,
            self.constants,
        )
        return tuple(evaluate(key, scope) for key in self.keys)

    def reference_scan(self) -> tuple[int, tuple[float, ...]]:
        found = [self.keys_of(row) for row in self.rows]
        best = min(range(len(self.rows)), key=lambda index: (key_list_order(found[index]), index))
        return best, found[best]

    def reference_sort_keys(self) -> list[tuple[float | int, ...]]:
        return [(*sort_key(self.keys_of(row)), index) for index, row in enumerate(self.rows)]

    def scan(self) -> tuple[int, tuple[float, ...]]:
        best = compile_scan(self.keys, self.constants, self.order)
        return best(self.rows, self.now, self.budget_left)

    def sort_keys(self) -> list[tuple[float | int, ...]]:
        sort_keys = compile_sort_keys(self.keys, self.constants, self.order)
        return sort_keys(self.rows, self.now, self.budget_left)


def same_selection(a: tuple[int, tuple[float, ...]], b: tuple[int, tuple[float, ...]]) -> bool:
    return (
        a[0] == b[0]
        and len(a[1]) == len(b[1])
        and all(same_value(x, y) for x, y in zip(a[1], b[1], strict=True))
    )


#: Scan keys: trees, bare attributes (ties), and keys that are often NaN.
scan_keys: st.SearchStrategy[Expr] = st.one_of(
    any_trees,
    st.sampled_from([Attr(name) for name in ATTRIBUTES]),
    st.sampled_from([Binary("/", Attr("a"), Attr("b")), Var("waited"), BudgetLeft("engine")]),
)


@st.composite
def scans(draw: st.DrawFn) -> Case:
    point = draw(points())
    keys = draw(st.lists(scan_keys, max_size=MAX_INLINE_KEYS + 2))
    palette = draw(
        st.lists(
            st.tuples(
                st.tuples(*(st.sampled_from([*AWKWARD, True, False]) for _ in point.order)),
                serials,
                st.sampled_from([0.0, -0.0, 1.0, 2.5, NAN, INF]),
            ),
            min_size=1,
            max_size=4,
        )
    )
    rows = [make_row(*draw(st.sampled_from(palette))) for _ in range(draw(st.integers(1, 12)))]
    return Case(keys, point.constants, point.order, rows, point.now, point.budget_left)


@given(scans())
def test_a_scan_selects_what_evaluate_and_key_list_order_select(case: Case) -> None:
    assert same_selection(case.scan(), case.reference_scan()), (case.scan(), case.reference_scan())


@given(scans())
def test_sort_keys_are_the_sort_keys_of_evaluated_keys_with_the_index(case: Case) -> None:
    made, expected = case.sort_keys(), case.reference_sort_keys()
    assert made == expected
    assert [type(part) for key in made for part in key] == [
        type(part) for key in expected for part in key
    ]
    assert min(made)[-1] == case.reference_scan()[0]


@given(
    st.lists(st.sampled_from([*AWKWARD, 3.0]), max_size=3),
    st.lists(st.sampled_from([*AWKWARD, 3.0]), max_size=3),
)
def test_sort_key_orders_like_key_list_order(a: list[float], b: list[float]) -> None:
    assert (sort_key(tuple(a)) < sort_key(tuple(b))) == (key_list_order(a) < key_list_order(b))
    assert (sort_key(tuple(a)) == sort_key(tuple(b))) == (key_list_order(a) == key_list_order(b))


def test_scan_ties_go_to_the_first_row_and_nan_keys_last() -> None:
    key = [Attr("a")]
    best = compile_scan(key, {}, ("a",))
    assert best([make_row((NAN,), 0, 0.0), make_row((NAN,), 1, 0.0)], 0.0, {})[0] == 0
    assert (
        best(
            [make_row((NAN,), 0, 0.0), make_row((INF,), 1, 0.0), make_row((INF,), 2, 0.0)], 0.0, {}
        )[0]
        == 1
    )
    index, values = best([make_row((0.0,), 0, 0.0), make_row((-0.0,), 1, 0.0)], 0.0, {})
    assert index == 0
    assert same_value(0.0, values[0])
    index, values = best(
        [make_row((NAN,), 0, 0.0), make_row((-0.0,), 1, 0.0), make_row((0.0,), 2, 0.0)], 0.0, {}
    )
    assert index == 1
    assert same_value(-0.0, values[0])
    two = compile_scan([Attr("a"), Attr("b")], {}, ("a", "b"))
    rows = [
        make_row((NAN, 1.0), 0, 0.0),
        make_row((NAN, -0.0), 1, 0.0),
        make_row((NAN, 0.0), 2, 0.0),
    ]
    index, values = two(rows, 0.0, {})
    assert index == 1
    assert same_value(-0.0, values[1])


def test_no_keys_and_no_rows() -> None:
    assert compile_keys([], {}, ())((), 0, 0.0, 0.0, {}) == ()
    assert compile_scan([], {}, ())([make_row((), 0, 0.0), make_row((), 1, 0.0)], 0.0, {}) == (
        0,
        (),
    )
    assert compile_sort_keys([], {}, ())([make_row((), 0, 0.0)], 0.0, {}) == [(0,)]
    assert compile_sort_keys([Attr("a")], {}, ("a",))([], 0.0, {}) == []
    for keys in ([], [Attr("a")], [Attr("a")] * (MAX_INLINE_KEYS + 1)):
        with pytest.raises(ValueError, match="at least one row"):
            compile_scan(keys, {}, ("a",))([], 0.0, {})


def test_the_ascend_lanes_key_scans_like_evaluate() -> None:
    policy = ascend_fcfs_lanes(short_tokens=128, max_wait=0.003)
    order = ("immediate", "prompt")
    rows = [
        make_row((False, 256.0), 0, 0.0),
        make_row((False, 64.0), 1, 0.5),
        make_row((False, 256.0), 2, 0.999),
        make_row((True, 4096.0), 3, 1.0),
    ]
    best = compile_scan(policy.keys, policy.constants, order)
    assert best(rows, 1.0, {}) == (3, (0.0,))
    assert best(rows[:3], 1.0, {}) == (0, (1.0,))  # long, and waited 1.0 >= 0.003
    assert best(rows[1:3], 1.0, {}) == (0, (2.0,))  # the long one waited 0.001 only
    source = generated_source(policy.keys, policy.constants, order, "scan")
    assert "_divide" not in source
    assert "0.003 > 0.0" not in source  # the guard max_wait > 0 is folded


# ----------------------------------------------------------------------------- checking the checks


def _rebuilt(tree: Expr, change: Callable[[Expr], Expr]) -> Expr:
    """``tree`` with ``change`` applied to every node, children first (small trees only)."""
    match tree:
        case Unary(op, operand):
            tree = Unary(op, _rebuilt(operand, change))
        case Binary(op, left, right):
            tree = Binary(op, _rebuilt(left, change), _rebuilt(right, change))
        case Cond(test, then, otherwise):
            tree = Cond(*(_rebuilt(kid, change) for kid in (test, then, otherwise)))
        case Call(function, args):
            tree = Call(function, tuple(_rebuilt(kid, change) for kid in args))
        case _:
            pass
    return change(tree)


def _positive(test: Expr) -> Expr:
    return Binary(">", test, Num(0.0))


def _truth_as_positive(node: Expr) -> Expr:
    match node:
        case Cond(test, then, otherwise):
            return Cond(_positive(test), then, otherwise)
        case Unary("!", operand):
            return Unary("!", _positive(operand))
        case Binary("&&" | "||" as op, left, right):
            return Binary(op, _positive(left), _positive(right))
        case _:
            return node


def _negate_by_subtracting(node: Expr) -> Expr:
    match node:
        case Unary("-", operand):
            return Binary("-", Num(0.0), operand)  # 0 - 0.0 is 0.0, not -0.0
        case _:
            return node


def _min_ignoring_nan(node: Expr) -> Expr:
    match node:
        case Call("min", (left, right)):
            return Cond(Binary("<", left, right), left, right)
        case _:
            return node


def _rewriting(
    change: Callable[[Expr], Expr],
) -> Callable[[Expr, Mapping[str, float], Sequence[str]], ExpressionFunction]:
    def compiler(
        expr: Expr, constants: Mapping[str, float], order: Sequence[str]
    ) -> ExpressionFunction:
        return compile_expression(_rebuilt(expr, change), constants, order)

    return compiler


WRONG_COMPILERS = {
    "truth as x > 0": _rewriting(_truth_as_positive),
    "-x as 0 - x": _rewriting(_negate_by_subtracting),
    "min(x, y) as x < y ? x : y": _rewriting(_min_ignoring_nan),
}


def test_the_exhaustive_check_finds_no_disagreement_of_the_real_compiler() -> None:
    assert check_compiled(max_size=3) == []


@pytest.mark.parametrize("name", sorted(WRONG_COMPILERS))
def test_the_exhaustive_check_catches_a_wrong_compiler(name: str) -> None:
    found = check_compiled(WRONG_COMPILERS[name], max_size=3, limit=1)
    assert len(found) == 1
    assert isinstance(found[0], CompiledMismatch)
    assert "evaluate" in str(found[0])


def test_the_exhaustive_check_catches_a_wrong_helper_in_generated_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(compiled_module._HELPERS, "_minimum", min)  # no NaN, no -0.0 rule
    (found,) = check_compiled(max_size=3, limit=1)
    assert isinstance(found.tree, Call)
    assert found.tree.function == "min"


def test_the_exhaustive_check_catches_values_that_are_not_floats() -> None:
    def booleans(
        expr: Expr, constants: Mapping[str, float], order: Sequence[str]
    ) -> ExpressionFunction:
        real = compile_expression(expr, constants, order)
        return lambda *args: real(*args) == 1.0 if isinstance(expr, Bool) else real(*args)

    (found,) = check_compiled(booleans, max_size=1, limit=5)
    assert found.tree == Bool(True)
    assert found.got is True


def test_the_property_test_catches_a_wrong_compiler() -> None:
    wrong = WRONG_COMPILERS["min(x, y) as x < y ? x : y"]

    @settings(max_examples=2000, phases=[Phase.generate], derandomize=True, database=None)
    @given(awkward_trees, points())
    def search(tree: Expr, point: Point) -> None:
        assert mismatch(wrong, tree, point) is None

    with pytest.raises(AssertionError):
        search()
