declare module 'scout:connector/log@0.2.0' {
  /**
   * Records one line. The host caps the size and rate of log lines.
   */
  export function log(level: Level, message: string): void;
  /**
   * Severity of a log line.
   * # Variants
   * 
   * ## `"trace"`
   * 
   * Very detailed.
   * ## `"debug"`
   * 
   * For connector authors.
   * ## `"info"`
   * 
   * Worth keeping.
   * ## `"warn"`
   * 
   * Something unexpected that the connector handled.
   * ## `"error"`
   * 
   * Something the connector could not handle.
   */
  export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';
}
