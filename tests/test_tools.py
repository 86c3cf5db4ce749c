"""In-process unit tests of the tool layer of mcp_min: schema derivation (Server.tool),
argument validation (validate) and result conversion (to_call_result).

Spec: server/tools (Tool, inputSchema, CallToolResult, structuredContent/outputSchema) and
basic "JSON Schema Usage" (2020-12 by default) of revisions 2025-11-25 and 2026-07-28.
"""
import json
import math
import sys
import typing
from pathlib import Path
from typing import Annotated, Literal, Optional

import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_min import (  # noqa: E402
    Context, Server, ToolResult, to_call_result, validate)

NO_PARAMS = {"type": "object", "additionalProperties": False}


def describe_tool(func, **options):
    """(definition, name of its Context parameter), as Server.tool registers them."""
    server = Server("t")
    server.tool(**options)(func)
    (_, definition, context_param), = server.tools.values()
    return definition, context_param


def schema_of(hint):
    """The inputSchema property a single parameter of this type gets."""
    def tool(x): ...
    tool.__annotations__ = {"x": hint}
    definition, _ = describe_tool(tool)
    return definition["inputSchema"]["properties"]["x"]


# ---------------------------------------------------------------------------
# Server.tool: the Tool definition tools/list sends
# ---------------------------------------------------------------------------

