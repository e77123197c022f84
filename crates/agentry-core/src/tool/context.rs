//! `ToolContext`: what a tool may know about the request that called it.
//!
//! The harness fills the context (session, sender, extras, typed state); the
//! model never can. A `&ToolContext` parameter of a `#[tool]` function is
//! injected by dispatch and never appears in the tool's input schema.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::capability::Capabilities;
use super::guard::{CapabilityError, Fs, read_env};
use super::sandbox::ToolSandbox;

/// A conversation a request belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Session {
    /// Stable identifier of the session (memory is keyed by it).
    pub id: String,
}

impl Session {
    /// A session with the given id.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }
}

/// Who sent the current message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Identity {
    /// Stable identifier of the sender.
    pub id: String,
    /// Human-readable name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Identity {
    /// An identity with the given id and no display name.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: None,
        }
    }
}

#[derive(Default, Clone)]
struct ContextInner {
    session: Option<Session>,
    sender: Option<Identity>,
    extras: Map<String, Value>,
    state: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    capabilities: Capabilities,
    progress: Option<ProgressSink>,
    sandbox: Option<Arc<dyn ToolSandbox>>,
    inside_sandbox: bool,
}

/// One progress report from a running tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Work done so far; grows with every report.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// What is happening now.
    pub message: Option<String>,
}

/// Where a tool's progress reports go (an MCP server sends them on as
/// `notifications/progress`).
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// The per-request context handed to tools.
///
/// Cheap to clone (one reference count). Built by the harness with the
/// `with_*` methods; read by tools with the accessors.
///
/// ```
/// use agentry_core::tool::{Identity, Session, ToolContext};
/// use serde_json::json;
///
/// struct Db(&'static str);
/// let ctx = ToolContext::new()
///     .with_session(Session::new("s-1"))
///     .with_sender(Identity::new("alice"))
///     .with_extra("tenant", json!("acme"))
///     .with_state(Db("postgres://…"));
/// assert_eq!(ctx.session().unwrap().id, "s-1");
/// assert_eq!(ctx.extra("tenant"), Some(&json!("acme")));
/// assert_eq!(ctx.state::<Db>().unwrap().0, "postgres://…");
/// ```
#[derive(Clone)]
pub struct ToolContext {
    inner: Arc<ContextInner>,
}

static EMPTY: LazyLock<Arc<ContextInner>> = LazyLock::new(Default::default);

impl Default for ToolContext {
    fn default() -> Self {
        Self {
            inner: EMPTY.clone(),
        }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("session", &self.inner.session)
            .field("sender", &self.inner.sender)
            .field("extras", &self.inner.extras)
            .field("state_types", &self.inner.state.len())
            .field("capabilities", &self.inner.capabilities)
            .finish()
    }
}

impl ToolContext {
    /// An empty context: no session, no sender, no extras, no state.
    pub fn new() -> Self {
        Self::default()
    }

    fn inner_mut(&mut self) -> &mut ContextInner {
        Arc::make_mut(&mut self.inner)
    }

    /// Set the session of the current request.
    pub fn with_session(mut self, session: Session) -> Self {
        self.inner_mut().session = Some(session);
        self
    }

    /// Set the sender of the current request.
    pub fn with_sender(mut self, sender: Identity) -> Self {
        self.inner_mut().sender = Some(sender);
        self
    }

