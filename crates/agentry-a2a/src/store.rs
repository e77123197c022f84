//! The tasks in memory, bounded: past the bound the oldest task that no run
//! follows any more (ended, or waiting for a caller) is forgotten, and when
//! every task is still running a new one is refused.

use std::collections::{HashMap, VecDeque};

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, Task, TaskId, TaskState};
use a2a_server::TaskStore;
use a2a_server::task_store::TaskVersion;
use async_trait::async_trait;
use tokio::sync::Mutex;

/// Tasks kept unless told otherwise.
pub const DEFAULT_MAX_TASKS: usize = 10_000;

struct Stored {
    task: Task,
    version: TaskVersion,
}

/// An in-memory [`TaskStore`] holding at most `max` tasks.
pub(crate) struct BoundedStore {
    max: usize,
    tasks: Mutex<(HashMap<TaskId, Stored>, VecDeque<TaskId>)>,
}

impl BoundedStore {
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            tasks: Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }
}

fn settled(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

#[async_trait]
impl TaskStore for BoundedStore {
    async fn create(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let mut guard = self.tasks.lock().await;
        let (tasks, order) = &mut *guard;
        if tasks.contains_key(&task.id) {
            return Err(A2AError::invalid_request("the task exists already"));
        }
        if tasks.len() >= self.max {
            let oldest = order
                .iter()
                .position(|id| tasks.get(id).is_some_and(|t| settled(&t.task.status.state)));
            let Some(at) = oldest else {
                return Err(A2AError::invalid_request(format!(
                    "{} tasks are running; try again when one has ended",
                    tasks.len()
                )));
            };
            if let Some(id) = order.remove(at) {
                tasks.remove(&id);
            }
        }
        order.push_back(task.id.clone());
        tasks.insert(task.id.clone(), Stored { task, version: 1 });
        Ok(1)
    }

    async fn update(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let mut guard = self.tasks.lock().await;
        let stored = guard
            .0
            .get_mut(&task.id)
            .ok_or_else(|| A2AError::task_not_found(&task.id))?;
        // An ended task stays as it ended.
        if stored.task.status.state.is_terminal() && stored.task.status.state != task.status.state {
            return Err(A2AError::invalid_request(format!(
                "task {} has ended",
                task.id
            )));
        }
        stored.version += 1;
        stored.task = task;
        Ok(stored.version)
    }

    async fn get(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        Ok(self
            .tasks
            .lock()
            .await
            .0
            .get(task_id)
            .map(|s| s.task.clone()))
    }

    async fn list(&self, _: &ListTasksRequest) -> Result<ListTasksResponse, A2AError> {
        Err(A2AError::unsupported_operation(
            "listing tasks is not offered",
        ))
    }

    async fn begin_cancel(&self, task_id: &str) -> Result<Task, A2AError> {
        let mut guard = self.tasks.lock().await;
        let stored = guard
            .0
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
