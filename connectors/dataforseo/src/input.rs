//! The arguments an agent writes, checked before anything is reserved or
//! sent: locations, languages, keywords, domains and page URLs. Each refusal
//! is `invalid-input` naming what was wrong; what passes is what travels (a
//! task carries only these typed, checked fields). Counts are the SDK's
//! [`scout_sdk::args::bounded`].

use scout_sdk::ToolError;

/// Location when none is given: the United States.
const DEFAULT_LOCATION: u32 = 2840;
/// Language when none is given.
const DEFAULT_LANGUAGE: &str = "en";
/// Longest keyword DataForSEO accepts (characters).
pub const MAX_KEYWORD: usize = 80;
/// Longest keyword DataForSEO Trends accepts (characters).
const MAX_TRENDS_KEYWORD: usize = 100;
/// Keywords of `trends`.
const MAX_TRENDS_KEYWORDS: usize = 5;
/// Longest URL accepted.
pub const MAX_URL: usize = 2048;
/// Longest host name (a DNS name's length).
const MAX_HOST: usize = 253;

pub fn location(code: Option<u32>) -> Result<u32, ToolError> {
    match code {
        None => Ok(DEFAULT_LOCATION),
        Some(0) => Err(ToolError::invalid(
            "location-code must be a DataForSEO location code such as 2840 (United States)",
        )),
        Some(c) => Ok(c),
    }
}

/// A language code such as `en`, `de` or `zh-TW`: 2 to 7 ASCII letters and `-`.
pub fn language(code: Option<String>) -> Result<String, ToolError> {
    let Some(code) = code else {
        return Ok(DEFAULT_LANGUAGE.to_string());
    };
    let code = code.trim().to_string();
    let shaped = (2..=7).contains(&code.len())
        && code.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
        && !code.starts_with('-')
        && !code.ends_with('-');
    if !shaped {
        return Err(ToolError::invalid(format!(
            "language-code `{code}` is not a language code such as `en` or `zh-TW`"
        )));
    }
    Ok(code)
}

/// A location and a language, each checked (or its default).
pub fn place(
    location_code: Option<u32>,
    language_code: Option<String>,
) -> Result<(u32, String), ToolError> {
    Ok((location(location_code)?, language(language_code)?))
}

/// Trims each keyword and checks the list: 1 to `max` keywords, each
/// `min`..=`max_len` characters without control characters.
pub fn keyword_list(
    keywords: Vec<String>,
    max: usize,
    min_len: usize,
    max_len: usize,
) -> Result<Vec<String>, ToolError> {
    if keywords.is_empty() {
        return Err(ToolError::invalid(
            "keywords is empty: give at least one keyword",
        ));
    }
    if keywords.len() > max {
        return Err(ToolError::invalid(format!(
            "{} keywords given; at most {max} in one call",
            keywords.len()
        )));
    }
    keywords
        .into_iter()
        .map(|k| keyword(k, min_len, max_len))
        .collect()
}

pub fn keyword(keyword: String, min_len: usize, max_len: usize) -> Result<String, ToolError> {
    let keyword = keyword.trim().to_string();
    let chars = keyword.chars().count();
    if chars == 0 {
        return Err(ToolError::invalid("a keyword is empty"));
    }
    if chars < min_len {
        return Err(ToolError::invalid(format!(
            "keyword `{keyword}` is shorter than {min_len} characters"
        )));
    }
    if chars > max_len {
        return Err(ToolError::invalid(format!(
            "keyword `{keyword}` is longer than {max_len} characters"
        )));
    }
    if keyword.chars().any(char::is_control) {
        return Err(ToolError::invalid("a keyword contains a control character"));
    }
    Ok(keyword)
}

/// DataForSEO Trends refuses keywords with these characters.
const TRENDS_FORBIDDEN: &[char] = &[
    '<', '>', '|', '\\', '"', '-', '+', '=', '~', '!', ':', '*', '(', ')', '[', ']', '{', '}',
];

pub fn trends_keywords(keywords: Vec<String>) -> Result<Vec<String>, ToolError> {
    let keywords = keyword_list(keywords, MAX_TRENDS_KEYWORDS, 2, MAX_TRENDS_KEYWORD)?;
    for k in &keywords {
        if let Some(c) = k.chars().find(|c| TRENDS_FORBIDDEN.contains(c)) {
            return Err(ToolError::invalid(format!(
                "keyword `{k}` contains `{c}`, which DataForSEO Trends does not accept"
            )));
        }
        if k.contains(',') {
            return Err(ToolError::invalid(format!(
                "keyword `{k}` contains a comma, which DataForSEO Trends drops"
            )));
        }
    }
    Ok(keywords)
}

/// A host name: 1 to 253 characters, dot-separated labels of ASCII letters,
/// digits and `-` (not first or last), at least two labels, the last with a
/// letter (so no IP address). Lowercased.
pub fn host_name(host: &str) -> Result<String, ToolError> {
    let host = host.to_ascii_lowercase();
    let labels: Vec<&str> = host.split('.').collect();
    let shaped = !host.is_empty()
        && host.len() <= MAX_HOST
        && labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
        // A top-level domain has a letter: no IP addresses.
        && labels.last().is_some_and(|l| l.bytes().any(|b| b.is_ascii_alphabetic()));
    if !shaped {
        return Err(ToolError::invalid(format!(
            "`{host}` is not a domain name such as example.com"
        )));
    }
    Ok(host)
}

