//! Grant profiles: the grants file (`PLIMSOLL_GRANTS_FILE`), parsed strictly.
//!
//! ```json
//! {"profiles": {"items": {
//!   "base_url": "https://api.example.com",
//!   "allow": ["GET /v1/items/*", "POST /v1/items"],
//!   "allowed_callers": ["alice"],
//!   "scopes": ["items:read"],
//!   "token": {"type": "jwt", "secret_env": "ITEMS_JWT_SECRET", "audience": "items-api", "ttl_sec": 60},
//!   "max_calls": 256,
//!   "allow_in_sessions": false}}}
//! ```
//!
//! Any error is a startup error. Secrets are read from the named environment
//! variables at load and held as [`Secret`]s; the file never holds one.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::grant::route::Route;
use crate::secret::Secret;

/// The most calls a profile may allow per run.
pub const MAX_CALLS_CEILING: u32 = 100_000;
/// Calls per run when the profile names no budget.
pub const DEFAULT_MAX_CALLS: u32 = 256;
/// The shortest JWT signing secret, in bytes.
pub const MIN_JWT_SECRET_BYTES: usize = 32;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    profiles: BTreeMap<String, ProfileFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    base_url: String,
    allow: Vec<String>,
    allowed_callers: Vec<String>,
    #[serde(default)]
    scopes: Vec<String>,
    token: TokenFile,
    #[serde(default)]
    max_calls: Option<u32>,
    #[serde(default)]
    allow_in_sessions: bool,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum TokenFile {
    Static {
        env: String,
    },
    Jwt {
        secret_env: String,
        audience: String,
        #[serde(default)]
        issuer: Option<String>,
        #[serde(default)]
        key_id: Option<String>,
        #[serde(default)]
        ttl_sec: Option<u32>,
    },
}

/// How a profile's credential is made.
#[derive(Debug)]
pub enum Credential {
    /// One shared token, from an environment variable.
    Static(Secret),
    /// A fresh HS256 JWT per run whose subject is the calling principal.
    Jwt {
        /// The signing secret.
        secret: Secret,
        /// `aud` (required).
        audience: String,
        /// `iss`, if any.
        issuer: Option<String>,
        /// The header's `kid`, if any.
        key_id: Option<String>,
        /// The longest lifetime, seconds; the run's budget may shorten it.
        ttl_sec: u32,
    },
}

/// One grant profile, frozen after load.
#[derive(Debug)]
pub struct Profile {
    /// The profile's name.
    pub name: String,
    /// The API's origin (`scheme://host[:port]`), without a trailing slash.
    pub base_url: String,
    /// Allowed routes; an empty list reaches nothing.
    pub allow: Vec<Route>,
    /// Principal ids allowed to use it (`*` is anyone authenticated).
    pub allowed_callers: Vec<String>,
    /// Scopes the credential carries.
    pub scopes: Vec<String>,
    /// How the credential is made.
    pub credential: Credential,
    /// Calls per run.
    pub max_calls: u32,
    /// Whether a session call may carry it.
    pub allow_in_sessions: bool,
}

impl Profile {
    /// Whether `principal` may use this profile.
    pub fn allows_caller(&self, principal: &str) -> bool {
        self.allowed_callers
            .iter()
            .any(|c| c == "*" || c == principal)
    }
}

