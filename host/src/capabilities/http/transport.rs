//! Sending a prepared request: live (reqwest, with the address guard at
//! resolution and no redirects, proxies or Referer), recorded to fixtures,
//! or answered from them.

use super::{Backend, HttpCapability, PreparedRequest};
use super::{HttpError, Request, Response};
use crate::capabilities::encoding;

/// A response whose body arrives piece by piece ([`HttpCapability::send_streamed`]).
pub(crate) struct Streamed {
    pub(crate) status: u16,
    /// Scrubbed, `Set-Cookie` removed.
    pub(crate) headers: Vec<(String, String)>,
    /// Not scrubbed: the caller scrubs what it frames.
    pub(crate) body: futures_util::stream::BoxStream<'static, Result<bytes::Bytes, HttpError>>,
}

impl Streamed {
    fn whole(status: u16, headers: Vec<(String, String)>, body: Vec<u8>) -> Streamed {
        let chunk = Ok(bytes::Bytes::from(body));
        Streamed {
            status,
            headers,
            body: Box::pin(futures_util::stream::once(async move { chunk })),
        }
    }
}

impl HttpCapability {
    pub(super) async fn dispatch(
        &self,
        req: Request,
        prepared: PreparedRequest,
    ) -> Result<Response, HttpError> {
        match &self.backend {
            Backend::Live(client) => self
                .send_live(client, prepared)
                .await
                .map(|(response, _)| response),
            Backend::Record(client, recorder) => {
                let (response, peer) = self.send_live(client, prepared).await?;
                let origin = format!(
                    "{}{}",
                    self.origin.origin().ascii_serialization(),
                    self.prefix
                );
                recorder.record_for(
                    self.destination.as_deref(),
                    &origin,
                    peer,
                    &req,
                    &response,
                    &self.scrubber,
                );
                Ok(response)
            }
            Backend::Replay(replay) => {
                drop(prepared);
                let response =
                    replay.answer_for(self.destination.as_deref(), &req, &self.scrubber)?;
                if response.body.len() as u64 > self.max_response_bytes {
                    return Err(HttpError::TooLarge(self.max_response_bytes));
                }
                let headers = response
                    .headers
                    .into_iter()
                    .filter(|(name, _)| {
                        !name.eq_ignore_ascii_case("set-cookie")
                            && !name.eq_ignore_ascii_case("set-cookie2")
                    })
                    .map(|(name, value)| (name.to_ascii_lowercase(), self.scrub_text(&value)))
                    .collect();
                Ok(Response {
                    status: response.status,
                    headers,
                    body: self.scrubber.scrub_owned(response.body),
                })
            }
        }
    }

    /// Sends `prepared`; the response as the guest gets it, and the
    /// address that answered (a recording says whether it was public).
    async fn send_live(
        &self,
        client: &reqwest::Client,
        prepared: PreparedRequest,
    ) -> Result<(Response, Option<std::net::SocketAddr>), HttpError> {
        let exchange = async {
            let mut response = self.start_live(client, prepared).await?;
            let status = response.status().as_u16();
            let peer = response.remote_addr();
            // Refused before the body is read: a coding the host cannot
            // undo would hide the secret from the scrub.
            let codings = encoding::content_codings(response.headers())?;
            let headers = self.response_headers(response.headers(), !codings.is_empty());
            let body = self.read_capped(&mut response).await?;
            let body = encoding::decode(&codings, body, self.max_response_bytes)?;
            Ok((
                Response {
                    status,
                    headers,
                    body: self.scrubber.scrub_owned(body),
                },
                peer,
            ))
        };
        // reqwest's total timeout runs until the body is read, so no
        // second timer here; its expiry maps to `timeout`.
        exchange.await
    }

    /// [`HttpCapability::send`] with the body handed over as it arrives:
    /// the same checks before anything is sent, the same address guard, the
    /// same cap (counted over the whole body), but the body is **not
    /// scrubbed**: the caller scrubs each piece it frames (an event of an
    /// event stream, a whole JSON body) before anyone sees it. A body in a
    /// content coding is read whole and decoded first; in replay and record
    /// modes it is read whole too.
    pub(crate) async fn send_streamed(&self, req: Request) -> Result<Streamed, HttpError> {
        let prepared = self.prepare(&req)?;
        let client = match &self.backend {
            Backend::Live(client) => client,
            _ => {
                let whole = self.dispatch(req, prepared).await?;
                return Ok(Streamed::whole(whole.status, whole.headers, whole.body));
            }
        };
        let response = self.start_live(client, prepared).await?;
        let status = response.status().as_u16();
        let codings = encoding::content_codings(response.headers())?;
        let headers = self.response_headers(response.headers(), !codings.is_empty());
        let cap = self.max_response_bytes;
        if !codings.is_empty() {
            let mut response = response;
            let body = self.read_capped(&mut response).await?;
            let body = encoding::decode(&codings, body, cap)?;
            return Ok(Streamed::whole(status, headers, body));
        }
        let scrubber = self.scrubber.clone();
        let mut read = 0u64;
        let body = futures_util::StreamExt::map(response.bytes_stream(), move |chunk| {
            let chunk = chunk.map_err(|e| {
                if e.is_timeout() {
                    HttpError::Timeout
                } else {
                    HttpError::Transport(scrubber.scrub_text(&e.without_url().to_string()))
                }
            })?;
            read += chunk.len() as u64;
            if read > cap {
                return Err(HttpError::TooLarge(cap));
            }
            Ok(chunk)
        });
        Ok(Streamed {
            status,
            headers,
            body: Box::pin(body),
        })
    }

    /// Sends `prepared` and reads the answer's head, refusing one whose
    /// declared length is past the cap.
    async fn start_live(
        &self,
        client: &reqwest::Client,
        prepared: PreparedRequest,
    ) -> Result<reqwest::Response, HttpError> {
        let PreparedRequest {
            method,
            url,
            headers,
            body,
        } = prepared;
        let response = client
            .request(method, url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| self.transport_error(e))?;
        if let Some(len) = response.content_length()
            && len > self.max_response_bytes
        {
            return Err(HttpError::TooLarge(self.max_response_bytes));
        }
        Ok(response)
    }

    /// The response's headers as the caller gets them: `Set-Cookie` removed,
    /// the coding's own headers removed where the body is decoded here,
    /// every value scrubbed.
    fn response_headers(&self, headers: &http::HeaderMap, decoded: bool) -> Vec<(String, String)> {
        headers
            .iter()
            .filter(|(name, _)| {
                !matches!(name.as_str(), "set-cookie" | "set-cookie2")
                    && !(decoded && matches!(name.as_str(), "content-encoding" | "content-length"))
            })
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(&self.scrub(value.as_bytes())).into_owned();
                (name.as_str().to_string(), value)
            })
            .collect()
    }

    /// The whole body, refused once it passes the cap.
    async fn read_capped(&self, response: &mut reqwest::Response) -> Result<Vec<u8>, HttpError> {
        // One allocation when the upstream says how long the body is (an
        // announced length is not trusted beyond 1 MiB or the cap).
        let announced = response.content_length().unwrap_or(0);
        let reserve = announced.min(self.max_response_bytes).min(1 << 20);
        let mut body = Vec::with_capacity(reserve as usize);
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_error(e))?
        {
            if body.len() as u64 + chunk.len() as u64 > self.max_response_bytes {
                return Err(HttpError::TooLarge(self.max_response_bytes));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn transport_error(&self, e: reqwest::Error) -> HttpError {
        if e.is_timeout() {
            return HttpError::Timeout;
        }
        let e = e.without_url();
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        HttpError::Transport(self.scrub_text(&text))
    }
}
