type Result = std::result::Result<i64, String>;

/// Always one.
#[agentry::tool]
fn one() -> Result {
    Ok(1)
}

fn main() {}
