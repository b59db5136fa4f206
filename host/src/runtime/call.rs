//! One call: a fresh store from the pooling allocator with its limits,
//! deadlines and captured output, the guest instantiated and run, and its
//! answer read from the component value.

use super::*;

impl LoadedComponent {
    /// A fresh store for one call: limits, deadline, captured output.
    fn new_store(
        runtime: &RuntimeInner,
        caps: &Capabilities,
        tool: Option<&Tool>,
        started: Instant,
        deadline: Instant,
    ) -> (Store<CallState>, CappedOutput, CappedOutput) {
        let config = &runtime.config;
        let stdout = CappedOutput::new(config.output_cap);
        let stderr = CappedOutput::new(config.output_cap);
        let wasi = crate::capabilities::state::WasiFrom {
            stdout: stdout.clone(),
            stderr: stderr.clone(),
            started,
        };
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_TABLE_ENTRIES);
        let deadline = CallDeadline::new(deadline);
        let state = CallState::new(
            wasi,
            table,
            CallLimiter {
                max_memory: config.max_memory_bytes,
                max_table: config.max_table_elements,
                memory_hit: false,
            },
            caps,
            tool.map(|t| t.name.clone()).unwrap_or_default(),
            tool.map_or_else(|| Arc::new(RouteSet::none()), |t| t.route_set.clone()),
            deadline.clone(),
        );
        let mut store = Store::new(&runtime.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(1);
        // Owned by the store: the ticker runs while the store can run code.
        let ticking = runtime.ticker.ticking();
        store.epoch_deadline_callback(move |mut ctx| {
            let _alive = &ticking;
            if deadline.passed() {
                ctx.data_mut().deadline_hit = true;
                return Err(wasmtime::Error::msg("the call's deadline passed"));
            }
            Ok(UpdateDeadline::Yield(1))
        });
        (store, stdout, stderr)
    }

    /// Creates a fresh store and instantiates the component in it, then drops
    /// both: what every call pays before the tool runs (for benchmarks).
    pub async fn instantiate_fresh(&self) -> Result<(), CallError> {
        let Backend::Wasm {
            runtime,
            compiled,
            slots_per_call,
        } = &self.backend
        else {
            return Ok(());
        };
        let pre = &compiled.compiled().await?.pre;
        let _slot = Self::slot(runtime, *slots_per_call).await?;
        let started = Instant::now();
        let (mut store, _, _) = Self::new_store(
            runtime,
            &Capabilities::default(),
            None,
            started,
            started + runtime.config.call_timeout,
        );
        pre.instantiate_async(&mut store)
            .await
            .map_err(CallError::Instantiate)?;
        Ok(())
    }

    /// Waits for `slots` free instance slots (the component's size, see
    /// [`load::slots_per_call`]), at most the call timeout.
    async fn slot(
        runtime: &RuntimeInner,
        slots: u32,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, CallError> {
        let wait = runtime.config.call_timeout;
        match tokio::time::timeout(wait, runtime.slots.clone().acquire_many_owned(slots)).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(CallError::Busy),
        }
    }

    /// Where `tool` is among this component's own tools, if it is one.
    fn index_of(&self, tool: &Tool) -> Option<usize> {
        let tools = self.info.tools.as_ptr_range();
        let at = std::ptr::from_ref(tool);
        tools
            .contains(&at)
            .then(|| (at as usize - tools.start as usize) / std::mem::size_of::<Tool>())
    }

    /// Calls the tool named `tool` in a fresh store, granting it `caps` for
    /// this call only.
    pub async fn call(
        &self,
        tool: &str,
        args: &Value,
        caps: &Capabilities,
    ) -> Result<CallOutcome, CallError> {
        let tool = self
            .tool(tool)
            .ok_or_else(|| CallError::UnknownTool(tool.to_string()))?;
        self.run(tool, args, caps).await
    }

