//! [`Secret`]: an API key that goes into request headers and nowhere else —
//! `Debug` (and so every log line and panic message) shows it redacted.

use std::fmt;

/// An API key. Its `Debug` output never shows it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key, for a request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"<redacted>\"")
    }
}
