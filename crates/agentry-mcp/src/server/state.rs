//! The `requestState` of multi-round tool calls (SEP-2322), signed: the
//! client echoes it back, so the server opens only values it sealed itself,
//! for the same tool and arguments, within ten minutes.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ErrorData, RequestStateCodec, SealOptions};
use serde_json::Value;

use crate::McpError;

/// How long a sealed state stays valid.
const TTL: Duration = Duration::from_secs(600);

/// Seals and opens request states with one HMAC key.
#[derive(Clone)]
pub(crate) struct StateSeal {
    codec: Arc<RequestStateCodec>,
}

impl StateSeal {
    /// A seal with a fresh random key.
    pub(crate) fn random() -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system provides random bytes");
        Self::new(key.to_vec()).expect("32 bytes are long enough")
    }

    /// A seal with `key` (at least 32 bytes).
    pub(crate) fn new(key: Vec<u8>) -> Result<Self, McpError> {
        let codec = RequestStateCodec::try_new(key)
            .map_err(|error| McpError::Config(format!("request state key: {error}")))?;
        Ok(Self {
            codec: Arc::new(codec),
        })
    }

    /// `state` sealed for the call `request` makes.
    pub(crate) fn seal(&self, state: &Value, request: &CallToolRequestParams) -> String {
        let bound = binding(request);
        let payload = serde_json::to_vec(state).unwrap_or_default();
        self.codec.seal_with(
            &payload,
            &SealOptions::new().associated_data(&bound).ttl(TTL),
        )
    }

    /// The state in `sealed`, if this server sealed it for this call and it
    /// has not expired; else an invalid-params error.
    pub(crate) fn open(
        &self,
        sealed: &str,
        request: &CallToolRequestParams,
    ) -> Result<Value, ErrorData> {
        let refused = |why: String| {
            ErrorData::invalid_params(
                format!("requestState failed its integrity check: {why}"),
                None,
            )
        };
        let payload = self
            .codec
            .open_with(sealed, &binding(request))
            .map_err(|error| refused(error.to_string()))?;
        serde_json::from_slice(&payload).map_err(|error| refused(error.to_string()))
    }
}

/// What a state is bound to: the tool and its arguments, keys sorted.
fn binding(request: &CallToolRequestParams) -> Vec<u8> {
    let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
    let mut bound = request.name.as_bytes().to_vec();
    bound.push(0);
    bound.extend(canonical(&arguments).to_string().as_bytes());
    bound
}

/// `value` with every object's keys in sorted order.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key.clone(), canonical(value)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: Value) -> CallToolRequestParams {
        let mut request = CallToolRequestParams::new(name.to_owned());
        request.arguments = arguments.as_object().cloned();
        request
    }

    #[test]
    fn states_open_only_for_the_same_call_and_unaltered() {
        let seal = StateSeal::random();
        let first = call("book", json!({"city": "Oslo", "nights": 2}));
        let sealed = seal.seal(&json!({"step": 2}), &first);
        let reordered = call("book", json!({"nights": 2, "city": "Oslo"}));
        assert_eq!(seal.open(&sealed, &reordered).unwrap(), json!({"step": 2}));

        let other_args = call("book", json!({"city": "Rome", "nights": 2}));
        let other_tool = call("cancel", json!({"city": "Oslo", "nights": 2}));
        let mut tampered = sealed.clone();
        let last = tampered.pop().unwrap();
        tampered.push(if last == 'A' { 'B' } else { 'A' });
        for (sealed, request) in [
            (&sealed, &other_args),
            (&sealed, &other_tool),
            (&tampered, &first),
        ] {
            let error = seal.open(sealed, request).unwrap_err();
            assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(
                error
                    .message
                    .starts_with("requestState failed its integrity check")
            );
        }
        let stranger = StateSeal::random();
        assert!(stranger.open(&sealed, &first).is_err());
        assert!(StateSeal::new(b"short".to_vec()).is_err());
    }
}
