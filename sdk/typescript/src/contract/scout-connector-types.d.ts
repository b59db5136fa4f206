declare module 'scout:connector/types@0.2.0' {
  /**
   * A JSON value, as its text: a parameter of this type (`filter: json`)
   * takes any JSON value from the agent (its schema says any JSON, not a
   * string); the host validates it and hands the guest its canonical text
   * (keys sorted, no spaces), the form the approval's digest covers. A
   * string from the agent is read as JSON text; text that is not JSON is
   * refused with the argument's path before the guest runs.
   */
  export type Json = string;
  /**
   * What a tool does to the world. The host takes a tool's effect from the
   * interface it is exported in, never from the guest at run time.
   * # Variants
   * 
   * ## `"read"`
   * 
   * Looks, changes nothing upstream.
   * ## `"write"`
   * 
   * Creates, changes, sends or spends something upstream.
   */
  export type Effect = 'read' | 'write';
  /**
   * An error status answered by the upstream service.
   */
  export interface UpstreamError {
    /**
     * The HTTP status code, e.g. 404 or 422.
     */
    status: number,
    /**
     * The upstream's own message, already scrubbed of secrets by the host.
     */
    message: string,
  }
  /**
   * A host capability a connector may import.
   * # Variants
   * 
   * ## `"http"`
   * 
   * `scout:connector/http`.
   * ## `"meter"`
   * 
   * `scout:connector/meter`.
   * ## `"folder"`
   * 
   * `scout:connector/folder`.
   */
  export type Capability = 'http' | 'meter' | 'folder';
  /**
   * A capability's own error (`http-error`, `meter-error`,
   * `folder-error`), carried in a tool's error. It is flattened to text
   * here so that `types` depends on no capability: a connector imports
   * only the capabilities it uses.
   */
  export interface CapabilityError {
    /**
     * Which capability refused or failed.
     */
    capability: Capability,
    /**
     * The case of that capability's error, e.g. `denied`, `timeout`,
     * `run-exhausted`, `not-found`.
     */
    kind: string,
    /**
     * What it said.
     */
    message: string,
    /**
     * The number the error carries, if any: what an allowance has
     * left (`run-exhausted`, `day-exhausted`), a size limit in bytes
     * (`too-large`).
     */
    amount?: bigint,
  }
  /**
   * Why a tool call failed, as the agent sees it.
   */
  export type ToolError = ToolErrorInvalidInput | ToolErrorNotFound | ToolErrorRefused | ToolErrorUpstream | ToolErrorCapability | ToolErrorBadResponse;
  /**
   * The arguments were well typed but not acceptable (an empty path, a bad branch name).
   */
  export interface ToolErrorInvalidInput {
    tag: 'invalid-input',
    val: string,
  }
  /**
   * The thing asked for does not exist upstream.
   */
  export interface ToolErrorNotFound {
    tag: 'not-found',
    val: string,
  }
  /**
   * The connector refuses this effect by a rule in its own code
   * (for example a commit to the default branch).
   */
  export interface ToolErrorRefused {
    tag: 'refused',
    val: string,
  }
  /**
   * The upstream service answered with an error status.
   */
  export interface ToolErrorUpstream {
    tag: 'upstream',
    val: UpstreamError,
  }
  /**
   * A host capability (`http`, `meter`, `folder`) refused or failed.
   */
  export interface ToolErrorCapability {
    tag: 'capability',
    val: CapabilityError,
  }
  /**
   * The upstream answered something the connector could not read.
   */
  export interface ToolErrorBadResponse {
    tag: 'bad-response',
    val: string,
  }
}
