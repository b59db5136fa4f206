//! A guest that misbehaves on purpose: each tool attacks the host in one way.

scout_sdk::bindings!();

use bindings::exports::scout::hostile::read_tools::{Fetched, Guest};
use scout_sdk::{Http, Method, ToolError};
use std::io::{Read, Write};

struct Hostile;

impl Guest for Hostile {
    fn spin() -> Result<u64, ToolError> {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn hog(mebibytes: u32) -> Result<u64, ToolError> {
        let mut kept: Vec<Vec<u8>> = Vec::new();
        let mut total = 0u64;
        for _ in 0..mebibytes {
            let block = vec![0xA5u8; 1 << 20];
            total += block.len() as u64;
            kept.push(std::hint::black_box(block));
        }
        Ok(total)
    }

    fn fetch(path: String, headers: Vec<(String, String)>) -> Result<Fetched, ToolError> {
        let mut http = Http::connect()?;
        for (name, value) in &headers {
            http = http.with_header(name, value);
        }
        let response = http.send(Method::Get, &path, &[], None)?;
        Ok(Fetched {
            status: response.status,
            body: String::from_utf8_lossy(&response.body).into_owned(),
            headers: response.headers,
        })
    }

    fn environment() -> Result<Vec<String>, ToolError> {
        let mut found: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
        found.extend(std::env::args());
        let mut stdin = String::new();
        let _ = std::io::stdin().read_to_string(&mut stdin);
        if !stdin.is_empty() {
            found.push(stdin);
        }
        Ok(found)
    }

    fn print(bytes: u32) -> Result<u32, ToolError> {
        let chunk = vec![b'x'; 1024];
        let mut left = bytes as usize;
        while left > 0 {
            let n = left.min(chunk.len());
            std::io::stdout()
                .write_all(&chunk[..n])
                .map_err(|e| ToolError::invalid(e.to_string()))?;
            std::io::stderr()
                .write_all(&chunk[..n])
                .map_err(|e| ToolError::invalid(e.to_string()))?;
            left -= n;
        }
        std::io::stdout()
            .flush()
            .map_err(|e| ToolError::invalid(e.to_string()))?;
        Ok(bytes)
    }

    fn crash() -> Result<u32, ToolError> {
        panic!("the hostile guest panicked on purpose")
    }

    fn echo(text: String) -> Result<String, ToolError> {
        scout_sdk::log::info(&format!("echoing {text}"));
        eprintln!("echoing {text}");
        Ok(text)
    }

    fn handles(count: u32) -> Result<u32, ToolError> {
        for _ in 0..count {
            // Each call puts one more stream in the host's resource table.
            std::mem::forget(wasi::cli::stdout::get_stdout());
        }
        Ok(count)
    }

    fn probe_route(method: String, path: String) -> Result<u16, ToolError> {
        let method = match method.as_str() {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            other => return Err(ToolError::invalid(format!("unknown method {other}"))),
        };
        let body =
            matches!(method, Method::Post | Method::Put | Method::Patch).then(|| b"{}".to_vec());
        Ok(Http::connect()?.send(method, &path, &[], body)?.status)
    }

    fn shout(text: String) -> Result<u32, ToolError> {
        let fail = |e: std::io::Error| ToolError::invalid(e.to_string());
        std::io::stdout().write_all(text.as_bytes()).map_err(fail)?;
        std::io::stdout().flush().map_err(fail)?;
        std::io::stderr().write_all(text.as_bytes()).map_err(fail)?;
        scout_sdk::log::info(&text);
        Ok(text.len() as u32)
    }

    fn graphql_read(
        params: Vec<(String, String)>,
        headers: Vec<(String, String)>,
        body: String,
    ) -> Result<u16, ToolError> {
        let mut http = Http::connect()?;
        for (name, value) in &headers {
            http = http.with_header(name, value);
        }
        let query: Vec<(&str, &str)> = params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let response = http.send(
            Method::Post,
            "/api/graphql.json",
            &query,
            Some(body.into_bytes()),
        )?;
        Ok(response.status)
    }

    fn query_post(query: String) -> Result<u16, ToolError> {
        let body = format!("{{\"query\":{query:?}}}").into_bytes();
        Ok(Http::connect()?
            .send(Method::Post, "/graphql", &[], Some(body))?
            .status)
    }
}

scout_sdk::export!(Hostile);
