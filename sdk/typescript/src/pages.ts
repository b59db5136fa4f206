// Reading a paginated list: page after page until enough items, no next
// page, or the page budget runs out (a bound on requests, whatever the
// upstream answers).

/**
 * Fetches pages with `fetch(cursor)` (`undefined` first) until `maxItems`
 * items, no next cursor, or `maxPages` pages; returns at most `maxItems`
 * items and the cursor to go on from, if there is more.
 */
export function collect<T, C>(
  maxItems: number,
  maxPages: number,
  fetch: (cursor: C | undefined) => [T[], C | undefined],
): [T[], C | undefined] {
  const items: T[] = [];
  let cursor: C | undefined;
  for (let page = 0; page < Math.max(maxPages, 1); page++) {
    const [found, next] = fetch(cursor);
    items.push(...found);
    cursor = next;
    if (items.length >= maxItems || cursor === undefined) {
      break;
    }
  }
  return [items.slice(0, maxItems), cursor];
}
