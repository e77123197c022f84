/// Add.
#[agentry::tool(crate = "not a path")]
fn add(x: i64, y: i64) -> i64 {
    x + y
}

fn main() {}
