/// Echo.
#[agentry::tool]
fn echo<T: serde::Serialize>(value: T) -> T {
    value
}

fn main() {}
