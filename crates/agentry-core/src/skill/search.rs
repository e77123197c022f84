//! Skill search ([`search_skills_of`]): a lightweight, case-insensitive substring
//! scorer over name, trigger phrases and description.

use super::skill::Skill;

/// Options of a skill search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchOpts {
    /// Most skills returned (default 10).
    pub limit: usize,
    /// Skills scoring below this are dropped (default 1).
    pub min_score: u32,
}

impl Default for SearchOpts {
    fn default() -> Self {
        Self {
            limit: 10,
            min_score: 1,
        }
    }
}

/// Points for a query term found in the name.
pub const NAME_POINTS: u32 = 3;
/// Points for a query term found in a trigger phrase.
pub const WHEN_POINTS: u32 = 2;
/// Points for a query term found in the description.
pub const DESCRIPTION_POINTS: u32 = 1;

/// The query's terms: lowercased, split at anything that is not a letter or
/// digit, one-letter words dropped, each term once.
fn terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for term in query
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|term| term.chars().count() > 1)
    {
        if !terms.iter().any(|seen| seen == term) {
            terms.push(term.to_owned());
        }
    }
    terms
}

/// How well `skill` matches the query's terms: for each term,
/// [`NAME_POINTS`] if the name contains it, [`WHEN_POINTS`] if a trigger
/// phrase does and [`DESCRIPTION_POINTS`] if the description does (all
/// case-insensitive substring tests).
pub fn substring_score(skill: &Skill, query: &str) -> u32 {
    let name = skill.name.to_lowercase();
    let description = skill.description.to_lowercase();
    let when: Vec<String> = skill.when.iter().map(|w| w.to_lowercase()).collect();
    terms(query)
        .iter()
        .map(|term| {
            let mut score = 0;
            if name.contains(term.as_str()) {
                score += NAME_POINTS;
            }
            if when.iter().any(|phrase| phrase.contains(term.as_str())) {
                score += WHEN_POINTS;
            }
            if description.contains(term.as_str()) {
                score += DESCRIPTION_POINTS;
            }
            score
        })
        .sum()
}

/// The skills that best match `query`, best first, at most `opts.limit`,
/// none scoring under `opts.min_score`; ties keep input order.
pub fn search_skills_of(skills: &[Skill], query: &str, opts: SearchOpts) -> Vec<Skill> {
    let mut scored: Vec<(u32, &Skill)> = skills
        .iter()
        .map(|skill| (substring_score(skill, query), skill))
        .filter(|(score, _)| *score >= opts.min_score)
        .collect();
    // A stable sort keeps input order among equal scores.
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    scored
        .into_iter()
        .take(opts.limit)
        .map(|(_, skill)| skill.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(skills: &[Skill]) -> Vec<&str> {
        skills.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn scores_name_when_and_description_case_insensitively() {
        let skill = Skill::new("Refund-Policy", "How we handle REFUNDS").when(["angry customer"]);
        assert_eq!(substring_score(&skill, "refund"), 3 + 1);
        assert_eq!(substring_score(&skill, "ANGRY"), 2);
        assert_eq!(substring_score(&skill, "refund angry refund"), 4 + 2);
        assert_eq!(substring_score(&skill, "a b c"), 0);
        assert_eq!(substring_score(&skill, ""), 0);
    }

    #[test]
    fn ranks_best_first_keeps_input_order_on_ties_and_applies_limits() {
        let skills = vec![
            Skill::new("alpha", "tone rules"),
            Skill::new("beta", "tone guide"),
            Skill::new("tone", "voice"),
            Skill::new("gamma", "unrelated"),
        ];
        let found = search_skills_of(&skills, "tone", SearchOpts::default());
        assert_eq!(names(&found), ["tone", "alpha", "beta"]);
        let one = search_skills_of(
            &skills,
            "tone",
            SearchOpts {
                limit: 1,
                ..SearchOpts::default()
            },
        );
        assert_eq!(names(&one), ["tone"]);
        let strong = search_skills_of(
            &skills,
            "tone",
            SearchOpts {
                min_score: 2,
                ..SearchOpts::default()
            },
        );
        assert_eq!(names(&strong), ["tone"]);
        assert!(search_skills_of(&skills, "zebra", SearchOpts::default()).is_empty());
    }

    #[test]
    fn default_limit_is_ten() {
        let skills: Vec<Skill> = (0..15)
            .map(|i| Skill::new(format!("s{i}"), "shared topic"))
            .collect();
        let found = search_skills_of(&skills, "topic", SearchOpts::default());
        assert_eq!(found.len(), 10);
        assert_eq!(found[0].name, "s0");
        assert_eq!(found[9].name, "s9");
    }
}
