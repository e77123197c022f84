//! Runs the JSON dispatch path of the `dispatch` benchmark in a loop, for a
//! profiler: `valgrind --tool=callgrind target/release/examples/dispatch_profile`.

use futures_util::FutureExt;

mod ours {
    /// Add two integers.
    #[agentry::tool(name = "add", inline)]
    pub fn add(x: i64, y: i64) -> i64 {
        x + y
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let toolbox = agentry::tool::Toolbox::for_agent([ours::add::tool()]).unwrap();
    let ctx = agentry::tool::ToolContext::new();
    let call = r#"{"id":"call_1","name":"add","input":{"x":2,"y":3}}"#;
    let n: usize = std::env::args()
        .nth(1)
        .map_or(200_000, |n| n.parse().unwrap());
    let mut sum = 0;
    for _ in 0..n {
        let result = toolbox
            .dispatch_json(std::hint::black_box(call), &ctx)
            .now_or_never()
            .unwrap();
        sum += result.output.as_i64().unwrap();
    }
    println!("{sum}");
}
