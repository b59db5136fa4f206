// Notion in TypeScript: the tools of `wit/notion.wit` over Notion's REST API
// (https://developers.notion.com/reference, `Notion-Version: 2022-06-28`).
//
// The host binds the http handle to Notion's origin and adds the bearer
// token; this code never sees either. It checks every id and argument before
// any request, so a bad one sends nothing, and maps Notion's error body
// (`{"object": "error", "status", "code", "message"}`) to the contract's
// `tool-error`: 404 is `not-found`, a 400 `validation_error` is
// `invalid-input`, anything else (a 429 with its `Retry-After` among them)
// is `upstream`.

import { connect } from "scout:connector/http@0.2.0";

/** The API version every request names (https://developers.notion.com/reference/versioning). */
const NOTION_VERSION = "2022-06-28";
/** Longest upstream message carried into an error, as the Rust SDK cuts it. */
const MAX_MESSAGE = 500;
/** Notion takes at most 100 blocks in one request (https://developers.notion.com/reference/request-limits). */
const MAX_BLOCKS = 100;
const MAX_QUERY = 200;
const MAX_CURSOR = 200;

// ---------------------------------------------------------------- errors

type ToolError =
  | { tag: "invalid-input"; val: string }
  | { tag: "not-found"; val: string }
  | { tag: "refused"; val: string }
  | { tag: "upstream"; val: { status: number; message: string } }
  | {
      tag: "capability";
      val: { capability: "http"; kind: string; message: string; amount: bigint | undefined };
    }
  | { tag: "bad-response"; val: string };

// componentize-js returns a thrown plain object as the tool's `err`.
function fail(error: ToolError): never {
  throw error;
}
const invalidInput = (message: string): never => fail({ tag: "invalid-input", val: message });
const badResponse = (message: string): never => fail({ tag: "bad-response", val: message });

function cut(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > MAX_MESSAGE ? trimmed.slice(0, MAX_MESSAGE) : trimmed;
}

// ---------------------------------------------------------------- arguments

/** A Notion id (32 hex digits, with or without the UUID's dashes) in its dashed, lower-case form. */
function notionId(name: string, value: string): string {
  if (value.length === 0) {
    invalidInput(`${name} is empty; search finds pages and databases with their ids`);
  }
  const dashed = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
  const bare = /^[0-9a-fA-F]{32}$/;
  if (!dashed.test(value) && !bare.test(value)) {
    invalidInput(
      `${name} \`${value}\` is not a Notion id (32 hexadecimal digits, with or without dashes, e.g. \`b55c9c91-384d-452b-81db-d1ef79372b75\`)`,
    );
  }
  const hex = value.replace(/-/g, "").toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A number in `min..=max`, `fallback` when left out (the host holds the same range). */
function bounded(name: string, value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    invalidInput(`${name} must be between ${min} and ${max}, not ${value}`);
  }
  return value;
}

/** A pagination cursor as Notion gave it: printable ASCII, no spaces. */
function cursor(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.length === 0 || value.length > MAX_CURSOR || !/^[\x21-\x7e]+$/.test(value)) {
    invalidInput(
      `start-cursor \`${value}\` is not a cursor: pass the \`next-cursor\` a previous page returned (1 to ${MAX_CURSOR} printable characters)`,
    );
  }
  return value;
}

