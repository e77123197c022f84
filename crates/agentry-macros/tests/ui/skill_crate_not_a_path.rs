/// Tone.
#[agentry::skill(description = "Our voice", body = "Be warm.", crate = "::")]
fn tone() {}

fn main() {}
