//! Dispatch under load and for arbitrary calls: many tasks at once, and a
//! property test that every call's id is echoed.

use agentry::tool::{ToolCall, ToolContext, Toolbox};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Multiply two integers after yielding once.
#[agentry::tool(concurrency_safe)]
pub async fn mul(x: i64, y: i64) -> i64 {
    tokio::task::yield_now().await;
    x * y
}

/// Add two integers.
#[agentry::tool]
pub fn add(x: i64, y: i64) -> i64 {
    x + y
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_dispatches_return_their_own_ids() {
    let tools = Toolbox::for_agent([mul::tool(), add::tool()]).unwrap();
    let tasks: Vec<_> = (0..1000_i64)
        .map(|i| {
            let tools = tools.clone();
            tokio::spawn(async move {
                let name = if i % 2 == 0 { mul::NAME } else { add::NAME };
                let result = tools
                    .dispatch(ToolCall::new(
                        format!("call-{i}"),
                        name,
                        json!({"x": i, "y": 3}),
                    ))
                    .await;
                (i, result)
            })
        })
        .collect();
    for task in tasks {
        let (i, result) = task.await.unwrap();
        assert_eq!(result.id, format!("call-{i}"));
        let expected = if i % 2 == 0 { i * 3 } else { i + 3 };
        assert_eq!(result.output, json!(expected), "call-{i}");
        assert!(!result.is_error);
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{0,3}|x|y", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_tool_call_json_yields_a_result_with_the_same_id(
        id in ".{0,40}",
        name in prop_oneof![Just(add::NAME.to_owned()), Just(mul::NAME.to_owned()), ".{0,12}"],
        input in arbitrary_json(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let tools = Toolbox::for_agent([mul::tool(), add::tool()]).unwrap();
        let text = serde_json::to_string(&ToolCall::new(id.clone(), name, input)).unwrap();
        let result = runtime.block_on(tools.dispatch_json(&text, &ToolContext::new()));
        prop_assert_eq!(&result.id, &id);
        if result.is_error {
            prop_assert!(result.output.is_string());
        }
    }
}
