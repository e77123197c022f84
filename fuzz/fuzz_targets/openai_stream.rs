//! The OpenAI-compatible stream reader on any bytes: a typed error or a step,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = agentry_providers::__fuzz::openai_step(data);
});