    /// Runs `tool`, one of this component's own (as [`LoadedComponent::tool`]
    /// resolved it), in a fresh store with `caps` for this call only: the
    /// boundary resolves a call's tool once and runs that.
    pub async fn run(
        &self,
        tool: &Tool,
        args: &Value,
        caps: &Capabilities,
    ) -> Result<CallOutcome, CallError> {
        // Another component's tool would name an export of another
        // component: refused, as a name this one does not serve.
        // Its place among this component's tools: its export's.
        let Some(index) = self.index_of(tool) else {
            return Err(CallError::UnknownTool(tool.name.clone()));
        };
        let (runtime, compiled, slots_per_call) = match (&self.backend, &tool.export) {
            (
                Backend::Wasm {
                    runtime,
                    compiled,
                    slots_per_call,
                },
                Some(_),
            ) => (runtime, compiled, *slots_per_call),
            (Backend::Remote { call_timeout }, _) => {
                return call_remote(tool, args, caps, *call_timeout).await;
            }
            (Backend::Wasm { .. }, None) => {
                return Err(CallError::UnknownTool(tool.name.clone()));
            }
        };
        let params = tool
            .guest_values(args)
            .map_err(|m| CallError::InvalidArguments {
                path: m.path,
                message: m.message,
            })?;
        // The first call of a component loaded from its shape waits here for
        // its compile; every later one finds it done.
        let compiled = compiled.compiled().await?;
        let (pre, export) = match compiled.exports.get(index) {
            Some(export) => (&compiled.pre, *export),
            None => return Err(CallError::UnknownTool(tool.name.clone())),
        };
        let _slot = Self::slot(runtime, slots_per_call).await?;
        let config = &runtime.config;
        let started = Instant::now();
        let deadline = started + config.call_timeout;

        let (mut store, stdout, stderr) =
            Self::new_store(runtime, caps, Some(tool), started, deadline);
        // Paused while a person decides on one of the call's reservations.
        let deadline = store.data().deadline.clone();

        let run = async {
            let instance = pre.instantiate_async(&mut store).await?;
            let instantiated = started.elapsed();
            let func = instance.get_func(&mut store, export).ok_or_else(|| {
                wasmtime::Error::msg("the tool's export is missing from the instance")
            })?;
            let mut results = vec![Val::Bool(false)];
            func.call_async(&mut store, &params, &mut results).await?;
            let value = results
                .pop()
                .ok_or_else(|| wasmtime::Error::msg("the tool returned no result"))?;
            wasmtime::Result::Ok((value, instantiated))
        };
        let result: Result<wasmtime::Result<(Val, std::time::Duration)>, ()> =
            until_deadline(&deadline, run).await;
        let timeout_ms = config.call_timeout.as_millis() as u64;
        let state = store.data();
        let value = match result {
            Err(()) => return Err(CallError::Deadline(timeout_ms)),
            Ok(Err(_)) if state.deadline_hit => return Err(CallError::Deadline(timeout_ms)),
            Ok(Err(_)) if state.limiter.memory_hit => {
                return Err(CallError::MemoryLimit(config.max_memory_bytes));
            }
            Ok(Err(e))
                if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                    .is_some() =>
            {
                return Err(CallError::Busy);
            }
            Ok(Err(e)) => return Err(CallError::Trap(caps.scrub_text(&format!("{e:#}")))),
            Ok(Ok(done)) => done,
        };
        let (value, instantiated) = value;
        // A handle renewed during the call (a 401, a fresh token) scrubs its
        // secret too.
        let renewed;
        let caps = if state.http.renewed.is_empty() {
            caps
        } else {
            let mut all = caps.clone();
            all.http = state.http.http.clone().or(all.http);
            for (name, http) in &state.http.destinations {
                all.destinations
                    .entry(format!("{name} (renewed)"))
                    .or_insert_with(|| http.clone());
            }
            renewed = all;
            &renewed
        };
        // The tool's own answer is its WIT `result`: read from the value,
        // then scrubbed (defence in depth: the guest never held the secret,
        // so this finds nothing unless an upstream reflected it in a form
        // the http scrub missed).
        let json = |v: Option<Box<Val>>| v.map_or(Value::Null, |v| convert::to_json(&v));
        let mut output = match value {
            Val::Result(Ok(ok)) => ToolOutput::Ok(json(ok)),
            Val::Result(Err(err)) => ToolOutput::Err(json(err)),
            // The export was checked to return a `result` at load.
            other => ToolOutput::Err(convert::to_json(&other)),
        };
        match &mut output {
            ToolOutput::Ok(v) | ToolOutput::Err(v) => caps.scrub_json(v),
        }
        // What the caps kept is the start of longer output: scrubbed, then
        // cut again so that no secret's beginning is left at its end.
        let (out, out_dropped) = stdout.take();
        let (err, err_dropped) = stderr.take();
        let (out, out_cut) = caps.scrub_and_cut(&out, config.output_cap, out_dropped > 0);
        let (err, err_cut) = caps.scrub_and_cut(&err, config.output_cap, err_dropped > 0);
        let state = store.into_data();
        Ok(CallOutcome {
            output,
            stdout: out,
            stderr: err,
            output_dropped: out_dropped + err_dropped + out_cut + err_cut,
            logs: state.log.lines,
            http: state.http.exchanges,
            credentials: state.http.credential_events,
            micros: started.elapsed().as_micros() as u64,
            instantiate_micros: instantiated.as_micros() as u64,
            output_wrapped: tool.output_wrapped,
        })
    }
}

