declare module 'scout:connector/folder@0.2.0' {
  /**
   * The folder the host granted under `name` (e.g. `project`), or
   * `denied` when this session holds none by that name.
   */
  export function open(name: string): Dir;
  /**
   * Why a folder operation failed.
   */
  export type FolderError = FolderErrorDenied | FolderErrorNotFound | FolderErrorInvalidPath | FolderErrorTooLarge | FolderErrorIo;
  /**
   * Refused by the host: read-only folder, path outside the root.
   */
  export interface FolderErrorDenied {
    tag: 'denied',
    val: string,
  }
  /**
   * No such file or directory.
   */
  export interface FolderErrorNotFound {
    tag: 'not-found',
    val: string,
  }
  /**
   * The path is malformed (empty, absolute, `..`, NUL).
   */
  export interface FolderErrorInvalidPath {
    tag: 'invalid-path',
    val: string,
  }
  /**
   * The file is larger than the host allows to read or write, in bytes.
   */
  export interface FolderErrorTooLarge {
    tag: 'too-large',
    val: bigint,
  }
  /**
   * Any other I/O error.
   */
  export interface FolderErrorIo {
    tag: 'io',
    val: string,
  }
  /**
   * What a directory entry is.
   * # Variants
   * 
   * ## `"file"`
   * 
   * A regular file.
   * ## `"dir"`
   * 
   * A directory.
   * ## `"other"`
   * 
   * Anything else (a link, a device); never followed.
   */
  export type EntryKind = 'file' | 'dir' | 'other';
  /**
   * One entry of a listing.
   */
  export interface Entry {
    /**
     * Name within the directory.
     */
    name: string,
    /**
     * File, directory or other.
     */
    kind: EntryKind,
    /**
     * Size in bytes.
     */
    size: bigint,
  }
  
  export class Dir implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    /**
    * Lists a directory (`""` or `.` is the root).
    */
    entries(path: string): Array<Entry>;
    /**
    * Reads a whole file.
    */
    read(path: string): Uint8Array;
    /**
    * Creates or replaces a file (and its parent directories).
    */
    write(path: string, contents: Uint8Array): void;
    /**
    * Whether this handle may write.
    */
    writable(): boolean;
    [Symbol.dispose](): void;
  }
}
