//! Prompt-prefix reuse and batched sessions of the real local model
//! (Qwen2.5-Coder-0.5B-Instruct through llama.cpp).
//!
//! Each cached result is compared token for token with the same model run
//! with the cache off (greedy decoding), and concurrent requests with the
//! same requests run one at a time.
//!
//! These tests need the model in the cache (`agentry model pull`). Without it
//! they say so loudly and pass, unless `AGENTRY_REQUIRE_MODEL=1` (set by CI).

mod common;

use std::time::Duration;

use agentry::model::{ChatModel, ChatRequest, Message, StreamEvent, ToolChoice};
use agentry::tool::{ToolCall, ToolResult};
use agentry_local::{Generation, LocalConfig, LocalModel, Prompt};
use common::{generate, load, reusable, weather_tool};
use futures_util::StreamExt;
use serde_json::json;

fn cached_and_uncached() -> Option<(LocalModel, LocalModel)> {
    let cached = load(LocalConfig::default())?;
    let uncached = load(LocalConfig {
        prompt_cache: false,
        ..LocalConfig::default()
    })?;
    Some((cached, uncached))
}

/// The two steps of an agent run: the second repeats the first's prompt,
/// then adds the call and its result.
fn agent_steps() -> (ChatRequest, ChatRequest) {
    let first = ChatRequest {
        system: Some("Use the tools to answer. Be brief.".into()),
        messages: vec![Message::user("What is the weather in Lisbon right now?")],
        tools: vec![weather_tool()],
        tool_choice: ToolChoice::Auto,
        ..ChatRequest::default()
    };
    let mut second = first.clone();
    second.messages.push(Message::Assistant {
        text: String::new(),
        tool_calls: vec![ToolCall::new("c1", "weather", json!({"city": "Lisbon"}))],
    });
    second.messages.push(Message::tool(ToolResult::ok(
        "c1",
        json!({"city": "Lisbon", "sky": "sunny", "celsius": 21}),
    )));
    (first, second)
}

#[test]
fn the_second_step_evaluates_only_its_new_tokens_and_says_the_same() {
    let Some((cached, uncached)) = cached_and_uncached() else {
        return;
    };
    let (first, second) = agent_steps();
    let cold = generate(&cached, &first);
    assert_eq!(cold.cached_tokens, 0, "nothing is cached yet");
    let warm = generate(&cached, &second);
    // At least what the first step read is reused (with the generated call,
    // once the idle model has read it again), leaving one read at least.
    assert!(
        warm.cached_tokens >= reusable(warm.prompt_tokens, cold.prompt_tokens),
        "cached {} of {}, the first prompt had {}",
        warm.cached_tokens,
        warm.prompt_tokens,
        cold.prompt_tokens
    );
    assert!(warm.cached_tokens > 0);
    assert!(warm.cached_tokens < warm.prompt_tokens);
    // Token for token what the model says without the cache.
    for (request, with_cache) in [(&first, &cold), (&second, &warm)] {
        let without = generate(&uncached, request);
        assert_eq!(without.cached_tokens, 0);
        assert_eq!(with_cache.text, without.text);
        assert_eq!(with_cache.output_tokens, without.output_tokens);
        assert_eq!(with_cache.prompt_tokens, without.prompt_tokens);
    }
    // The same prompt again: all but its last read come from the cache.
    let again = generate(&cached, &second);
    assert_eq!(
        again.cached_tokens,
        reusable(again.prompt_tokens, again.prompt_tokens)
    );
    assert_eq!(again.text, warm.text);
    let stats = cached.stats();
    assert_eq!(stats.requests, 3);
    assert_eq!(
        stats.evaluated_tokens(),
        cold.prompt_tokens
            + (warm.prompt_tokens - warm.cached_tokens)
            + (again.prompt_tokens - again.cached_tokens)
    );
}

