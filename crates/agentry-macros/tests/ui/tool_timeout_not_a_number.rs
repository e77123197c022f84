/// Add.
#[agentry::tool(timeout_ms = "soon")]
fn add(x: i64, y: i64) -> i64 {
    x + y
}

fn main() {}
