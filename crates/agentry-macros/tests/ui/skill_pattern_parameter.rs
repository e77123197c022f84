/// Tone.
#[agentry::skill(description = "Our voice")]
fn tone((a, b): (String, String)) -> String {
    a + &b
}

fn main() {}
