//! The request handler each caller meets: the SDK's, with every task kept
//! to the caller who started it (another caller is told it does not
//! exist), and without the parts not offered (listing tasks, push
//! notifications).

use std::sync::{Arc, Mutex};

use a2a::*;
use a2a_server::{DefaultRequestHandler, RequestHandler, ServiceParams};
use async_trait::async_trait;
use futures_util::stream::BoxStream;

use crate::executor::{State, owner_of};

pub(crate) struct Guarded {
    pub inner: DefaultRequestHandler,
    pub state: Arc<Mutex<State>>,
}

impl Guarded {
    /// Refuse `task` to a caller who did not start it (a task whose
    /// starter is not known, too: none of its runs began).
    fn check(&self, params: &ServiceParams, task: &str) -> Result<(), A2AError> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match state.owners.get(task) {
            Some(owner) if owner == owner_of(params) => Ok(()),
            _ => Err(A2AError::task_not_found(task)),
        }
    }

    /// A message: to one of the caller's tasks, and asking for nothing not
    /// offered (push notifications are refused before a task is made).
    fn check_message(
        &self,
        params: &ServiceParams,
        req: &SendMessageRequest,
    ) -> Result<(), A2AError> {
        if req
            .configuration
            .as_ref()
            .is_some_and(|c| c.task_push_notification_config.is_some())
        {
            return Err(not_offered());
        }
        match &req.message.task_id {
            Some(task) => self.check(params, task),
            None => Ok(()),
        }
    }
}

fn not_offered() -> A2AError {
    A2AError::push_notification_not_supported()
}

#[async_trait]
impl RequestHandler for Guarded {
    async fn send_message(
        &self,
        params: &ServiceParams,
        req: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        self.check_message(params, &req)?;
        self.inner.send_message(params, req).await
    }

    async fn send_streaming_message(
        &self,
        params: &ServiceParams,
        req: SendMessageRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        self.check_message(params, &req)?;
        self.inner.send_streaming_message(params, req).await
    }

    async fn get_task(
        &self,
        params: &ServiceParams,
        req: GetTaskRequest,
    ) -> Result<Task, A2AError> {
        self.check(params, &req.id)?;
        self.inner.get_task(params, req).await
    }

    async fn list_tasks(
        &self,
        _: &ServiceParams,
        _: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        Err(A2AError::unsupported_operation(
            "listing tasks is not offered",
        ))
    }

    async fn cancel_task(
        &self,
        params: &ServiceParams,
        req: CancelTaskRequest,
    ) -> Result<Task, A2AError> {
        self.check(params, &req.id)?;
        self.inner.cancel_task(params, req).await
    }

    async fn subscribe_to_task(
        &self,
        params: &ServiceParams,
        req: SubscribeToTaskRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        self.check(params, &req.id)?;
        self.inner.subscribe_to_task(params, req).await
    }

    async fn create_push_config(
        &self,
        _: &ServiceParams,
        _: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        Err(not_offered())
    }

    async fn get_push_config(
        &self,
        _: &ServiceParams,
        _: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        Err(not_offered())
    }

    async fn list_push_configs(
        &self,
        _: &ServiceParams,
        _: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        Err(not_offered())
    }

    async fn delete_push_config(
        &self,
        _: &ServiceParams,
        _: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2AError> {
        Err(not_offered())
    }

    async fn get_extended_agent_card(
        &self,
        params: &ServiceParams,
        req: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        self.inner.get_extended_agent_card(params, req).await
    }
}
