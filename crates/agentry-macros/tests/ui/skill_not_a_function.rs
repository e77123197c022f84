#[agentry::skill(description = "Our voice")]
const TONE: &str = "Be warm.";

fn main() {}
