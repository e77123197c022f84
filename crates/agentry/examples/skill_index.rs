//! The skill index: the system-prompt fragment listing the skills.
//!
//! ```text
//! index ::ai::skill/build-index([tone, escalation])
//! // => """
//! // Available skills you can read with read_skill(name):
//! // - customer-tone: Apply our voice (when: reply, marketing)
//! // - escalation: Decide when to escalate (when: refund, angry)
//! // """
//! ```
//!
//! Run: `cargo run -p agentry --example skill_index`

use agentry::skill::{Skill, build_index};

fn run() -> String {
    let tone = Skill::new("customer-tone", "Apply our voice").when(["reply", "marketing"]);
    let escalation = Skill::new("escalation", "Decide when to escalate").when(["refund", "angry"]);
    build_index(&[tone, escalation])
}

fn main() {
    println!("{}", run());
}

#[test]
fn prints_the_expected_index() {
    assert_eq!(
        run(),
        "Available skills you can read with read_skill(name):\n - customer-tone: Apply our voice (when: reply, marketing)\n - escalation: Decide when to escalate (when: refund, angry)"
    );
}
