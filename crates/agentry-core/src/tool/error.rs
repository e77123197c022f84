//! `ToolError`: why a handler did not produce a value, and how the `Err` of
//! a `#[tool]` function becomes one (keeping the error itself when it is a
//! [`std::error::Error`]).

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// Why a handler did not produce a value. Dispatch turns it into an error
/// [`ToolResult`](crate::tool::ToolResult) the model can read: the same
/// words whichever variant carries them.
///
/// ```
/// use agentry_core::tool::ToolError;
///
/// // A failure in words, or an error value kept as the source.
/// let words = ToolError::failed("no such city");
/// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
/// let kept = ToolError::from_error(io);
/// assert_eq!(words.to_string(), "no such city");
/// assert_eq!(kept.to_string(), "no such file");
/// let source = std::error::Error::source(&kept).unwrap();
/// assert!(source.downcast_ref::<std::io::Error>().is_some());
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments could not be turned into the handler's parameter types.
    /// `pointer` is the JSON pointer of the offending value (`/x`), or empty for the whole input.
    InvalidArgument {
        /// JSON pointer of the argument.
        pointer: String,
        /// What went wrong.
        message: String,
    },
    /// The handler ran and reported a failure in words (the `Err` of a
    /// `Result` whose error type is only [`Display`](fmt::Display)).
    Failed(String),
    /// The handler ran and failed with an error value, kept as the
    /// [`source`](std::error::Error::source) (a `#[tool]` function whose
    /// error type is a [`std::error::Error`], or
    /// [`ToolError::from_error`]). The model reads its text.
    Source(Arc<dyn StdError + Send + Sync>),
    /// The handler's return value could not be serialised to JSON.
    Output(String),
}

impl ToolError {
    /// A handler failure with the given message.
    pub fn failed(message: impl fmt::Display) -> Self {
        Self::Failed(message.to_string())
    }

    /// A handler failure that keeps `error` as its source; the model reads
    /// the error's text.
    pub fn from_error(error: impl StdError + Send + Sync + 'static) -> Self {
        Self::Source(Arc::new(error))
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidArgument { pointer, message } => write!(f, "{pointer}: {message}"),
            Self::Failed(message) => f.write_str(message),
            Self::Source(error) => error.fmt(f),
            Self::Output(message) => write!(f, "output could not be serialised: {message}"),
        }
    }
}

/// The source of [`ToolError::Source`] is the handler's error itself, so
/// `downcast_ref` finds its type.
impl StdError for ToolError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Self::Source(error) => Some(&**error),
            _ => None,
        }
    }
}

/// Two tool errors are equal when they are the same variant and say the
/// same (a kept source is compared by its text).
impl PartialEq for ToolError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::InvalidArgument { pointer, message },
                Self::InvalidArgument {
                    pointer: other_pointer,
                    message: other_message,
                },
            ) => pointer == other_pointer && message == other_message,
            (Self::Failed(a), Self::Failed(b)) | (Self::Output(a), Self::Output(b)) => a == b,
            (Self::Source(a), Self::Source(b)) => {
                Arc::ptr_eq(a, b) || a.to_string() == b.to_string()
            }
            _ => false,
        }
    }
}

impl Eq for ToolError {}

/// The `Err` of a `#[tool]` function on its way to a [`ToolError`]. The
/// macro calls `(&&&HandlerErr::new(error)).into_tool_error()` with the
/// three traits below in scope, and method lookup takes the first that
/// applies (autoref specialisation, as `anyhow!` does): a `ToolError` as it
/// is, then any [`std::error::Error`] kept as the source, then anything
/// [`Display`](fmt::Display) in words.
#[doc(hidden)]
pub struct HandlerErr<E>(std::cell::Cell<Option<E>>);

impl<E> HandlerErr<E> {
    /// Wrap a handler's error.
    pub fn new(error: E) -> Self {
        Self(std::cell::Cell::new(Some(error)))
    }

    fn take(&self) -> E {
        self.0.take().expect("a handler's error is converted once")
    }
}

/// First choice: the handler already answered a [`ToolError`].
#[doc(hidden)]
pub trait AsToolError {
    /// The error, as it is.
    fn into_tool_error(self) -> ToolError;
}

impl AsToolError for &&&HandlerErr<ToolError> {
    fn into_tool_error(self) -> ToolError {
        self.take()
    }
}

/// Second choice: an error value, kept as the source.
#[doc(hidden)]
pub trait ErrorToToolError {
    /// The error, kept as [`ToolError::Source`].
    fn into_tool_error(self) -> ToolError;
}

impl<E: StdError + Send + Sync + 'static> ErrorToToolError for &&HandlerErr<E> {
    fn into_tool_error(self) -> ToolError {
        ToolError::from_error(self.take())
    }
}

/// Last choice: anything with words.
#[doc(hidden)]
pub trait DisplayToToolError {
    /// The error's text, as [`ToolError::Failed`].
    fn into_tool_error(self) -> ToolError;
}

impl<E: fmt::Display> DisplayToToolError for &HandlerErr<E> {
    fn into_tool_error(self) -> ToolError {
        ToolError::failed(self.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the city {0} is unknown")]
    struct UnknownCity(String);

    // The borrows are the point: method lookup picks the impl by their depth.
    #[allow(clippy::needless_borrow)]
    #[test]
    fn each_kind_of_error_takes_its_own_conversion() {
        let kept = (&&&HandlerErr::new(UnknownCity("Atlantis".into()))).into_tool_error();
        assert!(matches!(kept, ToolError::Source(_)));
        assert_eq!(kept.to_string(), "the city Atlantis is unknown");
        let source = StdError::source(&kept).expect("the error is the source");
        assert_eq!(
            source.downcast_ref::<UnknownCity>().map(|e| e.0.as_str()),
            Some("Atlantis")
        );

        let words = (&&&HandlerErr::new("no such city")).into_tool_error();
        assert_eq!(words, ToolError::Failed("no such city".into()));
        let owned = (&&&HandlerErr::new(String::from("late"))).into_tool_error();
        assert_eq!(owned, ToolError::Failed("late".into()));

        let invalid = ToolError::InvalidArgument {
            pointer: "/x".into(),
            message: "too big".into(),
        };
        let same = (&&&HandlerErr::new(invalid.clone())).into_tool_error();
        assert_eq!(same, invalid);
    }

    #[test]
    fn equality_is_by_variant_and_text() {
        let io = || std::io::Error::other("disk full");
        assert_eq!(ToolError::from_error(io()), ToolError::from_error(io()));
        assert_ne!(ToolError::from_error(io()), ToolError::failed("disk full"));
        assert_ne!(ToolError::failed("a"), ToolError::Output("a".into()));
    }
}
