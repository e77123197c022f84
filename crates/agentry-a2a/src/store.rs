//! The tasks in memory, bounded in number and in bytes. Past a bound a
//! settled task goes (ended, waiting for its caller, or never started):
//! the oldest of the caller keeping the most, so that one caller's flood
//! evicts its own tasks first. When every task is still running a new one
//! is refused.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, PartContent, Task, TaskId, TaskState};
use a2a_server::TaskStore;
use a2a_server::task_store::TaskVersion;
use async_trait::async_trait;
use tokio::sync::Mutex;

/// Tasks kept unless told otherwise.
pub const DEFAULT_MAX_TASKS: usize = 10_000;

/// Bytes of tasks' messages and artifacts kept unless told otherwise.
pub const DEFAULT_MAX_TASK_BYTES: usize = 64 << 20;

/// A task never started is settled after this long.
const UNSTARTED_SECS: i64 = 60;

/// Who started a task, if anyone is known to have.
pub(crate) type OwnerOf = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

struct Stored {
    task: Task,
    version: TaskVersion,
    bytes: usize,
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<TaskId, Stored>,
    order: VecDeque<TaskId>,
    bytes: usize,
}

/// An in-memory [`TaskStore`] within `max` tasks and `max_bytes`.
pub(crate) struct BoundedStore {
    max: usize,
    max_bytes: usize,
    owner_of: OwnerOf,
    inner: Mutex<Inner>,
}

impl BoundedStore {
    pub fn new(max: usize, max_bytes: usize, owner_of: OwnerOf) -> Self {
        Self {
            max: max.max(1),
            max_bytes,
            owner_of,
            inner: Mutex::new(Inner::default()),
        }
    }
}

/// What a task holds, in bytes (its texts, data, files and links).
fn weight(task: &Task) -> usize {
    let messages = task
        .history
        .iter()
        .flatten()
        .chain(task.status.message.as_ref());
    let parts = messages
        .flat_map(|m| m.parts.iter())
        .chain(task.artifacts.iter().flatten().flat_map(|a| a.parts.iter()));
    let bytes: usize = parts
        .map(|part| match &part.content {
            PartContent::Text(text) | PartContent::Url(text) => text.len(),
            PartContent::Raw(raw) => raw.len(),
            PartContent::Data(value) => value.to_string().len(),
        })
        .sum();
    bytes + 256
}

/// Whether a task may go: nothing follows it any more.
fn settled(task: &Task) -> bool {
    match task.status.state {
        TaskState::Submitted => task
            .status
            .timestamp
            .is_none_or(|at| (chrono::Utc::now() - at).num_seconds() > UNSTARTED_SECS),
        TaskState::InputRequired | TaskState::AuthRequired => true,
        ref state => state.is_terminal(),
    }
}