#[test]
fn chat_turns_reuse_the_history_and_say_the_same() {
    let Some((cached, uncached)) = cached_and_uncached() else {
        return;
    };
    let questions = [
        "Name a primary colour.",
        "Name another one.",
        "Which of the two is warmer?",
        "Say that in French.",
    ];
    // A system prompt long enough that the history is worth reusing.
    let system = "Answer in a few words. ".to_owned()
        + &"You help the customers of a paint shop choose colours for their rooms, \
            and you keep every answer short, friendly and precise. "
            .repeat(3);
    let mut messages = Vec::new();
    let mut evaluated = Vec::new();
    let mut previous_prompt = 0;
    let mut cached_per_turn = Vec::new();
    for (turn, question) in questions.into_iter().enumerate() {
        messages.push(Message::user(question));
        let request = ChatRequest {
            system: Some(system.clone()),
            messages: messages.clone(),
            max_tokens: Some(24),
            ..ChatRequest::default()
        };
        let with_cache = generate(&cached, &request);
        let without = generate(&uncached, &request);
        assert_eq!(with_cache.text, without.text, "turn {question:?}");
        if turn > 0 {
            // At least the last prompt is reused (and the reply, once the
            // idle model has read it again as a prompt).
            assert!(
                with_cache.cached_tokens >= reusable(with_cache.prompt_tokens, previous_prompt),
                "turn {turn}: {} of {} cached, the last prompt had {previous_prompt}",
                with_cache.cached_tokens,
                with_cache.prompt_tokens
            );
            assert!(with_cache.cached_tokens > 0, "turn {turn}");
        }
        cached_per_turn.push((with_cache.prompt_tokens, with_cache.cached_tokens));
        previous_prompt = with_cache.prompt_tokens;
        evaluated.push(with_cache.prompt_tokens - with_cache.cached_tokens);
        messages.push(Message::assistant(with_cache.text));
    }
    // While the uncached model answered, the cached one read each reply again.
    assert!(cached.stats().reread_tokens > 0, "{:?}", cached.stats());
    eprintln!("(prompt, cached) per turn: {cached_per_turn:?}");
    // After the first turn each turn reads at most the last reply, its
    // question and the alignment (the history is never read again).
    let most = common::MIN_PROMPT_READ + common::PROMPT_ALIGN + 40;
    for (turn, tokens) in evaluated.iter().enumerate().skip(1) {
        assert!(
            *tokens < most,
            "turn {turn} evaluated {tokens} tokens: {evaluated:?}"
        );
    }
}

