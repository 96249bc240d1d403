//! Docker's error answers: `{"code": "<camelCase>", "message", "details"}`
//! with google.rpc detail objects (`@type` named), and the code to inspect
//! beside the HTTP status, as Docker's API reference says.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A Docker error answer: `{"code": <camelCase>, "message", "details"}`.
pub fn error(
    status: StatusCode,
    code: &str,
    message: impl Into<String>,
    details: Vec<Value>,
) -> Response {
    (
        status,
        Json(json!({"code": code, "message": message.into(), "details": details})),
    )
        .into_response()
}

/// 400 `invalidArgument` with a `BadRequest` detail naming `field`.
pub fn invalid(field: &str, message: impl Into<String>) -> Response {
    let message = message.into();
    error(
        StatusCode::BAD_REQUEST,
        "invalidArgument",
        message.clone(),
        vec![json!({
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": field, "description": message}],
        })],
    )
}

/// 404 `notFound` for a sandbox, with a `ResourceInfo` detail.
pub fn sandbox_not_found(uid: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "notFound",
        format!("sandbox \"sandboxes/{uid}\" not found"),
        vec![json!({
            "@type": "type.googleapis.com/google.rpc.ResourceInfo",
            "resourceType": "sandbox",
            "resourceName": format!("sandboxes/{uid}"),
        })],
    )
}

/// 404 `notFound` for a route the stand-in does not serve (as Cloud answers).
pub async fn unserved() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "notFound",
        "the requested route is not served",
        Vec::new(),
    )
}
