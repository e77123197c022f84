/// Tone.
#[agentry::skill(description = "Our voice")]
async fn tone() -> String {
    String::new()
}

fn main() {}
