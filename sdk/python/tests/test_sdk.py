"""Unit tests of scout_sdk's pure logic, with the machine's python3.

They import the bindings componentize-py generates for the contract's
`imports` world (every capability), whose host functions raise
NotImplementedError until a component runs them; the tests put fakes in
their place. host/tests/all/authoring_languages.rs runs them (so CI does):
it writes the bindings with the pinned componentize-py and runs

    PYTHONPATH=BINDINGS:sdk/python python3 -m unittest discover -s sdk/python/tests

By hand: `componentize-py --wit-path wit --world scout:connector/imports
bindings BINDINGS` in the repository's root first.
"""

import json
import unittest

from componentize_py_types import Err
from wit_world.imports import http, log, meter, types

import scout_sdk
from scout_sdk import args, billing, errors, graphql, pages
from scout_sdk import meter as sdk_meter
from scout_sdk.http_client import Http


def tool_error(raised):
    """The `ToolError_*` a raised tool error carries."""
    assert isinstance(raised, Err), raised
    return raised.value


class FakeClient:
    """An `http.Client` answering from a list, remembering the requests."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.sent = []

    def send(self, request):
        self.sent.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Err):
            raise answer
        return answer


def response(status, body=b"", headers=()):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return http.Response(status=status, headers=list(headers), body=body)


class Errors(unittest.TestCase):
    def test_every_format_reads_its_vendors_shape_and_falls_back_to_the_text(self):
        F = errors.ErrorFormat
        cases = [
            (F.MESSAGE, '{"message":"Bad credentials"}', "Bad credentials"),
            (F.ERROR, '{"error":"Permint denied"}', "Permint denied"),
            (F.ERROR, '{"error":{"message":"no such inbox"}}', "no such inbox"),
            (
                F.GOOGLE,
                '{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}',
                "PERMISSION_DENIED: The caller does not have permission",
            ),
            (
                F.GOOGLE,
                '{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT",'
                '"details":[{"errors":[{"errorCode":{"queryError":"BAD_FIELD_NAME"},"message":"Unrecognized field"}]}]}}',
                "INVALID_ARGUMENT: queryError.BAD_FIELD_NAME: Unrecognized field",
            ),
            (
                F.CLOUDFLARE,
                '{"success":false,"errors":[{"code":10000,"message":"Authentication error"}],"messages":[],"result":null}',
                "10000: Authentication error",
            ),
            (F.GRAPHQL, '{"errors":[{"message":"Field \'x\' doesn\'t exist"},{"message":"second"}]}', "Field 'x' doesn't exist; second"),
            (F.MESSAGE, "  plain text  ", "plain text"),
            (F.GOOGLE, '{"message":"not Google\'s shape"}', '{"message":"not Google\'s shape"}'),
            (F.GRAPHQL, '{"errors":[]}', '{"errors":[]}'),
        ]
        for decoder, body, want in cases:
            e = tool_error(errors.status_error(400, body.encode(), decoder))
            self.assertIsInstance(e, types.ToolError_Upstream, body)
            self.assertEqual((e.value.status, e.value.message), (400, want), body)
        self.assertIsNone(errors.status_error(204, b""))
        e = tool_error(errors.status_error(404, b'{"message":"gone"}'))
        self.assertEqual(e, types.ToolError_NotFound("gone"))

    def test_messages_are_cut_on_a_character_boundary(self):
        cut = errors.cut_message("é" * 400)
        self.assertTrue(errors.MAX_MESSAGE - 1 <= len(cut.encode()) <= errors.MAX_MESSAGE)
        self.assertTrue(("é" * 400).startswith(cut))
        body = json.dumps({"message": "x" * 2000}).encode()
        self.assertEqual(len(errors.error_message(errors.ErrorFormat.MESSAGE, body)), errors.MAX_MESSAGE)

    def test_retry_after_is_carried_in_the_upstream_message_and_survives_the_cut(self):
        e = tool_error(errors.status_error(429, b'{"message":"slow down"}', retry_after="30"))
        self.assertEqual(e.value, types.UpstreamError(status=429, message="slow down (retry after 30)"))
        long = json.dumps({"message": "y" * 1000}).encode()
        e = tool_error(errors.status_error(503, long, retry_after="120"))
        self.assertTrue(e.value.message.endswith(" (retry after 120)"))
        self.assertLessEqual(len(e.value.message.encode()), errors.MAX_MESSAGE)

    def test_the_cases_are_the_wit_variant(self):
        self.assertEqual(tool_error(errors.invalid_input("x")), types.ToolError_InvalidInput("x"))
        self.assertEqual(tool_error(errors.refused("x")), types.ToolError_Refused("x"))
        self.assertEqual(tool_error(errors.bad_response("x")), types.ToolError_BadResponse("x"))
        self.assertEqual(errors.describe(errors.upstream(500, "boom")), "upstream answered 500: boom")
        self.assertTrue(errors.is_tool_error(errors.not_found("x")))
        self.assertFalse(errors.is_tool_error(Err("x")))


class Arguments(unittest.TestCase):
    def test_bounds(self):
        self.assertEqual(args.bounded("limit", None, 20, 1, 100), 20)
        self.assertEqual(args.bounded("limit", 100, 20, 1, 100), 100)
        with self.assertRaises(Err) as raised:
            args.bounded("limit", 0, 20, 1, 100)
        self.assertEqual(
            tool_error(raised.exception), types.ToolError_InvalidInput("limit must be between 1 and 100, not 0")
        )
        for bad in (float("nan"), float("inf"), True, "5"):
            with self.assertRaises(Err):
                args.bounded("scale", bad, 1.0, 0.01, 4.0)

    def test_identifiers(self):
        for good in ("42", "abc-DEF_9", "a" * 64):
            self.assertEqual(args.identifier("the item id", good), good)
        for bad in ("", "a/b", "..", "a b", "a?b", "a%2fb", "ä", "a" * 65):
            with self.assertRaises(Err, msg=bad):
                args.identifier("the item id", bad)
        with self.assertRaises(Err) as raised:
            args.identifier("the item id", "")
        self.assertEqual(tool_error(raised.exception), types.ToolError_InvalidInput("the item id is empty"))
        self.assertEqual(args.identifier("a branch", "v1.2", also="."), "v1.2")

    def test_dates(self):
        self.assertEqual(args.date("d", "2024-02-29"), (2024, 2, 29))
        for bad in ("2023-02-29", "2026-13-01", "2026-1-01", "20260101", "2026-12-0x", "0000-01-01", "2026-04-31", "２０２６-01-01"):
            with self.assertRaises(Err, msg=bad):
                args.date("d", bad)
        args.date_range("2026-01-01", "2026-01-31")
        with self.assertRaises(Err):
            args.date_range("2026-02-01", "2026-01-31")

    def test_json_arguments_read_as_their_value(self):
        self.assertEqual(args.json("filter", '{"property":"Status"}', dict), {"property": "Status"})
        with self.assertRaises(Err) as raised:
            args.json("filter", "[1]", dict)
        self.assertTrue(tool_error(raised.exception).value.startswith("filter is not the JSON this tool takes"))
        with self.assertRaises(Err):
            args.json("filter", "{")

    def test_texts(self):
        self.assertEqual(args.text("the note", "ok", 10), "ok")
        for bad in (" \n", "x" * 11):
            with self.assertRaises(Err):
                args.text("the note", bad, 10)


class Paths(unittest.TestCase):
    def test_segments_and_paths_are_encoded(self):
        self.assertEqual(scout_sdk.encode_segment("42"), "42")
        self.assertEqual(scout_sdk.encode_segment("a/../b?c"), "a%2F..%2Fb%3Fc")
        self.assertEqual(scout_sdk.encode_segment("é x"), "%C3%A9%20x")
        self.assertEqual(scout_sdk.encode_path("/docs/read me.md/"), "docs/read%20me.md")
        for bad in ("a//b", "a/../b", "./a"):
            with self.assertRaises(Err):
                scout_sdk.encode_path(bad)


class HttpHelpers(unittest.TestCase):
    def test_a_json_post_sends_its_body_and_parses_the_answer(self):
        client = FakeClient(response(201, {"id": "n-1"}))
        answer = Http(client).with_header("accept", "application/json").post("/items/42/notes", {"body": "é"})
        self.assertEqual(answer, {"id": "n-1"})
        sent = client.sent[0]
        self.assertEqual((sent.method, sent.path), (http.Method.POST, "/items/42/notes"))
        self.assertEqual(json.loads(sent.body), {"body": "é"})
        self.assertEqual(sent.headers, [("accept", "application/json"), ("content-type", "application/json")])

    def test_statuses_become_tool_errors(self):
        client = FakeClient(
            response(404, {"message": "no such item"}),
            response(429, {"message": "slow down"}, [("Retry-After", "7")]),
            response(200, b"<html>"),
        )
        h = Http(client)
        with self.assertRaises(Err) as raised:
            h.get("/items/7")
        self.assertEqual(tool_error(raised.exception), types.ToolError_NotFound("no such item"))
        with self.assertRaises(Err) as raised:
            h.get("/items/7", [("page", "2")])
        self.assertEqual(tool_error(raised.exception).value.message, "slow down (retry after 7)")
        self.assertEqual(client.sent[1].query, [("page", "2")])
        with self.assertRaises(Err) as raised:
            h.get("/items/7")
        e = tool_error(raised.exception)
        self.assertIsInstance(e, types.ToolError_BadResponse)
        self.assertTrue(e.value.startswith("GET /items/7: response is not the expected JSON"))

    def test_host_refusals_are_capability_errors(self):
        client = FakeClient(Err(http.HttpError_Denied("route not declared: GET /x")), Err(http.HttpError_TooLarge(8)))
        h = Http(client)
        with self.assertRaises(Err) as raised:
            h.get("/x")
        e = tool_error(raised.exception).value
        self.assertEqual((e.capability, e.kind, e.message), (types.Capability.HTTP, "denied", "route not declared: GET /x"))
        with self.assertRaises(Err) as raised:
            h.get("/x")
        self.assertEqual(tool_error(raised.exception).value.amount, 8)

    def test_fields_of_an_answer_are_checked(self):
        self.assertEqual(scout_sdk.field({"id": "1"}, "id"), "1")
        self.assertEqual(scout_sdk.field({}, "tags", list, []), [])
        self.assertEqual(scout_sdk.field({"n": 1}, "n", float), 1.0)
        for obj, kind in (({}, str), ({"id": 1}, str), ({"id": True}, int), ([], str)):
            with self.assertRaises(Err):
                scout_sdk.field(obj, "id", kind)


class GraphQl(unittest.TestCase):
    def test_errors_under_a_200_are_upstream_errors(self):
        self.assertEqual(graphql.data(200, b'{"data":{"name":"Acme"}}'), {"name": "Acme"})
        with self.assertRaises(Err) as raised:
            graphql.data(200, b'{"data":null,"errors":[{"message":"Throttled"}]}')
        self.assertEqual(tool_error(raised.exception).value, types.UpstreamError(status=200, message="Throttled"))
        with self.assertRaises(Err) as raised:
            graphql.data(401, b'{"errors":[{"message":"Invalid API key"}]}')
        self.assertEqual(tool_error(raised.exception).value, types.UpstreamError(status=401, message="Invalid API key"))
        with self.assertRaises(Err) as raised:
            graphql.data(200, b"{}")
        self.assertIsInstance(tool_error(raised.exception), types.ToolError_BadResponse)
        self.assertEqual(
            graphql.request("query($id: ID!) { x(id: $id) }", {"id": "1"}),
            b'{"query":"query($id: ID!) { x(id: $id) }","variables":{"id":"1"}}',
        )

    def test_a_graphql_call_posts_its_document(self):
        client = FakeClient(response(200, {"data": {"teams": []}}))
        self.assertEqual(Http(client).graphql("/graphql", "{ teams { id } }"), {"teams": []})
        self.assertEqual(client.sent[0].method, http.Method.POST)


class Pages(unittest.TestCase):
    def test_stops_at_enough_items_the_last_page_or_the_page_budget(self):
        def pages_of(n):
            def fetch(cursor):
                at = cursor or 0
                return [at] * 3, (at + 1 if at + 1 < n else None)

            return fetch

        self.assertEqual(pages.collect(100, 10, pages_of(2)), ([0, 0, 0, 1, 1, 1], None))
        self.assertEqual(pages.collect(4, 10, pages_of(5)), ([0, 0, 0, 1], 2))
        self.assertEqual(pages.collect(100, 2, pages_of(5))[1], 2)


class FakeMeter:
    def __init__(self, left, settle_error=None):
        self.left = left
        self.settle_error = settle_error
        self.settled = []

    def reserve(self, estimate):
        if estimate > self.left:
            raise Err(meter.MeterError_RunExhausted(self.left))
        self.left -= estimate
        fake = self

        class Reservation:
            def settle(self, actual):
                fake.settled.append(actual)
                fake.left += estimate - min(actual, estimate)
                if fake.settle_error:
                    raise fake.settle_error

        return Reservation()

    def remaining(self):
        return self.left

    def unit(self):
        return "credits"


class Billing(unittest.TestCase):
    def setUp(self):
        self.saved = sdk_meter._meter
        self.logged = []
        self.saved_log = log.log
        log.log = lambda level, message: self.logged.append((level, message))

    def tearDown(self):
        sdk_meter._meter = self.saved
        log.log = self.saved_log

    def test_a_call_is_settled_on_every_path(self):
        fake = sdk_meter._meter = FakeMeter(100)
        self.assertEqual(billing.metered_charging(10, lambda: ("ok", 4)), ("ok", 4))
        self.assertEqual(billing.metered(10, lambda: ("ok", None)), "ok")

        def fails(error):
            def call():
                raise error

            return call

        with self.assertRaises(Err):
            billing.metered(10, fails(errors.upstream(422, "bad")))
        with self.assertRaises(Err):
            billing.metered(10, fails(errors.upstream(500, "boom")))
        self.assertEqual(fake.settled, [4, 10, 0, 10])
        with self.assertRaises(Err) as raised:
            billing.metered(1000, lambda: ("never", None))
        self.assertEqual(tool_error(raised.exception).value.kind, "run-exhausted")
        self.assertEqual(fake.settled, [4, 10, 0, 10], "nothing reserved, nothing settled")

    def test_a_refused_settlement_is_logged_and_charged_within_what_was_left(self):
        sdk_meter._meter = FakeMeter(5, Err(meter.MeterError_RunExhausted(0)))
        self.assertEqual(billing.metered_charging(4, lambda: ("ok", 9)), ("ok", 5))
        self.assertEqual(self.logged[0][0], log.Level.WARN)
        with self.assertRaises(Err):
            billing.expect_unit("DataForSEO", "micro-usd")
        billing.expect_unit("Firecrawl", "credits")


if __name__ == "__main__":
    unittest.main()
