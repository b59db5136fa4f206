// A tool object's methods with any exception that is not a tool error (a
// `TypeError` from an answer shaped unlike the code expected, a bug) turned
// into `bad-response` naming it, its stack logged to the trace. Without
// this, such an exception fails the call as a trap and its message is lost.

import { badResponse, isToolError } from "./errors";
import { error as logError } from "./log";

/** What an exception says: `TypeError: x is undefined`. */
function said(thrown: unknown): string {
  if (thrown instanceof Error) {
    return `${thrown.name}: ${thrown.message}`;
  }
  try {
    return `${JSON.stringify(thrown)}`;
  } catch {
    return String(thrown);
  }
}

/**
 * `methods` (an exported interface's object: `export const readTools =
 * tools({ getItem(id) {...} })`), each method rethrowing tool errors as
 * they are and turning anything else into `bad-response`
 * (`the connector failed in getItem: TypeError: ...`).
 */
export function tools<T extends object>(methods: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(methods)) {
    if (typeof method !== "function") {
      wrapped[name] = method;
      continue;
    }
    wrapped[name] = (...params: unknown[]) => {
      try {
        return method.apply(methods, params);
      } catch (thrown) {
        if (isToolError(thrown)) {
          throw thrown;
        }
        const stack = thrown instanceof Error && thrown.stack ? `\n${thrown.stack}` : "";
        logError(`${name} failed: ${said(thrown)}${stack}`);
        throw badResponse(`the connector failed in ${name}: ${said(thrown)}`);
      }
    };
  }
  return wrapped as T;
}
