//! A turn driven by the response that streams it. The turn is polled in the
//! response's own task, so each event it reports reaches the client without
//! a hand-off between tasks (no wake-up and thread switch per delta). If the
//! response is dropped first (the client went away), the rest of the turn is
//! handed to a task of its own, where it finds the client gone, stops, and
//! stores what was said.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;
use tokio::sync::mpsc::UnboundedReceiver;

/// The items `work` sends on a channel, as a stream that also runs `work`.
pub(crate) struct Driven<T> {
    work: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    receiver: UnboundedReceiver<T>,
}

impl<T> Driven<T> {
    /// A stream of what `work` sends to `receiver`'s channel.
    pub(crate) fn new(
        work: impl Future<Output = ()> + Send + 'static,
        receiver: UnboundedReceiver<T>,
    ) -> Self {
        Self {
            work: Some(Box::pin(work)),
            receiver,
        }
    }
}

impl<T> Stream for Driven<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if let Some(work) = self.work.as_mut()
            && work.as_mut().poll(cx).is_ready()
        {
            self.work = None;
        }
        // Ends when the work has ended and dropped its senders.
        self.receiver.poll_recv(cx)
    }
}

impl<T> Unpin for Driven<T> {}

impl<T> Drop for Driven<T> {
    fn drop(&mut self) {
        // The receiver is dropped right after this: the work sees its
        // channel closed when it next runs. (Outside a runtime, which is
        // shutting down, there is nowhere to run it: it is dropped.)
        if let (Some(work), Ok(runtime)) = (self.work.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(work);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[tokio::test]
    async fn the_stream_runs_the_work_and_ends_with_it() {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let work = async move {
            for n in 0..3 {
                let _ = sender.send(n);
                tokio::task::yield_now().await;
            }
        };
        let got: Vec<i32> = Driven::new(work, receiver).collect().await;
        assert_eq!(got, [0, 1, 2]);
    }

    #[tokio::test]
    async fn dropped_early_the_work_finishes_on_its_own_and_sees_the_receiver_gone() {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let finished = Arc::new(AtomicBool::new(false));
        let flag = finished.clone();
        let work = async move {
            let _ = sender.send(1);
            sender.closed().await;
            flag.store(true, Ordering::SeqCst);
        };
        let mut stream = Driven::new(work, receiver);
        assert_eq!(stream.next().await, Some(1));
        drop(stream);
        for _ in 0..100 {
            if finished.load(Ordering::SeqCst) {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the detached work did not finish");
    }
}
