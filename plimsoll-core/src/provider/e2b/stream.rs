//! Reading a Connect server stream (envd's `Process/Start`), as the Connect
//! protocol frames it: each message is an envelope `flags: u8 | length: u32
//! big-endian | payload`; the last is the EndStreamResponse (flag `0x02`),
//! `{}` or `{"error": {"code", "message"}}`.
//!
//! The reader is fed the body as it arrives and hands back whole frames. It
//! holds the peer to the protocol and to bounds: a compressed frame (only
//! identity is asked for), a frame over [`MAX_FRAME_BYTES`], more than the
//! caller's total budget, anything after the end frame, or a body that ends
//! without one (a truncated stream) is an error, never a partial success.

use serde_json::Value;

/// Flag of a compressed envelope.
pub const FLAG_COMPRESSED: u8 = 0x01;
/// Flag of the EndStreamResponse.
pub const FLAG_END_STREAM: u8 = 0x02;
/// The largest frame accepted (envd's data events are at most 32 KiB of
/// output, base64 in JSON).
pub const MAX_FRAME_BYTES: usize = 1 << 20;

/// A frame read from the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A message, as JSON.
    Message(Value),
    /// The end of the stream: success, or the server's error.
    End(Result<(), ConnectError>),
}

/// An error the server sent in the end frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectError {
    /// The Connect code (`deadline_exceeded`, `not_found`, …).
    pub code: String,
    /// Its message.
    pub message: String,
}

/// Why a stream cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// A frame is compressed though only identity was asked for.
    #[error("a compressed frame (only identity encoding was asked for)")]
    Compressed,
    /// A frame declares more than [`MAX_FRAME_BYTES`].
    #[error("a frame of {0} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")]
    FrameTooLarge(usize),
    /// The stream carried more than its budget.
    #[error("the stream exceeds its {0}-byte budget")]
    OverBudget(usize),
    /// Bytes arrived after the end frame.
    #[error("data after the end of the stream")]
    AfterEnd,
    /// The body ended without the end frame.
    #[error("the stream ended without its end frame (truncated)")]
    Truncated,
    /// A payload is not the JSON the protocol says.
    #[error("a malformed frame: {0}")]
    Malformed(String),
}

/// An incremental reader of one stream.
#[derive(Debug)]
pub struct StreamReader {
    buf: Vec<u8>,
    seen: usize,
    budget: usize,
    ended: bool,
}

impl StreamReader {
    /// A reader that accepts at most `budget` bytes in all.
    pub fn new(budget: usize) -> StreamReader {
        StreamReader {
            buf: Vec::new(),
            seen: 0,
            budget,
            ended: false,
        }
    }

    /// Adds bytes as they arrive.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), StreamError> {
        if chunk.is_empty() {
            return Ok(());
        }
        if self.ended {
            return Err(StreamError::AfterEnd);
        }
        self.seen = self.seen.saturating_add(chunk.len());
        if self.seen > self.budget {
            return Err(StreamError::OverBudget(self.budget));
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// The next whole frame, or `None` until more bytes arrive.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, StreamError> {
        if self.buf.len() < 5 {
            return Ok(None);
        }
        if self.ended {
            return Err(StreamError::AfterEnd);
        }
        let flags = self.buf[0];
        if flags & FLAG_COMPRESSED != 0 {
            return Err(StreamError::Compressed);
        }
        let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
        if len > MAX_FRAME_BYTES {
            return Err(StreamError::FrameTooLarge(len));
        }
        if self.buf.len() < 5 + len {
            return Ok(None);
        }
        let payload: Vec<u8> = self.buf.drain(..5 + len).skip(5).collect();
        let value: Value = serde_json::from_slice(&payload)
            .map_err(|e| StreamError::Malformed(format!("payload is not JSON: {e}")))?;
        if flags & FLAG_END_STREAM == 0 {
            return Ok(Some(Frame::Message(value)));
        }
        self.ended = true;
        // The end frame is read first, so a malformed one is refused the same
        // way whether or not bytes follow it in the same chunk.
        let end = end(&value)?;
        if !self.buf.is_empty() {
            return Err(StreamError::AfterEnd);
        }
        Ok(Some(Frame::End(end)))
    }

