//! The gateway's `policy_hash`: SHA-256, hex, over a canonical encoding of a
//! `SandboxPolicy` in which every protobuf map is sorted by key and repeated
//! fields keep their order (a port of `deterministic_policy_hash` in
//! OpenShell's `crates/openshell-server/src/grpc/policy.rs`, commit
//! `2f7fb65591ee5746217ace154afc0aa6bf1afc6d`, Apache-2.0; the messages it
//! walks are the same in 0.1.5). The stand-in reports it; the provider
//! computes it for the policy it asked for and compares.

use std::collections::HashMap;

use prost::Message;
use sha2::{Digest, Sha256};

use crate::sandbox::v1 as sb;

/// The gateway's `policy_hash` of `policy`.
pub fn hash(policy: &sb::SandboxPolicy) -> String {
    hex::encode(Sha256::digest(canonical_policy_bytes(policy)))
}

fn append_bytes(out: &mut Vec<u8>, value: &[u8]) {
    out.extend_from_slice(&(value.len() as u64).to_le_bytes());
    out.extend_from_slice(value);
}

fn append_message<M: Message>(out: &mut Vec<u8>, value: &M) {
    append_bytes(out, &value.encode_to_vec());
}

fn append_sorted_map<M: Message>(out: &mut Vec<u8>, label: &[u8], values: &HashMap<String, M>) {
    append_bytes(out, label);
    let mut entries: Vec<_> = values.iter().collect();
    entries.sort_by_key(|(k, _)| k.as_str());
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for (k, v) in entries {
        append_bytes(out, k.as_bytes());
        append_message(out, v);
    }
}

fn canonical_rule_bytes(rule: &sb::NetworkPolicyRule) -> Vec<u8> {
    let mut map_free = rule.clone();
    for e in &mut map_free.endpoints {
        e.graphql_persisted_queries.clear();
        for r in &mut e.rules {
            if let Some(allow) = &mut r.allow {
                allow.query.clear();
                allow.params.clear();
            }
        }
        for d in &mut e.deny_rules {
            d.query.clear();
            d.params.clear();
        }
    }
    let mut out = Vec::new();
    append_message(&mut out, &map_free);
    for (i, e) in rule.endpoints.iter().enumerate() {
        out.extend_from_slice(&(i as u64).to_le_bytes());
        append_sorted_map(
            &mut out,
            b"graphql_persisted_queries",
            &e.graphql_persisted_queries,
        );
        for (j, r) in e.rules.iter().enumerate() {
            out.extend_from_slice(&(j as u64).to_le_bytes());
            if let Some(allow) = &r.allow {
                append_sorted_map(&mut out, b"allow_query", &allow.query);
                append_sorted_map(&mut out, b"allow_params", &allow.params);
            }
        }
        for (j, d) in e.deny_rules.iter().enumerate() {
            out.extend_from_slice(&(j as u64).to_le_bytes());
            append_sorted_map(&mut out, b"deny_query", &d.query);
            append_sorted_map(&mut out, b"deny_params", &d.params);
        }
    }
    out
}

fn canonical_struct_bytes(value: &prost_types::Struct) -> Vec<u8> {
    let mut out = Vec::new();
    let mut fields: Vec<_> = value.fields.iter().collect();
    fields.sort_by_key(|(k, _)| k.as_str());
    out.extend_from_slice(&(fields.len() as u64).to_le_bytes());
    for (k, v) in fields {
        append_bytes(&mut out, k.as_bytes());
        append_bytes(&mut out, &canonical_value_bytes(v));
    }
    out
}

fn canonical_value_bytes(value: &prost_types::Value) -> Vec<u8> {
    use prost_types::value::Kind;
    let mut out = Vec::new();
    match &value.kind {
        None => out.push(0),
        Some(Kind::NullValue(v)) => {
            out.push(1);
            out.extend_from_slice(&v.to_le_bytes());
        }
        Some(Kind::NumberValue(v)) => {
            out.push(2);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Some(Kind::StringValue(v)) => {
            out.push(3);
            append_bytes(&mut out, v.as_bytes());
        }
        Some(Kind::BoolValue(v)) => {
            out.push(4);
            out.push(u8::from(*v));
        }
        Some(Kind::StructValue(v)) => {
            out.push(5);
            append_bytes(&mut out, &canonical_struct_bytes(v));
        }
        Some(Kind::ListValue(v)) => {
            out.push(6);
            out.extend_from_slice(&(v.values.len() as u64).to_le_bytes());
            for item in &v.values {
                append_bytes(&mut out, &canonical_value_bytes(item));
            }
        }
    }
    out
}

fn canonical_middleware_bytes(m: &sb::NetworkMiddlewareConfig) -> Vec<u8> {
    let mut map_free = m.clone();
    map_free.config = None;
    let mut out = Vec::new();
    append_message(&mut out, &map_free);
    if let Some(config) = &m.config {
        append_bytes(&mut out, &canonical_struct_bytes(config));
    }
    out
}

fn canonical_policy_bytes(policy: &sb::SandboxPolicy) -> Vec<u8> {
    let mut map_free = policy.clone();
    map_free.network_policies.clear();
    map_free.network_middlewares.clear();
    let mut out = Vec::new();
    append_message(&mut out, &map_free);
    let mut rules: Vec<_> = policy.network_policies.iter().collect();
    rules.sort_by_key(|(k, _)| k.as_str());
    append_bytes(&mut out, b"network_policies");
    out.extend_from_slice(&(rules.len() as u64).to_le_bytes());
    for (k, r) in rules {
        append_bytes(&mut out, k.as_bytes());
        append_bytes(&mut out, &canonical_rule_bytes(r));
    }
    let mut mws: Vec<_> = policy.network_middlewares.iter().collect();
    mws.sort_by_key(|(k, _)| k.as_str());
    append_bytes(&mut out, b"network_middlewares");
    out.extend_from_slice(&(mws.len() as u64).to_le_bytes());
    for (k, m) in mws {
        append_bytes(&mut out, k.as_bytes());
        append_bytes(&mut out, &canonical_middleware_bytes(m));
    }
    out
}
