//! The endpoint's file routes: `POST /v1/files/upload` (multipart/form-data
//! in ordered `metadata`/`content` pairs), `GET /v1/files/download`
//! (`multipart/mixed`: `metadata` and `content` parts per file, an `error`
//! part for a path that cannot be read, a clean closing delimiter) and
//! `GET /v1/files/content` (one file's raw bytes). See [`super::endpoint`]
//! for the jail and symlink rule.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Multipart, Path, Query, State as Shared};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::endpoint::{admit, internal, run, within};
use super::vm::Machine;
use super::{StandIn, invalid};

type App = Shared<Arc<StandIn>>;

/// Writes stdin to `$1` with mode `$2` (octal). Exit 70: a symlink on the
/// path; 71: the target exists and is not a regular file; 72: it could not
/// be written.
const WRITE: &str = r#"p=$1 m=$2
d=$(dirname -- "$p")
same() { [ "$(realpath -m -- "$1")" = "$(realpath -s -m -- "$1")" ]; }
same "$d" || exit 70
[ -L "$p" ] && exit 70
if [ -e "$p" ] && [ ! -f "$p" ]; then exit 71; fi
mkdir -p -- "$d" || exit 72
same "$d" || exit 70
t=$(mktemp -p "$d" .upload.XXXXXX) || exit 72
if cat > "$t" && chmod "$m" "$t" && mv -f -T -- "$t" "$p"; then exit 0; fi
rm -f -- "$t"
exit 72"#;

/// Prints `$1`'s mode (octal; `find`, as gVisor refuses coreutils' `statx`) on stderr and its bytes on stdout. Exit 70: a
/// symlink on the path; 71: not a regular file; 72: unreadable; 73: missing.
const READ: &str = r#"p=$1
d=$(dirname -- "$p")
[ "$(realpath -m -- "$d")" = "$(realpath -s -m -- "$d")" ] || exit 70
[ -L "$p" ] && exit 70
[ -e "$p" ] || exit 73
[ -f "$p" ] || exit 71
[ -r "$p" ] || exit 72
find "$p" -maxdepth 0 -printf %m >&2 || exit 72
exec cat -- "$p""#;

/// A file operation's failure (a script's exit `code`): the status and the `Error` body.
fn failure(code: i64, path: &str, stderr: &[u8]) -> (StatusCode, Value) {
    let (status, code, reason, message) = match code {
        70 => (
            StatusCode::CONFLICT,
            "failedPrecondition",
            "SYMLINK_ESCAPE",
            format!("{path}: the path leaves the jail through a symlink"),
        ),
        71 => (
            StatusCode::CONFLICT,
            "failedPrecondition",
            "NOT_REGULAR_FILE",
            format!("{path}: not a regular file"),
        ),
        73 => (
            StatusCode::NOT_FOUND,
            "notFound",
            "FILE_NOT_FOUND",
            format!("{path}: no such file"),
        ),
        _ => (
            StatusCode::FORBIDDEN,
            "permissionDenied",
            "FILE_ACCESS_DENIED",
            format!(
                "{path}: {}",
                String::from_utf8_lossy(stderr)
                    .trim()
                    .chars()
                    .take(200)
                    .collect::<String>()
            ),
        ),
    };
    let body = json!({
        "code": code,
        "message": message,
        "details": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": "sandboxes.docker.com",
            "metadata": {"path": path},
        }],
    });
    (status, body)
}

