// GraphQL over the `http` handle: a body of `query` and `variables` (never
// arguments spliced into the document), and an answer whose `errors` are an
// upstream error even under a 200.

import { badResponse, cutMessage, ErrorFormat, statusError, type ToolError } from "./errors";

/** The JSON body of a GraphQL request. */
export function request(query: string, variables: unknown = {}): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ query, variables }));
}

/**
 * The `data` of a GraphQL answer: a non-2xx status is the upstream's error
 * (its `errors`, else its text); `errors` under a 2xx is an `upstream`
 * error carrying the status and the messages, read before `data` (a partial
 * answer's nulls never hide them); no `data` is `bad-response`.
 */
export function data<T = unknown>(status: number, body: Uint8Array): T {
  const failed = statusError(status, body, ErrorFormat.graphql);
  if (failed !== undefined) {
    throw failed;
  }
  let answer: { data?: unknown; errors?: unknown };
  try {
    answer = JSON.parse(new TextDecoder().decode(body));
  } catch (e) {
    throw badResponse(`the GraphQL answer is not the expected JSON: ${(e as Error).message}`);
  }
  if (typeof answer !== "object" || answer === null) {
    throw badResponse("the GraphQL answer is not the expected JSON: not an object");
  }
  if (Array.isArray(answer.errors) && answer.errors.length > 0) {
    const messages = answer.errors.map((e) =>
      typeof e?.message === "string" ? (e.message as string) : "",
    );
    const error: ToolError = {
      tag: "upstream",
      val: { status, message: cutMessage(messages.join("; ")) },
    };
    throw error;
  }
  if (answer.data === undefined || answer.data === null) {
    throw badResponse("the GraphQL answer has no data");
  }
  return answer.data as T;
}
