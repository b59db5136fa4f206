//! What many sessions hold alike, kept once: the tools a session was
//! offered when it opened, the tools it was not given with the rule that
//! removed each, and its surface are the same for every session of one
//! role, brand's connections and switches. An idle session holds an `Arc`
//! of them instead of its own copy (issue 58: what an open idle session
//! costs is counted in kilobytes; the catalogue's hundred-odd removed tools
//! alone were about 10 KB a session).
//!
//! An [`Interner`] hands out the `Arc` of a value equal to the one given
//! while any session still holds it, and forgets it once none does.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Weak};

/// Values held by `Arc`, one per distinct content while any is held.
pub struct Interner<T> {
    held: Mutex<Held<T>>,
}

struct Held<T> {
    by_hash: HashMap<u64, Vec<Weak<T>>>,
    /// The hasher the keys are made with.
    hasher: std::collections::hash_map::RandomState,
    /// Values kept since the dead ones were last forgotten.
    kept_since_purge: usize,
    /// Values still held when they were.
    live_at_purge: usize,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            held: Mutex::new(Held {
                by_hash: HashMap::new(),
                hasher: Default::default(),
                kept_since_purge: 0,
                live_at_purge: 0,
            }),
        }
    }
}

impl<T: Hash + Eq> Interner<T> {
    /// The `Arc` of a value equal to `value` that is still held somewhere,
    /// or `value` in a new one.
    pub fn intern(&self, value: T) -> Arc<T> {
        let hash = self.held.lock().hasher.hash_one(&value);
        self.intern_hashed(hash, value)
    }
}

impl<T: PartialEq> Interner<T> {
    /// [`Interner::intern`] for a value hashed by the caller (`hash`: equal
    /// values hash alike; unequal ones may too).
    pub fn intern_hashed(&self, hash: u64, value: T) -> Arc<T> {
        let mut held = self.held.lock();
        if let Some(found) = held
            .by_hash
            .get(&hash)
            .and_then(|kept| kept.iter().filter_map(Weak::upgrade).find(|k| **k == value))
        {
            return found;
        }
        let value = Arc::new(value);
        held.by_hash
            .entry(hash)
            .or_default()
            .push(Arc::downgrade(&value));
        held.kept_since_purge += 1;
        // Forget the values no session holds any more, once more were kept
        // since the last time than were still held then (amortised: the
        // map stays within about twice the values held, or 64).
        if held.kept_since_purge > held.live_at_purge.max(64) {
            held.by_hash.retain(|_, kept| {
                kept.retain(|k| k.strong_count() > 0);
                !kept.is_empty()
            });
            held.kept_since_purge = 0;
            held.live_at_purge = held.by_hash.values().map(Vec::len).sum();
        }
        value
    }

    /// A hash of `parts`, made as this interner makes its own.
    pub fn hash_of(&self, parts: impl Hash) -> u64 {
        self.held.lock().hasher.hash_one(parts)
    }

    /// Distinct values still held (for tests).
    #[cfg(test)]
    pub fn distinct(&self) -> usize {
        let held = self.held.lock();
        held.by_hash
            .values()
            .flatten()
            .filter(|k| k.strong_count() > 0)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn equal_values_share_one_arc_and_different_ones_do_not() {
        let interner = Interner::default();
        let a = interner.intern(names(&["Read", "mcp__github__github_read_file"]));
        let b = interner.intern(names(&["Read", "mcp__github__github_read_file"]));
        let c = interner.intern(names(&["Read"]));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(*c, names(&["Read"]));
        assert_eq!(interner.distinct(), 2);
    }

    #[test]
    fn a_value_nobody_holds_is_forgotten() {
        let interner = Interner::default();
        let kept = interner.intern(names(&["kept"]));
        for i in 0..1000 {
            drop(interner.intern(names(&[format!("gone-{i}").as_str()])));
        }
        assert_eq!(interner.distinct(), 1);
        assert!(interner.held.lock().by_hash.len() <= 130);
        assert!(Arc::ptr_eq(&kept, &interner.intern(names(&["kept"]))));
    }

    #[test]
    fn sessions_opened_alike_share_what_they_were_offered_and_not_given() {
        use crate::boundary::Boundary;
        use crate::policy::{BrandFacts, Catalog, Role, SessionInput, Switches};
        use crate::session::Session;
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn crate::store::Store> =
            Arc::new(crate::store::SqliteStore::open(dir.path().join("shared.db")).unwrap());
        let boundary = Boundary::new(store, Catalog::seed(), Switches::default());
        let input = |connectors: &[&str]| {
            SessionInput::new(Role::PersonChat)
                .brand(BrandFacts::with_connectors(connectors.iter().copied()))
                .approval_channel(true)
        };
        let a = Session::new("s-a", "acme", input(&["github"]));
        let b = Session::new("s-b", "acme", input(&["github"]));
        let c = Session::new("s-c", "acme", input(&["github", "firecrawl"]));
        let [oa, ob, oc] = [&a, &b, &c].map(|s| boundary.open_session(s).unwrap());
        assert!(Arc::ptr_eq(&oa.surface, &ob.surface));
        assert!(Arc::ptr_eq(
            a.opened.get().unwrap(),
            b.opened.get().unwrap()
        ));
        assert!(Arc::ptr_eq(
            a.removed.get().unwrap(),
            b.removed.get().unwrap()
        ));
        assert!(
            b.opened
                .get()
                .unwrap()
                .contains("mcp__github__github_read_file")
        );
        // Another brand's connections: its own surface, and what it holds.
        assert!(!Arc::ptr_eq(&oa.surface, &oc.surface));
        assert!(
            c.opened
                .get()
                .unwrap()
                .contains("mcp__firecrawl__firecrawl_scrape")
        );
        assert!(
            !c.removed
                .get()
                .unwrap()
                .contains_key("mcp__firecrawl__firecrawl_scrape")
        );
        // A withdrawal of one session's changes its surface alone.
        a.withdraw("github");
        let withdrawn = boundary.offered(&a).unwrap();
        assert!(
            withdrawn
                .surface
                .get("mcp__github__github_read_file")
                .is_none()
        );
        let still = boundary.offered(&b).unwrap();
        assert!(Arc::ptr_eq(&still.surface, &ob.surface));
        assert!(still.surface.get("mcp__github__github_read_file").is_some());
    }
}
