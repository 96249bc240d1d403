//! The one rule for "is this URL's host loopback?", used wherever plimsoll
//! lets a credential travel over cleartext `http://` (the remote client's
//! bearer token, a grant profile's API credential).
//!
//! The URL is parsed with the WHATWG parser of the `url` crate, and the
//! decision is made on the host it yields, never on the text:
//!
//! - an IPv4 address is loopback when [`Ipv4Addr::is_loopback`] (`127.0.0.0/8`).
//!   The parser normalises legacy forms first, so `0x7f.1`, `127.1` and
//!   `2130706433` are `127.0.0.1` and loopback; callers send requests to the
//!   normalised URL ([`parse`]'s result), so the address decided on is the
//!   address connected to;
//! - an IPv6 address is loopback when it is `::1`, or an IPv4-mapped address
//!   whose IPv4 part is loopback (`[::ffff:127.0.0.1]`): decided by
//!   [`Ipv6Addr::to_canonical`] then `is_loopback`, because Linux delivers a
//!   connect to a mapped address over IPv4 to that IPv4 address;
//! - a domain name is loopback only when it is exactly `localhost` (ASCII case
//!   ignored). Every other name is not, even one that resolves to `127.0.0.1`
//!   today (`127.0.0.1.nip.io`, `127.attacker.example`, `localhost.` with its
//!   trailing dot, `foo.localhost`): what a name resolves to is decided by
//!   whoever controls its DNS, and a trailing-dot name goes to the resolver.
//!
//! What this does not cover: `/etc/hosts` (an operator who maps `localhost`
//! elsewhere is trusted), and anything after the connect (a loopback proxy
//! that forwards in clear is the operator's choice).

use std::net::IpAddr;
#[cfg(doc)]
use std::net::{Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Whether `ip` is a loopback address, IPv4-mapped IPv6 included.
pub fn is_loopback_ip(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// Whether a parsed host is loopback: a loopback address (see
/// [`is_loopback_ip`]) or the name `localhost`, ASCII case ignored.
pub fn is_loopback_host(host: &Host<&str>) -> bool {
    match host {
        Host::Ipv4(v4) => is_loopback_ip(IpAddr::V4(*v4)),
        Host::Ipv6(v6) => is_loopback_ip(IpAddr::V6(*v6)),
        Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
    }
}

/// Whether `url`'s host is loopback; `false` when it has none.
pub fn is_loopback_url(url: &Url) -> bool {
    url.host().is_some_and(|h| is_loopback_host(&h))
}

/// Parses `raw` as an absolute URL (WHATWG rules, as browsers and the `url`
/// crate apply them). The caller checks scheme, userinfo, query and path;
/// this only parses, so that every check and the request that follows look
/// at the same normalised URL.
pub fn parse(raw: &str) -> Result<Url, String> {
    Url::parse(raw).map_err(|e| format!("is not a URL ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback(raw: &str) -> bool {
        is_loopback_url(&parse(raw).unwrap())
    }

    #[test]
    fn loopback_hosts() {
        for raw in [
            "http://127.0.0.1",
            "http://127.0.0.1:8746/",
            "http://127.255.255.254",
            "http://127.1",
            "http://0x7f.1",
            "http://0177.0.0.1",
            "http://2130706433",
            "http://localhost",
            "http://LOCALHOST:9",
            "http://LocalHost",
            "http://[::1]",
            "http://[0:0:0:0:0:0:0:1]:80",
            "http://[::ffff:127.0.0.1]",
            "http://[::ffff:7f00:1]",
        ] {
            assert!(loopback(raw), "{raw} is loopback");
        }
        for raw in [
            "http://127.attacker.example",
            "http://127.x.example",
            "http://127.0.0.1.nip.io",
            "http://localhost.",
            "http://localhost.attacker.example",
            "http://foo.localhost",
            "http://0.0.0.0",
            "http://10.0.0.1",
            "http://[::]",
            "http://[::ffff:10.0.0.1]",
            "http://[::127.0.0.1]",
            "http://api.example.com",
            "unix:/run/x.sock",
        ] {
            assert!(!loopback(raw), "{raw} is not loopback");
        }
    }

    #[test]
    fn the_parser_normalises_what_is_connected_to() {
        assert_eq!(
            parse("http://0x7f.1:9/").unwrap().as_str(),
            "http://127.0.0.1:9/"
        );
        assert_eq!(
            parse("http://[::ffff:127.0.0.1]/").unwrap().host_str(),
            Some("[::ffff:7f00:1]")
        );
        assert_eq!(
            parse("http://LOCALHOST/").unwrap().host_str(),
            Some("localhost")
        );
        assert!(parse("not a url").is_err());
    }
}
