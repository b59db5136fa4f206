// Notion in TypeScript: the tools of `wit/notion.wit` over Notion's REST API
// (https://developers.notion.com/reference, `Notion-Version: 2022-06-28`),
// written with the TypeScript SDK (`scout-sdk`, sdk/typescript/).
//
// The host binds the http handle to Notion's origin and adds the bearer
// token; this code never sees either. It checks every id and argument before
// any request, so a bad one sends nothing, and maps Notion's error body
// (`{"object": "error", "status", "code", "message"}`) to the contract's
// `tool-error`: 404 is `not-found`, a 400 `validation_error` is
// `invalid-input` (the agent's values did not fit), anything else is
// `upstream` with Notion's code, a 429 carrying its `Retry-After`.

import {
  args,
  badResponse,
  type Decoder,
  header,
  Http,
  invalidInput,
  notFound,
  parseJson,
  statusError,
} from "scout-sdk";

/** The API version every request names (https://developers.notion.com/reference/versioning). */
const NOTION_VERSION = "2022-06-28";
/** Notion takes at most 100 blocks in one request (https://developers.notion.com/reference/request-limits). */
const MAX_BLOCKS = 100;
const MAX_QUERY = 200;
const MAX_CURSOR = 200;

type Json = Record<string, unknown>;

// ---------------------------------------------------------------- arguments

/** A Notion id (32 hex digits, with or without the UUID's dashes) in its dashed, lower-case form. */
function notionId(name: string, value: string): string {
  if (value.length === 0) {
    throw invalidInput(`${name} is empty; search finds pages and databases with their ids`);
  }
  const dashed = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
  const bare = /^[0-9a-fA-F]{32}$/;
  if (!dashed.test(value) && !bare.test(value)) {
    throw invalidInput(
      `${name} \`${value}\` is not a Notion id (32 hexadecimal digits, with or without dashes, e.g. \`b55c9c91-384d-452b-81db-d1ef79372b75\`)`,
    );
  }
  const hex = value.replace(/-/g, "").toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A pagination cursor as Notion gave it: printable ASCII, no spaces. */
function cursor(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.length === 0 || value.length > MAX_CURSOR || !/^[\x21-\x7e]+$/.test(value)) {
    throw invalidInput(
      `start-cursor \`${value}\` is not a cursor: pass the \`next-cursor\` a previous page returned (1 to ${MAX_CURSOR} printable characters)`,
    );
  }
  return value;
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A JSON list of 1 to 100 Notion block objects. */
function blocks(name: string, text: string): unknown[] {
  const value = args.json(name, text);
  if (!Array.isArray(value)) {
    throw invalidInput(`${name} must be a JSON list of Notion block objects, e.g. [{"type": "paragraph", ...}]`);
  }
  if (value.length === 0 || value.length > MAX_BLOCKS) {
    throw invalidInput(`${name} holds ${value.length} blocks; Notion takes 1 to ${MAX_BLOCKS} in one request`);
  }
  value.forEach((block, i) => {
    if (!isObject(block) || typeof block.type !== "string") {
      throw invalidInput(`${name}[${i}] is not a Notion block object (an object with a \`type\`)`);
    }
  });
  return value;
}

// ---------------------------------------------------------------- http

/** Notion's error object: its `code` and `message`, if the body is one. */
function notionError(body: Uint8Array): { code: string; message: string } | undefined {
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(body));
    if (isObject(parsed) && typeof parsed.message === "string") {
      return { code: typeof parsed.code === "string" ? parsed.code : "", message: parsed.message };
    }
  } catch {
    // Not Notion's error object: the SDK falls back to the body's text.
  }
  return undefined;
}

/** Notion's error body as one line, `code: message`, for an `upstream` error. */
const codeAndMessage: Decoder = (body) => {
  const error = notionError(body);
  return error && (error.code ? `${error.code}: ${error.message}` : error.message);
};

/**
 * Sends one request with Notion's version header and parses the JSON
 * answer; a non-2xx answer is thrown as the tool error it maps to, `what`
 * naming the object a 404 did not find.
 */