    /// The body has ended: it must have ended with the end frame.
    pub fn finish(&self) -> Result<(), StreamError> {
        if self.ended && self.buf.is_empty() {
            Ok(())
        } else {
            Err(StreamError::Truncated)
        }
    }
}

fn end(v: &Value) -> Result<Result<(), ConnectError>, StreamError> {
    let Some(obj) = v.as_object() else {
        return Err(StreamError::Malformed(
            "the end frame is not an object".into(),
        ));
    };
    let Some(e) = obj.get("error") else {
        return Ok(Ok(()));
    };
    let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
    match text("code") {
        Some(code) => Ok(Err(ConnectError {
            code,
            message: text("message").unwrap_or_default(),
        })),
        None => Err(StreamError::Malformed(
            "the end frame's error has no code".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn frame(flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![flags];
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn read_all(bytes: &[u8], step: usize) -> Result<Vec<Frame>, StreamError> {
        let mut r = StreamReader::new(1 << 20);
        let mut out = Vec::new();
        for chunk in bytes.chunks(step.max(1)) {
            r.push(chunk)?;
            while let Some(f) = r.next_frame()? {
                out.push(f);
            }
        }
        r.finish()?;
        Ok(out)
    }

    #[test]
    fn frames_split_anywhere_read_the_same() {
        let mut body = frame(0, br#"{"event":{"start":{"pid":7}}}"#);
        body.extend(frame(0, br#"{"event":{"keepalive":{}}}"#));
        body.extend(frame(FLAG_END_STREAM, b"{}"));
        let whole = read_all(&body, body.len()).unwrap();
        assert_eq!(whole.len(), 3);
        assert_eq!(
            whole[0],
            Frame::Message(json!({"event":{"start":{"pid":7}}}))
        );
        assert_eq!(whole[2], Frame::End(Ok(())));
        for step in 1..body.len() {
            assert_eq!(
                read_all(&body, step).unwrap(),
                whole,
                "split every {step} bytes"
            );
        }
    }

    #[test]
    fn the_servers_error_arrives_in_the_end_frame() {
        let body = frame(
            FLAG_END_STREAM,
            br#"{"error":{"code":"deadline_exceeded","message":"too slow"}}"#,
        );
        let f = read_all(&body, 3).unwrap();
        assert_eq!(
            f,
            vec![Frame::End(Err(ConnectError {
                code: "deadline_exceeded".into(),
                message: "too slow".into()
            }))]
        );
    }

    #[test]
    fn protocol_breaks_and_bounds_are_refused() {
        let msg = frame(0, b"{}");
        assert_eq!(read_all(&msg, 64), Err(StreamError::Truncated));
        assert_eq!(read_all(&msg[..4], 64), Err(StreamError::Truncated));
        assert_eq!(
            read_all(&frame(FLAG_COMPRESSED, b"{}"), 64),
            Err(StreamError::Compressed)
        );
        let mut huge = vec![0u8];
        huge.extend_from_slice(&((MAX_FRAME_BYTES + 1) as u32).to_be_bytes());
        assert_eq!(
            read_all(&huge, 64),
            Err(StreamError::FrameTooLarge(MAX_FRAME_BYTES + 1))
        );
        let mut after = frame(FLAG_END_STREAM, b"{}");
        after.extend(frame(0, b"{}"));
        assert_eq!(read_all(&after, after.len()), Err(StreamError::AfterEnd));
        assert_eq!(read_all(&after, 1), Err(StreamError::AfterEnd));
        assert!(matches!(
            read_all(&frame(0, b"nope"), 64),
            Err(StreamError::Malformed(_))
        ));
        assert!(matches!(
            read_all(&frame(FLAG_END_STREAM, br#"{"error":{}}"#), 64),
            Err(StreamError::Malformed(_))
        ));
        let mut r = StreamReader::new(8);
        assert_eq!(r.push(&[0; 9]), Err(StreamError::OverBudget(8)));
    }
}
