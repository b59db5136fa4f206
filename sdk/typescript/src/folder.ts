// The `folder` capability: directories the host granted by name, with its
// errors as tool errors. Import this only from a connector whose world
// includes `scout:connector/with-folder@0.2.0`.

import { type Dir, type Entry, open as openRaw } from "scout:connector/folder@0.2.0";
import { through } from "./capability";

export type { Dir, Entry };

/** A folder the host granted, its errors thrown as `capability` tool errors. */
export class Folder {
  private constructor(private readonly dir: Dir) {}

  /** The folder granted under `name` (e.g. `project`). */
  static open(name: string): Folder {
    return new Folder(through("folder", () => openRaw(name)));
  }

  /** Lists a directory (`""` is the root). */
  entries(path = ""): Entry[] {
    return through("folder", () => this.dir.entries(path));
  }

  /** Reads a whole file. */
  read(path: string): Uint8Array {
    return through("folder", () => this.dir.read(path));
  }

  /** Reads a whole file as UTF-8 text. */
  readText(path: string): string {
    return new TextDecoder().decode(this.read(path));
  }

  /** Creates or replaces a file (text is written as UTF-8). */
  write(path: string, contents: Uint8Array | string): void {
    const bytes = typeof contents === "string" ? new TextEncoder().encode(contents) : contents;
    through("folder", () => this.dir.write(path, bytes));
  }

  /** Whether this folder may be written. */
  writable(): boolean {
    return this.dir.writable();
  }
}
