//! What a guest may ask for as a request path: checked before any route is
//! matched, for live requests and for recorded fixtures alike. Its own
//! module: the `http` handle and the replay both check paths, and neither
//! is the other's.

/// The longest path a guest may send.
pub(crate) const MAX_PATH_LEN: usize = 2048;

/// Checks a guest path. Returns the reason it is refused.
///
/// A path starts with `/`, is visible ASCII, and has no `//`, `\`, `@`, `*`,
/// `?`, `#`, `;`, no malformed or suspicious percent-escapes (`%2F`, `%5C`,
/// `%25`, `%3B`, `%00`..`%1F`, `%7F`), and no `.` or `..` segment, raw or
/// encoded. `;` starts a path parameter, which Tomcat- and Spring-style
/// servers strip before routing: `/allowed/..;/admin` escapes a prefix there.
pub(crate) fn validate_path(path: &str) -> Result<(), String> {
    validate_path_allowing(path, &[])
}

/// [`validate_path`], except that the segments at `encoded` (0 is the first
/// after the leading `/`) may hold `%2F`: a route's `{name:encoded}`
/// parameter, a URL used as an id (Search Console's
/// `https%3A%2F%2Fwww.example.com%2F`). Decoded, such a segment still may not
/// hold a `.` or `..` part between its slashes, nor a `\`.
pub(crate) fn validate_path_allowing(path: &str, encoded: &[usize]) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err("the path must start with `/` (absolute URLs are refused)".to_string());
    }
    if path.len() > MAX_PATH_LEN {
        return Err(format!("the path is longer than {MAX_PATH_LEN} bytes"));
    }
    if path.contains("//") {
        return Err("the path contains `//`".to_string());
    }
    for c in path.chars() {
        match c {
            '\\' | '@' | '*' | '?' | '#' | ';' => return Err(format!("the path contains `{c}`")),
            c if !c.is_ascii_graphic() => {
                return Err(format!(
                    "the path contains {:?}, which must be percent-encoded",
                    c
                ));
            }
            _ => {}
        }
    }
    for (i, segment) in path[1..].split('/').enumerate() {
        let slash_ok = encoded.contains(&i);
        let decoded = percent_decode_segment(segment, slash_ok)?;
        if decoded == "." || decoded == ".." {
            return Err("the path contains a dot segment".to_string());
        }
        if slash_ok && decoded.split('/').any(|part| part == "." || part == "..") {
            return Err("an encoded segment of the path holds a dot segment".to_string());
        }
    }
    Ok(())
}

fn percent_decode_segment(segment: &str, slash_ok: bool) -> Result<String, String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            let Some(value) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) else {
                return Err("the path has a malformed percent-escape".to_string());
            };
            if (value == b'/' && !slash_ok)
                || matches!(value, b'\\' | b'%' | b';')
                || value < 0x20
                || value == 0x7f
            {
                return Err(format!(
                    "the path encodes a forbidden character (%{value:02X})"
                ));
            }
            out.push(value);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::{validate_path, validate_path_allowing};

    #[test]
    fn an_encoded_segment_may_hold_a_slash_and_nothing_else_new() {
        let site = "/webmasters/v3/sites/https%3A%2F%2Fwww.example.com%2F/searchAnalytics/query";
        assert!(
            validate_path(site).is_err(),
            "%2F is refused where no route declares an encoded segment"
        );
        assert!(validate_path_allowing(site, &[3]).is_ok());
        assert!(
            validate_path_allowing(site, &[2]).is_err(),
            "only the declared segment"
        );
        for bad in [
            "/sites/https%3A%2F%2Fa.example%2F..%2Fadmin/q",
            "/sites/..%2Fadmin/q",
            "/sites/a%2F.%2Fb/q",
            "/sites/%2E%2E%2Fadmin/q",
            "/sites/a%5Cb/q",
            "/sites/a%252F/q",
            "/sites/a%2F%00/q",
        ] {
            assert!(
                validate_path_allowing(bad, &[1]).is_err(),
                "{bad} should be refused"
            );
        }
    }

    #[test]
    fn path_rules() {
        for ok in [
            "/",
            "/repos/octo/hello/contents/src/lib.rs",
            "/a/b%20c",
            "/a/.hidden",
            "/a/b..c",
            "/v1:x",
        ] {
            assert!(validate_path(ok).is_ok(), "{ok} should pass");
        }
        for bad in [
            "",
            "repos",
            "//evil.example/x",
            "/a//b",
            "/a\\b",
            "/@evil.example",
            "/a@b",
            "/*",
            "/a?b=c",
            "/a#f",
            "http://evil.example/",
            "/../etc",
            "/a/./b",
            "/a/..",
            "/%2e%2e/x",
            "/%2E%2e",
            "/.%2e/x",
            "/a%2fb",
            "/a%5cb",
            "/a%00",
            "/a%zz",
            "/a%2",
            "/a b",
            "/a\tb",
            "/ä",
            "/a%252e%252e",
            "/a;b",
            "/..;/admin",
            "/allowed/..;/admin",
            "/a/b;jsessionid=1",
            "/a%3bb",
            "/a/%3B/b",
            "/%2e%2e%3b/x",
        ] {
            assert!(validate_path(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
