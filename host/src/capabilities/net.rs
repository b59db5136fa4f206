//! The resolved-address deny list.
//!
//! A connector's origin is fixed by configuration, but a name can resolve to
//! anything, so every address a request would use is checked: loopback,
//! private, link-local, CGNAT, metadata, documentation, multicast, reserved
//! and unspecified addresses are refused, including IPv4 addresses mapped or
//! embedded in IPv6 (mapped, compatible, NAT64, 6to4), SIIT-translated
//! addresses, local-use NAT64 and discard-only prefixes, unless the operator
//! explicitly allowed the origin.
//!
//! The same rules hold for every request the host itself makes on a
//! brand's or the deployment's behalf (token endpoints, the broker, the
//! OIDC issuer's keys): [`guarded_client`] resolves through
//! [`GuardedResolver`], and [`literal_denied`] catches an address written
//! in the URL itself, which no resolver sees.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why an address is refused, or `None` if it is public.
pub(crate) fn denied_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => denied_v4(v4),
        IpAddr::V6(v6) => denied_v6(v6),
    }
}

fn denied_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    let reason = if ip.is_unspecified() || o[0] == 0 {
        "unspecified or this-network address"
    } else if ip.is_loopback() {
        "loopback address"
    } else if ip.is_private() {
        "private address"
    } else if ip.is_link_local() {
        "link-local address (cloud metadata lives here)"
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        "carrier-grade NAT address"
    } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
        "IETF protocol assignment"
    } else if ip.is_documentation() {
        "documentation address"
    } else if o[0] == 198 && (o[1] & 0xfe) == 18 {
        "benchmarking address"
    } else if ip.is_multicast() {
        "multicast address"
    } else if o[0] >= 240 {
        "reserved or broadcast address"
    } else {
        return None;
    };
    Some(reason)
}

fn denied_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified address");
    }
    if ip.is_loopback() {
        return Some("loopback address");
    }
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d).
    if s[0..5] == [0, 0, 0, 0, 0] && (s[5] == 0xffff || s[5] == 0) {
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        if s[5] == 0 {
            return Some("IPv4-compatible IPv6 address (deprecated)");
        }
        return denied_v4(v4).map(mapped);
    }
    // SIIT IPv4-translated addresses (::ffff:0:a.b.c.d, RFC 2765): no public
    // service answers on one; a translator would reach the embedded address.
    if s[0..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0 {
        return Some("IPv4-translated (SIIT) IPv6 address");
    }
    // Local-use NAT64 (64:ff9b:1::/48, RFC 8215): the operator's own
    // translator, embedding an IPv4 address wherever it chooses.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return Some("local-use NAT64 address");
    }
    // Discard-only (100::/64, RFC 6666).
    if s[0] == 0x100 && s[1..4] == [0, 0, 0] {
        return Some("discard-only address");
    }
    // NAT64 (64:ff9b::/96) embeds an IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return denied_v4(v4).map(mapped);
    }
    // 6to4 (2002::/16) embeds an IPv4 address in the next 32 bits.
    if s[0] == 0x2002 {
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        return denied_v4(v4).map(mapped);
    }
    if (s[0] & 0xfe00) == 0xfc00 {
        return Some("unique local address");
    }
    if (s[0] & 0xffc0) == 0xfe80 {
        return Some("link-local address");
    }
    if (s[0] & 0xffc0) == 0xfec0 {
        return Some("site-local address");
    }
    if (s[0] & 0xff00) == 0xff00 {
        return Some("multicast address");
    }
    if s[0] == 0x2001 && s[1] == 0x0db8 {
        return Some("documentation address");
    }
    if s[0] == 0x2001 && s[1] < 0x0200 {
        return Some("IETF protocol assignment (Teredo, ORCHID, benchmarking)");
    }
    None
}

fn mapped(_inner: &'static str) -> &'static str {
    "IPv4 address embedded in IPv6 that is not public"
}

/// Resolves names and refuses any non-public address unless allowed.
pub(crate) struct GuardedResolver {
    pub(crate) allow_private_network: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow = self.allow_private_network;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.is_empty() {
                return Err(format!("{host} did not resolve").into());
            }
            if !allow {
                for addr in &addrs {
                    if let Some(reason) = denied_reason(addr.ip()) {
                        return Err(format!("{host} resolves to {}, a {reason}", addr.ip()).into());
                    }
                }
            }
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// Why `url`'s host, an address written in the URL itself (in any
/// spelling the URL parser reads as one: dotted, decimal, hex, IPv6,
/// IPv4-mapped IPv6), is refused; `None` for a name (the resolver checks
/// it) or a public address.
pub(crate) fn literal_denied(url: &url::Url) -> Option<String> {
    let ip = match url.host()? {
        url::Host::Ipv4(ip) => IpAddr::V4(ip),
        url::Host::Ipv6(ip) => IpAddr::V6(ip),
        url::Host::Domain(_) => return None,
    };
    denied_reason(ip).map(|reason| format!("{ip} is a {reason}"))
}

/// A client for a request the host makes itself: no redirect (which could
/// resend a grant's secrets elsewhere), no proxy, no Referer, and every
/// address checked as for a guest's request unless `allow_private_network`.
pub(crate) fn guarded_client(allow_private_network: bool) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .referer(false)
        .dns_resolver(std::sync::Arc::new(GuardedResolver {
            allow_private_network,
        }))
}

/// The guard's own refusal in a request error's chain (a name that
/// resolved to a refused address), if that is why it failed.
pub(crate) fn refused_by_guard(error: &reqwest::Error) -> Option<String> {
    let mut source = std::error::Error::source(error);
    while let Some(s) = source {
        let text = s.to_string();
        if text.contains(" resolves to ") && text.contains(", a ") {
            return Some(text);
        }
        source = s.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_in_the_url_is_checked_in_every_spelling() {
        for url in [
            "https://169.254.169.254/latest/meta-data",
            "https://2852039166/token",
            "https://0xA9FEA9FE/token",
            "https://10.0.0.7/token",
            "https://192.168.1.1/token",
            "https://[::ffff:169.254.169.254]/token",
            "https://[::ffff:a9fe:a9fe]/token",
            "http://127.0.0.1:8080/token",
            "https://[::1]/token",
        ] {
            let parsed = url::Url::parse(url).unwrap();
            assert!(literal_denied(&parsed).is_some(), "{url}");
        }
        for url in [
            "https://oauth2.googleapis.com/token",
            "https://8.8.8.8/token",
        ] {
            assert_eq!(
                literal_denied(&url::Url::parse(url).unwrap()),
                None,
                "{url}"
            );
        }
    }

    #[test]
    fn refuses_every_non_public_class() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.100.100.200",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd00:ec2::254",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:db8::1",
            // SIIT (::ffff:0:0:0/96), whatever the embedded address.
            "::ffff:0:a9fe:a9fe",
            "::ffff:0:808:808",
            "::ffff:0:7f00:1",
            // Local-use NAT64 (64:ff9b:1::/48).
            "64:ff9b:1::a9fe:a9fe",
            "64:ff9b:1:ffff::808:808",
            "64:ff9b:1::",
            // Discard-only (100::/64).
            "100::",
            "100::1",
            "100::ffff:ffff:ffff:ffff",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(denied_reason(ip).is_some(), "{ip} should be denied");
        }
    }

    #[test]
    fn allows_public_addresses() {
        for ip in [
            "140.82.112.6",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "100:0:0:1::1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(denied_reason(ip), None, "{ip} should be allowed");
        }
    }
}
