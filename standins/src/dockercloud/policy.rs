//! The undocumented policy API the `sbx` CLI sets a sandbox's network
//! policy through (notes §2.4: `PUT https://api.sandboxes-cloud.docker.com/v1
//! /sandboxes/{id}/network-policy`, the management bearer, body
//! `{"mode": "deny-all", "allowNetworks": ["<host>:443"]}`, answered 200
//! with the same `mode` and `allowNetworks`). Served on the api listener
//! under `/v1` (the base URL it prints as `policy`).
//!
//! Only `deny-all` is accepted, and only `host:443` entries whose host has
//! an upstream (`--upstream HOST=IP:PORT`): the stand-in can route nothing
//! else. A rule admits the sandbox's container to the egress proxy for
//! those hosts (its guest's HTTPS to them reaches the upstream; nothing
//! else does); an empty list withdraws it. The effective policy both
//! contracts read back reports the rules. The `policy-ignores-rule` fault
//! answers 200 and applies nothing.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State as Shared};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::{StandIn, error, invalid, lock, sandbox_not_found};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Body {
    mode: String,
    #[serde(default)]
    allow_networks: Vec<String>,
}

/// `PUT /v1/sandboxes/{id}/network-policy`.
pub async fn put(Shared(s): Shared<Arc<StandIn>>, Path(id): Path<String>, body: Bytes) -> Response {
    let b: Body = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => return invalid("", format!("invalid JSON: {e}")),
    };
    if b.mode != "deny-all" {
        return invalid("mode", "only deny-all is served");
    }
    let mut hosts = Vec::new();
    for n in &b.allow_networks {
        match n.rsplit_once(':') {
            Some((h, "443")) if s.settings.upstreams.contains_key(&h.to_ascii_lowercase()) => {
                hosts.push(h.to_ascii_lowercase());
            }
            _ => {
                return invalid(
                    "allowNetworks",
                    format!("{n:?}: the stand-in routes only host:443 for its upstreams"),
                );
            }
        }
    }
    let Some(sandbox) = s.get(&id) else {
        return sandbox_not_found(&id);
    };
    let echo = json!({"mode": b.mode, "allowNetworks": b.allow_networks});
    if s.settings.faults.policy_ignores_rule {
        return (StatusCode::OK, axum::Json(echo)).into_response();
    }
    let Some(egress) = s.egress.get() else {
        return error(
            StatusCode::CONFLICT,
            "failedPrecondition",
            "the stand-in has no egress proxy (no --upstream)",
            Vec::new(),
        );
    };
    let container = lock(&sandbox.life)
        .machine
        .as_ref()
        .map(|m| m.container.clone());
    let Some(container) = container else {
        return error(
            StatusCode::CONFLICT,
            "failedPrecondition",
            "the sandbox is not running",
            Vec::new(),
        );
    };
    if let Some(old) = lock(&sandbox.egress_addr).take() {
        egress.forget(old);
    }
    if !hosts.is_empty() {
        let addr = match egress.address_of(&container).await {
            Ok(a) => a,
            Err(e) => {
                return error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e, Vec::new());
            }
        };
        egress.admit(addr, hosts.into_iter().map(|h| (h, Vec::new())).collect());
        *lock(&sandbox.egress_addr) = Some(addr);
    }
    *lock(&sandbox.allow) = b.allow_networks;
    (StatusCode::OK, axum::Json(echo)).into_response()
}
