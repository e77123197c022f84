/// Tone.
#[agentry::skill(description = "Our voice")]
fn tone<T>() -> String {
    String::new()
}

fn main() {}
