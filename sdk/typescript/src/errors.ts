// Tool errors: the WIT `tool-error` variant as componentize-js takes it
// from a tool (a thrown `{tag, val}` object), and the upstream error bodies
// vendors write turned into that one shape: `not-found` for a 404,
// `upstream` with the status and a bounded message for any other non-2xx.
// A connector names its vendor's shape once (`ErrorFormat`, on
// `Http.withErrors`) instead of decoding error bodies by hand.

import type {
  CapabilityError,
  ToolError,
  UpstreamError,
} from "scout:connector/types@0.2.0";

export type { CapabilityError, ToolError, UpstreamError };

/** Longest upstream message carried into a tool error, in bytes of UTF-8. */
export const MAX_MESSAGE = 500;

/** `invalid-input`: the arguments were well typed but not acceptable. Throw it. */
export function invalidInput(message: string): ToolError {
  return { tag: "invalid-input", val: message };
}

/** `not-found`: the thing asked for does not exist upstream. Throw it. */
export function notFound(message: string): ToolError {
  return { tag: "not-found", val: message };
}

/** `refused`: the connector's own rule forbids this. Throw it. */
export function refused(message: string): ToolError {
  return { tag: "refused", val: message };
}

/** `upstream`: the service answered `status`; the message is cut. Throw it. */
export function upstream(status: number, message: string): ToolError {
  return { tag: "upstream", val: { status, message: cutMessage(message) } };
}

/** `bad-response`: the service answered something the connector cannot read. Throw it. */
export function badResponse(message: string): ToolError {
  return { tag: "bad-response", val: message };
}

/** `capability`: a host capability (`http`, `meter`, `folder`) refused or failed. */
export function capability(
  which: CapabilityError["capability"],
  kind: string,
  message: string,
  amount?: bigint,
): ToolError {
  return { tag: "capability", val: { capability: which, kind, message, amount } };
}

const TAGS = new Set([
  "invalid-input",
  "not-found",
  "refused",
  "upstream",
  "capability",
  "bad-response",
]);

/** Whether `value` is a tool error (something to rethrow as it is). */
export function isToolError(value: unknown): value is ToolError {
  return (
    typeof value === "object" &&
    value !== null &&
    TAGS.has((value as { tag?: unknown }).tag as string) &&
    "val" in value
  );
}

