// What the componentize-js runtime (StarlingMonkey) provides that a
// connector commonly uses, for the type checker (the tsconfig's `lib` is
// plain ES2022). `fetch` is left out on purpose: it is disabled in the
// build, and a connector reaches its service only through the `http` handle.
// `console` output is captured by the host, not shown to the agent.

declare class TextEncoder {
  encode(input?: string): Uint8Array;
}

declare class TextDecoder {
  constructor(label?: string);
  decode(input?: Uint8Array): string;
}

declare const console: {
  log(...data: unknown[]): void;
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  debug(...data: unknown[]): void;
};
