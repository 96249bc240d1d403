//! Secrets: credentials held in a redacted, zeroized newtype.
//!
//! A [`Secret`] has no `Display`, `Serialize` or `Clone`; its `Debug` prints
//! `[redacted]`; its bytes are zeroed on drop. Reading it takes an explicit
//! [`Secret::expose`], so every use is visible in review.

use std::fmt;
use zeroize::Zeroize;

/// A credential that never reaches a log, an error, a record or a metric.
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(s: String) -> Secret {
        Secret(s)
    }

    /// The credential itself. Do not log, format or persist the result.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Its length in bytes (safe to report).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_redacted() {
        let s = Secret::new("hunter2-hunter2".into());
        assert_eq!(format!("{s:?}"), "[redacted]");
        assert_eq!(s.expose(), "hunter2-hunter2");
        assert_eq!(s.len(), 15);
    }
}