impl BoundedStore {
    /// Forget settled tasks until `more` bytes and one more task fit: the
    /// owners are read once, then each victim is the oldest settled task
    /// of the owner keeping the most.
    fn make_room(&self, inner: &mut Inner, more: usize) -> Result<(), A2AError> {
        let full =
            |inner: &Inner| inner.tasks.len() >= self.max || inner.bytes + more > self.max_bytes;
        if !full(inner) {
            return Ok(());
        }
        let owners: HashMap<TaskId, Option<String>> = inner
            .order
            .iter()
            .map(|id| (id.clone(), (self.owner_of)(id)))
            .collect();
        let mut kept: HashMap<Option<String>, usize> = HashMap::new();
        for owner in owners.values() {
            *kept.entry(owner.clone()).or_default() += 1;
        }
        while full(inner) {
            let victim = inner
                .order
                .iter()
                .enumerate()
                .filter(|(_, id)| inner.tasks.get(*id).is_some_and(|s| settled(&s.task)))
                .max_by_key(|(at, id)| (kept[&owners[*id]], std::cmp::Reverse(*at)))
                .map(|(at, _)| at);
            let Some(at) = victim else {
                return Err(A2AError::invalid_request(format!(
                    "{} tasks are running; try again when one has ended",
                    inner.tasks.len()
                )));
            };
            if let Some(id) = inner.order.remove(at) {
                if let Some(count) = kept.get_mut(&owners[&id]) {
                    *count -= 1;
                }
                if let Some(gone) = inner.tasks.remove(&id) {
                    inner.bytes -= gone.bytes;
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl TaskStore for BoundedStore {
    async fn create(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let mut inner = self.inner.lock().await;
        if inner.tasks.contains_key(&task.id) {
            return Err(A2AError::invalid_request("the task exists already"));
        }
        let bytes = weight(&task);
        self.make_room(&mut inner, bytes)?;
        inner.order.push_back(task.id.clone());
        inner.bytes += bytes;
        inner.tasks.insert(
            task.id.clone(),
            Stored {
                task,
                version: 1,
                bytes,
            },
        );
        Ok(1)
    }

    async fn update(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let mut guard = self.inner.lock().await;
        let inner = &mut *guard;
        let stored = inner
            .tasks
            .get_mut(&task.id)
            .ok_or_else(|| A2AError::task_not_found(&task.id))?;
        // An ended task stays as it ended.
        if stored.task.status.state.is_terminal() && stored.task.status.state != task.status.state {
            return Err(A2AError::invalid_request(format!(
                "task {} has ended",
                task.id
            )));
        }
        let bytes = weight(&task);
        inner.bytes = inner.bytes - stored.bytes + bytes;
        stored.version += 1;
        stored.bytes = bytes;
        stored.task = task;
        Ok(stored.version)
    }

    async fn get(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        let inner = self.inner.lock().await;
        Ok(inner.tasks.get(task_id).map(|s| s.task.clone()))
    }

    async fn list(&self, _: &ListTasksRequest) -> Result<ListTasksResponse, A2AError> {
        Err(A2AError::unsupported_operation(
            "listing tasks is not offered",
        ))
    }

    async fn begin_cancel(&self, task_id: &str) -> Result<Task, A2AError> {
        let mut inner = self.inner.lock().await;
        let stored = inner
            .tasks
            .get_mut(task_id)
            .ok_or_else(|| A2AError::task_not_found(task_id))?;
        if stored.task.status.state.is_terminal() {
            return Err(A2AError::task_not_cancelable(task_id));
        }
        stored.version += 1;
        stored.task.status.state = TaskState::Canceled;
        stored.task.status.timestamp = Some(chrono::Utc::now());
        Ok(stored.task.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a::{Message, Part, Role, TaskStatus};

    fn task(id: &str, state: TaskState, text: &str) -> Task {
        Task {
            id: id.to_owned(),
            context_id: "c".to_owned(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: Some(chrono::Utc::now()),
            },
            artifacts: None,
            history: Some(vec![Message::new(Role::User, vec![Part::text(text)])]),
            metadata: None,
        }
    }

    #[tokio::test]
    async fn a_flood_evicts_the_flooders_own_settled_tasks_and_bytes_are_bounded() {
        // Tasks a-* are Alice's, everything else Bob's.
        let owner: OwnerOf =
            Arc::new(|id: &str| Some(if id.starts_with('a') { "alice" } else { "bob" }.to_owned()));
        let store = BoundedStore::new(4, 1 << 20, owner);
        store
            .create(task("a1", TaskState::Completed, "hi"))
            .await
            .unwrap();
        for n in 0..10 {
            store
                .create(task(&format!("b{n}"), TaskState::Completed, "spam"))
                .await
                .unwrap();
        }
        assert!(
            store.get("a1").await.unwrap().is_some(),
            "Bob's flood evicted Bob's tasks"
        );
        assert!(store.get("b0").await.unwrap().is_none());
        // Bytes: a task of 600 KiB and another leave room for one.
        let big = "x".repeat(600 << 10);
        store
            .create(task("b-big1", TaskState::Completed, &big))
            .await
            .unwrap();
        store
            .create(task("b-big2", TaskState::Completed, &big))
            .await
            .unwrap();
        assert!(store.get("b-big1").await.unwrap().is_none());
        assert!(store.inner.lock().await.bytes <= 1 << 20);
        // All running: a new task is refused.
        let store = BoundedStore::new(2, 1 << 20, Arc::new(|_: &str| None));
        store
            .create(task("r1", TaskState::Working, ""))
            .await
            .unwrap();
        store
            .create(task("r2", TaskState::Working, ""))
            .await
            .unwrap();
        let error = store
            .create(task("r3", TaskState::Working, ""))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("running"), "{error}");
    }
}