HINTS = [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (list, {"type": "array"}),
    (list[str], {"type": "array", "items": {"type": "string"}}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (list[list[float]], {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}),
    (dict, {"type": "object"}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (dict[str, list[str]],
     {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}),
    (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    (Optional[str], {"anyOf": [{"type": "string"}, {"type": "null"}]}),
    (typing.Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
    (list[str] | None, {"anyOf": [{"type": "array", "items": {"type": "string"}},
                                  {"type": "null"}]}),
    (Literal["fast", "exact"], {"enum": ["fast", "exact"]}),
    (Literal[1, 2, 3], {"enum": [1, 2, 3]}),
    (Literal["a"] | None, {"anyOf": [{"enum": ["a"]}, {"type": "null"}]}),
    (list[Literal["x", "y"]], {"type": "array", "items": {"enum": ["x", "y"]}}),
    # Annotated's text describes the argument; a dict adds JSON Schema keywords (the first dict);
    # anything else in it is the tool's own business.
    (Annotated[str, "UK town name"], {"type": "string", "description": "UK town name"}),
    (Annotated[int, "how many", "at most 10"], {"type": "integer",
                                                "description": "how many at most 10"}),
    (Annotated[int, "how many", {"minimum": 1, "maximum": 50}],
     {"type": "integer", "description": "how many", "minimum": 1, "maximum": 50}),
    (Annotated[Literal["a"] | None, {"x": 1}, 3.5],
     {"anyOf": [{"enum": ["a"]}, {"type": "null"}], "x": 1}),
    (list[Annotated[str, "a tag"]], {"type": "array",
                                     "items": {"type": "string", "description": "a tag"}}),
]


@pytest.mark.parametrize("hint,expected", HINTS, ids=[repr(h) for h, _ in HINTS])
def test_schema_for_every_supported_hint(hint, expected):
    assert schema_of(hint) == expected


@pytest.mark.parametrize("hint", [bytes, set[int], tuple[int, int], object, complex,
                                  type("Custom", (), {})])
def test_unsupported_hint_is_a_type_error_at_decoration(hint):
    with pytest.raises(TypeError, match="'x'"):
        schema_of(hint)


def test_an_annotated_description_sits_with_the_default():
    def forecast(town: Annotated[str, "UK town name"], days: Annotated[int, "1 to 7"] = 3) -> str:
        return ""

    definition, _ = describe_tool(forecast)
    assert definition["inputSchema"]["properties"] == {
        "town": {"type": "string", "description": "UK town name"},
        "days": {"type": "integer", "description": "1 to 7", "default": 3}}


def test_full_definition_with_defaults_and_required_in_signature_order():
    def search(query: str, tags: list[str], mode: Literal["fast", "exact"] = "fast",
               limit: int | None = None, ratio: float = 0.5, strict: bool = False) -> str:
        """Search the notes.

        Longer description, indented in the source.
        """
        return ""

    definition, context_param = describe_tool(search)
    assert context_param is None
    assert definition == {
        "name": "search",
        "description": "Search the notes.\n\nLonger description, indented in the source.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["fast", "exact"], "default": "fast"},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                "ratio": {"type": "number", "default": 0.5},
                "strict": {"type": "boolean", "default": False},
            },
            "required": ["query", "tags"],
            "additionalProperties": False,
        },
    }
    json.dumps(definition, allow_nan=False)  # the definition is JSON as it stands


def test_keyword_only_parameters_and_no_required_list_when_all_have_defaults():
    def tool(*, a: int = 1, b: str = "x") -> str:
        return ""

    definition, _ = describe_tool(tool)
    assert definition["inputSchema"] == {"type": "object",
                                         "properties": {"a": {"type": "integer", "default": 1},
                                                        "b": {"type": "string", "default": "x"}},
                                         "additionalProperties": False}
    # an empty "required" is allowed but pointless
    assert "required" not in definition["inputSchema"]


def test_no_parameter_tool_gets_exactly_the_spec_schema():
    def ping() -> str:
        return "pong"

    definition, _ = describe_tool(ping)
    assert definition["inputSchema"] == NO_PARAMS
    assert definition == {"name": "ping", "description": "", "inputSchema": NO_PARAMS}


def test_context_is_excluded_from_the_schema_wherever_it_is():
    def only_context(ctx: Context) -> str:
        return ""

    def middle(a: int, ctx: Context, b: str = "x") -> str:
        return ""

    definition, context_param = describe_tool(only_context)
    assert definition["inputSchema"] == NO_PARAMS and context_param == "ctx"
    definition, context_param = describe_tool(middle)
    assert context_param == "ctx"
    assert definition["inputSchema"] == {"type": "object",
                                         "properties": {"a": {"type": "integer"},
                                                        "b": {"type": "string", "default": "x"}},
                                         "required": ["a"], "additionalProperties": False}


def test_missing_type_hint_is_a_type_error_naming_the_parameter():
    def tool(a: int, b) -> str:
        return ""

    with pytest.raises(TypeError, match="'b'"):
        describe_tool(tool)


def test_a_default_that_is_not_json_fails_at_decoration():
    def tool(a: object = object()) -> str:
        return ""

    def tool2(a: float = math.nan) -> str:
        return ""

    for func in (tool, tool2):
        with pytest.raises((TypeError, ValueError)):
            Server("t").tool()(func)


def test_string_annotations_are_resolved():
    def tool(a: "int", b: "list[str] | None" = None) -> "dict":
        return {}

    definition, _ = describe_tool(tool)
    assert definition["inputSchema"]["properties"] == {
        "a": {"type": "integer"},
        "b": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
              "default": None}}
    assert "outputSchema" not in definition  # declared only when asked: output_schema=


def test_name_title_annotations_and_output_schema_overrides():
    def tool(a: int) -> str:
        return ""

    definition, _ = describe_tool(tool, name="renamed", title="A Title",
                                  annotations={"readOnlyHint": True},
                                  output_schema={"type": "object",
                                                 "properties": {"n": {"type": "integer"}}})
    assert definition == {"name": "renamed", "title": "A Title", "description": "",
                          "inputSchema": {"type": "object",
                                          "properties": {"a": {"type": "integer"}},
                                          "required": ["a"], "additionalProperties": False},
                          "annotations": {"readOnlyHint": True},
                          "outputSchema": {"type": "object",
                                           "properties": {"n": {"type": "integer"}}}}


@pytest.mark.parametrize("returns", [dict, dict[str, int], str, int, list, None, typing.Any])
def test_output_schema_is_declared_only_when_asked_for(returns):
    # Dropped to fit the size budget: a dict return no longer declares {"type": "object"} by
    # itself. It is still sent as structuredContent; output_schema= declares it.
    def tool() -> None: ...
    tool.__annotations__ = {"return": returns}
    definition, _ = describe_tool(tool)
    assert "outputSchema" not in definition


def test_server_tool_registers_in_order_and_returns_the_function():
    server = Server("t")

    def b() -> str:
        return "b"

    def a() -> str:
        return "a"

    assert server.tool()(b) is b
    assert server.tool(name="alpha")(a) is a
    assert list(server.tools) == ["b", "alpha"]


# ---------------------------------------------------------------------------
# validate: JSON Schema 2020-12 semantics for the subset we generate; no coercion
# ---------------------------------------------------------------------------

ACCEPTED = [
    ({"type": "integer"}, 5, 5),
    ({"type": "integer"}, -5, -5),
    ({"type": "integer"}, 5.0, 5),  # JSON Schema: 5.0 is an integer
    ({"type": "integer"}, 10**30, 10**30),
    ({"type": "number"}, 1.5, 1.5),
    ({"type": "number"}, 2, 2),  # JSON Schema: every integer is a number
    ({"type": "number"}, 0, 0),
    ({"type": "string"}, "", ""),
    ({"type": "string"}, "héllo", "héllo"),
    ({"type": "boolean"}, True, True),
    ({"type": "boolean"}, False, False),
    ({"type": "null"}, None, None),
    ({"type": "array"}, [1, "a", None], [1, "a", None]),
    ({"type": "array", "items": {"type": "integer"}}, [], []),
    ({"type": "array", "items": {"type": "integer"}}, [1, 2.0], [1, 2]),
    ({"type": "object"}, {"any": ["thing"]}, {"any": ["thing"]}),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, {"a": 1, "b": 2.0},
     {"a": 1, "b": 2}),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, None, None),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, 3, 3),
    ({"enum": ["fast", "exact"]}, "exact", "exact"),
    ({"enum": [1, 2]}, 2, 2),
]


