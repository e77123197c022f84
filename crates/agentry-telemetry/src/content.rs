//! Whether spans carry message and argument content: the GenAI
//! conventions' opt-in attributes (`gen_ai.input.messages`,
//! `gen_ai.output.messages`, `gen_ai.system_instructions`,
//! `gen_ai.tool.definitions`, `gen_ai.tool.call.arguments`,
//! `gen_ai.tool.call.result`). Off unless the program turns it on
//! ([`set_capture_content`]) or the environment does
//! (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`).

use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that opts in to content, as other GenAI
/// instrumentations read it.
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

const UNSET: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

static CAPTURE: AtomicU8 = AtomicU8::new(UNSET);

/// Whether spans should carry content. Read from the environment the first
/// time unless [`set_capture_content`] decided it.
///
/// ```
/// agentry_telemetry::set_capture_content(true);
/// assert!(agentry_telemetry::capture_content());
/// agentry_telemetry::set_capture_content(false);
/// assert!(!agentry_telemetry::capture_content());
/// ```
pub fn capture_content() -> bool {
    match CAPTURE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            let on = std::env::var(CAPTURE_CONTENT_ENV)
                .is_ok_and(|value| value.trim().eq_ignore_ascii_case("true"));
            // A decision made meanwhile by `set_capture_content` wins.
            let _ = CAPTURE.compare_exchange(
                UNSET,
                if on { ON } else { OFF },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            CAPTURE.load(Ordering::Relaxed) == ON
        }
    }
}

/// Turn content on spans on or off for the whole process.
pub fn set_capture_content(on: bool) {
    CAPTURE.store(if on { ON } else { OFF }, Ordering::Relaxed);
}
