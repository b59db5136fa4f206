declare module 'scout:connector/http@0.2.0' {
  /**
   * The client the host bound for this connector in this session, or
   * `denied` when the session holds no HTTP capability for it.
   */
  export function connect(): Client;
  /**
   * A client bound to another destination the calling tool's routes name:
   * an origin the operator configured for this connector under that name
   * (same credential), or, for a joint tool, a connector its `Reads-from`
   * line names, with that connector's origin and credential, when that
   * connector is live in the session. `denied` otherwise.
   */
  export function connectTo(destination: string): Client;
  /**
   * HTTP request methods a connector may use.
   * # Variants
   * 
   * ## `"get"`
   * 
   * GET
   * ## `"head"`
   * 
   * HEAD
   * ## `"post"`
   * 
   * POST
   * ## `"put"`
   * 
   * PUT
   * ## `"patch"`
   * 
   * PATCH
   * ## `"delete"`
   * 
   * DELETE
   */
  export type Method = 'get' | 'head' | 'post' | 'put' | 'patch' | 'delete';
  /**
   * One request to the client's origin.
   */
  export interface Request {
    /**
     * The method.
     */
    method: Method,
    /**
     * Path below the origin, starting with `/`, percent-encoded where needed.
     * Refused: `//`, `\`, `@`, `*`, absolute URLs, control characters,
     * and dot segments, raw or percent-encoded.
     */
    path: string,
    /**
     * Query parameters in order; the host encodes them.
     */
    query: Array<[string, string]>,
    /**
     * Request headers. The host drops Host, Authorization, Cookie,
     * Proxy-*, hop-by-hop headers and the connector's credential header.
     */
    headers: Array<[string, string]>,
    /**
     * The body, if any.
     */
    body?: Uint8Array,
  }
  /**
   * The upstream's answer. Bodies are decompressed and capped in size.
   */
  export interface Response {
    /**
     * The HTTP status code. Redirects come back as 3xx; they are never followed.
     */
    status: number,
    /**
     * Response headers (Set-Cookie removed).
     */
    headers: Array<[string, string]>,
    /**
     * The body, with the injected secret replaced by `[REDACTED]`.
     */
    body: Uint8Array,
  }
  /**
   * Why a request was not completed.
   */
  export type HttpError = HttpErrorDenied | HttpErrorTransport | HttpErrorTimeout | HttpErrorTooLarge;
  /**
   * The host refused to send it; the reason names the rule.
   */
  export interface HttpErrorDenied {
    tag: 'denied',
    val: string,
  }
  /**
   * Connecting or reading failed.
   */
  export interface HttpErrorTransport {
    tag: 'transport',
    val: string,
  }
  /**
   * The connect, read or total timeout passed.
   */
  export interface HttpErrorTimeout {
    tag: 'timeout',
  }
  /**
   * The response body exceeded the host's limit, in bytes.
   */
  export interface HttpErrorTooLarge {
    tag: 'too-large',
    val: bigint,
  }
  
  export class Client implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    /**
    * Sends one request and reads the whole response.
    */
    send(req: Request): Response;
    [Symbol.dispose](): void;
  }
}