@pytest.mark.parametrize("schema,value,expected", ACCEPTED,
                         ids=[f"{s}-{v!r}" for s, v, _ in ACCEPTED])
def test_validate_accepts(schema, value, expected):
    result = validate(value, schema)
    assert result == expected and type(result) is type(expected)


def test_validate_enum_compares_numbers_as_json_schema_does():
    # JSON Schema 2020-12 (validation, "enum"/"const"): 1.0 and 1 are the same number.
    assert validate(1.0, {"enum": [1, 2]}) == 1


REJECTED = [
    ({"type": "integer"}, "5"),  # no coercion: a model that sends a string learns to send a number
    ({"type": "integer"}, True),  # a JSON boolean is not a number
    ({"type": "integer"}, 5.5),
    ({"type": "integer"}, None),
    ({"type": "integer"}, [5]),
    ({"type": "number"}, "1.5"),
    ({"type": "number"}, False),
    ({"type": "string"}, 5),
    ({"type": "string"}, None),
    ({"type": "string"}, ["a"]),
    ({"type": "boolean"}, 1),
    ({"type": "boolean"}, "true"),
    ({"type": "null"}, 0),
    ({"type": "array"}, "abc"),
    ({"type": "array"}, {"a": 1}),
    ({"type": "array", "items": {"type": "string"}}, ["a", 1]),
    ({"type": "object"}, [["a", 1]]),
    ({"type": "object"}, "x"),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, {"a": "1"}),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "3"),
    ({"enum": ["fast", "exact"]}, "slow"),
    ({"enum": ["fast", "exact"]}, None),
    ({"enum": [1, 2]}, True),  # True is not 1 in JSON
    ({"enum": [1, 2]}, "1"),
]


@pytest.mark.parametrize("schema,value", REJECTED, ids=[f"{s}-{v!r}" for s, v in REJECTED])
def test_validate_rejects_with_value_error(schema, value):
    with pytest.raises(ValueError):
        validate(value, schema)


def tool_schema():
    def tool(name: str, tags: list[str], mode: Literal["fast", "exact"] = "fast",
             limit: int | None = None, ctx: Context = None) -> str:
        return ""
    return describe_tool(tool)[0]["inputSchema"]


def test_validate_arguments_object():
    schema = tool_schema()
    assert validate({"name": "n", "tags": ["a"]}, schema) == {"name": "n", "tags": ["a"]}
    assert validate({"name": "n", "tags": [], "mode": "exact", "limit": 3.0}, schema) == \
        {"name": "n", "tags": [], "mode": "exact", "limit": 3}


@pytest.mark.parametrize("arguments,names", [
    ({"tags": []}, ["name"]),  # missing
    ({}, ["name", "tags"]),
    ({"name": "n", "tags": [], "extra": 1}, ["extra"]),  # additionalProperties: false
    ({"name": "n", "tags": [], "ctx": {}}, ["ctx"]),  # the Context parameter is not an argument
    ({"name": 5, "tags": []}, ["name"]),
    ({"name": "n", "tags": ["a", 2]}, ["tags"]),
    ({"name": "n", "tags": [], "mode": "slow"}, ["mode"]),
    ({"name": "n", "tags": [], "limit": "3"}, ["limit"]),
])
def test_validate_errors_name_what_is_wrong(arguments, names):
    with pytest.raises(ValueError) as info:
        validate(arguments, tool_schema())
    for name in names:
        assert name in str(info.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=10)

SUBSET_SCHEMAS = [schema for _, schema in HINTS] + [
    {"type": "null"}, {"type": "object", "properties": {"a": {"type": "integer"}},
                       "required": ["a"], "additionalProperties": False}]


