//! `dispatch_json`'s typed route: a `#[tool]` function whose parameters
//! decode straight from JSON text skips the intermediate JSON value. It
//! must never accept what the schema refuses, nor answer differently from
//! the validated route: for any call, both routes give the same result.

use agentry::tool::{Tool, ToolCall, ToolContext, Toolbox};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Every kind of parameter the typed route takes (an `inline` tool: the
/// typed route is for handlers that run on the dispatching task).
#[agentry::tool(name = "mix", inline)]
#[allow(clippy::too_many_arguments)]
fn mix(
    a: i64,
    b: u8,
    c: f64,
    d: String,
    e: bool,
    f: Option<i32>,
    g: Vec<String>,
    h: Option<Vec<u16>>,
) -> String {
    format!("{a} {b} {c} {d} {e} {f:?} {g:?} {h:?}")
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-300i64..70_000).prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(|x| json!(x)),
        Just(json!(2.0)),
        Just(json!(1e20)),
        "[a-z]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-c]", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn call_input() -> impl Strategy<Value = Map<String, Value>> {
    let keys = ["a", "b", "c", "d", "e", "f", "g", "h", "zz"];
    prop::collection::vec(prop::option::of(json_value()), keys.len()).prop_map(move |values| {
        keys.iter()
            .zip(values)
            .filter_map(|(key, value)| value.map(|v| ((*key).to_owned(), v)))
            .collect()
    })
}

fn valid_input() -> impl Strategy<Value = Map<String, Value>> {
    (
        any::<i64>(),
        any::<u8>(),
        -1e6f64..1e6,
        "[a-z]{0,5}",
        any::<bool>(),
        prop::option::of(any::<i32>()),
        prop::collection::vec("[a-z]{0,3}", 0..3),
        prop::option::of(prop::collection::vec(any::<u16>(), 0..3)),
    )
        .prop_map(|(a, b, c, d, e, f, g, h)| {
            let mut input = json!({"a": a, "b": b, "c": c, "d": d, "e": e, "g": g});
            if let Some(f) = f {
                input["f"] = json!(f);
            }
            if let Some(h) = h {
                input["h"] = json!(h);
            }
            input.as_object().unwrap().clone()
        })
}

fn both_routes(tools: &Toolbox, input: Map<String, Value>) -> (Value, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let text = json!({"id": "c", "name": "mix", "input": input}).to_string();
    let by_text = runtime.block_on(tools.dispatch_json(&text, &ctx));
    let by_value = runtime
        .block_on(tools.dispatch_with(ToolCall::new("c", "mix", Value::Object(input)), &ctx));
    (
        serde_json::to_value(by_text).unwrap(),
        serde_json::to_value(by_value).unwrap(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_call_gets_the_same_result_by_text_and_by_value(input in call_input()) {
        let tools = Toolbox::for_agent([mix::tool()]).unwrap();
        let (by_text, by_value) = both_routes(&tools, input);
        prop_assert_eq!(by_text, by_value);
    }

    #[test]
    fn valid_calls_agree_too(input in valid_input()) {
        let tools = Toolbox::for_agent([mix::tool()]).unwrap();
        let (by_text, by_value) = both_routes(&tools, input);
        prop_assert_eq!(&by_text["is_error"], &json!(false), "{}", by_text);
        prop_assert_eq!(by_text, by_value);
    }
}

#[tokio::test]
async fn an_overridden_schema_turns_the_typed_route_off() {
    // The typed route would take a = -5; the tighter schema must refuse it.
    let mut schema = mix::schema().input_schema.clone();
    schema["properties"]["a"]["minimum"] = json!(0);
    let tighter = Tool {
        input_schema: schema,
        ..mix::tool()
    };
    let tools = Toolbox::for_agent([tighter]).unwrap();
    let text = r#"{"id":"c","name":"mix","input":{"a":-5,"b":1,"c":1.5,"d":"x","e":true,"g":[]}}"#;
    let result = tools.dispatch_json(text, &ToolContext::new()).await;
    assert_eq!(
        result.error_message(),
        Some("invalid input for tool \"mix\":\n- /a: -5 is less than the minimum of 0")
    );
    let plain = Toolbox::for_agent([mix::tool()]).unwrap();
    let result = plain.dispatch_json(text, &ToolContext::new()).await;
    assert_eq!(result.output, json!("-5 1 1.5 x true None [] None"));
}
