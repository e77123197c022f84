//! Requests that no tool answers: greetings, thanks, writing, jokes,
//! general knowledge, advice, language and questions about the assistant.
//!
//! A request much nearer one of these than to every offered tool is
//! answered in text ([`RelevanceGate::small_talk`](super::RelevanceGate::small_talk)).
//! The gate compares a request with each of them, so a request that only
//! looks like small talk by its length or its words ("hi, what time is it
//! in Tokyo?") still finds the tool that fits it nearer.
//!
//! Written for agentry's everyday requests' tuning half and general use
//! (never from its held-out half); `BENCHMARKS.md` measures them.

/// The built-in requests no tool answers.
pub const SMALL_TALK: &[&str] = &[
    "hello",
    "hi there, how are you?",
    "good morning!",
    "hey, what's up?",
    "thank you so much",
    "thanks, that helps",
    "ok great, bye",
    "that's all for now",
    "write a poem about the ocean",
    "write a short story about a dragon",
    "compose a limerick about a cat",
    "tell me a joke",
    "say something funny",
    "tell me a fun fact",
    "who painted the Mona Lisa?",
    "what is the capital of Australia?",
    "why is the sky blue?",
    "how do vaccines work?",
    "when did World War II end?",
    "what is photosynthesis?",
    "what does the word serendipity mean?",
    "translate 'thank you' into French",
    "what's a synonym for happy?",
    "fix the grammar in this sentence",
    "any tips for sleeping better?",
    "what should I cook for dinner?",
    "which is better, cats or dogs?",
    "recommend a movie to watch tonight",
    "how can I be more productive?",
    "who are you?",
    "what can you do?",
    "explain recursion in simple terms",
    "write a Python function that reverses a string",
    "summarize the plot of Romeo and Juliet",
];
