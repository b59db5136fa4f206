//! A loopback upstream that misbehaves on request, for the `http` capability's
//! tests: it echoes what it received (so a test can see which headers and
//! credentials arrived), redirects to another origin, answers oversized or
//! compressed bodies, or stalls. Every request is recorded.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the upstream saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Method.
    pub method: String,
    /// Path and query exactly as received.
    pub uri: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
}

impl Seen {
    /// The value of a header, if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Shared {
    seen: Mutex<Vec<Seen>>,
    redirect_to: Mutex<String>,
}

/// The running upstream; stops when dropped.
pub struct Upstream {
    origin: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

/// Size of the body `/big` answers.
pub const BIG_BYTES: usize = 3 << 20;

impl Upstream {
    /// Starts on 127.0.0.1:0. Routes:
    /// `/echo` answers the request's headers as `name: value` lines;
    /// `/redirect` answers 302 to `redirect_to` (see [`Upstream::redirect_to`]);
    /// `/big` answers [`BIG_BYTES`] bytes; `/gzip` answers a small gzip body
    /// that inflates to [`BIG_BYTES`]; `/slow` waits 10 s; anything else 200 `ok`.
    ///
    /// A hostile upstream's ways of smuggling the echoed headers past a
    /// scrub, whatever the client asked for: `/echo-coded/CODINGS` encodes
    /// the echo with each coding in turn (`gzip`, `deflate`, `deflate-raw`,
    /// `br`, `zstd`; any other name is announced but not applied), `a+b`
    /// sending one `Content-Encoding` line per coding and `a,b` one line
    /// listing both; `/echo-json/STYLE` answers the headers as JSON with
    /// every value escaped (`slash`: `\/`; `unicode`: `\u00XX` for every
    /// character; `percent`: `%XX` for every byte; `mixed`: all three in
    /// turn); `/echo-base64` answers the echo base64-encoded, and
    /// `/echo-base64/ALPHABET/N` (`standard` or `url-safe`) the same after
    /// N filler bytes (`.`), which moves the secret to each offset modulo 3.
    pub async fn start() -> Upstream {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind 127.0.0.1:0");
        let origin = format!("http://{}", listener.local_addr().expect("local address"));
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Upstream {
            origin,
            shared,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn origin(&self) -> String {
        self.origin.clone()
    }

    /// Where `/redirect` points.
    pub fn redirect_to(&self, location: &str) {
        *self.shared.redirect_to.lock().unwrap() = location.to_string();
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    _body: Bytes,
) -> Response {
    let seen = Seen {
        method: method.to_string(),
        uri: uri.to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
    };
    shared.seen.lock().unwrap().push(seen.clone());
    match uri.path() {
        "/echo" => header_dump(&seen).into_response(),
        "/redirect" => {
            let location = shared.redirect_to.lock().unwrap().clone();
            (StatusCode::FOUND, [(header::LOCATION, location)], "moved").into_response()
        }
        "/big" => vec![b'a'; BIG_BYTES].into_response(),
        "/gzip" => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            encoder
                .write_all(&vec![b'z'; BIG_BYTES])
                .expect("gzip in memory");
            let body = encoder.finish().expect("gzip in memory");
            Response::builder()
                .header(header::CONTENT_ENCODING, "gzip")
                .body(Body::from(body))
                .expect("valid response")
        }
        path if path.starts_with("/echo-coded/") => {
            let spec = &path["/echo-coded/".len()..];
            let mut body = header_dump(&seen).into_bytes();
            let mut response = Response::builder();
            for line in spec.split('+') {
                for coding in line.split(',') {
                    body = encode(coding, body);
                }
                let announced = line
                    .split(',')
                    .map(|c| if c == "deflate-raw" { "deflate" } else { c })
                    .collect::<Vec<_>>()
                    .join(", ");
                response = response.header(header::CONTENT_ENCODING, announced);
            }
            response.body(Body::from(body)).expect("valid response")
        }
        path if path.starts_with("/echo-json/") => {
            let style = &path["/echo-json/".len()..];
            let fields: Vec<String> = seen
                .headers
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}:\"{}\"",
                        serde_json::to_string(k).expect("a string"),
                        escape(style, v)
                    )
                })
                .collect();
            (
                [(header::CONTENT_TYPE, "application/json")],
                format!("{{\"headers\":{{{}}}}}", fields.join(",")),
            )
                .into_response()
        }
        "/echo-base64" => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .encode(header_dump(&seen))
                .into_response()
        }
        path if path.starts_with("/echo-base64/") => {
            use base64::Engine as _;
            let mut spec = path["/echo-base64/".len()..].split('/');
            let url_safe = spec.next() == Some("url-safe");
            let filler = spec.next().and_then(|n| n.parse().ok()).unwrap_or(0usize);
            let text = format!("{}{}", ".".repeat(filler.min(64)), header_dump(&seen));
            if url_safe {
                base64::engine::general_purpose::URL_SAFE.encode(text)
            } else {
                base64::engine::general_purpose::STANDARD.encode(text)
            }
            .into_response()
        }
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(10)).await;
            "late".into_response()
        }
        _ => "ok".into_response(),
    }
}

/// The request's headers as `name: value` lines, then its URI.
fn header_dump(seen: &Seen) -> String {
    let text: String = seen
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\n"))
        .collect();
    format!("{text}uri: {}\n", seen.uri)
}

/// `body` encoded with one content coding; an unknown name leaves it as is.
fn encode(coding: &str, body: Vec<u8>) -> Vec<u8> {
    match coding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(&body).expect("in memory");
            e.finish().expect("in memory")
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(&body).expect("in memory");
            e.finish().expect("in memory")
        }
        "deflate-raw" => {
            let mut e =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(&body).expect("in memory");
            e.finish().expect("in memory")
        }
        "br" => {
            let mut out = Vec::new();
            {
                let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                e.write_all(&body).expect("in memory");
            }
            out
        }
        "zstd" => ruzstd::encoding::compress_to_vec(
            &body[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        ),
        _ => body,
    }
}

/// A header value written inside a JSON string in one of the escape styles.
fn escape(style: &str, value: &str) -> String {
    let unicode = |c: char| format!("\\u{:04x}", c as u32);
    let percent = |c: char| {
        let mut buf = [0u8; 4];
        c.encode_utf8(&mut buf)
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect::<String>()
    };
    let plain = |c: char| {
        let s = serde_json::to_string(&c.to_string()).expect("a string");
        s[1..s.len() - 1].to_string()
    };
    value
        .chars()
        .enumerate()
        .map(|(i, c)| match style {
            "slash" if c == '/' => "\\/".to_string(),
            "unicode" => unicode(c),
            "percent" => percent(c),
            "mixed" => match i % 3 {
                0 => unicode(c),
                1 => percent(c),
                _ if c == '/' => "\\/".to_string(),
                _ => plain(c),
            },
            _ => plain(c),
        })
        .collect()
}
