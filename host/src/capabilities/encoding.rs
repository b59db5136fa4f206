//! Content codings: the host alone negotiates and decodes them.
//!
//! A guest's `Accept-Encoding` is dropped and the host sends its own. Every
//! coding listed in the response's `Content-Encoding` (all header lines, in
//! order) is undone here, in reverse, each step capped at the response limit,
//! so the secret scrub always looks at the decoded bytes. A coding the host
//! cannot decode refuses the response: handing the guest bytes the scrub
//! could not read would hand it whatever they hide.

use super::bindings::http::HttpError;
use http::HeaderMap;
use std::io::Read;

/// What the host asks upstreams for.
pub const ACCEPT_ENCODING: &str = "gzip, deflate, br, zstd";

/// Most codings stacked on one response.
const MAX_LAYERS: usize = 4;

/// The codings a response's body was encoded with, in the order applied.
pub(crate) fn content_codings(headers: &HeaderMap) -> Result<Vec<String>, HttpError> {
    let mut codings = Vec::new();
    for value in headers.get_all(http::header::CONTENT_ENCODING) {
        let text = value.to_str().map_err(|_| {
            HttpError::Transport("the upstream's content-encoding is not readable text".to_string())
        })?;
        for coding in text.split(',') {
            let coding = coding.trim().to_ascii_lowercase();
            if !coding.is_empty() && coding != "identity" {
                codings.push(coding);
            }
        }
    }
    for value in headers.get_all(http::header::TRANSFER_ENCODING) {
        let text = value.to_str().unwrap_or("?");
        if text
            .split(',')
            .any(|c| !c.trim().eq_ignore_ascii_case("chunked"))
        {
            return Err(HttpError::Transport(format!(
                "the upstream used transfer-encoding `{}`, which the host does not accept",
                text.escape_debug()
            )));
        }
    }
    if codings.len() > MAX_LAYERS {
        return Err(HttpError::Transport(format!(
            "the upstream stacked more than {MAX_LAYERS} content codings"
        )));
    }
    for coding in &codings {
        if !matches!(
            coding.as_str(),
            "gzip" | "x-gzip" | "deflate" | "br" | "zstd"
        ) {
            return Err(HttpError::Transport(format!(
                "the upstream answered with content-encoding `{}`, which the host cannot decode; the response was refused",
                coding.escape_debug()
            )));
        }
    }
    Ok(codings)
}

/// Undoes `codings` (as listed in `Content-Encoding`) on `body`, refusing
/// anything that would inflate past `limit` bytes.
pub fn decode(codings: &[String], mut body: Vec<u8>, limit: u64) -> Result<Vec<u8>, HttpError> {
    // A HEAD answer, a 204 or a 304 carries the coding's name and no body.
    if body.is_empty() {
        return Ok(body);
    }
    for coding in codings.iter().rev() {
        let corrupt = |e: std::io::Error| {
            HttpError::Transport(format!(
                "the upstream's {coding} body cannot be decoded: {e}"
            ))
        };
        let input = std::io::Cursor::new(std::mem::take(&mut body));
        body = match coding.as_str() {
            "gzip" | "x-gzip" => {
                read_capped(flate2::read::MultiGzDecoder::new(input), limit).map_err(corrupt)?
            }
            // HTTP's `deflate` is zlib-wrapped; some servers send it raw.
            "deflate" if is_zlib(input.get_ref()) => {
                read_capped(flate2::read::ZlibDecoder::new(input), limit).map_err(corrupt)?
            }
            "deflate" => {
                read_capped(flate2::read::DeflateDecoder::new(input), limit).map_err(corrupt)?
            }
            "br" => read_capped(brotli_decompressor::Decompressor::new(input, 4096), limit)
                .map_err(corrupt)?,
            "zstd" => {
                let decoder = ruzstd::decoding::StreamingDecoder::new(input).map_err(|e| {
                    HttpError::Transport(format!("the upstream's zstd body cannot be decoded: {e}"))
                })?;
                read_capped(decoder, limit).map_err(corrupt)?
            }
            other => {
                return Err(HttpError::Transport(format!(
                    "content-encoding `{}` cannot be decoded",
                    other.escape_debug()
                )));
            }
        }
        .ok_or(HttpError::TooLarge(limit))?;
    }
    Ok(body)
}

fn is_zlib(bytes: &[u8]) -> bool {
    matches!(bytes, [cmf, flg, ..] if cmf & 0x0f == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0)
}

/// Reads everything, or `None` past `limit` bytes.
fn read_capped(reader: impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    reader.take(limit.saturating_add(1)).read_to_end(&mut out)?;
    Ok((out.len() as u64 <= limit).then_some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(http::header::CONTENT_ENCODING, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn every_line_and_list_item_counts_and_unknown_codings_refuse() {
        assert_eq!(
            content_codings(&headers(&["gzip", "br"])).unwrap(),
            ["gzip", "br"]
        );
        assert_eq!(
            content_codings(&headers(&["gzip, identity , BR"])).unwrap(),
            ["gzip", "br"]
        );
        assert!(content_codings(&headers(&["compress"])).is_err());
        assert!(content_codings(&headers(&["gzip", "x-secret-sauce"])).is_err());
        assert!(content_codings(&headers(&["gzip, gzip, gzip, gzip, gzip"])).is_err());
    }

    #[test]
    fn stacked_codings_are_undone_in_reverse_and_capped() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"hello").unwrap();
        let gz = gz.finish().unwrap();
        let mut raw =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        raw.write_all(&gz).unwrap();
        let body = raw.finish().unwrap();
        // Applied gzip first, then deflate: listed `gzip, deflate`.
        let codings = vec!["gzip".to_string(), "deflate".to_string()];
        assert_eq!(decode(&codings, body.clone(), 100).unwrap(), b"hello");
        assert!(matches!(
            decode(&codings, body, 3),
            Err(HttpError::TooLarge(3))
        ));
        assert_eq!(
            decode(&codings, Vec::new(), 3).unwrap(),
            b"",
            "no body to decode (HEAD, 204, 304)"
        );
    }
}