/// One call of a remote MCP server's tool: one `tools/call` through the
/// call's `mcp` handle, under the call's deadline. The server's answer is
/// the tool's: `isError` is a tool error, anything else its result (already
/// capped and scrubbed by the handle, scrubbed again here).
async fn call_remote(
    tool: &Tool,
    args: &Value,
    caps: &Capabilities,
    call_timeout: Duration,
) -> Result<CallOutcome, CallError> {
    use crate::capabilities::mcp::McpFailure;
    if !args.is_object() {
        return Err(CallError::InvalidArguments {
            path: "$".into(),
            message: "the arguments of an MCP tool are an object".into(),
        });
    }
    let Some(upstream) = &caps.mcp else {
        // Why the handle was not granted, where the host knows (a token it
        // could not obtain), else that none was.
        return Err(CallError::Upstream(
            caps.refused
                .get(&None)
                .cloned()
                .unwrap_or_else(|| "no upstream session was granted for this call".into()),
        ));
    };
    // A host that no longer holds its lease sends nothing (issue 31).
    if caps.fence.as_ref().is_some_and(|may_act| !may_act()) {
        return Err(CallError::Upstream(
            crate::capabilities::LEASE_NOT_HELD.into(),
        ));
    }
    let started = Instant::now();
    let answer = upstream
        .call_tool(&tool.function, args, started + call_timeout)
        .await;
    let mut output = match answer.result {
        Ok(result) if result.get("isError").and_then(Value::as_bool) == Some(true) => {
            ToolOutput::Err(result)
        }
        Ok(result) => ToolOutput::Ok(result),
        Err(McpFailure::Deadline) => {
            return Err(CallError::Deadline(call_timeout.as_millis() as u64));
        }
        Err(McpFailure::Upstream(why)) => return Err(CallError::Upstream(caps.scrub_text(&why))),
    };
    match &mut output {
        ToolOutput::Ok(v) | ToolOutput::Err(v) => caps.scrub_json(v),
    }
    // What the server asked the person is in the call's record, as lines
    // of the host's (never the question or the answer).
    let logs = answer
        .asked
        .iter()
        .map(|outcome| crate::capabilities::log::GuestLog {
            level: "info",
            message: format!(
                "the server asked the session's person (elicitation/create): {outcome}"
            ),
        })
        .collect();
    Ok(CallOutcome {
        output,
        stdout: String::new(),
        stderr: String::new(),
        output_dropped: 0,
        logs,
        http: answer.exchanges,
        credentials: caps
            .credential_events
            .iter()
            .cloned()
            .chain(answer.renewals)
            .collect(),
        micros: started.elapsed().as_micros() as u64,
        instantiate_micros: 0,
        output_wrapped: tool.output_wrapped,
    })
}

/// Runs `run` until it ends, or `Err` once `deadline` passes (it may be
/// paused and moved on while `run` waits for a person).
async fn until_deadline<T>(
    deadline: &CallDeadline,
    run: impl std::future::Future<Output = T>,
) -> Result<T, ()> {
    tokio::pin!(run);
    loop {
        // Registered before the deadline is read: a change in between wakes it.
        let changed = deadline.changed();
        let at = deadline.at();
        let expires = async {
            match at {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            done = &mut run => return Ok(done),
            () = expires => {
                if deadline.passed() {
                    return Err(());
                }
            }
            () = changed => {}
        }
    }
}
