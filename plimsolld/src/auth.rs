//! Bearer authentication: a clients file of token fingerprints, one shared
//! token, or open development mode.
//!
//! Tokens are never stored: only their SHA-256 fingerprints are kept, and
//! compared in constant time. No error text or log line holds a token.

use std::collections::HashMap;

use plimsoll_core::config::{ConfigError, Env};
use plimsoll_core::error::{Error, ErrorCode};
use plimsoll_core::secret::Secret;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The scope every procedure requires.
pub const SCOPE_RUN: &str = "code:run";
/// The shortest shared token accepted.
pub const MIN_TOKEN_CHARS: usize = 32;

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The stable principal id.
    pub id: String,
    /// Granted scopes (`*` is every scope).
    pub scopes: Vec<String>,
}

impl Principal {
    fn has(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope || s == "*")
    }
}

/// How callers are authenticated.
#[derive(Debug)]
pub enum Verifier {
    /// `PLIMSOLL_CLIENTS_FILE`: fingerprint → principal.
    /// `PLIMSOLL_CLIENTS_FILE`: principals by token fingerprint, and the
    /// paid-second allowances of those that have one.
    Clients(HashMap<[u8; 32], Principal>, HashMap<String, u64>),
    /// `PLIMSOLL_TOKEN`: one shared token, principal `static`.
    Token([u8; 32]),
    /// No authentication: the anonymous principal with every scope.
    Open,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientsFile {
    clients: Vec<ClientEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientEntry {
    id: String,
    token_sha256: String,
    scopes: Vec<String>,
    #[serde(default)]
    paid_seconds_per_day: Option<u64>,
}

fn fingerprint(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn visible_ascii(s: &str) -> bool {
    s.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

impl Verifier {
    /// Loads the verifier: the clients file, else the shared token, else open.
    pub fn load(env: &Env<'_>) -> Result<Verifier, ConfigError> {
        let file = env.get("PLIMSOLL_CLIENTS_FILE");
        let token = env.get("PLIMSOLL_TOKEN").map(Secret::new);
        match (file, token) {
            (Some(_), Some(_)) => Err(ConfigError::new(
                "PLIMSOLL_TOKEN",
                "set either PLIMSOLL_CLIENTS_FILE or PLIMSOLL_TOKEN, not both",
            )),
            (Some(path), None) => {
                let text = std::fs::read(&path).map_err(|e| {
                    ConfigError::new(
                        "PLIMSOLL_CLIENTS_FILE",
                        format!("cannot read {path:?}: {e}"),
                    )
                })?;
                Verifier::parse_clients(&text)
                    .map_err(|m| ConfigError::new("PLIMSOLL_CLIENTS_FILE", m))
            }
            (None, Some(t)) => {
                if t.expose().chars().count() < MIN_TOKEN_CHARS || !visible_ascii(t.expose()) {
                    return Err(ConfigError::new(
                        "PLIMSOLL_TOKEN",
                        format!("must be at least {MIN_TOKEN_CHARS} visible ASCII characters"),
                    ));
                }
                Ok(Verifier::Token(fingerprint(t.expose())))
            }
            (None, None) => Ok(Verifier::Open),
        }
    }

    /// Parses a clients file:
    /// `{"clients":[{"id","token_sha256","scopes",["paid_seconds_per_day"]}]}`,
    /// strictly (unknown fields, duplicates, bad hex or ids are errors).
    pub fn parse_clients(text: &[u8]) -> Result<Verifier, String> {
        let f: ClientsFile = plimsoll_core::wire::json::decode(text)?;
        if f.clients.is_empty() {
            return Err("the clients file lists no clients".into());
        }
        let mut map = HashMap::new();
        let mut paid = HashMap::new();
        for (i, c) in f.clients.into_iter().enumerate() {
            let id_ok = !c.id.is_empty()
                && c.id.len() <= 128
                && c.id != "*"
                && c.id != "anon"
                && !c.id.chars().any(|ch| ch.is_whitespace() || ch.is_control());
            if !id_ok {
                return Err(format!(
                    "client {i}: id must be 1 to 128 characters without whitespace, not `*` or `anon`"
                ));
            }
            let hex_ok = c.token_sha256.len() == 64
                && c.token_sha256
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
            let mut digest = [0u8; 32];
            if !hex_ok || hex::decode_to_slice(&c.token_sha256, &mut digest).is_err() {
                return Err(format!(
                    "client {i}: token_sha256 must be 64 lowercase hex characters"
                ));
            }
            if c.scopes.is_empty() || c.scopes.iter().any(|s| s.is_empty() || !visible_ascii(s)) {
                return Err(format!(
                    "client {i}: scopes must be a non-empty list of visible-ASCII names"
                ));
            }
            if map.values().any(|p: &Principal| p.id == c.id) {
                return Err(format!("client {i}: duplicate id"));
            }
            match c.paid_seconds_per_day {
                None => {}
                Some(0) => {
                    return Err(format!(
                        "client {i}: paid_seconds_per_day must be positive (leave it out for no allowance of its own)"
                    ));
                }
                Some(s) => {
                    paid.insert(c.id.clone(), s);
                }
            }
            if map
                .insert(
                    digest,
                    Principal {
                        id: c.id,
                        scopes: c.scopes,
                    },
                )
                .is_some()
            {
                return Err(format!("client {i}: duplicate token_sha256"));
            }
        }
        Ok(Verifier::Clients(map, paid))
    }

    /// Whether callers must authenticate.
    pub fn is_open(&self) -> bool {
        matches!(self, Verifier::Open)
    }

    /// The callers' own paid-second allowances (`paid_seconds_per_day` in
    /// the clients file), by principal id.
    pub fn paid_allowances(&self) -> HashMap<String, u64> {
        match self {
            Verifier::Clients(_, paid) => paid.clone(),
            _ => HashMap::new(),
        }
    }

    /// Whether every caller has a paid-second allowance of its own (a clients
    /// file in which each client names one).
    pub fn every_caller_paid(&self) -> bool {
        match self {
            Verifier::Clients(map, paid) => map.values().all(|p| paid.contains_key(&p.id)),
            _ => false,
        }
    }

    /// How callers authenticate, for hardened mode's rules.
    pub fn auth(&self) -> plimsoll_core::hardened::Auth {
        use plimsoll_core::hardened::Auth;
        match self {
            Verifier::Clients(..) => Auth::ClientsFile,
            Verifier::Token(_) => Auth::SharedToken,
            Verifier::Open => Auth::Open,
        }
    }

    /// A short description for the startup log.
    pub fn describe(&self) -> String {
        match self {
            Verifier::Clients(m, _) => format!("clients file ({} clients)", m.len()),
            Verifier::Token(_) => "shared token".into(),
            Verifier::Open => "none (open development mode)".into(),
        }
    }

    /// Authenticates an `Authorization` header value and requires `code:run`.
    pub fn authorize(&self, header: Option<&[u8]>) -> Result<Principal, Error> {
        let principal = self.authenticate(header)?;
        if !principal.has(SCOPE_RUN) {
            return Err(Error::new(
                ErrorCode::PermissionDenied,
                "the credential lacks the code:run scope",
            ));
        }
        Ok(principal)
    }

    fn authenticate(&self, header: Option<&[u8]>) -> Result<Principal, Error> {
        if let Verifier::Open = self {
            return Ok(Principal {
                id: "anon".into(),
                scopes: vec!["*".into()],
            });
        }
        let unauthenticated = || {
            Error::new(
                ErrorCode::Unauthenticated,
                "missing or invalid bearer token",
            )
        };
        let text = header
            .and_then(|h| std::str::from_utf8(h).ok())
            .ok_or_else(unauthenticated)?;
        let mut parts = text.split_whitespace();
        let (Some(scheme), Some(token), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(unauthenticated());
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(unauthenticated());
        }
        let presented = fingerprint(token);
        match self {
            Verifier::Clients(map, _) => map.get(&presented).cloned().ok_or_else(unauthenticated),
            Verifier::Token(want) => {
                if bool::from(want.ct_eq(&presented)) {
                    Ok(Principal {
                        id: "static".into(),
                        scopes: vec![SCOPE_RUN.into()],
                    })
                } else {
                    Err(unauthenticated())
                }
            }
            Verifier::Open => unreachable!("handled above"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clients(json: &str) -> Result<Verifier, String> {
        Verifier::parse_clients(json.as_bytes())
    }

    fn hex_of(t: &str) -> String {
        hex::encode(fingerprint(t))
    }

    #[test]
    fn clients_file_is_strict() {
        let ok = format!(
            r#"{{"clients":[{{"id":"alice","token_sha256":"{}","scopes":["code:run"]}}]}}"#,
            hex_of("a")
        );
        assert!(clients(&ok).is_ok());
        assert!(clients(r#"{"clients":[]}"#).is_err());
        assert!(clients(&ok.replace("\"scopes\"", "\"extra\":1,\"scopes\"")).is_err());
        assert!(clients(&ok.replace("alice", "a b")).is_err());
        assert!(clients(&ok.replace("alice", "*")).is_err());
        assert!(clients(&ok.replace(&hex_of("a"), &hex_of("a").to_uppercase())).is_err());
        let dup = format!(
            r#"{{"clients":[{{"id":"a","token_sha256":"{h}","scopes":["x"]}},{{"id":"b","token_sha256":"{h}","scopes":["x"]}}]}}"#,
            h = hex_of("t")
        );
        assert!(clients(&dup).is_err());
    }

    #[test]
    fn bearer_rules() {
        let v = clients(&format!(
            r#"{{"clients":[{{"id":"alice","token_sha256":"{}","scopes":["code:run"]}},{{"id":"bob","token_sha256":"{}","scopes":["other"]}}]}}"#,
            hex_of("tok-a"),
            hex_of("tok-b")
        ))
        .unwrap();
        assert_eq!(v.authorize(Some(b"Bearer tok-a")).unwrap().id, "alice");
        assert_eq!(v.authorize(Some(b"bearer   tok-a")).unwrap().id, "alice");
        for bad in [
            &b"Bearer nope"[..],
            b"Basic tok-a",
            b"Bearer tok-a extra",
            b"tok-a",
            b"",
        ] {
            assert_eq!(
                v.authorize(Some(bad)).unwrap_err().code(),
                ErrorCode::Unauthenticated
            );
        }
        assert_eq!(
            v.authorize(None).unwrap_err().code(),
            ErrorCode::Unauthenticated
        );
        assert_eq!(
            v.authorize(Some(b"Bearer tok-b")).unwrap_err().code(),
            ErrorCode::PermissionDenied
        );
        let t = Verifier::Token(fingerprint("x".repeat(32).as_str()));
        assert_eq!(
            t.authorize(Some(format!("Bearer {}", "x".repeat(32)).as_bytes()))
                .unwrap()
                .id,
            "static"
        );
    }
}
