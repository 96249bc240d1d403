//! The multipart bodies of the sandbox endpoint's files API (notes §2.3): an
//! upload is `multipart/form-data` with ordered pairs of a `metadata` part
//! (`{"path","mode"}`) then a `content` part; a download answers
//! `multipart/mixed` with `metadata`, `content`, `error` and `stream-error`
//! parts, which must end with a clean closing delimiter.

use serde_json::{Value, json};

/// An upload body for `files` (absolute path, bytes, mode), and its boundary.
pub fn upload(files: &[(String, &[u8])], boundary: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (path, content) in files {
        let meta = json!({"path": path, "mode": 0o644});
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\
                 Content-Type: application/json\r\n\r\n{meta}\r\n\
                 --{boundary}\r\nContent-Disposition: form-data; name=\"content\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

/// One file of a download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Downloaded {
    /// Its bytes.
    File(Vec<u8>),
    /// Docker's error for it (`error` part: the file is missing, not regular…).
    Error(String),
}

/// The boundary a `multipart/mixed` content type names.
pub fn boundary(content_type: &str) -> Option<String> {
    let (kind, params) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/mixed") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"').to_owned())
            .filter(|b| !b.is_empty() && b.len() <= 70)
    })
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// Reads a download, the files in the order their `metadata` parts came.
pub fn download(body: &[u8], boundary: &str) -> Result<Vec<(String, Downloaded)>, String> {
    let delim = format!("--{boundary}");
    let mut at = find(body, delim.as_bytes(), 0).ok_or("no multipart delimiter")?;
    let mut out: Vec<(String, Downloaded)> = Vec::new();
    let mut current: Option<String> = None;
    loop {
        let after = at + delim.len();
        if body.get(after..after + 2) == Some(b"--") {
            return Ok(out);
        }
        if body.get(after..after + 2) != Some(b"\r\n") {
            return Err("a malformed multipart delimiter".into());
        }
        let head_end = find(body, b"\r\n\r\n", after + 2).ok_or("a part without headers")?;
        let head = String::from_utf8_lossy(&body[after + 2..head_end]).to_ascii_lowercase();
        let next = find(body, format!("\r\n{delim}").as_bytes(), head_end + 4)
            .ok_or("no closing delimiter: the download was cut short")?;
        let content = &body[head_end + 4..next];
        let name = head
            .lines()
            .filter(|l| l.starts_with("content-disposition:"))
            .find_map(|l| {
                l.split(';').find_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    (k.trim() == "name").then(|| v.trim().trim_matches('"').to_owned())
                })
            })
            .ok_or("a part without a name")?;
        match name.as_str() {
            "metadata" => {
                let v: Value =
                    serde_json::from_slice(content).map_err(|_| "a metadata part not JSON")?;
                let path = v
                    .get("path")
                    .and_then(Value::as_str)
                    .ok_or("a metadata part without a path")?;
                current = Some(path.to_owned());
            }
            "content" => {
                let path = current
                    .take()
                    .ok_or("a content part without its metadata")?;
                out.push((path, Downloaded::File(content.to_vec())));
            }
            "error" => {
                let v: Value = serde_json::from_slice(content).unwrap_or(Value::Null);
                let path = v
                    .get("path")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| current.take())
                    .ok_or("an error part naming no path")?;
                let msg = v
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("refused")
                    .to_owned();
                out.push((path, Downloaded::Error(msg)));
            }
            "stream-error" => {
                return Err(format!(
                    "the download broke: {}",
                    String::from_utf8_lossy(content)
                ));
            }
            other => return Err(format!("an unknown part {other:?}")),
        }
        at = next + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_is_ordered_metadata_then_content_pairs() {
        let b = upload(
            &[
                ("/work/a".into(), b"A".as_slice()),
                ("/work/d/b".into(), b"B"),
            ],
            "XX",
        );
        let s = String::from_utf8(b).unwrap();
        let m = s.find("name=\"metadata\"").unwrap();
        let c = s.find("name=\"content\"").unwrap();
        assert!(
            m < c && s.contains(r#"{"mode":420,"path":"/work/a"}"#),
            "{s}"
        );
        assert!(s.ends_with("--XX--\r\n"));
        assert_eq!(s.matches("name=\"metadata\"").count(), 2);
    }

    #[test]
    fn a_download_reads_files_and_errors_and_needs_its_closing_delimiter() {
        assert_eq!(
            boundary("multipart/mixed; boundary=\"b1\""),
            Some("b1".into())
        );
        assert_eq!(boundary("multipart/form-data; boundary=b1"), None);
        let body = b"--b1\r\nContent-Disposition: attachment; name=metadata\r\nContent-Type: application/json\r\n\r\n{\"path\":\"/work/out.txt\",\"size\":\"3\"}\r\n--b1\r\nContent-Disposition: attachment; name=content\r\n\r\nab\n\r\n--b1\r\nContent-Disposition: attachment; name=error\r\n\r\n{\"path\":\"/work/no\",\"code\":\"notFound\",\"message\":\"no such file\"}\r\n--b1--\r\n";
        let files = download(body, "b1").unwrap();
        assert_eq!(
            files,
            vec![
                ("/work/out.txt".into(), Downloaded::File(b"ab\n".to_vec())),
                ("/work/no".into(), Downloaded::Error("no such file".into())),
            ]
        );
        let cut = &body[..body.len() - 10];
        assert!(download(cut, "b1").is_err());
        let broken =
            b"--b1\r\nContent-Disposition: attachment; name=stream-error\r\n\r\n{}\r\n--b1--\r\n";
        assert!(download(broken, "b1").is_err());
    }
}
