//! Routes: `METHOD /path` patterns with `*` standing for one whole segment,
//! and the canonical request targets they admit.
//!
//! Approval is the wire: a target passes only if it is already canonical (no
//! query, fragment, percent-encoding, `;`, empty or all-dot segment, nor any
//! character that would be encoded on the wire) and matches a route byte for
//! byte, so what is approved is exactly what is sent upstream.

use std::fmt;

/// The methods a route may name.
pub const METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "PATCH"];

/// One allowed route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    method: String,
    segments: Vec<String>,
}

fn segment_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~:@!$&'()+,=".contains(&b)
}

fn valid_segment(s: &str) -> bool {
    !s.is_empty() && !s.bytes().all(|b| b == b'.') && s.bytes().all(segment_char)
}

/// Splits a path into its segments if it is canonical; `/` has none.
fn segments(path: &str) -> Option<Vec<&str>> {
    let rest = path.strip_prefix('/')?;
    if rest.is_empty() {
        return Some(Vec::new());
    }
    let segs: Vec<&str> = rest.split('/').collect();
    segs.iter().all(|s| valid_segment(s)).then_some(segs)
}

impl Route {
    /// Parses `METHOD /path`, where a segment may be `*`.
    pub fn parse(s: &str) -> Result<Route, String> {
        let (method, path) = s
            .split_once(' ')
            .ok_or_else(|| format!("route {s:?}: want \"METHOD /path\""))?;
        if !METHODS.contains(&method) {
            return Err(format!(
                "route {s:?}: method must be one of {}",
                METHODS.join(", ")
            ));
        }
        let rest = path
            .strip_prefix('/')
            .ok_or_else(|| format!("route {s:?}: the path must start with /"))?;
        let segs: Vec<String> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('/').map(str::to_owned).collect()
        };
        for seg in &segs {
            if seg != "*" && !valid_segment(seg) {
                return Err(format!(
                    "route {s:?}: each segment must be `*` or 1+ characters of [A-Za-z0-9-._~:@!$&'()+,=], not all dots"
                ));
            }
        }
        Ok(Route {
            method: method.to_owned(),
            segments: segs,
        })
    }

    /// Whether `method` and the canonical `path` match this route.
    pub fn matches(&self, method: &str, path: &[&str]) -> bool {
        self.method == method
            && self.segments.len() == path.len()
            && self.segments.iter().zip(path).all(|(pat, seg)| {
                if pat == "*" {
                    // A wildcard never binds a segment holding `:` (a scheme or port-like value).
                    !seg.contains(':')
                } else {
                    pat == seg
                }
            })
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} /{}", self.method, self.segments.join("/"))
    }
}

/// Why a target was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    /// Not canonical (query, encoding, traversal, empty segment, odd character).
    Malformed,
    /// Canonical, but no route allows it.
    NotAllowed,
}

/// Finds the route that admits `method` and `target`.
pub fn approve<'a>(routes: &'a [Route], method: &str, target: &str) -> Result<&'a Route, Denial> {
    let path = segments(target).ok_or(Denial::Malformed)?;
    routes
        .iter()
        .find(|r| r.matches(method, &path))
        .ok_or(Denial::NotAllowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(list: &[&str]) -> Vec<Route> {
        list.iter().map(|r| Route::parse(r).unwrap()).collect()
    }

    #[test]
    fn patterns() {
        for bad in [
            "GET",
            "FETCH /a",
            "GET a",
            "GET /a//b",
            "GET /a/%2f",
            "GET /a?b",
            "GET /a/..",
            "GET /a/x*",
            "get /a",
            "GET /a;b",
        ] {
            assert!(Route::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Route::parse("GET /v1/items/*").unwrap().to_string(),
            "GET /v1/items/*"
        );
        assert!(Route::parse("GET /").is_ok());
    }

    #[test]
    fn approval_is_byte_exact() {
        let r = routes(&["GET /v1/items/*", "POST /v1/items", "GET /"]);
        assert_eq!(
            approve(&r, "GET", "/v1/items/42").unwrap().to_string(),
            "GET /v1/items/*"
        );
        assert!(approve(&r, "POST", "/v1/items").is_ok());
        assert!(approve(&r, "GET", "/").is_ok());
        let denied = [
            ("DELETE", "/v1/items/42", Denial::NotAllowed),
            ("GET", "/v1/items", Denial::NotAllowed),
            ("GET", "/v1/items/42/more", Denial::NotAllowed),
            ("GET", "/v1/items/http:evil", Denial::NotAllowed),
            ("GET", "/v1/items/42?x=1", Denial::Malformed),
            ("GET", "/v1/items/%2e%2e", Denial::Malformed),
            ("GET", "/v1/items/a%2Fb", Denial::Malformed),
            ("GET", "/v1/items/../admin", Denial::Malformed),
            ("GET", "/v1/items/...", Denial::Malformed),
            ("GET", "/v1/items/./42", Denial::Malformed),
            ("GET", "/v1//items/42", Denial::Malformed),
            ("GET", "/v1/items/42/", Denial::Malformed),
            ("GET", "/v1/items/4 2", Denial::Malformed),
            ("GET", "/v1/items/42#f", Denial::Malformed),
            ("GET", "/v1/items/a;b", Denial::Malformed),
            ("GET", "/v1/items/\u{e9}", Denial::Malformed),
            ("GET", "v1/items/42", Denial::Malformed),
            ("GET", "http://evil/v1/items/42", Denial::Malformed),
            ("GET", "", Denial::Malformed),
        ];
        for (m, t, want) in denied {
            assert_eq!(approve(&r, m, t).unwrap_err(), want, "{m} {t}");
        }
        assert_eq!(
            approve(&[], "GET", "/").unwrap_err(),
            Denial::NotAllowed,
            "an empty route list reaches nothing"
        );
    }
}
