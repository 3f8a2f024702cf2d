//! What differs between the two databases a store can run on, kept in one place: the embedded
//! SQLite file (the default) and a shared PostgreSQL (team mode). Everything else in `store/` is
//! one query text for both: parameters are numbered (`$1`, `$2`, …), upserts are `ON CONFLICT`,
//! and functions are the ones both know.

use sqlx::Arguments as _;

use super::{Args, Db};

/// Which database a store is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// The key of the one advisory lock every writer takes on PostgreSQL (`Dialect::begin_write`).
macro_rules! write_lock_key {
    () => {
        "7361290184"
    };
}

/// A write transaction's opening on PostgreSQL: the one advisory lock every writer takes,
/// written once for both openings.
macro_rules! postgres_begin {
    () => {
        concat!("BEGIN; SELECT pg_advisory_xact_lock(", write_lock_key!(), ")")
    };
}

/// The write lock taken without waiting, inside a statement that commits on its own
/// (`fused::Whole`): true if this statement now holds it.
pub const TRY_WRITE_LOCK: &str = concat!("pg_try_advisory_xact_lock(", write_lock_key!(), ")");

impl Dialect {
    /// The dialect a pool speaks, from the scheme of the URL it connects with.
    pub fn of(pool: &super::Pool) -> Self {
        match pool.connect_options().database_url.scheme() {
            "postgres" | "postgresql" => Self::Postgres,
            _ => Self::Sqlite,
        }
    }

    /// Whether several statements can go to the database as one batch.
    pub fn batches(self) -> bool {
        self == Self::Sqlite
    }

    /// The statement that opens a write transaction. SQLite takes its one write lock up front, so
    /// concurrent processes queue instead of failing half-way. PostgreSQL takes one transaction
    /// advisory lock for the same effect: composed writes (read the chain head, append after it)
    /// serialise across processes and machines exactly as they do on one file, while reads never
    /// wait. The lock goes with the commit or the rollback, or with the connection if it dies.
    ///
    /// On PostgreSQL the same round trip queues the wake-up (`store::wake`): a `NOTIFY` inside a
    /// transaction is delivered when it commits, and dropped if it rolls back.
    pub fn begin_write(self) -> &'static str {
        match self {
            Self::Sqlite => "BEGIN IMMEDIATE",
            Self::Postgres => concat!(postgres_begin!(), "; NOTIFY reins_changed"),
        }
    }

    /// `begin_write` without the wake-up, for a commit no other process waits for (a step's
    /// rows in a run this worker holds): screens poll for those anyway, and a notification per
    /// step would wake every listening process on every machine twice a step.
    pub fn begin_quiet_write(self) -> &'static str {
        match self {
            Self::Sqlite => "BEGIN IMMEDIATE",
            Self::Postgres => postgres_begin!(),
        }
    }
}

/// `sql` with each `?` outside quotes replaced by `$1`, `$2`, … in order: for statements composed
/// from pieces, whose parameters are only counted once the pieces are joined.
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    let mut quoted = false;
    for c in sql.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

/// Statements (each numbering its parameters from `$1`) joined into one SQLite batch whose
/// parameters continue across them, bound in order: several statements in one round trip.
/// PostgreSQL prepares one statement at a time: there [`chain`] does the same work.
pub fn batch(statements: &[&str]) -> String {
    let mut out = String::new();
    let mut offset = 0;
    for (i, statement) in statements.iter().enumerate() {
        if i > 0 {
            out.push_str(";\n");
        }
        offset += renumbered(statement, offset, &mut out);
    }
    out
}

/// PostgreSQL's one round trip for several writes: each statement becomes a data-modifying
/// `WITH` part (PostgreSQL runs every one to completion, read or not), parameters numbered on
/// across them as [`batch`] numbers them. It returns one row of `groups` columns: the rows changed
/// by the parts of group 0, summed, then of group 1, and so on (parts of no group are not
/// counted). Part `i` is named `part{i}`, so a later part may read an earlier one's `RETURNING 1`
/// rows.
///
/// All parts see the database as it was when the statement began, so a later part must not
/// depend on an earlier part's change (other than through its `RETURNING` rows), and no two parts
/// may change the same row.
pub fn chain_counted(parts: &[(&str, Option<usize>)], groups: usize) -> String {
    let (mut out, columns) = chained(parts, groups);
    out.push_str(&format!("\nSELECT {}", columns.join(", ")));
    out
}

/// `chain_counted` for a statement that commits on its own, so must land whole or not at all:
/// unless every group changed as many rows as `expected` says (None: any number), the
/// statement fails, and with it everything its parts did.
pub fn chain_whole(parts: &[(&str, Option<usize>)], expected: &[Option<i64>]) -> String {
    let (mut out, columns) = chained(parts, expected.len());
    let checks: Vec<String> = columns
        .iter()
        .zip(expected)
        .filter_map(|(column, want)| want.map(|n| format!("{column} = {n}")))
        .collect();
    let counts = columns.join(" || '/' || ");
    let mut columns = columns;
    if let Some(first) = columns.first_mut() {
        if !checks.is_empty() {
            // A failed cast is the one error a bare SELECT can raise; its text says why. It
            // reads every count, so it is never a constant, which the planner would evaluate
            // (and fail on) ahead of time whatever the counts.
            *first = format!(
                "CASE WHEN {} THEN {first} ELSE CAST('reins: a guarded part did not land, so nothing was written; rows changed by each group: ' || {counts} AS BIGINT) END",
                checks.join(" AND ")
            );
        }
    }
    out.push_str(&format!("\nSELECT {}", columns.join(", ")));
    out
}

