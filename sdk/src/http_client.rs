//! Typed JSON helpers over the host's `http` capability.
//!
//! The host decides where requests go and how they are authenticated; these
//! helpers only shape requests and turn statuses into [`ToolError`]s.

use crate::ToolError;
use crate::bindings::scout::connector::http::{
    Client, Method, Request, Response, connect, connect_to,
};
use crate::errors::{Decoder, ErrorFormat, decoded_status_error};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The connector's HTTP client, bound by the host to one origin.
pub struct Http {
    client: Client,
    headers: Vec<(String, String)>,
    /// How error bodies are read (a function, not the format, so that a
    /// component links only the decoder it uses).
    errors: Decoder,
}

impl Http {
    /// Opens the client the host granted this connector for this call.
    pub fn connect() -> Result<Http, ToolError> {
        Ok(Http {
            client: connect()?,
            headers: Vec::new(),
            errors: ErrorFormat::Message.decoder(),
        })
    }

    /// Opens the client for another destination the tool's routes name
    /// (`Route: drive GET /drive/v3/files`): an origin the operator binds
    /// under that name, or a connector a joint tool `Reads-from`.
    pub fn connect_to(destination: &str) -> Result<Http, ToolError> {
        Ok(Http {
            client: connect_to(destination)?,
            headers: Vec::new(),
            errors: ErrorFormat::Message.decoder(),
        })
    }

    /// Adds a header sent with every request (e.g. `Accept`). Headers that
    /// carry authority are dropped by the host whatever is set here.
    pub fn with_header(mut self, name: &str, value: &str) -> Http {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Reads the upstream's error bodies in `format` (default
    /// [`ErrorFormat::Message`]) wherever this client checks a status.
    #[inline]
    pub fn with_errors(mut self, format: ErrorFormat) -> Http {
        self.errors = format.decoder();
        self
    }

    /// Reads error bodies with the connector's own `decoder` (a vendor
    /// shape no [`ErrorFormat`] reads); the status mapping and the cut stay
    /// the SDK's.
    pub fn with_decoder(mut self, decoder: Decoder) -> Http {
        self.errors = decoder;
        self
    }

    /// The error a non-2xx `response` is, read in this client's format.
    pub fn check(&self, response: &Response) -> Result<(), ToolError> {
        match decoded_status_error(self.errors, response.status, &response.body) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Sends a request as is and returns the response whatever its status.
    pub fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Result<Response, ToolError> {
        let mut headers = self.headers.clone();
        if body.is_some() {
            headers.push(("content-type".to_string(), "application/json".to_string()));
        }
        let request = Request {
            method,
            path: path.to_string(),
            query: query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            headers,
            body,
        };
        Ok(self.client.send(&request)?)
    }

    /// Sends a request and parses a 2xx JSON answer; any other status becomes
    /// `not-found` (404) or `upstream`, its message read in this client's
    /// [`ErrorFormat`]; an answer that is not the JSON expected is
    /// `bad-response` naming the request.
    pub fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&impl Serialize>,
    ) -> Result<T, ToolError> {
        let body = match body {
            Some(b) => Some(
                serde_json::to_vec(b)
                    .map_err(|e| ToolError::invalid(format!("cannot encode body: {e}")))?,
            ),
            None => None,
        };
        let response = self.send(method, path, query, body)?;
        self.check(&response)?;
        parse_json(&response.body).map_err(|e| match e {
            ToolError::BadResponse(m) => {
                ToolError::BadResponse(format!("{} {path}: {m}", crate::method_name(method)))
            }
            other => other,
        })
    }

    /// GET and parse JSON.
    pub fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<T, ToolError> {
        self.json(Method::Get, path, query, None::<&()>)
    }

    /// POST a JSON body and parse JSON.
    pub fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ToolError> {
        self.json(Method::Post, path, &[], Some(body))
    }

    /// PUT a JSON body and parse JSON.
    pub fn put<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ToolError> {
        self.json(Method::Put, path, &[], Some(body))
    }

    /// PATCH a JSON body and parse JSON.
    pub fn patch<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ToolError> {
        self.json(Method::Patch, path, &[], Some(body))
    }

    /// DELETE; any 2xx is success.
    pub fn delete(&self, path: &str) -> Result<(), ToolError> {
        let response = self.send(Method::Delete, path, &[], None)?;
        self.check(&response)
    }
}

/// Parses a JSON answer; one that is not `T` is `bad-response`.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ToolError> {
    serde_json::from_slice(body)
        .map_err(|e| ToolError::BadResponse(format!("response is not the expected JSON: {e}")))
}

/// Maps a non-2xx status to a [`ToolError`] carrying the upstream's
/// `{"message"}` (see [`ErrorFormat`] for other shapes).
pub fn check_status(response: &Response) -> Result<(), ToolError> {
    match ErrorFormat::Message.status_error(response.status, &response.body) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Percent-encodes one path segment: everything but `A-Z a-z 0-9 - _ . ~`.
/// A segment that is `.` or `..` stays as it is, and the host refuses it.
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
    out
}

/// Encodes a `/`-separated path (a file path in a repository, say) segment by
/// segment. Refuses empty, `.` and `..` segments with `invalid-input`.
pub fn encode_path(path: &str) -> Result<String, ToolError> {
    let mut parts = Vec::new();
    for seg in path.trim_matches('/').split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return Err(ToolError::invalid(format!(
                "path `{path}` has an empty, `.` or `..` segment"
            )));
        }
        parts.push(encode_segment(seg));
    }
    Ok(parts.join("/"))
}
