//! The server's answers about its prompts, resources and completions, and
//! resource subscriptions: who subscribed to which URI (`resources/subscribe`
//! on 2025-11-25 sessions, `subscriptions/listen` streams on 2026-07-28),
//! told when [`McpServer::resource_updated`] says it changed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorData, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, InputRequiredResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResult, Reference,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{Peer, SubscriptionContext, SubscriptionSink};
use serde_json::json;

use super::{Caller, McpServer, offers};

/// Where an update goes: a 2025-11-25 session's client, or a 2026-07-28
/// listen stream.
#[derive(Clone)]
pub(crate) enum Subscriber {
    Session(Peer<RoleServer>),
    Stream(SubscriptionSink),
}

impl Subscriber {
    fn is_gone(&self) -> bool {
        match self {
            Self::Session(peer) => peer.is_transport_closed(),
            Self::Stream(_) => false,
        }
    }

    async fn tell(&self, uri: &str) -> bool {
        match self {
            Self::Session(peer) => peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.to_owned()))
                .await
                .is_ok(),
            Self::Stream(sink) => sink.notify_resource_updated(uri.to_owned()).await.is_ok(),
        }
    }
}

/// Each subscribed URI's subscribers: a session's or stream's number, and
/// where to send.
type Subscribed = HashMap<String, Vec<(u64, Subscriber)>>;

/// Who subscribed to which resource, across every session of one server.
#[derive(Clone, Default)]
pub(crate) struct Subscriptions(Arc<Mutex<Subscribed>>);

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Subscribed> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Most resources one session or listen stream may subscribe to.
pub const MAX_SUBSCRIPTIONS: usize = 256;

/// Longest URI a subscription may name.
pub const MAX_SUBSCRIBED_URI: usize = 2048;

/// A number for a new session or listen stream.
pub(crate) fn next_subscriber() -> u64 {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    LAST.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
}

fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("no resource at {uri}"), Some(json!({ "uri": uri })))
}

impl McpServer {
    pub(crate) fn prompt_list(&self) -> ListPromptsResult {
        ListPromptsResult::with_all_items(
            self.inner
                .prompts
                .iter()
                .map(|prompt| prompt.info.clone())
                .collect(),
        )
    }

