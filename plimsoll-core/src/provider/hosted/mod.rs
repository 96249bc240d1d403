//! What the hosted providers (their sandboxes on another company's machines,
//! reached over the network) share: bounded HTTP ([`http`]), the rule for the
//! addresses they are reached at ([`endpoint`]), the leases that say which
//! sandboxes a daemon answers for ([`lease`]), and the probe and artifact
//! check they run in their guests ([`probe`]).

use url::Url;

use crate::env::ConfigError;
use crate::loopback::is_loopback_url;

pub mod guard_url;
pub(crate) mod http;
pub(crate) mod lease;
pub(crate) mod probe;
pub(crate) mod steps;

/// An address a hosted service is reached at, from `variable`: https, or
/// http to a loopback address (a stand-in on this machine); no credentials,
/// query or fragment.
pub(crate) fn endpoint(variable: &'static str, raw: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(raw.trim())
        .map_err(|e| ConfigError::new(variable, format!("not a URL: {e}")))?;
    let refuse = |m: &str| Err(ConfigError::new(variable, m.to_owned()));
    match url.scheme() {
        "https" => {}
        "http" if is_loopback_url(&url) => {}
        "http" => return refuse("http is accepted only to a loopback address; use https"),
        _ => return refuse("must be an https URL"),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return refuse("must not carry credentials");
    }
    if url.query().is_some() || url.fragment().is_some() {
        return refuse("must not carry a query or a fragment");
    }
    if url.host_str().is_none_or(str::is_empty) {
        return refuse("names no host");
    }
    Ok(url)
}
