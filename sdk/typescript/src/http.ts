// Typed JSON helpers over the host's `http` handle. The host decides where
// requests go and how they are authenticated; these helpers only shape
// requests and turn statuses into tool errors (thrown).

import {
  type Client,
  connect,
  connectTo,
  type Method,
  type Response,
} from "scout:connector/http@0.2.0";
import { through } from "./capability";
import { badResponse, type Decoder, ErrorFormat, invalidInput, statusError } from "./errors";
import * as graphql from "./graphql";

export type { Method, Response };

/** Query parameters: pairs in order, or an object (entries `undefined` are left out). */
export type Query = Array<[string, string]> | Record<string, string | number | boolean | undefined>;

/** What a request carries besides its method and path. */
export interface SendOptions {
  query?: Query;
  headers?: Array<[string, string]>;
  /** Sent as it is; `json` and the verbs below encode a value instead. */
  body?: Uint8Array;
}

function pairs(query: Query | undefined): Array<[string, string]> {
  if (query === undefined) {
    return [];
  }
  if (Array.isArray(query)) {
    return query;
  }
  return Object.entries(query)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, String(v)]);
}

/** A response header by name (case-insensitive), or `undefined`. */
export function header(response: Response, name: string): string | undefined {
  const wanted = name.toLowerCase();
  return response.headers.find(([k]) => k.toLowerCase() === wanted)?.[1];
}

/** Parses a JSON answer; one that is not JSON is `bad-response`. */
export function parseJson<T = unknown>(body: Uint8Array): T {
  try {
    return JSON.parse(new TextDecoder().decode(body)) as T;
  } catch (e) {
    throw badResponse(`response is not the expected JSON: ${(e as Error).message}`);
  }
}

/** The error a non-2xx `response` is (thrown), its message read by `decode`, `Retry-After` carried. */
export function checkStatus(response: Response, decode: Decoder = ErrorFormat.message): void {
  const error = statusError(response.status, response.body, decode, header(response, "retry-after"));
  if (error !== undefined) {
    throw error;
  }
}

/** Percent-encodes one path segment: everything but `A-Z a-z 0-9 - _ . ~`. */
export function encodeSegment(segment: string): string {
  let out = "";
  for (const b of new TextEncoder().encode(segment)) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-_.~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Encodes a `/`-separated path segment by segment; refuses empty, `.` and `..` segments. */
export function encodePath(path: string): string {
  const segments = path.replace(/^\/+|\/+$/g, "").split("/");
  for (const s of segments) {
    if (s === "" || s === "." || s === "..") {
      throw invalidInput(`path \`${path}\` has an empty, \`.\` or \`..\` segment`);
    }
  }
  return segments.map(encodeSegment).join("/");
}

/** The connector's HTTP client, bound by the host to one origin. */
export class Http {
  private constructor(
    private readonly client: Client,
    private readonly headers: Array<[string, string]> = [],
    private readonly decode: Decoder = ErrorFormat.message,
  ) {}

  /** The client the host granted this connector for this call. */
  static connect(): Http {
    return new Http(through("http", connect));
  }

  /** The client for another destination the tool's routes name (`Route: drive GET ...`). */
  static connectTo(destination: string): Http {
    return new Http(through("http", () => connectTo(destination)));
  }

  /** Adds a header sent with every request; headers that carry authority are dropped by the host. */
  withHeader(name: string, value: string): Http {
    return new Http(this.client, [...this.headers, [name, value]], this.decode);
  }

  /** Reads the upstream's error bodies with `decode` (an `ErrorFormat` or the connector's own). */
  withErrors(decode: Decoder): Http {
    return new Http(this.client, this.headers, decode);
  }

  /** Throws the error a non-2xx `response` is, read in this client's format. */
  check(response: Response): void {
    checkStatus(response, this.decode);
  }

  /** Sends a request and returns the response whatever its status (a body is JSON unless a `content-type` says otherwise). */
  send(method: Method, path: string, options: SendOptions = {}): Response {
    const headers = [...this.headers, ...(options.headers ?? [])];
    if (options.body !== undefined && !headers.some(([k]) => k.toLowerCase() === "content-type")) {
      headers.push(["content-type", "application/json"]);
    }
    return through("http", () =>
      this.client.send({ method, path, query: pairs(options.query), headers, body: options.body }),
    );
  }

  /**
   * Sends `body` (any value, as JSON) and parses a 2xx JSON answer; any
   * other status is `not-found` (404) or `upstream`, its message read in
   * this client's format; an answer that is not JSON is `bad-response`
   * naming the request.
   */
  json<T = unknown>(method: Method, path: string, options: { query?: Query; body?: unknown } = {}): T {
    const body =
      options.body === undefined ? undefined : new TextEncoder().encode(JSON.stringify(options.body));
    const response = this.send(method, path, { query: options.query, body });
    this.check(response);
    try {
      return parseJson<T>(response.body);
    } catch (e) {
      const error = e as { tag: string; val: string };
      throw badResponse(`${method.toUpperCase()} ${path}: ${error.val}`);
    }
  }

  /** GET and parse JSON. */
  get<T = unknown>(path: string, query?: Query): T {
    return this.json<T>("get", path, { query });
  }

  /** POST a JSON body and parse JSON. */
  post<T = unknown>(path: string, body: unknown, query?: Query): T {
    return this.json<T>("post", path, { query, body });
  }

  /** PUT a JSON body and parse JSON. */
  put<T = unknown>(path: string, body: unknown): T {
    return this.json<T>("put", path, { body });
  }

  /** PATCH a JSON body and parse JSON. */
  patch<T = unknown>(path: string, body: unknown): T {
    return this.json<T>("patch", path, { body });
  }

  /** DELETE; any 2xx is success. */
  delete(path: string): void {
    this.check(this.send("delete", path));
  }

  /** POSTs a GraphQL `query` with `variables` to `path` and returns its `data`. */
  graphql<T = unknown>(path: string, query: string, variables: unknown = {}): T {
    const response = this.send("post", path, { body: graphql.request(query, variables) });
    return graphql.data<T>(response.status, response.body);
  }
}
