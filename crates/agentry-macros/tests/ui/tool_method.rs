struct Calculator;

impl Calculator {
    /// Add.
    #[agentry::tool]
    fn add(&self, x: i64, y: i64) -> i64 {
        x + y
    }
}

fn main() {}
