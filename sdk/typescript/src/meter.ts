// The `meter` capability and one billed upstream call settled on every
// path. A connector that bills reserves an estimate before it sends
// (nothing is sent when the allowance does not cover it) and settles what
// the call cost afterwards, whether it succeeded or failed: a reservation
// left unsettled is charged in full by the host. `metered` does that once.
// Import this only from a connector whose world includes
// `scout:connector/with-meter@0.2.0`.

import { remaining, type Reservation, reserve as reserveRaw, unit } from "scout:connector/meter@0.2.0";
import { capabilityError, through } from "./capability";
import { describe, refused, type ToolError } from "./errors";
import { warn } from "./log";

export { remaining, type Reservation, unit };

/** Reserves `estimate` units, or throws the meter's refusal as a tool error (nothing reserved). */
export function reserve(estimate: bigint): Reservation {
  return through("meter", () => reserveRaw(estimate));
}

/** Refuses when this session's meter counts another unit than the one the vendor bills in. */
export function expectUnit(vendor: string, billed: string): void {
  const counted = unit();
  if (counted !== "" && counted !== billed) {
    throw refused(`this session's meter counts ${counted}; ${vendor} bills ${billed}, so nothing was sent`);
  }
}

/**
 * What a failed call is settled at, the usual way: nothing when the
 * upstream refused it (a 4xx other than 408, not-found, invalid input, a
 * refusal), the whole estimate when it may have done the work.
 */
export function failureCost(error: ToolError, estimate: bigint): bigint {
  switch (error.tag) {
    case "upstream":
      return error.val.status >= 400 && error.val.status < 500 && error.val.status !== 408 ? 0n : estimate;
    case "not-found":
    case "invalid-input":
    case "refused":
      return 0n;
    default:
      return estimate;
  }
}

/**
 * Reserves `estimate`, runs `call` and settles on every path: on success at
 * the cost `call` returns beside its value (`undefined`: the estimate), on
 * failure at `onFailure(error)` (default `failureCost`). A settlement the
 * meter refuses is logged, and the call's answer stands.
 */
export function metered<T>(
  estimate: bigint,
  call: () => [T, bigint | undefined],
  onFailure: (error: ToolError) => bigint = (e) => failureCost(e, estimate),
): T {
  const reservation = reserve(estimate);
  let actual: bigint;
  let value: T | undefined;
  let failure: { error: unknown } | undefined;
  try {
    const [v, cost] = call();
    value = v;
    actual = cost ?? estimate;
  } catch (e) {
    failure = { error: e };
    actual = typeof e === "object" && e !== null && "tag" in e ? onFailure(e as ToolError) : estimate;
  }
  try {
    reservation.settle(actual);
  } catch (e) {
    warn(`settling ${actual} against a reservation of ${estimate}: ${describe(capabilityError("meter", e))}`);
  }
  if (failure !== undefined) {
    throw failure.error;
  }
  return value as T;
}