    /// Add one harness-owned extra value (the context's extras).
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.inner_mut().extras.insert(key.into(), value);
        self
    }

    /// Add several harness-owned extras at once.
    pub fn with_extras(mut self, extras: Map<String, Value>) -> Self {
        self.inner_mut().extras.extend(extras);
        self
    }

    /// Attach typed state (a database pool, a client, configuration). One value per type.
    pub fn with_state<T: Any + Send + Sync>(mut self, state: T) -> Self {
        self.inner_mut()
            .state
            .insert(TypeId::of::<T>(), Arc::new(state));
        self
    }

    /// Set the capabilities the tool may use. The agent's gate sets this to
    /// the tool's declared needs ∩ the agent's grants before each call.
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.inner_mut().capabilities = capabilities;
        self
    }

    /// Run calls of sandboxed tools ([`ToolHints::sandbox`]) in `sandbox`.
    ///
    /// [`ToolHints::sandbox`]: super::ToolHints::sandbox
    pub fn with_sandbox(mut self, sandbox: impl ToolSandbox + 'static) -> Self {
        self.inner_mut().sandbox = Some(Arc::new(sandbox));
        self
    }

    /// Mark this context as a sandbox's own, in the confined child process
    /// that runs one call: a sandboxed tool's handler runs here, since the
    /// process already is the sandbox. Only a sandbox implementation calls it.
    pub fn inside_sandbox(mut self) -> Self {
        self.inner_mut().inside_sandbox = true;
        self
    }

    /// Where sandboxed tools' calls run, when configured.
    pub fn sandbox(&self) -> Option<&Arc<dyn ToolSandbox>> {
        self.inner.sandbox.as_ref()
    }

    /// Whether this is a sandbox's child process context (see [`inside_sandbox`](Self::inside_sandbox)).
    pub(crate) fn is_inside_sandbox(&self) -> bool {
        self.inner.inside_sandbox
    }

    /// Send this call's progress reports to `sink`.
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.inner_mut().progress = Some(sink);
        self
    }

    /// Report progress, for callers that listen (an MCP client does); a
    /// no-op when nobody does.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use agentry_core::tool::{Progress, ToolContext};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = seen.clone();
    /// let ctx = ToolContext::new().with_progress(Arc::new(move |p: Progress| log.lock().unwrap().push(p.progress)));
    /// ctx.report_progress(1.0, Some(3.0), "one of three");
    /// ToolContext::new().report_progress(1.0, None, "nobody listens");
    /// assert_eq!(*seen.lock().unwrap(), [1.0]);
    /// ```
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: impl Into<String>) {
        if let Some(sink) = &self.inner.progress {
            let message = message.into();
            sink(Progress {
                progress,
                total,
                message: (!message.is_empty()).then_some(message),
            });
        }
    }

    /// This context with `other`'s request data laid over it: `other`'s
    /// session, sender and extras win (they are the harness's, per request);
    /// typed state keeps this context's values and gains the types only
    /// `other` has, and the sandbox is this context's, or else `other`'s.
    /// Capabilities stay this context's.
    pub fn merged_with(mut self, other: &ToolContext) -> Self {
        let other = &other.inner;
        let inner = self.inner_mut();
        if let Some(session) = &other.session {
            inner.session = Some(session.clone());
        }
        if let Some(sender) = &other.sender {
            inner.sender = Some(sender.clone());
        }
        for (key, value) in &other.extras {
            inner.extras.insert(key.clone(), value.clone());
        }
        for (type_id, value) in &other.state {
            inner.state.entry(*type_id).or_insert_with(|| value.clone());
        }
        if let Some(progress) = &other.progress {
            inner.progress = Some(progress.clone());
        }
        if inner.sandbox.is_none() {
            inner.sandbox = other.sandbox.clone();
        }
        self
    }

    /// The typed state of type `T` as a shared handle, for [`State`](crate::tool::State).
    pub(crate) fn state_arc<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.inner
            .state
            .get(&TypeId::of::<T>())
            .cloned()
            .and_then(|value| value.downcast::<T>().ok())
    }

    /// The capabilities the tool may use in this call.
    pub fn capabilities(&self) -> &Capabilities {
        &self.inner.capabilities
    }

    /// File access confined to the granted directories.
    pub fn fs(&self) -> Fs {
        Fs::new(&self.inner.capabilities)
    }

    /// Read an environment variable, if it is granted (`Ok(None)` when granted but unset).
    pub fn env(&self, name: &str) -> Result<Option<String>, CapabilityError> {
        read_env(&self.inner.capabilities, name)
    }

    /// The session of the current request, if the harness bound one.
    pub fn session(&self) -> Option<&Session> {
        self.inner.session.as_ref()
    }

    /// The sender of the current request, if the harness bound one.
    pub fn sender(&self) -> Option<&Identity> {
        self.inner.sender.as_ref()
    }

    /// All harness-owned extras.
    pub fn extras(&self) -> &Map<String, Value> {
        &self.inner.extras
    }

    /// One harness-owned extra.
    pub fn extra(&self, key: &str) -> Option<&Value> {
        self.inner.extras.get(key)
    }

    /// Typed state previously attached with [`with_state`](Self::with_state).
    pub fn state<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.inner
            .state
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merging_lays_request_data_over_and_keeps_own_state() {
        let agent = ToolContext::new()
            .with_extra("tenant", json!("agent"))
            .with_extra("region", json!("eu"))
            .with_state(7u32);
        let turn = ToolContext::new()
            .with_session(Session::new("s-1"))
            .with_extra("tenant", json!("turn"))
            .with_state(9u32)
            .with_state("label");
        let merged = agent.merged_with(&turn);
        assert_eq!(merged.session().unwrap().id, "s-1");
        assert_eq!(
            Value::Object(merged.extras().clone()),
            json!({"tenant": "turn", "region": "eu"})
        );
        assert_eq!(merged.state::<u32>(), Some(&7));
        assert_eq!(merged.state::<&str>(), Some(&"label"));
        assert_eq!(*merged.state_arc::<u32>().unwrap(), 7);
    }

    #[test]
    fn clones_share_and_builders_copy_on_write() {
        let base = ToolContext::new().with_extra("a", json!(1));
        let derived = base.clone().with_extra("b", json!(2));
        assert_eq!(base.extras().len(), 1);
        assert_eq!(derived.extras().len(), 2);
        assert!(ToolContext::default().session().is_none());
        assert!(base.state::<u32>().is_none());
    }
}
