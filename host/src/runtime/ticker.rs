//! The epoch ticker: wasmtime checks a call's deadline when the engine's
//! epoch advances, so something must advance it while a call runs, and
//! nothing need while none does.
//!
//! One thread sleeps a tick at a time while a call's store is alive and
//! parks when the last one is dropped. An idle host wakes no thread a
//! hundred times a second, and a paced client's call finds the ticker
//! parked and wakes it once. A store is counted by a [`Ticking`] guard that
//! the store itself owns (in its deadline callback), so it is counted for
//! exactly as long as it can run guest code.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::Duration;

/// The ticker's thread and what it reads; dropped with the runtime.
pub(crate) struct Ticker {
    shared: Arc<Shared>,
}

struct Shared {
    /// Stores alive now; the thread ticks while this is above zero.
    live: AtomicUsize,
    stop: AtomicBool,
    /// The ticker's thread, set by [`Ticker::start`] before it returns,
    /// so before any [`Ticking`] can exist.
    thread: OnceLock<Thread>,
}

impl Shared {
    fn wake(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }
}

/// Counts one store as alive for as long as it is held.
pub(crate) struct Ticking {
    shared: Arc<Shared>,
}

impl Ticker {
    /// Starts the thread: it calls `tick` every `every` while a [`Ticking`]
    /// is held, and parks otherwise.
    pub(crate) fn start(
        every: Duration,
        tick: impl Fn() + Send + 'static,
    ) -> std::io::Result<Ticker> {
        let shared = Arc::new(Shared {
            live: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            thread: OnceLock::new(),
        });
        let ticking = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("scout-epoch".to_string())
            .spawn(move || {
                loop {
                    if ticking.stop.load(Ordering::Acquire) {
                        return;
                    }
                    if ticking.live.load(Ordering::Acquire) == 0 {
                        // An unpark between the load and here leaves a
                        // token, so this returns at once: no lost wake-up.
                        std::thread::park();
                        continue;
                    }
                    std::thread::sleep(every);
                    tick();
                }
            })?;
        let _ = shared.thread.set(spawned.thread().clone());
        Ok(Ticker { shared })
    }

    /// Counts a store as alive until the guard is dropped; wakes the
    /// thread when it is the first.
    pub(crate) fn ticking(&self) -> Ticking {
        if self.shared.live.fetch_add(1, Ordering::AcqRel) == 0 {
            self.shared.wake();
        }
        Ticking {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Ticking {
    fn drop(&mut self) {
        self.shared.live.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::time::Instant;

    fn counting_ticker() -> (Ticker, Arc<AtomicU64>) {
        let ticks = Arc::new(AtomicU64::new(0));
        let counted = ticks.clone();
        let ticker = Ticker::start(Duration::from_millis(1), move || {
            counted.fetch_add(1, Ordering::Relaxed);
        })
        .expect("the ticker's thread starts");
        (ticker, ticks)
    }

    /// Waits (at most 10 s, polling) until `ticks` passes `above`.
    fn wait_past(ticks: &AtomicU64, above: u64) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if ticks.load(Ordering::Relaxed) > above {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn without_a_live_store_the_ticker_does_not_tick() {
        let (_ticker, ticks) = counting_ticker();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(ticks.load(Ordering::Relaxed), 0, "no store, no tick");
    }

    #[test]
    fn a_live_store_wakes_the_ticker_and_its_drop_parks_it_again() {
        let (ticker, ticks) = counting_ticker();
        let guard = ticker.ticking();
        assert!(wait_past(&ticks, 3), "a live store makes the epoch advance");
        drop(guard);
        // At most the sleep in progress ends with one more tick.
        std::thread::sleep(Duration::from_millis(20));
        let settled = ticks.load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            ticks.load(Ordering::Relaxed) <= settled + 1,
            "the ticker parks once no store is alive"
        );
        // And wakes again for the next one.
        let again = ticker.ticking();
        assert!(wait_past(&ticks, settled + 1), "a later store wakes it");
        drop(again);
    }

    #[test]
    fn two_stores_keep_it_ticking_until_both_are_dropped() {
        let (ticker, ticks) = counting_ticker();
        let first = ticker.ticking();
        let second = ticker.ticking();
        drop(first);
        let now = ticks.load(Ordering::Relaxed);
        assert!(wait_past(&ticks, now + 3), "one store is still alive");
        drop(second);
    }
}