/** A tool error as one line of text, as the Rust SDK writes it. */
export function describe(error: ToolError): string {
  switch (error.tag) {
    case "invalid-input":
      return `invalid input: ${error.val}`;
    case "not-found":
      return `not found: ${error.val}`;
    case "refused":
      return `refused: ${error.val}`;
    case "upstream":
      return `upstream answered ${error.val.status}: ${error.val.message}`;
    case "capability":
      return `${error.val.capability} ${error.val.kind}: ${error.val.message}`;
    case "bad-response":
      return `bad response: ${error.val}`;
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** `text` cut at `max` bytes of UTF-8, on a character boundary. */
export function cutTo(text: string, max: number): string {
  if (encoder.encode(text).length <= max) {
    return text;
  }
  let out = "";
  let bytes = 0;
  for (const ch of text) {
    const size = encoder.encode(ch).length;
    if (bytes + size > max) {
      break;
    }
    out += ch;
    bytes += size;
  }
  return out;
}

/** `text`, trimmed and cut at `MAX_MESSAGE` bytes on a character boundary. */
export function cutMessage(text: string): string {
  return cutTo(text.trim(), MAX_MESSAGE);
}

/** Reads one vendor shape's message from an error body, or `undefined`. */
export type Decoder = (body: Uint8Array) => string | undefined;

function object(body: Uint8Array): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(decoder.decode(body));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function codeText(code: unknown): string {
  if (typeof code === "string") {
    return code;
  }
  if (typeof code === "number" && Number.isInteger(code)) {
    return String(code);
  }
  return "?";
}

function messageField(body: Uint8Array): string | undefined {
  const message = object(body)?.message;
  return typeof message === "string" ? message : undefined;
}

function errorField(body: Uint8Array, withStatus: boolean): string | undefined {
  const error = object(body)?.error;
  if (typeof error === "string") {
    return error;
  }
  if (typeof error !== "object" || error === null || Array.isArray(error)) {
    return undefined;
  }
  const e = error as Record<string, unknown>;
  const message = typeof e.message === "string" ? e.message : "";
  const status = typeof e.status === "string" ? e.status : "";
  const codes: string[] = [];
  for (const detail of Array.isArray(e.details) ? e.details : []) {
    const errors = (detail as { errors?: unknown })?.errors;
    for (const item of Array.isArray(errors) ? errors : []) {
      if (typeof item !== "object" || item === null) {
        continue;
      }
      const { errorCode, message: text } = item as Record<string, unknown>;
      const parts =
        typeof errorCode === "object" && errorCode !== null
          ? Object.keys(errorCode)
              .sort()
              .map((kind) => `${kind}.${codeText((errorCode as Record<string, unknown>)[kind])}`)
          : [];
      const said = typeof text === "string" ? text : "";
      codes.push(parts.length > 0 ? `${parts.join(",")}: ${said}` : said);
    }
  }
  const detail = codes.length > 0 ? codes.join("; ") : message;
  return status === "" || !withStatus ? detail : `${status}: ${detail}`;
}

function errorsList(body: Uint8Array, withCode: boolean): string | undefined {
  const errors = object(body)?.errors;
  if (!Array.isArray(errors) || errors.length === 0) {
    return undefined;
  }
  return errors
    .map((e) => {
      const { code, message } = (typeof e === "object" && e !== null ? e : {}) as Record<
        string,
        unknown
      >;
      const text = typeof message === "string" ? message : "";
      return withCode && code !== undefined && code !== null ? `${codeText(code)}: ${text}` : text;
    })
    .join("; ");
}

/** How an upstream writes the message of an error body. */
export const ErrorFormat = {
  /** `{"message": "..."}` (GitHub, many others): the default. */
  message: messageField as Decoder,
  /** `{"error": "..."}` or `{"error": {"message": "..."}}` (Firecrawl, OAuth). */
  error: ((body) => errorField(body, false)) as Decoder,
  /** Google APIs: `{"error": {"code", "message", "status", "details"}}`, as `STATUS: message`. */
  google: ((body) => errorField(body, true)) as Decoder,
  /** Cloudflare's v4 envelope `{"errors": [{"code", "message"}]}`, as `code: message; ...`. */
  cloudflare: ((body) => errorsList(body, true)) as Decoder,
  /** GraphQL: `{"errors": [{"message"}]}`, the messages joined by `; `. */
  graphql: ((body) => errorsList(body, false)) as Decoder,
} as const;

/** The message `decode` reads from `body`, or else the body's text; always cut. */
export function errorMessage(decode: Decoder, body: Uint8Array): string {
  const found = decode(body);
  return cutMessage(found !== undefined && found.trim() !== "" ? found : decoder.decode(body));
}

/**
 * The tool error a non-2xx answer is (`undefined` for a 2xx): `not-found`
 * for a 404, `upstream` with the status and the message otherwise.
 * `retryAfter` (the answer's `Retry-After` header) is added to an upstream
 * message as ` (retry after N)`, so the agent knows when to try again.
 */
export function statusError(
  status: number,
  body: Uint8Array,
  decode: Decoder = ErrorFormat.message,
  retryAfter?: string,
): ToolError | undefined {
  if (status >= 200 && status < 300) {
    return undefined;
  }
  let message = errorMessage(decode, body);
  if (status === 404) {
    return notFound(message);
  }
  const wait = retryAfter?.trim();
  if (wait) {
    const suffix = ` (retry after ${cutTo(wait, 64)})`;
    message = cutTo(message, MAX_MESSAGE - encoder.encode(suffix).length) + suffix;
  }
  return { tag: "upstream", val: { status, message } };
}