/// The `WITH` parts of a counted chain and the count of each group, as SQL expressions.
fn chained(parts: &[(&str, Option<usize>)], groups: usize) -> (String, Vec<String>) {
    let mut out = String::from("WITH ");
    let mut offset = 0;
    let mut counted = vec![Vec::new(); groups];
    for (i, (statement, group)) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&format!("part{i} AS ("));
        offset += renumbered(statement, offset, &mut out);
        out.push_str(" RETURNING 1)");
        if let Some(sums) = group.and_then(|g| counted.get_mut(g)) {
            sums.push(format!("(SELECT COUNT(*) FROM part{i})"));
        }
    }
    let columns = counted
        .iter()
        .map(|sums| {
            if sums.is_empty() {
                "CAST(0 AS BIGINT)".to_owned()
            } else {
                format!("CAST({} AS BIGINT)", sums.join(" + "))
            }
        })
        .collect();
    (out, columns)
}

/// Appends `statement` to `out` with each `$N` outside quotes raised by `offset`; the highest N.
fn renumbered(statement: &str, offset: usize, out: &mut String) -> usize {
    let mut highest = 0;
    let mut quoted = false;
    let mut chars = statement.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
        }
        if c != '$' || quoted {
            out.push(c);
            continue;
        }
        let mut digits = String::new();
        while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
            digits.push(d);
            chars.next();
        }
        match digits.parse::<usize>() {
            Ok(n) => {
                highest = highest.max(n);
                out.push('$');
                out.push_str(&(n + offset).to_string());
            }
            Err(_) => out.push('$'),
        }
    }
    highest
}

/// A statement built in pieces, its parameters numbered as they are bound.
#[derive(Default)]
pub struct Sql<'q> {
    text: String,
    args: Args<'q>,
    count: usize,
}

impl<'q> Sql<'q> {
    pub fn new(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            ..Self::default()
        }
    }

    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends the next parameter's placeholder and binds `value` to it.
    pub fn bind<T>(&mut self, value: T) -> Result<&mut Self, sqlx::Error>
    where
        T: 'q + sqlx::Encode<'q, Db> + sqlx::Type<Db>,
    {
        self.args.add(value).map_err(sqlx::Error::Encode)?;
        self.count += 1;
        self.text.push('$');
        self.text.push_str(&self.count.to_string());
        Ok(self)
    }

    /// `(…, …)` of `values` bound one by one, for `IN` lists.
    pub fn bind_list<T>(
        &mut self,
        values: impl IntoIterator<Item = T>,
    ) -> Result<&mut Self, sqlx::Error>
    where
        T: 'q + sqlx::Encode<'q, Db> + sqlx::Type<Db>,
    {
        self.push("(");
        for (i, value) in values.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.bind(value)?;
        }
        self.push(")");
        Ok(self)
    }

    #[cfg(test)]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The statement and its arguments, to run with `sqlx::query_with` and friends.
    pub fn into_parts(self) -> (String, Args<'q>) {
        (self.text, self.args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_marks_are_numbered_in_order_but_not_inside_quotes() {
        assert_eq!(
            numbered("SELECT * FROM t WHERE a = ? AND b = '?' AND c IN (?, ?)"),
            "SELECT * FROM t WHERE a = $1 AND b = '?' AND c IN ($2, $3)"
        );
    }

    #[test]
    fn a_chain_makes_one_statement_of_several_and_sums_the_counted_parts_by_group() {
        assert_eq!(
            chain_counted(
                &[
                    ("UPDATE a SET x = $1 WHERE y = $2", Some(0)),
                    ("INSERT INTO b (c) VALUES ($1)", None),
                    ("INSERT INTO d (e) SELECT $1 WHERE EXISTS (SELECT 1 FROM part1)", Some(2)),
                ],
                3
            ),
            "WITH part0 AS (UPDATE a SET x = $1 WHERE y = $2 RETURNING 1),\npart1 AS (INSERT INTO b (c) VALUES ($3) RETURNING 1),\npart2 AS (INSERT INTO d (e) SELECT $4 WHERE EXISTS (SELECT 1 FROM part1) RETURNING 1)\nSELECT CAST((SELECT COUNT(*) FROM part0) AS BIGINT), CAST(0 AS BIGINT), CAST((SELECT COUNT(*) FROM part2) AS BIGINT)"
        );
    }

    #[test]
    fn a_batch_numbers_each_statements_parameters_after_the_ones_before() {
        assert_eq!(
            batch(&["UPDATE a SET x = $1 WHERE y = $2 AND z = '$1'", "DELETE FROM b WHERE c = $1"]),
            "UPDATE a SET x = $1 WHERE y = $2 AND z = '$1';\nDELETE FROM b WHERE c = $3"
        );
    }

    #[test]
    fn a_built_statement_numbers_its_parameters_as_they_are_bound() -> Result<(), sqlx::Error> {
        let mut sql = Sql::new("DELETE FROM blobs WHERE size > ");
        sql.bind(10_i64)?.push(" AND sha256 IN ");
        sql.bind_list(["a".to_owned(), "b".to_owned()])?;
        assert_eq!(
            sql.text(),
            "DELETE FROM blobs WHERE size > $1 AND sha256 IN ($2, $3)"
        );
        Ok(())
    }
}
