//! Credentials for one run: the profile's static token, or a fresh HS256 JWT
//! whose subject is the calling principal and whose lifetime is bounded by the
//! run's deadline. Minted once per run; it never enters the sandbox.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::grant::profile::{Credential, Profile};
use crate::secret::Secret;

#[derive(Serialize)]
struct Claims<'a> {
    sub: &'a str,
    aud: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    iss: Option<&'a str>,
    iat: u64,
    nbf: u64,
    exp: u64,
    jti: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    scope: String,
}

/// The bearer credential for one run of `profile` by `principal`, valid for at
/// most the run's `budget` plus five seconds.
pub fn mint(profile: &Profile, principal: &str, budget: Duration) -> Result<Secret> {
    match &profile.credential {
        Credential::Static(token) => Ok(Secret::new(token.expose().to_owned())),
        Credential::Jwt {
            secret,
            audience,
            issuer,
            key_id,
            ttl_sec,
        } => {
            if principal.is_empty() {
                return Err(Error::infrastructure(
                    "a JWT grant needs an authenticated principal",
                ));
            }
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let life = u64::from(*ttl_sec).min(budget.as_secs() + 5);
            let claims = Claims {
                sub: principal,
                aud: audience,
                iss: issuer.as_deref(),
                iat: now,
                nbf: now,
                exp: now + life,
                jti: hex::encode(rand::random::<[u8; 16]>()),
                scope: profile.scopes.join(" "),
            };
            let mut header = Header::new(Algorithm::HS256);
            header.kid = key_id.clone();
            let minting_failed =
                |_| Error::infrastructure("the grant credential could not be minted");
            let key =
                EncodingKey::from_secret(secret.expose().as_bytes()).map_err(minting_failed)?;
            let token = jsonwebtoken::encode(&header, &claims, &key).map_err(minting_failed)?;
            Ok(Secret::new(token))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::profile::parse;
    use jsonwebtoken::{DecodingKey, Validation};

    #[test]
    fn signs_and_verifies_once() {
        let get = |k: &str| (k == "S").then(|| "k".repeat(40));
        let profiles = parse(
            br#"{"profiles":{"p":{"base_url":"http://127.0.0.1:1","allow":[],"allowed_callers":["*"],"scopes":["items:read","items:write"],"token":{"type":"jwt","secret_env":"S","audience":"items","issuer":"plimsoll","key_id":"k1","ttl_sec":600}}}}"#,
            &get,
        )
        .unwrap();
        let token = mint(&profiles[0], "alice", Duration::from_secs(10)).unwrap();
        let mut v = Validation::new(Algorithm::HS256);
        v.set_audience(&["items"]);
        v.set_issuer(&["plimsoll"]);
        let data = jsonwebtoken::decode::<serde_json::Value>(
            token.expose(),
            &DecodingKey::from_secret("k".repeat(40).as_bytes()).unwrap(),
            &v,
        )
        .unwrap();
        let c = data.claims;
        assert_eq!(
            (c["sub"].as_str(), c["scope"].as_str()),
            (Some("alice"), Some("items:read items:write"))
        );
        assert_eq!(
            c["exp"].as_u64().unwrap() - c["iat"].as_u64().unwrap(),
            15,
            "bounded by the run's budget + 5 s"
        );
        assert_eq!(data.header.kid.as_deref(), Some("k1"));
        assert_eq!(c["jti"].as_str().unwrap().len(), 32);
        let other = mint(&profiles[0], "alice", Duration::from_secs(10)).unwrap();
        assert_ne!(token.expose(), other.expose(), "a fresh token per run");
    }
}