@settings(max_examples=300, deadline=None)
@given(value=json_values, schema=st.sampled_from(SUBSET_SCHEMAS))
def test_validate_only_ever_returns_or_raises_value_error(value, schema):
    try:
        result = validate(value, schema)
    except ValueError:
        return
    json.dumps(result, allow_nan=False)  # what it returns is still JSON
    assert result == value  # and the same value (5.0 may become 5, which compares equal)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_validate_integer_matches_json_schema(value):
    is_integer = (isinstance(value, int) and not isinstance(value, bool)) or \
        (isinstance(value, float) and value.is_integer())
    try:
        validate(value, {"type": "integer"})
        accepted = True
    except ValueError:
        accepted = False
    assert accepted == is_integer


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_validate_number_matches_json_schema(value):
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    try:
        validate(value, {"type": "number"})
        accepted = True
    except ValueError:
        accepted = False
    assert accepted == is_number


# ---------------------------------------------------------------------------
# to_call_result: what a tool returned -> CallToolResult
# ---------------------------------------------------------------------------

PLAIN = {"name": "t", "description": "", "inputSchema": NO_PARAMS}
WITH_OUTPUT = {**PLAIN, "outputSchema": {"type": "object"}}


def text(value, is_error=False):
    return {"content": [{"type": "text", "text": value}], "isError": is_error}


BLOCKS = [
    {"type": "text", "text": "hi"},
    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
    {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
    {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "b"}},
]

CONVERSIONS = [
    ("str", "hello", text("hello")),
    ("empty str", "", text("")),
    ("multi-line str", "a\nb", text("a\nb")),
    ("None", None, {"content": [], "isError": False}),
    ("int", 5, text("5")),
    ("negative float", -1.5, text("-1.5")),
    ("bool", True, text("true")),
    # A list of content blocks goes in a ToolResult; a bare list is a JSON value like any other.
    ("content blocks", ToolResult(BLOCKS), {"content": BLOCKS, "isError": False}),
    ("one block", ToolResult([BLOCKS[0]]), {"content": [BLOCKS[0]], "isError": False}),
    ("ToolResult text", ToolResult("x"), text("x")),
    ("ToolResult blocks", ToolResult(BLOCKS[:2]), {"content": BLOCKS[:2], "isError": False}),
    ("ToolResult error", ToolResult("fix the date", is_error=True), text("fix the date", True)),
    ("ToolResult structured", ToolResult("2 rows", structured={"rows": 2}),
     {"content": [{"type": "text", "text": "2 rows"}], "isError": False,
      "structuredContent": {"rows": 2}}),
]


@pytest.mark.parametrize("label,value,expected", CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
def test_to_call_result(label, value, expected):
    assert to_call_result(value, PLAIN) == expected


@pytest.mark.parametrize("value", [[], [1, 2], ["a", "b"], [{"no": "type"}], [BLOCKS[0], "x"],
                                   (1, 2)])
def test_other_lists_become_one_text_block_of_json(value):
    result = to_call_result(value, PLAIN)
    assert set(result) == {"content", "isError"} and result["isError"] is False
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text"
    assert json.loads(result["content"][0]["text"]) == list(value)


@pytest.mark.parametrize("definition", [PLAIN, WITH_OUTPUT])
def test_dict_becomes_structured_content_and_the_same_json_as_text(definition):
    value = {"name": "Zoë", "n": [1, 2], "nested": {"ok": True, "none": None}}
    result = to_call_result(value, definition)
    assert set(result) == {"content", "isError", "structuredContent"}
    assert result["isError"] is False and result["structuredContent"] == value
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text"
    assert json.loads(result["content"][0]["text"]) == value
    assert "Zoë" in result["content"][0]["text"]  # readable text, not \\u escapes


def test_output_schema_requires_structured_content_on_success():
    # Spec (server/tools, "Output Schema"): servers MUST provide structured results conforming to
    # it.
    for value in ("text", 5, None, BLOCKS[:1]):
        with pytest.raises(TypeError):
            to_call_result(value, WITH_OUTPUT)
    # ... but an error result needs none.
    assert (to_call_result(ToolResult("it broke", is_error=True), WITH_OUTPUT)
            == text("it broke", True))
    assert (to_call_result(ToolResult("ok", structured={"a": 1}), WITH_OUTPUT)["structuredContent"]
            == {"a": 1})


@pytest.mark.parametrize("value", [math.nan, math.inf, {"x": math.nan}, [1, math.inf]])
def test_nan_never_reaches_the_wire(value):
    with pytest.raises(ValueError):
        to_call_result(value, PLAIN)


def test_a_value_json_cannot_carry_is_an_error_not_garbage():
    with pytest.raises((TypeError, ValueError)):
        to_call_result(object(), PLAIN)


def test_results_are_json():
    for _, value, _ in CONVERSIONS:
        json.dumps(to_call_result(value, PLAIN), allow_nan=False)
