//! The schema as the database reports it: every table's columns and their types, in one
//! vocabulary for both databases, so a test can hold the two migration folders to one schema.

use std::collections::BTreeSet;

use super::{Dialect, Result, Store};

/// One column: its table, its name, and its type's family (`text`, `integer`, `real`, `blob`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Column {
    pub table: String,
    pub name: String,
    pub family: String,
}

impl Store {
    /// Every column of Reins' tables (the migrations' own bookkeeping left out).
    pub async fn columns(&self) -> Result<BTreeSet<Column>> {
        let sql = match self.dialect {
            Dialect::Sqlite => {
                "SELECT m.name, p.name, p.type FROM sqlite_master m, pragma_table_info(m.name) p
                 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> '_sqlx_migrations'"
            }
            Dialect::Postgres => {
                "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name <> '_sqlx_migrations'"
            }
        };
        let rows: Vec<(String, String, String)> =
            sqlx::query_as(sql).fetch_all(&self.pool).await?;
        Ok(rows
            .into_iter()
            .map(|(table, name, declared)| Column {
                table,
                name,
                family: family(&declared).to_owned(),
            })
            .collect())
    }
}

/// A declared type's family, by SQLite's affinity rules, which PostgreSQL's names also fall into.
fn family(declared: &str) -> &'static str {
    let t = declared.to_ascii_lowercase();
    if t.contains("int") {
        "integer"
    } else if t.contains("char") || t.contains("text") || t.contains("clob") {
        "text"
    } else if t.contains("blob") || t.contains("bytea") || t.is_empty() {
        "blob"
    } else if t.contains("real") || t.contains("floa") || t.contains("doub") {
        "real"
    } else {
        "numeric"
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{fresh, Backend};
    use super::*;

    #[test]
    fn both_databases_type_names_fall_into_one_family_each() {
        for (sqlite, postgres, want) in [
            ("TEXT", "text", "text"),
            ("INTEGER", "bigint", "integer"),
            ("INTEGER", "integer", "integer"),
            ("BLOB", "bytea", "blob"),
            ("REAL", "double precision", "real"),
        ] {
            assert_eq!((family(sqlite), family(postgres)), (want, want));
        }
    }

    /// A fresh store on each backend has the same tables, columns and types: the two migration
    /// folders describe one schema.
    #[tokio::test]
    async fn a_fresh_store_has_the_same_schema_on_both_databases() -> anyhow::Result<()> {
        let (_a, sqlite) = fresh(Backend::Sqlite).await?;
        let (_b, postgres) = fresh(Backend::Postgres).await?;
        let (sqlite, postgres) = (sqlite.columns().await?, postgres.columns().await?);
        let only = |a: &BTreeSet<Column>, b: &BTreeSet<Column>| -> Vec<String> {
            a.difference(b)
                .map(|c| format!("{}.{} {}", c.table, c.name, c.family))
                .collect()
        };
        assert!(sqlite.len() > 100, "{} columns read", sqlite.len());
        assert_eq!(
            (only(&sqlite, &postgres), only(&postgres, &sqlite)),
            (Vec::new(), Vec::new()),
            "(only on SQLite, only on PostgreSQL)"
        );
        Ok(())
    }
}
