// The contract's imports for the SDK's tests under Node: an http client
// that answers what the test queued and records what it was sent, and a
// log that keeps its lines. esbuild substitutes this module for
// `scout:connector/http@0.2.0` and `scout:connector/log@0.2.0`.

export interface Sent {
  method: string;
  path: string;
  query: Array<[string, string]>;
  headers: Array<[string, string]>;
  body?: Uint8Array;
}

type Answer =
  | { status: number; headers?: Array<[string, string]>; body?: string }
  | { throws: unknown };

export const sent: Sent[] = [];
export const answers: Answer[] = [];
export const lines: Array<[string, string]> = [];

export class Client {
  send(req: Sent) {
    sent.push(req);
    const answer = answers.shift();
    if (answer === undefined) {
      throw new Error("the test queued no answer");
    }
    if ("throws" in answer) {
      throw answer.throws;
    }
    return {
      status: answer.status,
      headers: answer.headers ?? [],
      body: new TextEncoder().encode(answer.body ?? ""),
    };
  }
}

export function connect(): Client {
  return new Client();
}

export function connectTo(_destination: string): Client {
  return new Client();
}

export function log(level: string, message: string): void {
  lines.push([level, message]);
}

// The meter and folder are not exercised here; their imports resolve.
export function unit(): string {
  return "";
}
export function remaining(): bigint {
  return 0n;
}
export function reserve(_estimate: bigint): never {
  throw { tag: "denied", val: "no meter in this test" };
}
export function open(_name: string): never {
  throw { tag: "denied", val: "no folder in this test" };
}
