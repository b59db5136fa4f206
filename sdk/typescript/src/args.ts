// Checks of the arguments an agent writes that every connector makes the
// same way: bounded numbers with defaults, identifiers that go into a path,
// free text, calendar dates and `json` values. Each refusal is an
// `invalid-input` tool error (thrown) naming the argument and what it may
// be, before anything is reserved or sent. The host has already checked the
// WIT types and any range the tool's doc comment declares.

import { invalidInput } from "./errors";

/** `value`, or `fallback` when it is `undefined`; refused outside `min..=max` (a NaN too). */
export function bounded<T extends number | bigint>(
  what: string,
  value: T | undefined,
  fallback: T,
  min: T,
  max: T,
): T {
  const v = value ?? fallback;
  // Written so that a NaN, which compares false with everything, is refused.
  if (!(v >= min && v <= max)) {
    throw invalidInput(`${what} must be between ${min} and ${max}, not ${v}`);
  }
  return v;
}

/**
 * `text` checked to be 1 to `maxLength` ASCII letters, digits, `-`, `_`
 * (and the characters in `also`): an id that goes into a path segment or a
 * query. Build the path with `encodeSegment` all the same.
 */
export function identifier(what: string, text: string, maxLength = 64, also = ""): string {
  if (text.length === 0) {
    throw invalidInput(`${what} is empty`);
  }
  if (text.length > maxLength) {
    throw invalidInput(`${what} is longer than ${maxLength} characters`);
  }
  for (const c of text) {
    if (!/^[A-Za-z0-9_-]$/.test(c) && !also.includes(c)) {
      const extra = [...also].map((a) => `, \`${a}\``).join("");
      throw invalidInput(`${what} \`${text}\` may contain only ASCII letters, digits, \`-\`, \`_\`${extra}`);
    }
  }
  return text;
}

/** A free text argument, refused when blank (unless `allowBlank`) or longer than `maxBytes` bytes of UTF-8. */
export function text(what: string, value: string, maxBytes: number, allowBlank = false): string {
  if (!allowBlank && value.trim() === "") {
    throw invalidInput(`${what} is empty`);
  }
  if (new TextEncoder().encode(value).length > maxBytes) {
    throw invalidInput(`${what} is longer than ${maxBytes} bytes`);
  }
  return value;
}

/** What `json` may require a value to be. */
export type JsonKind = "object" | "array" | "string" | "number" | "boolean";

function kindOf(value: unknown): JsonKind | "null" {
  if (value === null) {
    return "null";
  }
  if (Array.isArray(value)) {
    return "array";
  }
  return typeof value as JsonKind;
}

/**
 * A `json` argument (the contract's `json` type, `filter: json`) read as
 * its value. The host has already checked that it is JSON and handed over
 * its canonical text (keys sorted, no spaces); `kind` refuses a value of
 * another shape.
 */
export function json<T = unknown>(what: string, value: string, kind?: JsonKind): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (e) {
    throw invalidInput(`${what} is not the JSON this tool takes: ${(e as Error).message}`);
  }
  if (kind !== undefined && kindOf(parsed) !== kind) {
    const names: Record<JsonKind, string> = {
      object: "an object",
      array: "an array",
      string: "a string",
      number: "a number",
      boolean: "true or false",
    };
    throw invalidInput(`${what} is not the JSON this tool takes: expected ${names[kind]}`);
  }
  return parsed as T;
}

function leap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** The days of `month` (1-12) in `year`; 0 for a month that is not one. */
export function daysInMonth(year: number, month: number): number {
  if ([1, 3, 5, 7, 8, 10, 12].includes(month)) {
    return 31;
  }
  if ([4, 6, 9, 11].includes(month)) {
    return 30;
  }
  if (month === 2) {
    return leap(year) ? 29 : 28;
  }
  return 0;
}

/** A calendar date `YYYY-MM-DD` as `[year, month, day]`; anything else refused naming `what`. */
export function date(what: string, value: string): [number, number, number] {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const [y, mo, d] = m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [0, 0, 0];
  if (!m || y === 0 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) {
    throw invalidInput(`${what} must be a date YYYY-MM-DD, not \`${value}\``);
  }
  return [y, mo, d];
}

/** A date range: both dates valid and `start` not after `end`. */
export function dateRange(start: string, end: string): void {
  date("the start date", start);
  date("the end date", end);
  // `YYYY-MM-DD` compares as text in calendar order.
  if (start > end) {
    throw invalidInput(`the start date ${start} is after the end date ${end}`);
  }
}
