//! What the A2A tests share: scripted steps and a destructive tool that
//! counts its runs.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentry_core::model::{Step, Usage};
use agentry_core::tool::{Tool, ToolCall, ToolContext, ToolHints, function};
use serde_json::Value;

pub fn call(name: &str, input: Value) -> Step {
    Step::Tool {
        calls: vec![ToolCall::new("c1", name, input)],
        text: String::new(),
        tokens: Usage::new(10, 3),
    }
}

pub fn say(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(12, 4),
    }
}

/// A destructive tool counting its runs, taking `delay` to run.
pub fn delete(runs: Arc<AtomicUsize>, delay: Duration) -> Tool {
    function("delete_file")
        .description("Delete a file.")
        .arg::<String>("path", "The file")
        .hints(ToolHints {
            destructive: true,
            ..ToolHints::default()
        })
        .handler(move |_: Value, _: ToolContext| {
            let runs = runs.clone();
            async move {
                tokio::time::sleep(delay).await;
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>("deleted")
            }
        })
        .build()
        .unwrap()
}
