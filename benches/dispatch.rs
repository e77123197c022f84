//! Dispatch of a 2-argument tool, from a JSON tool call to a tool result, with
//! agentry (input validated against the compiled JSON Schema, output checked),
//! rig's `ToolSet` and rmcp's `ToolRouter`, side by side in one run.
//!
//! Run: `cargo bench -p agentry-benches --bench dispatch`
//!
//! Each future is polled once with a no-op waker (`now_or_never`): all three
//! tools are synchronous, so no executor overhead is measured, only dispatch.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

const CALL: &str = r#"{"id":"call_1","name":"add","input":{"x":2,"y":3}}"#;

/// The call as a provider hands it over: name plus raw argument JSON.
#[derive(Deserialize)]
struct WireCall<'a> {
    #[allow(dead_code)]
    id: &'a str,
    name: &'a str,
    #[serde(borrow)]
    input: &'a RawValue,
}

mod ours {
    /// Add two integers.
    #[agentry::tool(name = "add", inline)]
    pub fn add(x: i64, y: i64) -> i64 {
        x + y
    }
}

mod rig {
    use rig_core::tool::{Tool, ToolContext};
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub struct AddArgs {
        pub x: i64,
        pub y: i64,
    }

    pub struct Add;

    impl Tool for Add {
        const NAME: &'static str = "add";
        type Args = AddArgs;
        type Output = i64;
        type Error = std::convert::Infallible;

        fn description(&self) -> String {
            "Add two integers.".into()
        }

        fn parameters(&self) -> serde_json::Value {
            serde_json::json!({"type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x", "y"]})
        }

        async fn call(&self, _cx: &mut ToolContext, args: AddArgs) -> Result<i64, Self::Error> {
            Ok(args.x + args.y)
        }
    }
}

mod mcp {
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::{ServerHandler, tool, tool_router};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct AddArgs {
        pub x: i64,
        pub y: i64,
    }

    #[derive(Clone, Default)]
    pub struct Calc;

    #[tool_router(vis = "pub")]
    impl Calc {
        #[tool(description = "Add two integers.")]
        fn add(&self, Parameters(AddArgs { x, y }): Parameters<AddArgs>) -> String {
            (x + y).to_string()
        }
    }

    impl ServerHandler for Calc {}
}

fn bench_dispatch(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let mut group = c.benchmark_group("dispatch_2arg");

    // agentry
    let toolbox = agentry::tool::Toolbox::for_agent([ours::add::tool()]).unwrap();
    let ctx = agentry::tool::ToolContext::new();
    let check = toolbox.dispatch_json(CALL, &ctx).now_or_never().unwrap();
    assert_eq!(check.output, json!(5));
    group.bench_function("agentry/json_call", |b| {
        b.iter(|| {
            toolbox
                .dispatch_json(black_box(CALL), &ctx)
                .now_or_never()
                .unwrap()
        })
    });
    let parsed: agentry::tool::ToolCall = serde_json::from_str(CALL).unwrap();
    group.bench_function("agentry/parsed_call", |b| {
        b.iter_batched(
            || parsed.clone(),
            |call| toolbox.dispatch(call).now_or_never().unwrap(),
            BatchSize::SmallInput,
        )
    });

    // rig: ToolSet::execute(name, args JSON string)
    let toolset = rig_agent::tool::ToolSet::from_tools(vec![rig::Add]);
    let run_rig = |text: &str| {
        let call: WireCall = serde_json::from_str(text).unwrap();
        let mut cx = rig_core::tool::ToolContext::new();
        toolset
            .execute(call.name, call.input.get(), &mut cx)
            .now_or_never()
            .unwrap()
    };
    let check = run_rig(CALL).into_result().unwrap();
    assert_eq!(check.as_json(), Some(&json!(5)));
    group.bench_function("rig/json_call", |b| b.iter(|| run_rig(black_box(CALL))));

    // rmcp: ToolRouter::call(ToolCallContext)
    let router = mcp::Calc::tool_router();
    let calc = mcp::Calc;
    let (server_io, _client_io) = tokio::io::duplex(4096);
    let running =
        rmcp::service::serve_directly::<rmcp::RoleServer, _, _, _, _>(mcp::Calc, server_io, None);
    let peer = running.peer().clone();
    let run_mcp = |text: &str| {
        let call: WireCall = serde_json::from_str(text).unwrap();
        let arguments: rmcp::model::JsonObject = serde_json::from_str(call.input.get()).unwrap();
        let params =
            rmcp::model::CallToolRequestParams::new(call.name.to_owned()).with_arguments(arguments);
        let request = rmcp::service::RequestContext::new(
            rmcp::model::NumberOrString::Number(1),
            peer.clone(),
        );
        router
            .call(rmcp::handler::server::tool::ToolCallContext::new(
                &calc, params, request,
            ))
            .now_or_never()
            .unwrap()
            .unwrap()
    };
    match run_mcp(CALL) {
        rmcp::model::CallToolResponse::Complete(result) => {
            assert_eq!(result.content[0].as_text().unwrap().text, "5")
        }
        _ => panic!("unexpected rmcp response"),
    }
    group.bench_function("rmcp/json_call", |b| b.iter(|| run_mcp(black_box(CALL))));

    group.finish();
}

criterion_group!(benches, bench_dispatch);
criterion_main!(benches);
