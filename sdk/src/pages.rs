//! Reading a paginated list: page after page until enough items, no next
//! page, or the page budget runs out (a bound on requests, whatever the
//! upstream answers).

use crate::ToolError;

/// Fetches pages with `fetch(cursor)` (`None` first) until `max_items`
/// items, no next cursor, or `max_pages` pages; returns at most
/// `max_items` items and the cursor to go on from, if there is more.
pub fn collect<T, C>(
    max_items: usize,
    max_pages: usize,
    mut fetch: impl FnMut(Option<C>) -> Result<(Vec<T>, Option<C>), ToolError>,
) -> Result<(Vec<T>, Option<C>), ToolError> {
    let mut items = Vec::new();
    let mut cursor = None;
    for _ in 0..max_pages.max(1) {
        let (page, next) = fetch(cursor.take())?;
        items.extend(page);
        cursor = next;
        if items.len() >= max_items || cursor.is_none() {
            break;
        }
    }
    items.truncate(max_items);
    Ok((items, cursor))
}

#[cfg(test)]
mod tests {
    #[test]
    fn stops_at_enough_items_the_last_page_or_the_page_budget() {
        let pages = |n: usize| {
            move |c: Option<usize>| {
                let at = c.unwrap_or(0);
                Ok((vec![at; 3], (at + 1 < n).then_some(at + 1)))
            }
        };
        assert_eq!(
            super::collect(100, 10, pages(2)).unwrap(),
            (vec![0, 0, 0, 1, 1, 1], None)
        );
        assert_eq!(
            super::collect(4, 10, pages(5)).unwrap(),
            (vec![0, 0, 0, 1], Some(2))
        );
        assert_eq!(super::collect(100, 2, pages(5)).unwrap().1, Some(2));
    }
}