function request(method: "get" | "post" | "patch", path: string, what: string, options: { query?: Array<[string, string]>; body?: unknown } = {}): Json {
  const body = options.body === undefined ? undefined : new TextEncoder().encode(JSON.stringify(options.body));
  const response = Http.connect()
    .withHeader("notion-version", NOTION_VERSION)
    .send(method, path, { query: options.query, body });
  if (response.status < 200 || response.status > 299) {
    const error = notionError(response.body);
    if (response.status === 404) throw notFound(`${what}: ${error?.message ?? "not found"}`);
    if (response.status === 400 && error?.code === "validation_error") throw invalidInput(error.message);
    throw statusError(response.status, response.body, codeAndMessage, header(response, "retry-after"));
  }
  const answer = parseJson(response.body);
  if (!isObject(answer)) throw badResponse(`${method.toUpperCase()} ${path}: the answer is not a JSON object`);
  return answer;
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
  if (!id) throw badResponse(`${what}: an object without an id`);
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
  if (!Array.isArray(answer.results)) throw badResponse(`${what}: the answer has no \`results\` list`);
  return {
    results: (answer.results as unknown[]).map((item) => {
      if (!isObject(item)) throw badResponse(`${what}: a result that is not an object`);
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
      throw invalidInput(`query is ${query.length} characters long; at most ${MAX_QUERY}`);
    }
    const body: Json = { page_size: args.bounded("page-size", pageSize, 20, 1, 100) };
    if (query !== undefined && query.trim() !== "") body.query = query;
    if (object !== undefined) body.filter = { property: "object", value: object };
    if (sort !== undefined) body.sort = { direction: sort, timestamp: "last_edited_time" };
    const start = cursor(startCursor);
    if (start !== undefined) body.start_cursor = start;
    return paged(request("post", "/v1/search", "search", { body }), "search", found);
  },

  getPage(pageId: string) {
    const id = notionId("page-id", pageId);
    const what = `page ${id}`;
    return page(request("get", `/v1/pages/${id}`, what), what);
  },

  queryDatabase(
    databaseId: string,
    filter: string | undefined,
    sorts: string | undefined,
    startCursor: string | undefined,
    pageSize: number | undefined,
  ) {
    const id = notionId("database-id", databaseId);
    const body: Json = { page_size: args.bounded("page-size", pageSize, 20, 1, 100) };
    if (filter !== undefined) {
      // The host handed the filter over as its canonical JSON text.
      const value = args.json("filter", filter);
      if (!isObject(value)) {
        throw invalidInput('filter must be a Notion filter object, e.g. {"property": "Status", "status": {"equals": "Done"}}');
      }
      body.filter = value;
    }
    if (sorts !== undefined) {
      const value = args.json("sorts", sorts);
      if (!Array.isArray(value) || !value.every(isObject)) {
        throw invalidInput('sorts must be a list of Notion sort objects, e.g. [{"property": "Due", "direction": "ascending"}]');
      }
      body.sorts = value;
    }
    const start = cursor(startCursor);
    if (start !== undefined) body.start_cursor = start;
    const what = `database ${id}`;
    return paged(request("post", `/v1/databases/${id}/query`, what, { body }), what, page);
  },

  listBlockChildren(blockId: string, startCursor: string | undefined, pageSize: number | undefined) {
    const id = notionId("block-id", blockId);
    const query: Array<[string, string]> = [["page_size", String(args.bounded("page-size", pageSize, 50, 1, 100))]];
    const start = cursor(startCursor);
    if (start !== undefined) query.push(["start_cursor", start]);
    const what = `block ${id}`;
    return paged(request("get", `/v1/blocks/${id}/children`, what, { query }), what, block);
  },
};

export const writeTools = {
  createPage(parentKind: "database" | "page", parentId: string, properties: string, children: string | undefined) {
    const id = notionId("parent-id", parentId);
    const props = args.json("properties", properties);
    if (!isObject(props) || Object.keys(props).length === 0) {
      throw invalidInput('properties must be a JSON object of property values by name, e.g. {"title": {"title": [{"text": {"content": "Notes"}}]}}');
    }
    const body: Json = {
      parent: parentKind === "database" ? { database_id: id } : { page_id: id },
      properties: props,
    };
    if (children !== undefined) body.children = blocks("children", children);
    return page(request("post", "/v1/pages", `${parentKind} ${id}`, { body }), "the new page");
  },

  appendBlocks(blockId: string, children: string, after: string | undefined) {
    const id = notionId("block-id", blockId);
    const body: Json = { children: blocks("children", children) };
    if (after !== undefined) body.after = notionId("after", after);
    const what = `block ${id}`;
    return paged(request("patch", `/v1/blocks/${id}/children`, what, { body }), what, block);
  },
};
