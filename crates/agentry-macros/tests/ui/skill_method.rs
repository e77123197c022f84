struct Skills;

impl Skills {
    /// Tone.
    #[agentry::skill(description = "Our voice")]
    fn tone(&self) -> String {
        String::new()
    }
}

fn main() {}
