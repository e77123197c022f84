//! [`check_journal`]: what every [`RunJournal`] must do, checked the same
//! way for each (in memory here, SQLite and PostgreSQL in `agentry-store`).

use std::time::Duration;

use super::{Decision, JournalError, RunEntry, RunJournal, now_ms};
use crate::model::Message;

/// A lease long enough never to lapse while a check runs.
const LONG: Duration = Duration::from_secs(600);

/// Checks every [`RunJournal`] must pass: order, numbering, conflicts,
/// unknown runs and listing; leases (one holder at a time, tokens that
/// grow, expiry, release, renewal) and fencing (an old holder's token is
/// refused). Call it from each implementation's tests, with a run id no
/// other run in the journal has (`run`, `run` + `-b` and `run` + `-lease`
/// are used). It waits about a second for a short lease to expire.
pub async fn check_journal(journal: &dyn RunJournal, run: &str) {
    let run = run.to_owned();
    let started = RunEntry::Started {
        messages: vec![Message::user("hello")],
        system: Some("Be brief.".into()),
        at_ms: 1,
    };
    assert_eq!(
        journal.entries(&run).await,
        Err(JournalError::NotFound(run.clone()))
    );
    let lease = journal.acquire(&run, "check", LONG).await.expect("lease");
    assert_eq!(lease.owner, "check");
    assert!(lease.until_ms > now_ms(), "{lease:?}");
    let token = lease.token;
    journal
        .append(&run, 0, &started, token)
        .await
        .expect("first entry");
    let call = RunEntry::CallStarted {
        call_id: "c1".into(),
        input: serde_json::json!({"path": "a \"quoted\" name"}),
    };
    journal
        .append(&run, 1, &call, token)
        .await
        .expect("second entry");
    assert_eq!(
        journal.append(&run, 1, &call, token).await,
        Err(JournalError::Conflict {
            run: run.clone(),
            seq: 1
        })
    );
    let decided = RunEntry::Decided {
        call_id: "c1".into(),
        decision: Decision::Deny {
            reason: "not today".into(),
        },
        remember: true,
    };
    assert!(
        matches!(
            journal.append(&run, 4, &decided, token).await,
            Err(JournalError::Store(_))
        ),
        "an entry cannot skip a number"
    );
    journal
        .append(&run, 2, &decided, token)
        .await
        .expect("third entry");
    assert_eq!(
        journal.entries(&run).await.expect("entries"),
        vec![started, call, decided.clone()]
    );
    journal.release(&run, token).await.expect("release");
    let other = format!("{run}-b");
    let ended = RunEntry::Ended {
        outcome: "final".into(),
        detail: "done".into(),
    };
    let lease_b = journal.acquire(&other, "check", LONG).await.expect("lease");
    journal
        .append(&other, 0, &ended, lease_b.token)
        .await
        .expect("another run");
    journal
        .release(&other, lease_b.token)
        .await
        .expect("release");
    let runs = journal.runs().await.expect("runs");
    let at = |id: &str| runs.iter().position(|r| r == id).expect("listed");
    assert!(at(&run) < at(&other), "oldest first: {runs:?}");
    check_leases(journal, &format!("{run}-lease")).await;
}

/// One holder at a time; a later holder fences out an earlier one.
async fn check_leases(journal: &dyn RunJournal, run: &str) {
    let leased = |owner: &str, until_ms| JournalError::Leased {
        run: run.to_owned(),
        owner: owner.to_owned(),
        until_ms,
    };
    let fenced = || JournalError::Fenced {
        run: run.to_owned(),
    };
    let first = journal.acquire(run, "first", LONG).await.expect("lease");
    assert_eq!(
        journal.acquire(run, "second", LONG).await,
        Err(leased("first", first.until_ms)),
        "one holder at a time"
    );
    let entry = |n: u64| RunEntry::Ended {
        outcome: "final".into(),
        detail: format!("entry {n}"),
    };
    journal
        .append(run, 0, &entry(0), first.token)
        .await
        .expect("the holder writes");
    assert_eq!(
        journal.append(run, 1, &entry(1), first.token + 1).await,
        Err(fenced()),
        "a token that is not the lease's"
    );
    let renewed = journal
        .renew(run, first.token, LONG)
        .await
        .expect("renewed");
    assert_eq!(
        (renewed.token, renewed.owner.as_str()),
        (first.token, "first")
    );
    // Released: taken at once, with a larger token; the old one is fenced.
    journal.release(run, first.token).await.expect("release");
    let second = journal.acquire(run, "second", LONG).await.expect("taken");
    assert!(second.token > first.token, "{second:?} after {first:?}");
    assert_eq!(
        journal.append(run, 1, &entry(1), first.token).await,
        Err(fenced())
    );
    assert_eq!(journal.renew(run, first.token, LONG).await, Err(fenced()));
    journal.release(run, first.token).await.expect("no-op");
    assert_eq!(
        journal.acquire(run, "third", LONG).await,
        Err(leased("second", second.until_ms)),
        "an old token's release changes nothing"
    );
    journal
        .append(run, 1, &entry(1), second.token)
        .await
        .expect("the new holder writes");
    // Expired: a short lease is taken over once it ends, and its holder
    // may neither write nor renew any more.
    journal.release(run, second.token).await.expect("release");
    let short = journal
        .acquire(run, "crashed", Duration::from_millis(300))
        .await
        .expect("lease");
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(
        journal.append(run, 2, &entry(2), short.token).await,
        Err(fenced()),
        "an expired lease writes nothing"
    );
    let after = journal
        .acquire(run, "after", LONG)
        .await
        .expect("an expired lease is taken");
    assert!(after.token > short.token);
    assert_eq!(journal.renew(run, short.token, LONG).await, Err(fenced()));
    journal
        .append(run, 2, &entry(2), after.token)
        .await
        .expect("the new holder writes");
    assert_eq!(
        journal.entries(run).await.expect("entries"),
        vec![entry(0), entry(1), entry(2)]
    );
    journal.release(run, after.token).await.expect("release");
}
