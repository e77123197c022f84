/// Add.
#[agentry::tool(pass_input)]
fn add(x: i64, y: i64) -> i64 {
    x + y
}

fn main() {}
