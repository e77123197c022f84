/// Tone.
#[agentry::skill(description = "Our voice", when = [reply], body = "Be warm.")]
fn tone() {}

fn main() {}
