// The SDK's helpers that carry logic, run under Node (`node --test`) after
// esbuild bundles this file with `test/contract-stub.ts` standing in for
// the contract's imports. host/tests/all/authoring_languages.rs runs it.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  args,
  cutMessage,
  encodePath,
  encodeSegment,
  ErrorFormat,
  graphql,
  Http,
  isToolError,
  MAX_MESSAGE,
  pages,
  statusError,
  tools,
} from "../src/index";
import { answers, lines, sent } from "./contract-stub";

const bytes = (text: string) => new TextEncoder().encode(text);

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  assert.fail("nothing was thrown");
}

test("every error format reads its vendor's shape and falls back to the text", () => {
  const cases: Array<[keyof typeof ErrorFormat, string, string]> = [
    ["message", '{"message":"Bad credentials"}', "Bad credentials"],
    ["error", '{"error":"Permint denied"}', "Permint denied"],
    ["error", '{"error":{"message":"no such inbox"}}', "no such inbox"],
    [
      "google",
      '{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}',
      "PERMISSION_DENIED: The caller does not have permission",
    ],
    [
      "google",
      '{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT","details":[{"errors":[{"errorCode":{"queryError":"BAD_FIELD_NAME"},"message":"Unrecognized field"}]}]}}',
      "INVALID_ARGUMENT: queryError.BAD_FIELD_NAME: Unrecognized field",
    ],
    [
      "cloudflare",
      '{"success":false,"errors":[{"code":10000,"message":"Authentication error"}],"messages":[],"result":null}',
      "10000: Authentication error",
    ],
    ["graphql", '{"errors":[{"message":"Field \'x\' doesn\'t exist"},{"message":"second"}]}', "Field 'x' doesn't exist; second"],
    ["message", "  plain text  ", "plain text"],
    ["google", '{"message":"not Google\'s shape"}', '{"message":"not Google\'s shape"}'],
    ["graphql", '{"errors":[]}', '{"errors":[]}'],
  ];
  for (const [format, body, want] of cases) {
    assert.deepEqual(statusError(400, bytes(body), ErrorFormat[format]), {
      tag: "upstream",
      val: { status: 400, message: want },
    }, `${format} ${body}`);
  }
  assert.equal(statusError(204, bytes("")), undefined);
  assert.deepEqual(statusError(404, bytes('{"message":"gone"}')), { tag: "not-found", val: "gone" });
});

test("messages are cut on a character boundary, and Retry-After survives the cut", () => {
  const cut = cutMessage("é".repeat(400));
  const size = bytes(cut).length;
  assert.ok(size <= MAX_MESSAGE && size >= MAX_MESSAGE - 1, `${size}`);
  const e = statusError(429, bytes('{"message":"slow down"}'), ErrorFormat.message, "30");
  assert.deepEqual(e, { tag: "upstream", val: { status: 429, message: "slow down (retry after 30)" } });
  const long = statusError(503, bytes("x".repeat(2000)), ErrorFormat.message, "120");
  assert.ok(long?.tag === "upstream" && long.val.message.endsWith(" (retry after 120)"));
  assert.ok(long?.tag === "upstream" && bytes(long.val.message).length <= MAX_MESSAGE);
});

test("bounds, identifiers, text, dates and json arguments", () => {
  assert.equal(args.bounded("limit", undefined, 20, 1, 100), 20);
  assert.equal(args.bounded("limit", 100, 20, 1, 100), 100);
  assert.deepEqual(thrown(() => args.bounded("limit", 0, 20, 1, 100)), {
    tag: "invalid-input",
    val: "limit must be between 1 and 100, not 0",
  });
  assert.ok(isToolError(thrown(() => args.bounded("scale", Number.NaN, 1, 0.01, 4))));
  assert.equal(args.bounded("n", 5n, 1n, 1n, 10n), 5n);
  assert.equal(args.identifier("the item id", "abc-DEF_9"), "abc-DEF_9");
  assert.deepEqual(thrown(() => args.identifier("the item id", "")), { tag: "invalid-input", val: "the item id is empty" });
  for (const bad of ["a/b", "..", "a b", "ä", "a".repeat(65)]) {
    assert.ok(isToolError(thrown(() => args.identifier("id", bad))), bad);
  }
  assert.equal(args.identifier("ref", "v1.2", 64, "."), "v1.2");
  assert.ok(isToolError(thrown(() => args.text("the note", " \n", 10))));
  assert.ok(isToolError(thrown(() => args.text("the note", "ééééé", 9))));
  assert.deepEqual(args.date("d", "2024-02-29"), [2024, 2, 29]);
  for (const bad of ["2023-02-29", "2026-13-01", "2026-1-01", "20260101", "0000-01-01", "2026-04-31"]) {
    assert.ok(isToolError(thrown(() => args.date("d", bad))), bad);
  }
  args.dateRange("2026-01-01", "2026-01-31");
  assert.ok(isToolError(thrown(() => args.dateRange("2026-02-01", "2026-01-31"))));
  assert.deepEqual(args.json("filter", '{"property":"Status"}', "object"), { property: "Status" });
  assert.deepEqual(thrown(() => args.json("filter", "[1]", "object")), {
    tag: "invalid-input",
    val: "filter is not the JSON this tool takes: expected an object",
  });
});

