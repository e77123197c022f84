#[agentry::tool]
struct Add;

fn main() {}
