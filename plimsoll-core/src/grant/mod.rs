//! Grants: a run may call listed routes of an API through a broker that holds
//! the credential outside the sandbox.
//!
//! A request names a profile (`grant_profile`) and nothing more. An unknown
//! profile and one the caller may not use get the same refusal. The
//! credential is obtained once per run and never enters the sandbox; the
//! sandbox reaches the broker through its provider's path: a wasm host
//! function, a per-run Unix socket for docker, and for a VM that runs
//! elsewhere the [`guard`], one HTTPS path on plimsolld that admits a run by
//! its own short-lived guard credential.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::env::ConfigError;
use crate::error::{Error, ErrorCode, Result};

pub mod broker;
pub mod guard;
pub mod metrics;
pub mod profile;
pub mod route;
pub mod socket;
pub mod token;

pub(crate) use broker::upstream_client;
pub use broker::{Broker, CallSummary, GuestAnswer, GuestCall};
pub use profile::Profile;

/// The loaded grant profiles, frozen after load.
pub struct Grants {
    profiles: HashMap<String, Arc<Profile>>,
    metrics: Arc<metrics::CallMetrics>,
    client: std::sync::OnceLock<Upstream>,
}

/// The shared upstream client type.
pub(crate) type Upstream = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    http_body_util::Full<hyper::body::Bytes>,
>;

impl std::fmt::Debug for Grants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grants")
            .field("profiles", &self.profiles.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Default for Grants {
    fn default() -> Grants {
        Grants::from_profiles(Vec::new())
    }
}

/// The refusal for an unknown profile and for a forbidden one: the same text,
/// so profile names cannot be enumerated.
fn forbidden() -> Error {
    Error::new(
        ErrorCode::PermissionDenied,
        "unknown grant profile, or not permitted for this caller",
    )
}

impl Grants {
    /// Grants over already-parsed profiles.
    pub fn from_profiles(profiles: Vec<Profile>) -> Grants {
        Grants {
            profiles: profiles
                .into_iter()
                .map(|p| (p.name.clone(), Arc::new(p)))
                .collect(),
            metrics: Arc::default(),
            client: std::sync::OnceLock::new(),
        }
    }

    /// Loads `PLIMSOLL_GRANTS_FILE`; `get` reads the secrets' variables.
    pub fn load(
        path: &str,
        get: &dyn Fn(&str) -> Option<String>,
    ) -> std::result::Result<Grants, ConfigError> {
        let text = std::fs::read(path).map_err(|e| {
            ConfigError::new("PLIMSOLL_GRANTS_FILE", format!("cannot read {path:?}: {e}"))
        })?;
        let profiles =
            profile::parse(&text, get).map_err(|m| ConfigError::new("PLIMSOLL_GRANTS_FILE", m))?;
        Ok(Grants::from_profiles(profiles))
    }

    /// Whether any profile is configured.
    pub fn is_empty(&self) -> bool {
        self.profiles.is_empty()
    }

    /// Profile names open to every caller (`*`), for a startup warning.
    pub fn open_to_anyone(&self) -> Vec<&str> {
        self.profiles
            .values()
            .filter(|p| p.allowed_callers.iter().any(|c| c == "*"))
            .map(|p| p.name.as_str())
            .collect()
    }

    /// Checks that `principal` may use `name`, before anything runs.
    pub fn check(&self, name: &str, principal: &str, in_session: bool) -> Result<Arc<Profile>> {
        let p = self
            .profiles
            .get(name)
            .filter(|p| p.allows_caller(principal))
            .ok_or_else(forbidden)?;
        if in_session && !p.allow_in_sessions {
            return Err(Error::new(
                ErrorCode::PermissionDenied,
                "this grant profile may not be used in a session",
            ));
        }
        Ok(p.clone())
    }

    /// Opens a run's broker: mints the credential once, bounded by the run's budget.
    pub fn open(
        &self,
        profile: Arc<Profile>,
        principal: &str,
        budget: Duration,
    ) -> Result<Arc<Broker>> {
        let credential = token::mint(&profile, principal, budget)?;
        let client = self.client.get_or_init(broker::upstream_client).clone();
        Ok(Arc::new(Broker::new(
            profile,
            credential,
            client,
            Instant::now() + budget,
            self.metrics.clone(),
        )))
    }

    /// Brokered-call counters.
    pub fn metrics(&self) -> &metrics::CallMetrics {
        &self.metrics
    }
}