/// Checks a base URL: http(s), a host, an optional port, nothing else; https
/// off loopback (decided by [`crate::loopback`], on the parsed host). Returns
/// the normalised origin the broker sends to (`http://0x7f.1` becomes
/// `http://127.0.0.1`).
fn base_url(profile: &str, raw: &str) -> Result<String, String> {
    let err = |m: &str| Err(format!("profile {profile:?}: base_url {m}"));
    let rest = match raw.split_once("://") {
        Some(("https" | "http", r)) => r,
        _ => return err("must start with http:// or https://"),
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains(['/', '?', '#', '@', '\\', ' ', '%']) {
        return err(
            "must be an origin: scheme://host[:port], no path, query, fragment or credentials",
        );
    }
    let url = match crate::loopback::parse(raw) {
        Ok(u) => u,
        Err(e) => return err(&e),
    };
    let host_ok = match url.host() {
        Some(url::Host::Domain(name)) => {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-".contains(&b))
        }
        Some(_) => true,
        None => false,
    };
    if !host_ok || url.path() != "/" {
        return err("has no valid host");
    }
    if url.scheme() == "http" && !crate::loopback::is_loopback_url(&url) {
        return err(
            "must use https off loopback (the credential would cross the network in clear)",
        );
    }
    Ok(url.origin().ascii_serialization())
}

fn secret_from(
    profile: &str,
    var: &str,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Secret, String> {
    match get(var) {
        Some(v) if !v.is_empty() => Ok(Secret::new(v)),
        _ => Err(format!(
            "profile {profile:?}: the environment variable {var} is not set"
        )),
    }
}

/// Parses and checks a grants file; `get` reads the secrets' environment variables.
pub fn parse(text: &[u8], get: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Profile>, String> {
    let file: File = crate::wire::json::decode(text)?;
    let mut out = Vec::new();
    for (name, p) in file.profiles {
        let name_ok = !name.is_empty()
            && name.len() <= 128
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !name_ok {
            return Err(format!(
                "profile name {name:?} must be 1 to 128 characters of [A-Za-z0-9._-]"
            ));
        }
        let base_url = base_url(&name, &p.base_url)?;
        let allow = p
            .allow
            .iter()
            .map(|r| Route::parse(r).map_err(|e| format!("profile {name:?}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        if p.allowed_callers.is_empty()
            || p.allowed_callers
                .iter()
                .any(|c| c.is_empty() || c.chars().any(char::is_whitespace))
        {
            return Err(format!(
                "profile {name:?}: allowed_callers must list principal ids (or \"*\")"
            ));
        }
        for s in &p.scopes {
            if s == "code:run" || s == "*" || s.is_empty() || s.contains(char::is_whitespace) {
                return Err(format!(
                    "profile {name:?}: scope {s:?} is not allowed (never code:run or *)"
                ));
            }
        }
        let max_calls = p.max_calls.unwrap_or(DEFAULT_MAX_CALLS);
        if !(1..=MAX_CALLS_CEILING).contains(&max_calls) {
            return Err(format!(
                "profile {name:?}: max_calls must be from 1 to {MAX_CALLS_CEILING}"
            ));
        }
        let credential = match p.token {
            TokenFile::Static { env } => Credential::Static(secret_from(&name, &env, get)?),
            TokenFile::Jwt {
                secret_env,
                audience,
                issuer,
                key_id,
                ttl_sec,
            } => {
                let secret = secret_from(&name, &secret_env, get)?;
                if secret.len() < MIN_JWT_SECRET_BYTES {
                    return Err(format!(
                        "profile {name:?}: the JWT secret in {secret_env} must be at least {MIN_JWT_SECRET_BYTES} bytes"
                    ));
                }
                if audience.is_empty() {
                    return Err(format!("profile {name:?}: a JWT needs an audience"));
                }
                let ttl_sec = ttl_sec.unwrap_or(60);
                if !(1..=3600).contains(&ttl_sec) {
                    return Err(format!("profile {name:?}: ttl_sec must be from 1 to 3600"));
                }
                Credential::Jwt {
                    secret,
                    audience,
                    issuer,
                    key_id,
                    ttl_sec,
                }
            }
        };
        out.push(Profile {
            name,
            base_url,
            allow,
            allowed_callers: p.allowed_callers,
            scopes: p.scopes,
            credential,
            max_calls,
            allow_in_sessions: p.allow_in_sessions,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "TOK" => Some("static-token".into()),
            "JWT" => Some("j".repeat(32)),
            "SHORT" => Some("j".repeat(8)),
            _ => None,
        }
    }

    fn one(profile: &str) -> Result<Vec<Profile>, String> {
        parse(
            format!(r#"{{"profiles":{{"p":{profile}}}}}"#).as_bytes(),
            &env,
        )
    }

    const OK: &str = r#"{"base_url":"http://127.0.0.1:9","allow":["GET /a/*"],"allowed_callers":["alice"],"token":{"type":"static","env":"TOK"}}"#;

    #[test]
    fn strict_profiles() {
        let p = one(OK).unwrap();
        assert_eq!(
            (p[0].base_url.as_str(), p[0].max_calls),
            ("http://127.0.0.1:9", 256)
        );
        assert!(p[0].allows_caller("alice") && !p[0].allows_caller("bob"));
        let bad = [
            OK.replace("http://127.0.0.1:9", "http://api.example.com"),
            OK.replace("http://127.0.0.1:9", "https://api.example.com/v1"),
            OK.replace("http://127.0.0.1:9", "https://u:p@api.example.com"),
            OK.replace("\"alice\"", ""),
            OK.replace("GET /a/*", "GET /a/../b"),
            OK.replace("\"TOK\"", "\"MISSING\""),
            OK.replace("}}", ",\"extra\":1}}"),
            OK.replace(
                "\"allowed_callers\"",
                "\"scopes\":[\"code:run\"],\"allowed_callers\"",
            ),
            OK.replace(
                "\"allowed_callers\"",
                "\"scopes\":[\"*\"],\"allowed_callers\"",
            ),
            OK.replace(
                "\"allowed_callers\"",
                "\"max_calls\":100001,\"allowed_callers\"",
            ),
            OK.replace(
                r#"{"type":"static","env":"TOK"}"#,
                r#"{"type":"jwt","secret_env":"SHORT","audience":"a"}"#,
            ),
            OK.replace(
                r#"{"type":"static","env":"TOK"}"#,
                r#"{"type":"jwt","secret_env":"JWT","audience":""}"#,
            ),
            OK.replace(
                r#"{"type":"static","env":"TOK"}"#,
                r#"{"type":"jwt","secret_env":"JWT"}"#,
            ),
        ];
        for b in bad {
            assert!(one(&b).is_err(), "{b}");
        }
        let jwt = OK.replace(
            r#"{"type":"static","env":"TOK"}"#,
            r#"{"type":"jwt","secret_env":"JWT","audience":"items"}"#,
        );
        assert!(matches!(
            one(&jwt).unwrap()[0].credential,
            Credential::Jwt { ttl_sec: 60, .. }
        ));
        assert!(one(&OK.replace("GET /a/*", "")).is_err());
        let empty_routes = OK.replace("\"GET /a/*\"", "");
        assert!(one(&empty_routes).unwrap()[0].allow.is_empty());
        assert!(one(&OK.replace("http://127.0.0.1:9", "https://api.example.com:8443/")).is_ok());
    }

    #[test]
    fn cleartext_only_to_a_real_loopback_host() {
        let base =
            |url: &str| one(&OK.replace("http://127.0.0.1:9", url)).map(|p| p[0].base_url.clone());
        for (raw, normalised) in [
            ("http://LOCALHOST:9", "http://localhost:9"),
            ("http://localhost:9/", "http://localhost:9"),
            ("http://[::1]:9", "http://[::1]:9"),
            ("http://[::ffff:127.0.0.1]:9", "http://[::ffff:7f00:1]:9"),
            ("http://0x7f.1:9", "http://127.0.0.1:9"),
            ("http://127.1", "http://127.0.0.1"),
            ("https://API.example.com:443/", "https://api.example.com"),
        ] {
            assert_eq!(base(raw).unwrap(), normalised, "{raw}");
        }
        for raw in [
            "http://127.attacker.example",
            "http://127.x.example:9",
            "http://127.0.0.1.nip.io",
            "http://localhost.",
            "http://foo.localhost",
            "http://0.0.0.0:9",
            "http://[::ffff:10.0.0.1]",
        ] {
            let e = base(raw).unwrap_err();
            assert!(e.contains("https off loopback"), "{raw}: {e}");
            assert!(base(&raw.replacen("http", "https", 1)).is_ok(), "{raw}");
        }
        for raw in [
            "http://",
            "http://:9",
            "http://a_b.example",
            "https://[::1",
            "http://h:99999",
        ] {
            assert!(base(raw).is_err(), "{raw}");
        }
    }
}
