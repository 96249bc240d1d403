//! One request through the egress proxy: its `Host` held to the TLS name,
//! hop-by-hop headers dropped, the rule's headers set (replacing the
//! guest's), and the rest sent on in plain HTTP to the hostname's upstream.

use std::net::SocketAddr;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};

use super::Upstream;

type Body = BoxBody<Bytes, hyper::Error>;

fn answer(status: u16, text: &str) -> hyper::Response<Body> {
    let mut r = hyper::Response::new(
        Full::new(Bytes::from(text.to_owned()))
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    r
}

/// Headers not forwarded (hop by hop).
const HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

pub(super) async fn forward(
    client: Upstream,
    req: hyper::Request<Incoming>,
    host: String,
    upstream: SocketAddr,
    headers: Vec<(String, String)>,
) -> Result<hyper::Response<Body>, std::convert::Infallible> {
    let named = req
        .headers()
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(|h| h.strip_suffix(":443").unwrap_or(h).to_ascii_lowercase());
    if named.as_deref() != Some(host.as_str()) {
        return Ok(answer(421, "the Host header is not the TLS server name"));
    }
    let (mut parts, body) = req.into_parts();
    let pq = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let Ok(uri) = format!("http://{upstream}{pq}").parse() else {
        return Ok(answer(400, "bad target"));
    };
    parts.uri = uri;
    parts.version = hyper::Version::HTTP_11;
    for h in HOP {
        parts.headers.remove(*h);
    }
    for (k, v) in &headers {
        if let (Ok(k), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(k.as_bytes()),
            hyper::header::HeaderValue::from_str(v),
        ) {
            parts.headers.insert(k, v);
        }
    }
    match client
        .request(hyper::Request::from_parts(parts, body))
        .await
    {
        Ok(r) => Ok(r.map(|b| b.boxed())),
        Err(e) => Ok(answer(502, &format!("upstream {host}: {e}"))),
    }
}