    /// `prompts/get`: the prompt rendered; on the stateless revision a
    /// prompt that asks the client something answers `input_required`.
    pub(crate) async fn prompt_get(
        &self,
        request: GetPromptRequestParams,
        caller: Caller,
    ) -> Result<GetPromptResponse, ErrorData> {
        let prompt = self
            .inner
            .prompts
            .iter()
            .find(|prompt| prompt.info.name == request.name)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("unknown prompt: {}", request.name), None)
            })?;
        let rendered = prompt
            .render(request.arguments.unwrap_or_default(), Some(caller.clone()))
            .await;
        let outcome = caller.take_outcome();
        if let Some(missing) = outcome.missing {
            return Err(ErrorData::missing_required_client_capability(missing));
        }
        if !outcome.pending.is_empty() {
            return Ok(InputRequiredResult::new(Some(outcome.pending), None).into());
        }
        let messages = rendered.map_err(|error| ErrorData::invalid_params(error, None))?;
        let mut result = GetPromptResult::new(messages);
        result.description = prompt.info.description.clone();
        Ok(result.into())
    }

    pub(crate) fn resource_list(&self) -> ListResourcesResult {
        ListResourcesResult::with_all_items(
            self.inner
                .resources
                .iter()
                .map(|resource| resource.info.clone())
                .collect(),
        )
    }

    pub(crate) fn template_list(&self) -> ListResourceTemplatesResult {
        ListResourceTemplatesResult::with_all_items(
            self.inner
                .templates
                .iter()
                .map(|template| template.info.clone())
                .collect(),
        )
    }

    /// `resources/read`: the resource at that URI, else the first template
    /// that matches it; an unknown URI is an error naming it (never an
    /// empty result).
    pub(crate) async fn resource_read(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, ErrorData> {
        let uri = request.uri;
        let contents =
            if let Some(resource) = self.inner.resources.iter().find(|r| r.info.uri == uri) {
                resource.read().await
            } else {
                let (template, variables) = self
                    .inner
                    .templates
                    .iter()
                    .find_map(|template| template.matches(&uri).map(|vars| (template, vars)))
                    .ok_or_else(|| not_found(&uri))?;
                template.read(uri.clone(), variables).await
            };
        let contents = contents.map_err(|error| ErrorData::internal_error(error, None))?;
        if contents.is_empty() {
            return Err(not_found(&uri));
        }
        Ok(ReadResourceResult::new(contents))
    }

    /// Whether `uri` is a resource this server offers (or a template's).
    fn offers(&self, uri: &str) -> bool {
        self.inner.resources.iter().any(|r| r.info.uri == uri)
            || self
                .inner
                .templates
                .iter()
                .any(|t| t.matches(uri).is_some())
    }

    /// Send `uri`'s updates to `subscriber`, known by `id` (one per
    /// session or stream).
    pub(crate) fn subscribe(
        &self,
        uri: &str,
        id: u64,
        subscriber: Subscriber,
    ) -> Result<(), ErrorData> {
        if uri.len() > MAX_SUBSCRIBED_URI {
            return Err(ErrorData::invalid_params(
                format!("a subscribed URI is at most {MAX_SUBSCRIBED_URI} bytes"),
                None,
            ));
        }
        if !self.offers(uri) {
            return Err(not_found(uri));
        }
        let mut subscriptions = self.subscriptions.lock();
        // Gone sessions are forgotten everywhere, not only under this URI.
        subscriptions.retain(|_, subscribers| {
            subscribers.retain(|(_, subscriber)| !subscriber.is_gone());
            !subscribers.is_empty()
        });
        let already = subscriptions
            .get(uri)
            .is_some_and(|subscribers| subscribers.iter().any(|(known, _)| *known == id));
        if already {
            return Ok(());
        }
        let held = subscriptions
            .values()
            .filter(|subscribers| subscribers.iter().any(|(known, _)| *known == id))
            .count();
        if held >= MAX_SUBSCRIPTIONS {
            return Err(ErrorData::invalid_params(
                format!("a session subscribes to at most {MAX_SUBSCRIPTIONS} resources"),
                None,
            ));
        }
        subscriptions
            .entry(uri.to_owned())
            .or_default()
            .push((id, subscriber));
        Ok(())
    }

    /// Stop sending `uri`'s updates to the subscriber known by `id`.
    pub(crate) fn unsubscribe(&self, uri: &str, id: u64) {
        let mut subscriptions = self.subscriptions.lock();
        if let Some(subscribers) = subscriptions.get_mut(uri) {
            subscribers.retain(|(known, subscriber)| *known != id && !subscriber.is_gone());
            if subscribers.is_empty() {
                subscriptions.remove(uri);
            }
        }
    }

    /// The part of a `subscriptions/listen` filter this server serves: the
    /// resources it offers (its lists never change).
    pub(crate) fn listen_filter(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| uri.len() <= MAX_SUBSCRIBED_URI && self.offers(uri))
            .take(MAX_SUBSCRIPTIONS)
            .cloned()
            .collect();
        SubscriptionFilter::builder()
            .resource_subscriptions(uris)
            .build()
    }

    /// Serve one `subscriptions/listen` stream until the client ends it.
    pub(crate) async fn listen_to(&self, context: SubscriptionContext) {
        let id = next_subscriber();
        let uris: Vec<String> = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        for uri in &uris {
            let _ = self.subscribe(uri, id, Subscriber::Stream(context.sink().clone()));
        }
        context.cancelled().await;
        for uri in &uris {
            self.unsubscribe(uri, id);
        }
    }

    /// Tell every session subscribed to `uri` that it changed
    /// (`notifications/resources/updated`); gone sessions are forgotten.
    /// Returns how many were told.
    pub async fn resource_updated(&self, uri: &str) -> usize {
        let subscribers: Vec<Subscriber> = {
            let mut subscriptions = self.subscriptions.lock();
            let Some(subscribers) = subscriptions.get_mut(uri) else {
                return 0;
            };
            subscribers.retain(|(_, subscriber)| !subscriber.is_gone());
            subscribers.iter().map(|(_, s)| s.clone()).collect()
        };
        let mut told = 0;
        for subscriber in subscribers {
            if subscriber.tell(uri).await {
                told += 1;
            }
        }
        told
    }

    /// `completion/complete`: the values of the prompt's argument or the
    /// template's variable that start with what was typed.
    pub(crate) fn completion(&self, request: CompleteRequestParams) -> CompleteResult {
        let candidates = match &request.r#ref {
            Reference::Prompt(prompt) => self
                .inner
                .prompts
                .iter()
                .find(|p| p.info.name == prompt.name)
                .and_then(|p| p.completions.get(&request.argument.name)),
            Reference::Resource(resource) => self
                .inner
                .templates
                .iter()
                .find(|t| t.info.uri_template == resource.uri)
                .and_then(|t| t.completions.get(&request.argument.name)),
            _ => None,
        };
        CompleteResult::new(offers::complete(
            candidates.map(Vec::as_slice).unwrap_or_default(),
            &request.argument.value,
        ))
    }
}
