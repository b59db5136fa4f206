// A starter Scout connector in TypeScript for a made-up "Example" JSON API:
//
// - `GET /items/{id}` answers `{"id", "title", "priority", "tags", "description"}`;
// - `POST /items/{id}/notes` with `{"body"}` answers `{"id", "item_id", "body"}`.
//
// The tools are the functions of `wit/example.wit`'s `read-tools` and
// `write-tools`, exported here as `readTools` and `writeTools` with their
// names in camelCase (`get-item` is `getItem`). A tool returns its value or
// throws a tool error (`invalidInput`, `notFound`, ... from `scout-sdk`);
// `tools(...)` turns any other exception (a bug, an answer shaped unlike the
// code expects) into a `bad-response` naming it, where it would trap.
// Every request goes through the host's `http` handle: the host picks the
// origin and adds the credential, so this code never sees a secret.
// Replace the API shapes below with your service's.

import { args, encodeSegment, Http, log, tools } from "scout-sdk";

/** Longest note accepted, in bytes. */
const MAX_NOTE = 10_000;

// The WIT's types as componentize-js hands them over: records are objects
// with camelCase fields, enums are their case names, `option` is `undefined`.
type Priority = "low" | "normal" | "high";

interface Item {
  id: string;
  title: string;
  priority: Priority;
  tags: string[];
  description?: string;
}

interface Note {
  id: string;
  itemId: string;
  body: string;
}

// The upstream API's JSON shapes.
interface ApiItem {
  id: string;
  title: string;
  priority?: string;
  tags?: string[];
  description?: string | null;
}

interface ApiNote {
  id: string;
  item_id: string;
  body: string;
}

/** Reads the service's priority; anything unknown counts as normal. */
function priorityOf(text: string | undefined): Priority {
  switch (text) {
    case "low":
      return "low";
    case "high":
    case "urgent":
      return "high";
    default:
      return "normal";
  }
}

/** The path of one item: the id checked (a clear `invalid-input`) and encoded as one segment. */
function itemPath(id: string): string {
  return `/items/${encodeSegment(args.identifier("the item id", id))}`;
}

function client(): Http {
  return Http.connect().withHeader("accept", "application/json");
}

export const readTools = tools({
  getItem(id: string): Item {
    const path = itemPath(id);
    // 404 becomes `not-found`, any other non-2xx `upstream`.
    const item = client().get<ApiItem>(path);
    return {
      id: item.id,
      title: item.title,
      priority: priorityOf(item.priority),
      tags: item.tags ?? [],
      description: item.description ? item.description : undefined,
    };
  },
});

export const writeTools = tools({
  createNote(itemId: string, body: string): Note {
    // Refuse before anything is sent.
    const path = `${itemPath(itemId)}/notes`;
    args.text("the note", body, MAX_NOTE);
    const note = client().post<ApiNote>(path, { body });
    log.info(`added note ${note.id} to item ${note.item_id}`);
    return { id: note.id, itemId: note.item_id, body: note.body };
  },
});