/** A `json` argument: the host already checked it and handed its canonical text. */
function jsonArg(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return invalidInput(`${name} is not JSON`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A JSON list of 1 to 100 Notion block objects. */
function blocks(name: string, text: string): unknown[] {
  const value = jsonArg(name, text);
  if (!Array.isArray(value)) {
    invalidInput(`${name} must be a JSON list of Notion block objects, e.g. [{"type": "paragraph", ...}]`);
  }
  const list = value as unknown[];
  if (list.length === 0 || list.length > MAX_BLOCKS) {
    invalidInput(`${name} holds ${list.length} blocks; Notion takes 1 to ${MAX_BLOCKS} in one request`);
  }
  list.forEach((block, i) => {
    if (!isObject(block) || typeof block.type !== "string") {
      invalidInput(`${name}[${i}] is not a Notion block object (an object with a \`type\`)`);
    }
  });
  return list;
}

// ---------------------------------------------------------------- http

type Method = "get" | "post" | "patch";
type Json = Record<string, unknown>;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface HttpError {
  tag: "denied" | "transport" | "timeout" | "too-large";
  val?: string | bigint;
}

/** The host's refusal or failure of a request, as the contract's `capability` error. */
function capabilityError(e: unknown): never {
  const payload = (e as { payload?: HttpError })?.payload;
  if (payload === undefined || typeof payload.tag !== "string") throw e;
  const [message, amount] =
    payload.tag === "timeout"
      ? ["the request timed out", undefined]
      : payload.tag === "too-large"
        ? [`the response exceeded ${payload.val} bytes`, BigInt(payload.val as bigint)]
        : [String(payload.val), undefined];
  return fail({ tag: "capability", val: { capability: "http", kind: payload.tag, message, amount } });
}

function header(headers: [string, string][], name: string): string | undefined {
  return headers.find(([key]) => key.toLowerCase() === name)?.[1];
}

/** A non-2xx answer, read as Notion's error object. */
function upstreamError(status: number, headers: [string, string][], body: Uint8Array, what: string): never {
  const text = decoder.decode(body);
  let code = "";
  let message = text;
  try {
    const parsed = JSON.parse(text);
    if (isObject(parsed) && typeof parsed.message === "string") {
      message = parsed.message;
      code = typeof parsed.code === "string" ? parsed.code : "";
    }
  } catch {
    // Not Notion's error object: its text is the message.
  }
  message = cut(message) || `HTTP ${status}`;
  if (status === 404) fail({ tag: "not-found", val: `${what}: ${message}` });
  if (status === 400 && code === "validation_error") invalidInput(message);
  if (status === 429) {
    const retry = header(headers, "retry-after");
    if (retry !== undefined) message = `${message} (retry after ${retry.trim()} s)`;
  }
  return fail({ tag: "upstream", val: { status, message: code ? `${code}: ${message}` : message } });
}

/** Sends one request with Notion's version header and parses the JSON answer. */
function request(method: Method, path: string, what: string, query: [string, string][] = [], body?: unknown): Json {
  const headers: [string, string][] = [["notion-version", NOTION_VERSION]];
  if (body !== undefined) headers.push(["content-type", "application/json"]);
  let response: { status: number; headers: [string, string][]; body: Uint8Array };
  try {
    response = connect().send({
      method,
      path,
      query,
      headers,
      body: body === undefined ? undefined : encoder.encode(JSON.stringify(body)),
    });
  } catch (e) {
    return capabilityError(e);
  }
  if (response.status < 200 || response.status > 299) {
    upstreamError(response.status, response.headers, response.body, what);
  }
  try {
    const parsed = JSON.parse(decoder.decode(response.body));
    if (isObject(parsed)) return parsed;
  } catch {
    // Reported below.
  }
  return badResponse(`${method.toUpperCase()} ${path}: the answer is not a JSON object`);
}

// ---------------------------------------------------------------- reading Notion's objects

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function field(value: unknown, key: string): unknown {
  return isObject(value) ? value[key] : undefined;
}

/** Rich text as plain text. */
function plain(richText: unknown): string {
  return list(richText)
    .map((part) => str(field(part, "plain_text")) || str(field(field(part, "text"), "content")))
    .join("");
}

function dateText(date: unknown): string {
  if (!isObject(date)) return "";
  const start = str(date.start);
  const end = str(date.end);
  return end ? `${start} -> ${end}` : start;
}

function userText(user: unknown): string {
  return str(field(user, "name")) || str(field(user, "id"));
}

/** One property value of a page as plain text. */
function propertyText(value: Json): string {
  const kind = str(value.type);
  const inner = value[kind];
  switch (kind) {
    case "title":
    case "rich_text":
      return plain(inner);
    case "number":
      return typeof inner === "number" ? String(inner) : "";
    case "select":
    case "status":
      return str(field(inner, "name"));
    case "multi_select":
      return list(inner).map((o) => str(field(o, "name"))).join(", ");
    case "date":
      return dateText(inner);
    case "checkbox":
      return inner === true ? "true" : "false";
    case "url":
    case "email":
    case "phone_number":
    case "created_time":
    case "last_edited_time":
      return str(inner);
    case "people":
      return list(inner).map(userText).join(", ");
    case "created_by":
    case "last_edited_by":
      return userText(inner);
    case "relation":
      return list(inner).map((r) => str(field(r, "id"))).join(", ");
    case "files":
      return list(inner).map((f) => str(field(f, "name"))).join(", ");
    case "unique_id": {
      const prefix = str(field(inner, "prefix"));
      const number = field(inner, "number");
      return typeof number === "number" ? (prefix ? `${prefix}-${number}` : String(number)) : "";
    }
    case "formula": {
      const type = str(field(inner, "type"));
      const result = field(inner, type);
      if (type === "date") return dateText(result);
      return result === null || result === undefined ? "" : String(result);
    }
    case "rollup": {
      const type = str(field(inner, "type"));
      const result = field(inner, type);
      if (type === "date") return dateText(result);
      if (type === "array") return `${list(result).length} items`;
      return result === null || result === undefined ? "" : String(result);
    }
    default:
      return "";
  }
}

interface Parent {
  kind: string;
  id: string | undefined;
}

function parentOf(value: unknown): Parent {
  const type = str(field(value, "type"));
  if (type === "workspace") return { kind: "workspace", id: undefined };
  const id = str(field(value, type));
  return { kind: type.replace(/_id$/, ""), id: id || undefined };
}

function requireId(value: Json, what: string): string {
  const id = str(value.id);
  if (!id) badResponse(`${what}: an object without an id`);
  return id;
}

function page(value: Json, what: string) {
  const properties = isObject(value.properties) ? value.properties : {};
  const props = Object.entries(properties).map(([name, prop]) => ({
    name,
    kind: str(field(prop, "type")),
    text: isObject(prop) ? propertyText(prop) : "",
  }));
  return {
    id: requireId(value, what),
    url: str(value.url),
    title: props.find((p) => p.kind === "title")?.text ?? "",
    parent: parentOf(value.parent),
    createdTime: str(value.created_time),
    lastEditedTime: str(value.last_edited_time),
    archived: value.archived === true,
    properties: props,
  };
}

function found(value: Json, what: string) {
  const object = str(value.object);
  const title = object === "database" ? plain(value.title) : page(value, what).title;
  return {
    object,
    id: requireId(value, what),
    title,
    url: str(value.url),
    parent: parentOf(value.parent),
    lastEditedTime: str(value.last_edited_time),
  };
}

/** The plain text of a block of any type that carries text. */
function block(value: Json, what: string) {
  const kind = str(value.type);
  const inner = value[kind];
  let text = "";
  if (kind === "child_page" || kind === "child_database") text = str(field(inner, "title"));
  else if (isObject(inner) && "rich_text" in inner) text = plain(inner.rich_text);
  const checked = kind === "to_do" ? field(inner, "checked") === true : undefined;
  return { id: requireId(value, what), kind, hasChildren: value.has_children === true, text, checked };
}

/** A Notion list object's results, read by `each`, with its cursor. */
function paged<T>(answer: Json, what: string, each: (item: Json, what: string) => T) {
  if (!Array.isArray(answer.results)) badResponse(`${what}: the answer has no \`results\` list`);
  return {
    results: (answer.results as unknown[]).map((item) => {
      if (!isObject(item)) return badResponse(`${what}: a result that is not an object`);
      return each(item, what);
    }),
    nextCursor: str(answer.next_cursor) || undefined,
    hasMore: answer.has_more === true,
  };
}

// ---------------------------------------------------------------- tools

export const readTools = {
  search(
    query: string | undefined,
    object: "page" | "database" | undefined,
    sort: "ascending" | "descending" | undefined,
    startCursor: string | undefined,
    pageSize: number | undefined,
  ) {
    if (query !== undefined && query.length > MAX_QUERY) {
      invalidInput(`query is ${query.length} characters long; at most ${MAX_QUERY}`);
    }
    const body: Json = { page_size: bounded("page-size", pageSize, 20, 1, 100) };
    if (query !== undefined && query.trim() !== "") body.query = query;
    if (object !== undefined) body.filter = { property: "object", value: object };
    if (sort !== undefined) body.sort = { direction: sort, timestamp: "last_edited_time" };
    const start = cursor(startCursor);
    if (start !== undefined) body.start_cursor = start;
    const answer = request("post", "/v1/search", "search", [], body);
    return paged(answer, "search", found);
  },

  getPage(pageId: string) {
    const id = notionId("page-id", pageId);
    return page(request("get", `/v1/pages/${id}`, `page ${id}`), `page ${id}`);
  },

  queryDatabase(
    databaseId: string,
    filter: string | undefined,
    sorts: string | undefined,
    startCursor: string | undefined,
    pageSize: number | undefined,
  ) {
    const id = notionId("database-id", databaseId);
    const body: Json = { page_size: bounded("page-size", pageSize, 20, 1, 100) };
    if (filter !== undefined) {
      const value = jsonArg("filter", filter);
      if (!isObject(value)) {
        invalidInput('filter must be a Notion filter object, e.g. {"property": "Status", "status": {"equals": "Done"}}');
      }
      body.filter = value;
    }
    if (sorts !== undefined) {
      const value = jsonArg("sorts", sorts);
      if (!Array.isArray(value) || !value.every(isObject)) {
        invalidInput('sorts must be a list of Notion sort objects, e.g. [{"property": "Due", "direction": "ascending"}]');
      }
      body.sorts = value;
    }
    const start = cursor(startCursor);
    if (start !== undefined) body.start_cursor = start;
    const what = `database ${id}`;
    return paged(request("post", `/v1/databases/${id}/query`, what, [], body), what, page);
  },

  listBlockChildren(blockId: string, startCursor: string | undefined, pageSize: number | undefined) {
    const id = notionId("block-id", blockId);
    const query: [string, string][] = [["page_size", String(bounded("page-size", pageSize, 50, 1, 100))]];
    const start = cursor(startCursor);
    if (start !== undefined) query.push(["start_cursor", start]);
    const what = `block ${id}`;
    return paged(request("get", `/v1/blocks/${id}/children`, what, query), what, block);
  },
};

export const writeTools = {
  createPage(parentKind: "database" | "page", parentId: string, properties: string, children: string | undefined) {
    const id = notionId("parent-id", parentId);
    const props = jsonArg("properties", properties);
    if (!isObject(props) || Object.keys(props).length === 0) {
      invalidInput('properties must be a JSON object of property values by name, e.g. {"title": {"title": [{"text": {"content": "Notes"}}]}}');
    }
    const body: Json = {
      parent: parentKind === "database" ? { database_id: id } : { page_id: id },
      properties: props,
    };
    if (children !== undefined) body.children = blocks("children", children);
    return page(request("post", "/v1/pages", `${parentKind} ${id}`, [], body), "the new page");
  },

  appendBlocks(blockId: string, children: string, after: string | undefined) {
    const id = notionId("block-id", blockId);
    const body: Json = { children: blocks("children", children) };
    if (after !== undefined) body.after = notionId("after", after);
    const what = `block ${id}`;
    return paged(request("patch", `/v1/blocks/${id}/children`, what, [], body), what, block);
  },
};