/// A domain target: `example.com`, without a scheme or path.
pub fn domain(target: &str) -> Result<String, ToolError> {
    let target = target.trim();
    if target.contains("://") || target.contains('/') {
        return Err(ToolError::invalid(format!(
            "target `{target}` must be a domain such as example.com, without https:// or a path"
        )));
    }
    host_name(target)
}

/// An absolute `https://` or `http://` page URL with a domain host, no
/// credentials, port, fragment, whitespace or non-ASCII characters (send
/// those percent-encoded).
pub fn page_url(url: &str) -> Result<String, ToolError> {
    let url = url.trim();
    if url.len() > MAX_URL {
        return Err(ToolError::invalid(format!(
            "the URL is longer than {MAX_URL} bytes"
        )));
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| {
            ToolError::invalid(format!(
                "`{url}` is not an absolute http(s) URL such as https://example.com/page"
            ))
        })?;
    if url.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err(ToolError::invalid(
            "the URL contains whitespace, control or non-ASCII characters; percent-encode them",
        ));
    }
    if url.contains('#') {
        return Err(ToolError::invalid(
            "the URL has a fragment (`#...`); give the page's URL without it",
        ));
    }
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.contains('@') || authority.contains(':') {
        return Err(ToolError::invalid(
            "the URL's host must be a plain domain name, without credentials or a port",
        ));
    }
    let host = host_name(authority)?;
    let scheme_len = url.len() - rest.len();
    Ok(format!("{}{host}{}", &url[..scheme_len], &rest[end..]))
}

/// `ranked-keywords` takes a domain or a page URL.
pub fn ranked_target(target: &str) -> Result<String, ToolError> {
    let t = target.trim();
    if t.starts_with("https://") || t.starts_with("http://") {
        page_url(t)
    } else {
        domain(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scout_sdk::args::bounded;

    #[test]
    fn locations_languages_and_counts() {
        assert_eq!(location(None).unwrap(), 2840);
        assert_eq!(location(Some(2826)).unwrap(), 2826);
        assert!(location(Some(0)).is_err());
        assert_eq!(language(None).unwrap(), "en");
        assert_eq!(language(Some(" de ".into())).unwrap(), "de");
        assert_eq!(language(Some("zh-TW".into())).unwrap(), "zh-TW");
        for bad in [
            "",
            "e",
            "english!",
            "en_US",
            "-en",
            "en-",
            "toolonglang",
            "e1",
        ] {
            assert!(language(Some(bad.into())).is_err(), "{bad:?}");
        }
        // Limits are the SDK's `bounded`, from 1 to the tool's most.
        assert_eq!(bounded("limit", None, 100u16, 1, 1000).unwrap(), 100);
        assert_eq!(bounded("limit", Some(1000u16), 100, 1, 1000).unwrap(), 1000);
        assert!(bounded("limit", Some(0u16), 100, 1, 1000).is_err());
        assert!(bounded("limit", Some(1001u16), 100, 1, 1000).is_err());
    }

    #[test]
    fn keywords_are_checked() {
        assert_eq!(
            keyword_list(vec![" running shoes ".into()], 5, 1, 80).unwrap(),
            ["running shoes"]
        );
        assert!(keyword_list(vec![], 5, 1, 80).is_err());
        assert!(keyword_list(vec!["a".into(); 6], 5, 1, 80).is_err());
        assert!(keyword_list(vec!["  ".into()], 5, 1, 80).is_err());
        assert!(keyword_list(vec!["x".repeat(81)], 5, 1, 80).is_err());
        assert!(
            keyword_list(vec!["é".repeat(80)], 5, 1, 80).is_ok(),
            "characters, not bytes"
        );
        assert!(keyword_list(vec!["a\nb".into()], 5, 1, 80).is_err());
        assert!(keyword_list(vec!["ab".into()], 5, 3, 80).is_err());
        assert!(trends_keywords(vec!["iphone 14".into(), "samsung s23".into()]).is_ok());
        for bad in ["a-b", "x:y", "(x)", "a,b", "q\"", "a+b"] {
            assert!(trends_keywords(vec![bad.into()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn domains_and_urls() {
        assert_eq!(domain("Example.COM").unwrap(), "example.com");
        assert_eq!(domain("shop.example.co.uk").unwrap(), "shop.example.co.uk");
        for bad in [
            "",
            "example",
            "https://example.com",
            "example.com/page",
            "-a.com",
            "10.0.0.1",
            "169.254.169.254",
            "a-.com",
            "a..com",
            "ex ample.com",
            "exa_mple.com",
            ".com",
        ] {
            assert!(domain(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            page_url("https://Shop.Example.com/products/red-shoe?v=1").unwrap(),
            "https://shop.example.com/products/red-shoe?v=1"
        );
        assert_eq!(
            page_url("http://example.com").unwrap(),
            "http://example.com"
        );
        for bad in [
            "example.com/page",
            "ftp://example.com/",
            "https://user:pw@example.com/",
            "https://example.com:8443/",
            "https://example.com/a b",
            "https://example.com/#top",
            "https://exämple.com/",
            "https://localhost/",
            "https:///x",
        ] {
            assert!(page_url(bad).is_err(), "{bad:?}");
        }
        assert!(page_url(&format!("https://example.com/{}", "a".repeat(MAX_URL))).is_err());
        assert_eq!(ranked_target("example.com").unwrap(), "example.com");
        assert_eq!(
            ranked_target("https://example.com/p").unwrap(),
            "https://example.com/p"
        );
    }
}
