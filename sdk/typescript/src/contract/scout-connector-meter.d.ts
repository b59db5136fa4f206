declare module 'scout:connector/meter@0.2.0' {
  /**
   * The unit amounts are counted in, e.g. `credits` or `micro-usd`.
   */
  export function unit(): string;
  /**
   * Reserves `estimate` units, or refuses with nothing reserved. Where it
   * would take the call's reservations together above the session's
   * per-call threshold (person chat), it first waits for a person to
   * approve this call at this estimate; refused, it is `denied`.
   */
  export function reserve(estimate: bigint): Reservation;
  /**
   * What the run may still spend, in units.
   */
  export function remaining(): bigint;
  /**
   * Why spending was refused.
   */
  export type MeterError = MeterErrorRunExhausted | MeterErrorDayExhausted | MeterErrorDenied | MeterErrorInvalid;
  /**
   * The run's allowance does not cover the amount; carries what is left.
   */
  export interface MeterErrorRunExhausted {
    tag: 'run-exhausted',
    val: bigint,
  }
  /**
   * The day's allowance does not cover the amount; carries what is left.
   */
  export interface MeterErrorDayExhausted {
    tag: 'day-exhausted',
    val: bigint,
  }
  /**
   * The session holds no meter for this connector.
   */
  export interface MeterErrorDenied {
    tag: 'denied',
    val: string,
  }
  /**
   * The amount is not acceptable (zero estimate, settled twice).
   */
  export interface MeterErrorInvalid {
    tag: 'invalid',
    val: string,
  }
  
  export class Reservation implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    /**
    * Charges the actual cost and releases the rest. An actual cost above
    * the estimate is charged only up to what the allowances still cover;
    * the excess is refused with `run-exhausted` or `day-exhausted`. For a
    * reservation made under a per-call threshold (person chat), whether
    * a person approved it or not, a cost above the estimate is charged
    * at the estimate and refused with `denied`: no one was asked about
    * more.
    */
    settle(actual: bigint): void;
    [Symbol.dispose](): void;
  }
}
