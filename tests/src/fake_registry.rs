//! A registry that misbehaves on request, for the artifact tests: a loopback
//! HTTP/1.1 server speaking as much of the OCI distribution API as each
//! test has it answer (a manifest, a redirect, a token challenge, a body
//! that does not end). It records every request and counts the bytes of
//! each streamed body it managed to hand to the connection, so a test can
//! say how much a client read before it stopped. A real registry
//! (`docker-registry`) would neither redirect where a test says nor serve a
//! 256 MiB manifest.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One request as the registry saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query as received.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The value of a header, if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the registry answers a request.
pub enum Reply {
    /// A whole answer.
    Answer {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// 200 with `total` bytes of spaces, written until the client stops
    /// reading: with a `Content-Length` when `declare_length`, else chunked.
    Endless { total: u64, declare_length: bool },
}

impl Reply {
    /// 200 with `body` of `content_type`.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Answer {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
        }
    }

    /// `status` pointing at `location`.
    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::Answer {
            status,
            headers: vec![("Location".into(), location.into())],
            body: Vec::new(),
        }
    }

    /// `status` with a short JSON error, and `headers`.
    pub fn status(status: u16, headers: Vec<(String, String)>) -> Reply {
        Reply::Answer {
            status,
            headers,
            body: br#"{"errors":[{"code":"UNKNOWN","message":"as the test said"}]}"#.to_vec(),
        }
    }
}

/// How far a streamed body got.
#[derive(Debug, Clone, Copy, Default)]
pub struct Streamed {
    /// Bytes of the body the connection took.
    pub written: u64,
    /// Whether writing stopped (the body ended, or the client went away).
    pub finished: bool,
}

type Route = dyn Fn(&Request) -> Reply + Send + Sync;

struct Shared {
    route: Box<Route>,
    requests: Mutex<Vec<Request>>,
    streamed: Mutex<HashMap<String, Streamed>>,
    connections: AtomicUsize,
    stop: AtomicBool,
}

/// The running registry; stops when dropped.
pub struct FakeRegistry {
    /// `127.0.0.1:PORT`.
    pub address: String,
    shared: Arc<Shared>,
}

impl FakeRegistry {
    /// Starts on 127.0.0.1:0, answering each request as `route` says
    /// (`route` sees the `Host` header, so it can name its own address).
    /// One request per connection.
    pub fn start(route: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> FakeRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let address = listener.local_addr().expect("local address").to_string();
        let shared = Arc::new(Shared {
            route: Box::new(route),
            requests: Mutex::default(),
            streamed: Mutex::default(),
            connections: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let serving = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if serving.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                serving.connections.fetch_add(1, Ordering::SeqCst);
                let shared = serving.clone();
                std::thread::spawn(move || answer(&shared, stream));
            }
        });
        FakeRegistry { address, shared }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// How far the streamed body answered to `path` got, if one was.
    pub fn streamed(&self, path: &str) -> Option<Streamed> {
        self.shared.streamed.lock().unwrap().get(path).copied()
    }
}

impl Drop for FakeRegistry {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.address);
    }
}

fn answer(shared: &Shared, stream: TcpStream) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let request = Request {
        method,
        path,
        headers,
    };
    let length: u64 = request
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let _ = std::io::copy(&mut (&mut reader).take(length), &mut std::io::sink());
    shared.requests.lock().unwrap().push(request.clone());
    let reply = (shared.route)(&request);
    let mut stream = stream;
    match reply {
        Reply::Answer {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} Whatever\r\nConnection: close\r\n");
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            let _ = stream.write_all(head.as_bytes());
            if request.method != "HEAD" {
                let _ = stream.write_all(&body);
            }
        }
        Reply::Endless {
            total,
            declare_length,
        } => {
            let key = request.path.clone();
            let note = |written: u64, finished: bool| {
                shared
                    .streamed
                    .lock()
                    .unwrap()
                    .insert(key.clone(), Streamed { written, finished });
            };
            note(0, false);
            let length = if declare_length {
                format!("Content-Length: {total}\r\n")
            } else {
                "Transfer-Encoding: chunked\r\n".to_string()
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n{length}\r\n"
            );
            let mut written = 0u64;
            let chunk = vec![b' '; 64 << 10];
            let mut ok = stream.write_all(head.as_bytes()).is_ok();
            while ok && written < total {
                let n = (total - written).min(chunk.len() as u64) as usize;
                ok = if declare_length {
                    stream.write_all(&chunk[..n]).is_ok()
                } else {
                    stream
                        .write_all(format!("{n:x}\r\n").as_bytes())
                        .and_then(|_| stream.write_all(&chunk[..n]))
                        .and_then(|_| stream.write_all(b"\r\n"))
                        .is_ok()
                };
                if ok {
                    written += n as u64;
                    note(written, false);
                }
            }
            if ok && !declare_length {
                let _ = stream.write_all(b"0\r\n\r\n");
            }
            note(written, true);
        }
    }
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Write);
}
