//! Guest stdout and stderr, captured with a size cap.
//!
//! Bytes past the cap are counted and dropped, never refused: a refused write
//! would make a Rust guest's `print!` panic, turning chatty output into a trap.

use parking_lot::Mutex;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// A capped in-memory sink for one stream of one call.
#[derive(Clone)]
pub struct CappedOutput {
    cap: usize,
    inner: Arc<Mutex<Captured>>,
}

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: u64,
}

impl CappedOutput {
    /// A sink that keeps at most `cap` bytes.
    pub fn new(cap: usize) -> CappedOutput {
        CappedOutput {
            cap,
            inner: Arc::new(Mutex::new(Captured::default())),
        }
    }

    /// What was kept, as lossy UTF-8, and how many bytes were dropped.
    pub fn take(&self) -> (String, u64) {
        let inner = self.inner.lock();
        (
            String::from_utf8_lossy(&inner.bytes).into_owned(),
            inner.dropped,
        )
    }
}

impl IsTerminal for CappedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedOutput {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for CappedOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut inner = self.inner.lock();
        let room = self.cap.saturating_sub(inner.bytes.len());
        let keep = room.min(buf.len());
        inner.bytes.extend_from_slice(&buf[..keep]);
        inner.dropped += (buf.len() - keep) as u64;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