fn answer(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHeader {
    path: String,
    #[serde(default)]
    mode: u32,
}

/// `POST /v1/files/upload`.
pub async fn upload(
    Shared(s): App,
    Path(uid): Path<String>,
    headers: HeaderMap,
    mut parts: Multipart,
) -> Response {
    let (c, m) = match admit(&s, &headers, &uid, "sandboxesFilesWrite") {
        Ok(x) => x,
        Err(r) => return *r,
    };
    within(&c, async move {
        let mut written = 0u64;
        let mut pending: Option<FileHeader> = None;
        let mut index = 0usize;
        loop {
            let field = match parts.next_field().await {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => return invalid("content", format!("malformed multipart body: {e}")),
            };
            if field.headers().contains_key("content-transfer-encoding") {
                return invalid("content", "Content-Transfer-Encoding is refused");
            }
            let name = field.name().unwrap_or_default().to_owned();
            let bytes = match field.bytes().await {
                Ok(b) => b,
                Err(e) => return invalid("content", format!("malformed multipart body: {e}")),
            };
            match (name.as_str(), pending.take()) {
                ("metadata", None) => match serde_json::from_slice::<FileHeader>(&bytes) {
                    Ok(h) if !h.path.is_empty() => pending = Some(h),
                    Ok(_) => return invalid(&format!("items[{index}].path"), "path is required"),
                    Err(e) => {
                        return invalid(&format!("items[{index}].metadata"), e.to_string());
                    }
                },
                ("content", Some(h)) => {
                    match write_file(&m, &h.path, h.mode, bytes.to_vec()).await {
                        Ok(Ok(())) => written += 1,
                        Ok(Err((code, stderr))) => {
                            let (status, body) = failure(code, &h.path, &stderr);
                            return answer(status, body);
                        }
                        Err(e) => return internal(e),
                    }
                    index += 1;
                }
                ("metadata", Some(_)) => {
                    return invalid(
                        &format!("items[{index}]"),
                        "metadata without its content part",
                    );
                }
                ("content", None) => {
                    return invalid(
                        &format!("items[{index}]"),
                        "content without a metadata part before it",
                    );
                }
                (other, _) => {
                    return invalid(
                        &format!("items[{index}]"),
                        format!("unknown part {other:?}: parts are metadata and content"),
                    );
                }
            }
        }
        if pending.is_some() {
            return invalid(
                &format!("items[{index}]"),
                "metadata without its content part",
            );
        }
        axum::Json(json!({"filesWritten": written})).into_response()
    })
    .await
}

/// Writes `data` to `path` in the sandbox with `mode` (0: `0644`), never
/// through a symlink: `Ok(Err((script exit, stderr)))` when refused.
async fn write_file(
    m: &Machine,
    path: &str,
    mode: u32,
    data: Vec<u8>,
) -> Result<Result<(), (i64, Vec<u8>)>, String> {
    let mode = match mode & 0o777 {
        0 => 0o644,
        m => m,
    };
    let argv = vec![
        "/bin/sh".into(),
        "-c".into(),
        WRITE.into(),
        "upload".into(),
        path.to_owned(),
        format!("{mode:o}"),
    ];
    let r = run(m, argv, Vec::new(), None, None, Some(data), 4096).await?;
    Ok(if r.code == 0 {
        Ok(())
    } else {
        Err((r.code, r.stderr))
    })
}

/// [`write_file`] for the Connect `FileService/Upload`: why a refused
/// write was refused.
pub async fn write(
    m: &Machine,
    path: &str,
    mode: u32,
    data: Vec<u8>,
) -> Result<Result<(), String>, String> {
    Ok(write_file(m, path, mode, data)
        .await?
        .map_err(|(code, stderr)| message(code, path, &stderr)))
}

/// [`read`] for the Connect `FileService/Download`: `Ok(Err(why))` for a
/// path that cannot be read.
pub async fn read_file(m: &Machine, path: &str) -> Result<Result<(u32, Vec<u8>), String>, String> {
    Ok(read(m, path)
        .await?
        .map_err(|(_, body)| body["message"].as_str().unwrap_or("unreadable").to_owned()))
}

/// The message of a file operation's failure.
fn message(code: i64, path: &str, stderr: &[u8]) -> String {
    failure(code, path, stderr).1["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Reads one file: `Ok((mode, bytes))`, or `Err((status, Error body))` for a path that cannot be read.
async fn read(
    m: &Machine,
    path: &str,
) -> Result<Result<(u32, Vec<u8>), (StatusCode, Value)>, String> {
    let argv = vec![
        "/bin/sh".into(),
        "-c".into(),
        READ.into(),
        "download".into(),
        path.to_owned(),
    ];
    let r = run(
        m,
        argv,
        Vec::new(),
        None,
        None,
        None,
        super::endpoint::MAX_FILE_BYTES + 64,
    )
    .await?;
    if r.code != 0 {
        let (status, body) = failure(r.code, path, &r.stderr);
        return Ok(Err((status, body)));
    }
    if r.incomplete || r.stdout.len() > super::endpoint::MAX_FILE_BYTES {
        let body = json!({"code": "outOfRange", "message": format!("{path}: larger than the stand-in's {} MiB cap", super::endpoint::MAX_FILE_BYTES >> 20), "details": []});
        return Ok(Err((StatusCode::BAD_REQUEST, body)));
    }
    let mode = u32::from_str_radix(String::from_utf8_lossy(&r.stderr).trim(), 8).unwrap_or(0o644);
    Ok(Ok((mode, r.stdout)))
}

/// `GET /v1/files/download?paths=…`.
pub async fn download(
    Shared(s): App,
    Path(uid): Path<String>,
    headers: HeaderMap,
    Query(q): Query<Vec<(String, String)>>,
) -> Response {
    let (c, m) = match admit(&s, &headers, &uid, "sandboxesFilesRead") {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let paths: Vec<String> = q
        .into_iter()
        .filter(|(k, _)| k == "paths")
        .map(|(_, v)| v)
        .collect();
    if paths.is_empty() || paths.iter().any(String::is_empty) {
        return invalid("paths", "at least one non-empty path is required");
    }
    within(&c, async move {
        let boundary = format!("sbx{}", hex::encode(rand::random::<[u8; 12]>()));
        let mut body = Vec::new();
        let mut part = |name: &str, ctype: &str, bytes: &[u8]| {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Type: {ctype}\r\nContent-Disposition: attachment; name=\"{name}\"\r\n\r\n")
                    .as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        };
        for p in &paths {
            match read(&m, p).await {
                Ok(Ok((mode, bytes))) => {
                    let meta = json!({"path": p, "mode": mode}).to_string();
                    part("metadata", "application/json", meta.as_bytes());
                    part("content", "application/octet-stream", &bytes);
                }
                Ok(Err((_, failure))) => {
                    let e = json!({"path": p, "failure": failure}).to_string();
                    part("error", "application/json", e.as_bytes());
                }
                Err(e) => return internal(e),
            }
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let mut r = Response::new(Body::from(body));
        if let Ok(v) = HeaderValue::from_str(&format!("multipart/mixed; boundary={boundary}")) {
            r.headers_mut().insert(header::CONTENT_TYPE, v);
        }
        r
    })
    .await
}

/// `GET /v1/files/content?path=…`.
pub async fn content(
    Shared(s): App,
    Path(uid): Path<String>,
    headers: HeaderMap,
    Query(q): Query<Vec<(String, String)>>,
) -> Response {
    let (c, m) = match admit(&s, &headers, &uid, "sandboxesFilesRead") {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let Some(path) = q
        .into_iter()
        .find(|(k, _)| k == "path")
        .map(|(_, v)| v)
        .filter(|p| !p.is_empty())
    else {
        return invalid("path", "path is required");
    };
    within(&c, async move {
        match read(&m, &path).await {
            Ok(Ok((_, bytes))) => {
                ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
            }
            Ok(Err((status, body))) => answer(status, body),
            Err(e) => internal(e),
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    #[test]
    fn scripts_are_plain_sh() {
        for s in [super::WRITE, super::READ] {
            assert!(!s.contains("[["), "bash-only syntax");
        }
    }
}
