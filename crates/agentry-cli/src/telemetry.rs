//! The program's telemetry: started by the commands that run agents
//! (`run`, `chat`, `serve`, `mcp serve`, `worker`) from `[telemetry]` and
//! the `OTEL_*` environment, once per process, and flushed on exit.

use std::sync::Mutex;

use agentry_telemetry::{Telemetry, TelemetryError};

use crate::config::Loaded;

static RUNNING: Mutex<Option<Telemetry>> = Mutex::new(None);

/// Start exporting as `loaded`'s `[telemetry]` and the environment say
/// (nothing when neither asks, save a log to stderr with `RUST_LOG`). A
/// second call in the same process does nothing.
pub fn start(loaded: &Loaded) -> Result<(), String> {
    let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    if running.is_some() {
        return Ok(());
    }
    let telemetry = Telemetry::init(&loaded.file.telemetry).map_err(|e| match &loaded.path {
        Some(path) => format!("{}: [telemetry]: {e}", path.display()),
        None => e.to_string(),
    })?;
    *running = Some(telemetry);
    Ok(())
}

/// Flush and stop the export, if it was started; a failure is said on stderr.
pub fn finish() {
    let telemetry = RUNNING.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(telemetry) = telemetry
        && let Err(error) = telemetry.shutdown()
    {
        let hint = match &error {
            TelemetryError::Send {
                signal: "metrics", ..
            } => {
                " (is a collector listening there? For one that takes no metrics, as \
                 Phoenix: OTEL_METRICS_EXPORTER=none, or `metrics = false` in [telemetry])"
            }
            _ => "",
        };
        eprintln!("warning: {error}{hint}");
    }
}
