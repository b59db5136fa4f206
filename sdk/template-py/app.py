"""A starter Scout connector in Python for a made-up "Example" JSON API:

- `GET /items/{id}` answers `{"id", "title", "priority", "tags", "description"}`;
- `POST /items/{id}/notes` with `{"body"}` answers `{"id", "item_id", "body"}`.

Every request goes through the host's `http` handle: the host picks the
origin and adds the credential, so this code never sees a secret. The tools
are the functions of the connector's WIT in `wit/`; componentize-py generates their
classes (`wit_world.exports.ReadTools`, `WriteTools`) and the records they
return. A tool fails by raising a tool error (`errors.invalid_input(...)`),
never by returning one; `@tools` reports any other exception as
`bad-response` with its line. Replace the API shapes below with your service's.
"""

from wit_world import exports
from wit_world.exports.read_tools import Item, Priority
from wit_world.exports.write_tools import Note

from scout_sdk import Http, args, encode_segment, field, log, tools

#: Longest item id accepted.
MAX_ID = 64
#: Longest note accepted, in bytes.
MAX_NOTE = 10_000

# ---------------------------------------------------------------------------
# Pure helpers: no host calls.
# ---------------------------------------------------------------------------


def item_path(item_id):
    """The path of one item, its id encoded as one segment (even an id that
    skipped validation could not change the request's path)."""
    return f"/items/{encode_segment(item_id)}"


def priority_of(text):
    """The service's priority string; anything unknown counts as normal."""
    if text == "low":
        return Priority.LOW
    if text in ("high", "urgent"):
        return Priority.HIGH
    return Priority.NORMAL


def client():
    return Http.connect().with_header("accept", "application/json")


# ---------------------------------------------------------------------------
# The tools.
# ---------------------------------------------------------------------------


# `@tools`: an exception that is not a tool error (a bug, an answer shaped
# unlike the code expects) becomes `bad-response` naming its line, not a trap.
@tools
class ReadTools(exports.ReadTools):
    def get_item(self, id: str) -> Item:
        # Refuse before anything is sent: 1 to 64 letters, digits, `-`, `_`.
        args.identifier("the item id", id, MAX_ID)
        # 404 becomes `not-found`, any other non-2xx `upstream`.
        item = client().get(item_path(id))
        description = field(item, "description", str, None)
        return Item(
            id=field(item, "id"),
            title=field(item, "title"),
            priority=priority_of(field(item, "priority", str, "")),
            tags=field(item, "tags", list, []),
            description=description or None,
        )


@tools
class WriteTools(exports.WriteTools):
    def create_note(self, item_id: str, body: str) -> Note:
        # Refuse before anything is sent.
        args.identifier("the item id", item_id, MAX_ID)
        args.text("the note", body, MAX_NOTE)
        note = client().post(f"{item_path(item_id)}/notes", {"body": body})
        log.info(f"added note {field(note, 'id')} to item {field(note, 'item_id')}")
        return Note(id=field(note, "id"), item_id=field(note, "item_id"), body=field(note, "body"))
