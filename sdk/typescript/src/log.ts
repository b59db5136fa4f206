// Logging into the host's trace (the contract's `log`, in every world).
// `console.log` works too, but the host only captures it; these lines are
// the trace's. The host caps their size and rate.

import { log } from "scout:connector/log@0.2.0";

/** Logs at debug level. */
export function debug(message: string): void {
  log("debug", message);
}

/** Logs at info level. */
export function info(message: string): void {
  log("info", message);
}

/** Logs at warn level. */
export function warn(message: string): void {
  log("warn", message);
}

/** Logs at error level. */
export function error(message: string): void {
  log("error", message);
}
