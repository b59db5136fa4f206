// A capability's error (`http-error`, `meter-error`, `folder-error`) as the
// `capability` tool error the agent sees, flattened as the Rust SDK does.

import { capability, isToolError, type ToolError } from "./errors";

/** The `{tag, val}` a capability call threw: componentize-js throws an
 * import's `err` case, either as it is or wrapped with a `payload`. */
export function thrownVariant(thrown: unknown): { tag: string; val?: unknown } | undefined {
  const candidate =
    typeof thrown === "object" && thrown !== null && "payload" in thrown
      ? (thrown as { payload: unknown }).payload
      : thrown;
  if (typeof candidate === "object" && candidate !== null && typeof (candidate as { tag?: unknown }).tag === "string") {
    return candidate as { tag: string; val?: unknown };
  }
  return undefined;
}

/** What `which` threw, as a tool error; anything that is not the capability's error is rethrown. */
export function capabilityError(which: "http" | "meter" | "folder", thrown: unknown): ToolError {
  if (isToolError(thrown)) {
    return thrown;
  }
  const variant = thrownVariant(thrown);
  if (variant === undefined) {
    throw thrown;
  }
  const { tag, val } = variant;
  if (typeof val === "bigint") {
    const message =
      tag === "too-large"
        ? which === "http"
          ? `the response exceeded ${val} bytes`
          : `larger than ${val} bytes`
        : `the ${tag === "run-exhausted" ? "run" : "day"}'s allowance has ${val} left`;
    return capability(which, tag, message, val);
  }
  if (tag === "timeout") {
    return capability(which, tag, "the request timed out");
  }
  return capability(which, tag, typeof val === "string" ? val : String(val ?? ""));
}

/** `f()`, with what `which` throws turned into a tool error. */
export function through<T>(which: "http" | "meter" | "folder", f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw capabilityError(which, e);
  }
}
