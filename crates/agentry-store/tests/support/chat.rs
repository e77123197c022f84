//! A chat turn over a store, and what it said about its two writes.
use agentry::embed::KeywordEmbedder;
use agentry::memory::{Memory, MemoryRecord, MemoryStore, RecentOpts};
use agentry::model::{ScriptedModel, Step, Usage};
use agentry::tool::{Identity, Session};
use agentry::turn::{TurnConfig, TurnEvent, TurnInput};
use std::sync::{Arc, Mutex};

pub struct Chef {
    config: TurnConfig,
    events: Arc<Mutex<Vec<TurnEvent>>>,
}

impl Chef {
    /// A chat whose model answers with `replies`, in order.
    pub fn new(store: Arc<dyn MemoryStore>, replies: &[&str]) -> Self {
        let model = replies.iter().fold(ScriptedModel::new(), |model, text| {
            model.reply(Step::Final {
                text: (*text).into(),
                tokens: Usage::new(5, 2),
            })
        });
        let events = Arc::new(Mutex::new(Vec::new()));
        let log = events.clone();
        let memory = Memory::new(store, KeywordEmbedder::new(["pasta"]));
        let config = TurnConfig::new("chef", model, memory)
            .on_event(move |event| log.lock().unwrap().push(event.clone()));
        Self { config, events }
    }

    /// Run one turn: its reply, and whether the user's and the
    /// assistant's texts were stored.
    pub async fn turn(&self, text: &str) -> (String, Vec<bool>) {
        self.events.lock().unwrap().clear();
        let input = TurnInput::new(Session::new("s"), Identity::new("ana"), text);
        let reply = self
            .config
            .run(input)
            .await
            .expect("the turn answers whatever happens to memory");
        let persisted = self
            .events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                TurnEvent::UserPersisted { ok } | TurnEvent::AssistantPersisted { ok, .. } => {
                    Some(*ok)
                }
                _ => None,
            })
            .collect();
        (reply.text, persisted)
    }
}

/// The texts of session `s`, oldest first.
pub async fn texts(store: &dyn MemoryStore) -> Vec<String> {
    let records: Vec<MemoryRecord> = store.recent("s", &RecentOpts::default()).await.unwrap();
    records.into_iter().map(|r| r.text).collect()
}
