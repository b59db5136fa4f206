//! The real compile of a component whose surface was read from its shape
//! ([`super::shape`]): queued at load and run by a few background threads,
//! so that a host with many connectors listens and serves their tools
//! before Cranelift is done with them. A call waits for its own
//! component's compile only: one not started yet is compiled at once on a
//! blocking thread of the call's runtime, ahead of the queue. A compile
//! that fails is logged and fails that component's calls with its error;
//! the host and the other connectors go on. The compile cache is filled as
//! each compile ends, so the next start loads the compiled code at load.

use super::*;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::{OnceLock, Weak};

/// Background compile threads. Each compile already spreads its functions
/// over every core (wasmtime's rayon pool); a second thread overlaps one
/// component's serial phases (validation, linking) with another's
/// functions. Not yet measured against one: `SCOUT_COMPILE_THREADS`
/// overrides it, for that measurement.
const COMPILE_THREADS: usize = 2;

/// What a call of a component needs of its compiled code.
pub(super) struct Compiled {
    pub(super) pre: InstancePre<CallState>,
    /// Each tool's export in the compiled component, `info.tools[i]`'s at `i`.
    pub(super) exports: Vec<ComponentExportIndex>,
}

impl Compiled {
    /// Links `component` and finds each export of `paths` (interface,
    /// function) in it.
    pub(super) fn of(
        runtime: &RuntimeInner,
        component: &Component,
        paths: &[(String, String)],
    ) -> Result<Compiled, LoadError> {
        let pre = runtime
            .linker
            .instantiate_pre(component)
            .map_err(LoadError::Link)?;
        let exports = paths
            .iter()
            .map(|(interface, function)| {
                let interface_index =
                    component.get_export_index(None, interface).ok_or_else(|| {
                        LoadError::Mismatch(format!("export `{interface}` cannot be found"))
                    })?;
                component
                    .get_export_index(Some(&interface_index), function)
                    .ok_or_else(|| {
                        LoadError::Mismatch(format!("function `{function}` cannot be found"))
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Compiled { pre, exports })
    }
}

/// A component's compiled code: there from the start (a cached or
/// synchronous compile), or being compiled.
pub(super) struct Compilation {
    /// The connector, for the log.
    connector: String,
    /// The component's bytes until someone starts compiling them.
    bytes: Mutex<Option<Vec<u8>>>,
    /// Each tool's (interface, function), in `info.tools`' order.
    paths: Vec<(String, String)>,
    runtime: Weak<RuntimeInner>,
    /// The compile's outcome, once it ended (the error as text: it is
    /// given to every call).
    done: OnceLock<Result<Compiled, String>>,
    /// Flipped to `true` when `done` is set.
    finished: tokio::sync::watch::Sender<bool>,
}

impl Compilation {
    /// Code already compiled.
    pub(super) fn ready(connector: &str, compiled: Compiled) -> Arc<Compilation> {
        let done = OnceLock::new();
        let _ = done.set(Ok(compiled));
        Arc::new(Compilation {
            connector: connector.to_string(),
            bytes: Mutex::new(None),
            paths: Vec::new(),
            runtime: Weak::new(),
            done,
            finished: tokio::sync::watch::Sender::new(true),
        })
    }

    /// `bytes` to compile in the background, queued on `runtime`.
    pub(super) fn queued(
        runtime: &Arc<RuntimeInner>,
        connector: &str,
        bytes: Vec<u8>,
        paths: Vec<(String, String)>,
    ) -> Arc<Compilation> {
        let compilation = Arc::new(Compilation {
            connector: connector.to_string(),
            bytes: Mutex::new(Some(bytes)),
            paths,
            runtime: Arc::downgrade(runtime),
            done: OnceLock::new(),
            finished: tokio::sync::watch::Sender::new(false),
        });
        runtime.compiles.push(Arc::downgrade(&compilation));
        compilation
    }

    /// Compiles here unless someone already started (or finished).
    fn run(&self) {
        let Some(bytes) = self.bytes.lock().take() else {
            return;
        };
        let outcome = match self.runtime.upgrade() {
            Some(inner) => {
                let started = Instant::now();
                let runtime = Runtime { inner };
                let outcome = runtime
                    .compile(&bytes)
                    .and_then(|component| Compiled::of(&runtime.inner, &component, &self.paths))
                    .map_err(|e| format!("{e:#}"));
                match &outcome {
                    Ok(_) => tracing::debug!(
                        connector = %self.connector,
                        ms = started.elapsed().as_millis() as u64,
                        "compiled"
                    ),
                    Err(error) => tracing::error!(
                        connector = %self.connector,
                        error = %error,
                        "the connector's component did not compile: its calls fail"
                    ),
                }
                outcome
            }
            None => Err("the runtime was dropped before the compile".to_string()),
        };
        let _ = self.done.set(outcome);
        self.finished.send_replace(true);
    }

    /// The compiled code, waiting for the compile if it has not ended: one
    /// not started yet is compiled now, on a blocking thread.
    pub(super) async fn compiled(self: &Arc<Self>) -> Result<&Compiled, CallError> {
        if let Some(done) = self.done.get() {
            return Self::outcome(done);
        }
        let mut finished = self.finished.subscribe();
        if self.bytes.lock().is_some() {
            let this = self.clone();
            // Not awaited: a call that gives up waiting leaves it running.
            drop(tokio::task::spawn_blocking(move || this.run()));
        }
        let _ = finished.wait_for(|done| *done).await;
        match self.done.get() {
            Some(done) => Self::outcome(done),
            None => Err(CallError::NotCompiled(
                "the compile ended without an outcome".to_string(),
            )),
        }
    }

    fn outcome(done: &Result<Compiled, String>) -> Result<&Compiled, CallError> {
        done.as_ref()
            .map_err(|error| CallError::NotCompiled(error.clone()))
    }

    /// The compile's error, once it ended with one.
    pub(super) fn error(&self) -> Option<&str> {
        self.done.get()?.as_ref().err().map(String::as_str)
    }
}

/// The components waiting for their compile, and the threads running them
/// (started when work is queued, ended when none is left).
#[derive(Default)]
pub(super) struct CompileQueue {
    inner: Arc<Mutex<QueueState>>,
}

#[derive(Default)]
struct QueueState {
    waiting: VecDeque<Weak<Compilation>>,
    threads: usize,
    /// Holds taken ([`Runtime::hold_compiles`]): no thread starts while
    /// one is.
    held: usize,
}

impl CompileQueue {
    fn push(&self, compilation: Weak<Compilation>) {
        let mut state = self.inner.lock();
        state.waiting.push_back(compilation);
        if state.held == 0 {
            self.start_threads(&mut state);
        }
    }

    /// Holds queued compiles until the returned guard is dropped.
    fn hold(&self) -> CompileHold {
        self.inner.lock().held += 1;
        CompileHold {
            queue: CompileQueue {
                inner: self.inner.clone(),
            },
        }
    }

    /// Starts threads, up to [`COMPILE_THREADS`], for the compiles waiting.
    fn start_threads(&self, state: &mut QueueState) {
        let threads = std::env::var("SCOUT_COMPILE_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(COMPILE_THREADS);
        let wanted = threads.min(state.threads + state.waiting.len());
        while state.threads < wanted {
            if !self.start_thread() {
                return;
            }
            state.threads += 1;
        }
    }

    /// One compile thread, which ends when nothing is left to compile.
    fn start_thread(&self) -> bool {
        let queue = self.inner.clone();
        let spawned = std::thread::Builder::new()
            .name("scout-compile".to_string())
            .spawn(move || {
                loop {
                    let next = {
                        let mut state = queue.lock();
                        match state.waiting.pop_front() {
                            Some(next) => next,
                            None => {
                                state.threads -= 1;
                                return;
                            }
                        }
                    };
                    // A component dropped before its turn is not compiled.
                    if let Some(compilation) = next.upgrade() {
                        compilation.run();
                    }
                }
            });
        match spawned {
            Ok(_) => true,
            // Its first call compiles it instead.
            Err(e) => {
                tracing::warn!(error = %e, "cannot start a compile thread");
                false
            }
        }
    }
}

/// Queued compiles wait while this is held ([`Runtime::hold_compiles`]).
pub struct CompileHold {
    queue: CompileQueue,
}

impl Drop for CompileHold {
    fn drop(&mut self) {
        let mut state = self.queue.inner.lock();
        state.held -= 1;
        if state.held == 0 {
            self.queue.start_threads(&mut state);
        }
    }
}

impl Runtime {
    /// Holds the background compiles of the components loaded meanwhile
    /// until the guard is dropped. A host loading many connectors takes it
    /// around the loading: each component not in the cache is loaded from
    /// its shape, a compile of a few milliseconds that runs on wasmtime's
    /// shared worker pool, and would wait there behind the real compiles
    /// queued before it (measured: 17 connectors listened after 4.3 s,
    /// the time of all their compiles). A call does not wait for the hold:
    /// one whose component is not compiled yet compiles it at once.
    pub fn hold_compiles(&self) -> CompileHold {
        self.inner.compiles.hold()
    }
}