#[test]
fn concurrent_requests_are_batched_and_each_gets_its_own_answer() {
    let Some(batched) = load(LocalConfig::default()) else {
        return;
    };
    let Some(alone) = load(LocalConfig {
        sequences: 1,
        prompt_cache: false,
        ..LocalConfig::default()
    }) else {
        return;
    };
    // Each question with a word its answer must contain: a request that got
    // another's tokens or cache would miss it.
    let questions = [
        ("What is the capital of France?", "paris"),
        ("Write a haiku about rust on iron.", "rust"),
        ("Which number comes after 41? Answer with the number.", "42"),
        ("What does HTTP stand for?", "hypertext"),
        ("Name a sorting algorithm.", "sort"),
    ];
    let prompts: Vec<Prompt> = questions
        .iter()
        .map(|(q, _)| {
            batched
                .render_prompt(&ChatRequest {
                    messages: vec![Message::user(*q)],
                    ..ChatRequest::default()
                })
                .unwrap()
        })
        .collect();
    // Five requests at once on four sequences: one waits for a free sequence.
    let together: Vec<Generation> = std::thread::scope(|scope| {
        let handles: Vec<_> = prompts
            .iter()
            .map(|prompt| {
                let model = batched.clone();
                scope.spawn(move || {
                    model
                        .generate(prompt, None, 32, None, &[], |_| true)
                        .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut same = 0;
    for ((prompt, (question, word)), batched_answer) in prompts.iter().zip(questions).zip(&together)
    {
        let answer = batched_answer.text.to_lowercase();
        assert!(answer.contains(word), "{question} -> {answer:?}");
        let single = alone
            .generate(prompt, None, 32, None, &[], |_| true)
            .unwrap();
        assert!(
            single.text.to_lowercase().contains(word),
            "{question} -> {single:?}"
        );
        same += usize::from(single.text == batched_answer.text);
    }
    // Batched matrix products round differently from one-row ones, so a
    // greedy choice between near-equal tokens may differ; most answers don't.
    eprintln!("{same} of 5 batched answers equal the one-at-a-time answers");
    let stats = batched.stats();
    assert_eq!(stats.requests, 5);
    assert!(
        stats.peak_sequences >= 2,
        "requests were batched: {stats:?}"
    );
    assert_eq!(alone.stats().peak_sequences, 1);
}

#[test]
fn the_least_recently_used_sequence_is_evicted() {
    let Some(model) = load(LocalConfig {
        sequences: 2,
        ..LocalConfig::default()
    }) else {
        return;
    };
    let prompt = |topic: &str| {
        Prompt::trusted(format!(
            "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
            format!("Tell me about {topic}. ").repeat(20)
        ))
    };
    let run = |p: &Prompt| model.generate(p, None, 1, None, &[], |_| true).unwrap();
    let (a, b, c) = (prompt("apples"), prompt("bridges"), prompt("comets"));
    run(&a);
    run(&b);
    // Two sequences: `c` evicts `a`, the least recently used.
    run(&c);
    let b_again = run(&b);
    assert_eq!(
        b_again.cached_tokens,
        reusable(b_again.prompt_tokens, b_again.prompt_tokens),
        "b stayed"
    );
    let a_again = run(&a);
    assert!(
        a_again.cached_tokens < 10,
        "a was evicted: {} of {} cached",
        a_again.cached_tokens,
        a_again.prompt_tokens
    );
}

#[test]
fn a_prompt_longer_than_the_window_grows_it_and_keeps_the_answer() {
    let Some(small) = load(LocalConfig {
        context_size: 256,
        ..LocalConfig::default()
    }) else {
        return;
    };
    let Some(large) = load(LocalConfig::default()) else {
        return;
    };
    let request = ChatRequest {
        messages: vec![Message::user(format!(
            "{}How many times did I say hello?",
            "hello ".repeat(300)
        ))],
        max_tokens: Some(16),
        ..ChatRequest::default()
    };
    let grown = generate(&small, &request);
    assert!(grown.prompt_tokens > 256, "{}", grown.prompt_tokens);
    assert_eq!(grown.text, generate(&large, &request).text);
    // A short request after it still works on the grown window.
    let short = ChatRequest {
        messages: vec![Message::user("Say hi.")],
        max_tokens: Some(8),
        ..ChatRequest::default()
    };
    assert!(!generate(&small, &short).text.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_frees_its_sequence() {
    let Some(model) = load(LocalConfig {
        sequences: 1,
        ..LocalConfig::default()
    }) else {
        return;
    };
    let long = ChatRequest {
        messages: vec![Message::user("Count from one to five hundred in words.")],
        max_tokens: Some(400),
        ..ChatRequest::default()
    };
    {
        let mut stream = model.stream(&long);
        let first = stream.next().await.unwrap().unwrap();
        assert!(matches!(first, StreamEvent::TextDelta { .. }), "{first:?}");
        // Dropped here after one piece: the request is cancelled.
    }
    let short = ChatRequest {
        messages: vec![Message::user("Say hi.")],
        max_tokens: Some(8),
        ..ChatRequest::default()
    };
    // With one sequence, this runs only once the dropped request has let go of it.
    let reply = tokio::time::timeout(Duration::from_secs(120), model.step(&short))
        .await
        .expect("the single sequence was freed")
        .unwrap();
    let agentry::model::Step::Final { text, .. } = &reply else {
        panic!("{reply:?}")
    };
    assert!(!text.is_empty(), "{reply:?}");
    let stats = model.stats();
    assert!(
        stats.output_tokens < 300,
        "the dropped request stopped early: {stats:?}"
    );
}

#[test]
fn stopping_from_the_callback_returns_at_once_with_what_was_said() {
    let Some(model) = load(LocalConfig::default()) else {
        return;
    };
    let prompt = model
        .render_prompt(&ChatRequest {
            messages: vec![Message::user("Count from one to fifty in words.")],
            ..ChatRequest::default()
        })
        .unwrap();
    let mut pieces = 0;
    let stopped = model
        .generate(&prompt, None, 200, None, &[], |_| {
            pieces += 1;
            pieces < 3
        })
        .unwrap();
    assert_eq!(pieces, 3);
    assert_eq!(stopped.output_tokens, 3, "{stopped:?}");
    let full = model
        .generate(&prompt, None, 200, None, &[], |_| true)
        .unwrap();
    assert!(
        full.text.starts_with(&stopped.text),
        "{stopped:?} vs {full:?}"
    );
    assert_eq!(model.stats().requests, 2);
}

#[test]
fn an_empty_prompt_is_a_clear_error() {
    let Some(model) = load(LocalConfig::default()) else {
        return;
    };
    let error = model
        .generate(&Prompt { segments: vec![] }, None, 8, None, &[], |_| true)
        .unwrap_err();
    assert!(error.to_string().contains("the prompt is empty"), "{error}");
}
