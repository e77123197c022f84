/// Tone.
#[agentry::skill(description = "Our voice", colour = "blue", body = "Be warm.")]
fn tone() {}

fn main() {}
