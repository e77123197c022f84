//! A provider whose connection drops at every possible byte of a recorded
//! stream: each cut gives a typed error, or — only once the stream said it
//! was complete — the very step the whole stream gives. Never a half step
//! taken as complete.

mod support;

use agentry_core::model::{ChatModel, ModelError, Step};
use agentry_providers::{Anthropic, OpenAiCompatible, RetryPolicy};
use support::{Reply, fixture, serve, weather_request};

/// Cut `stream` after every byte and check each outcome against `whole`.
async fn cut_everywhere(stream: &str, whole: &Step, model: impl Fn(&str) -> Box<dyn ChatModel>) {
    let cuts: Vec<Reply> = (0..stream.len())
        .filter(|at| stream.is_char_boundary(*at))
        .map(|at| Reply::CutAt {
            body: stream.to_owned(),
            at,
        })
        .collect();
    let count = cuts.len();
    let server = serve(cuts).await;
    let model = model(&server.base_url);
    let (mut errors, mut complete) = (0, 0);
    for at in 0..count {
        match model.step(&weather_request()).await {
            Ok(step) => {
                assert_eq!(
                    &step, whole,
                    "a step cut at byte {at} was taken as complete"
                );
                complete += 1;
            }
            Err(ModelError::StreamCut(_) | ModelError::Protocol(_) | ModelError::Transport(_)) => {
                errors += 1
            }
            Err(other) => panic!("cut at byte {at}: untyped failure {other:?}"),
        }
    }
    assert_eq!(errors + complete, count);
    assert!(
        errors > count / 2,
        "most cuts are errors ({errors} of {count})"
    );
}

/// End `stream` cleanly (a well-formed, finished HTTP body) after each of
/// its events: only the last boundary may give a step, and it must be `whole`.
async fn end_after_every_event(
    stream: &str,
    whole: &Step,
    model: impl Fn(&str) -> Box<dyn ChatModel>,
) {
    let events: Vec<&str> = stream.split_inclusive("\n\n").collect();
    let replies: Vec<Reply> = (0..events.len())
        .map(|k| Reply::Sse {
            body: events[..k].concat(),
            cut: false,
        })
        .collect();
    let server = serve(replies).await;
    let model = model(&server.base_url);
    for k in 0..events.len() {
        match model.step(&weather_request()).await {
            Ok(step) => panic!(
                "{k} of {} events were taken as a complete step: {step:?}",
                events.len()
            ),
            Err(ModelError::StreamCut(_) | ModelError::Protocol(_)) => {}
            Err(other) => panic!("after {k} events: untyped failure {other:?}"),
        }
    }
    let _ = whole;
}

fn openai(base: &str) -> Box<dyn ChatModel> {
    Box::new(
        OpenAiCompatible::new(format!("{base}/v1"), Some("k".into()), "gpt-4o-mini")
            .with_retry(RetryPolicy::none()),
    )
}

fn anthropic(base: &str) -> Box<dyn ChatModel> {
    Box::new(
        Anthropic::new("k", "claude")
            .with_base_url(base)
            .with_retry(RetryPolicy::none()),
    )
}

async fn whole(name: &str, model: fn(&str) -> Box<dyn ChatModel>) -> (String, Step) {
    let stream = fixture(name);
    let server = serve(vec![Reply::Sse {
        body: stream.clone(),
        cut: false,
    }])
    .await;
    let step = model(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap();
    (stream, step)
}

#[tokio::test]
async fn openai_streams_cut_anywhere_never_give_a_half_step() {
    for name in ["openai/text.sse", "openai/parallel_tool_calls.sse"] {
        let (stream, step) = whole(name, openai).await;
        cut_everywhere(&stream, &step, openai).await;
        end_after_every_event(&stream, &step, openai).await;
    }
}

#[tokio::test]
async fn anthropic_streams_cut_anywhere_never_give_a_half_step() {
    for name in ["anthropic/text.sse", "anthropic/parallel_tool_use.sse"] {
        let (stream, step) = whole(name, anthropic).await;
        cut_everywhere(&stream, &step, anthropic).await;
        end_after_every_event(&stream, &step, anthropic).await;
    }
}

#[test]
fn the_fuzz_entry_points_read_recorded_streams_like_the_network_does() {
    let openai =
        agentry_providers::__fuzz::openai_step(fixture("openai/text.sse").as_bytes()).unwrap();
    assert_eq!(
        openai,
        Step::Final {
            text: "It is sunny in Lima.".into(),
            tokens: agentry_core::model::Usage::new(57, 6)
        }
    );
    let anthropic =
        agentry_providers::__fuzz::anthropic_step(fixture("anthropic/text.sse").as_bytes())
            .unwrap();
    assert!(matches!(anthropic, Step::Final { .. }));
    assert!(agentry_providers::__fuzz::openai_step(b"data: {\"choices\": [").is_err());
}
