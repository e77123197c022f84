/// Add a pair.
#[agentry::tool]
fn add((x, y): (i64, i64)) -> i64 {
    x + y
}

fn main() {}
