"""Reading a paginated list: page after page until enough items, no next
page, or the page budget runs out (a bound on requests, whatever the
upstream answers)."""


def collect(max_items, max_pages, fetch):
    """Calls `fetch(cursor)` (None first), which returns `(items, next_cursor)`,
    until `max_items` are read, there is no next cursor, or `max_pages` pages
    were fetched; returns `(items[:max_items], cursor_left)`."""
    items = []
    cursor = None
    for _ in range(max(max_pages, 1)):
        page, cursor = fetch(cursor)
        items.extend(page)
        if len(items) >= max_items or cursor is None:
            break
    return items[:max_items], cursor