test("paths are encoded segment by segment", () => {
  assert.equal(encodeSegment("a/../b?c"), "a%2F..%2Fb%3Fc");
  assert.equal(encodeSegment("é ~"), "%C3%A9%20~");
  assert.equal(encodePath("/docs/read me.md"), "docs/read%20me.md");
  assert.ok(isToolError(thrown(() => encodePath("a/../b"))));
  assert.ok(isToolError(thrown(() => encodePath("a//b"))));
});

test("Http sends JSON, maps statuses with Retry-After, names the request of a bad answer", () => {
  sent.length = 0;
  answers.push({ status: 201, body: '{"id":"n-1"}' });
  const http = Http.connect().withHeader("accept", "application/json");
  assert.deepEqual(http.post("/items/42/notes", { body: "hi" }, { dry: true, skip: undefined }), { id: "n-1" });
  assert.equal(sent[0].method, "post");
  assert.deepEqual(sent[0].query, [["dry", "true"]]);
  assert.deepEqual(sent[0].headers, [["accept", "application/json"], ["content-type", "application/json"]]);
  assert.equal(new TextDecoder().decode(sent[0].body), '{"body":"hi"}');

  answers.push({ status: 429, headers: [["Retry-After", "7"]], body: '{"message":"slow down"}' });
  assert.deepEqual(thrown(() => http.get("/items")), {
    tag: "upstream",
    val: { status: 429, message: "slow down (retry after 7)" },
  });
  answers.push({ status: 404, body: '{"error":{"message":"no such inbox"}}' });
  assert.deepEqual(thrown(() => http.withErrors(ErrorFormat.error).get("/inboxes/1")), {
    tag: "not-found",
    val: "no such inbox",
  });
  answers.push({ status: 200, body: "<html>" });
  const bad = thrown(() => http.get("/items/1")) as { tag: string; val: string };
  assert.equal(bad.tag, "bad-response");
  assert.match(bad.val, /^GET \/items\/1: response is not the expected JSON/);
});

test("the handle's own errors become the capability tool error, bare or wrapped", () => {
  const http = Http.connect();
  answers.push({ throws: { tag: "denied", val: "no route" } });
  assert.deepEqual(thrown(() => http.get("/x")), {
    tag: "capability",
    val: { capability: "http", kind: "denied", message: "no route", amount: undefined },
  });
  answers.push({ throws: { payload: { tag: "too-large", val: 1024n } } });
  assert.deepEqual(thrown(() => http.get("/x")), {
    tag: "capability",
    val: { capability: "http", kind: "too-large", message: "the response exceeded 1024 bytes", amount: 1024n },
  });
  answers.push({ throws: { tag: "timeout" } });
  assert.deepEqual(thrown(() => http.get("/x")), {
    tag: "capability",
    val: { capability: "http", kind: "timeout", message: "the request timed out", amount: undefined },
  });
  const bug = new TypeError("a bug in the connector");
  answers.push({ throws: bug });
  assert.equal(thrown(() => http.get("/x")), bug);
});

test("GraphQL errors under a 200 are upstream errors", () => {
  assert.deepEqual(graphql.data(200, bytes('{"data":{"name":"Acme"}}')), { name: "Acme" });
  assert.deepEqual(thrown(() => graphql.data(200, bytes('{"data":null,"errors":[{"message":"Throttled"}]}'))), {
    tag: "upstream",
    val: { status: 200, message: "Throttled" },
  });
  assert.deepEqual(thrown(() => graphql.data(401, bytes('{"errors":[{"message":"Invalid API key"}]}'))), {
    tag: "upstream",
    val: { status: 401, message: "Invalid API key" },
  });
  assert.equal((thrown(() => graphql.data(200, bytes("{}"))) as { tag: string }).tag, "bad-response");
  assert.equal(
    new TextDecoder().decode(graphql.request("query($id: ID!) { x(id: $id) }", { id: "1" })),
    '{"query":"query($id: ID!) { x(id: $id) }","variables":{"id":"1"}}',
  );
});

test("pages stop at enough items, the last page or the page budget", () => {
  const source = (n: number) => (c: number | undefined): [number[], number | undefined] => {
    const at = c ?? 0;
    return [[at, at, at], at + 1 < n ? at + 1 : undefined];
  };
  assert.deepEqual(pages.collect(100, 10, source(2)), [[0, 0, 0, 1, 1, 1], undefined]);
  assert.deepEqual(pages.collect(4, 10, source(5)), [[0, 0, 0, 1], 2]);
  assert.equal(pages.collect(100, 2, source(5))[1], 2);
});

test("tools turns an exception that is not a tool error into bad-response naming it", () => {
  const readTools = tools({
    getItem(id: string): string {
      if (id === "") {
        throw args.identifier("the item id", id);
      }
      const answer: { item?: { title: string } } = {};
      return (answer.item as { title: string }).title;
    },
    greet(name: string): string {
      return `hello ${name}`;
    },
  });
  assert.equal(readTools.greet("ada"), "hello ada");
  assert.deepEqual(thrown(() => readTools.getItem("")), { tag: "invalid-input", val: "the item id is empty" });
  lines.length = 0;
  const e = thrown(() => readTools.getItem("42")) as { tag: string; val: string };
  assert.equal(e.tag, "bad-response");
  assert.match(e.val, /^the connector failed in getItem: TypeError: /);
  assert.equal(lines.length, 1);
  assert.equal(lines[0][0], "error");
  assert.match(lines[0][1], /^getItem failed: TypeError: /);
});
