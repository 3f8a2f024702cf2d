//! Decoding at the row's edge. Every row type says which table it comes from and which columns
//! name a row; a row whose columns do not decode (an unknown status, JSON that does not parse) is
//! an error naming the table, the row and the column — never a silent default. Above this edge the
//! harness's data is typed.

use super::DbRow;
use sqlx::{FromRow, Row as _};

use super::{Result, StoreError};

/// A row type read from one table.
pub(crate) trait Stored: for<'r> FromRow<'r, DbRow> {
    const TABLE: &'static str;
    /// The columns that name one row, for error messages.
    const KEY: &'static [&'static str];
}

/// One row, decoded.
pub(crate) fn one<T: Stored>(row: &DbRow) -> Result<T> {
    T::from_row(row).map_err(|e| damaged::<T>(row, e))
}

/// Rows, decoded; the first damaged one is the error.
pub(crate) fn all<T: Stored>(rows: &[DbRow]) -> Result<Vec<T>> {
    rows.iter().map(one).collect()
}

pub(crate) fn optional<T: Stored>(row: Option<DbRow>) -> Result<Option<T>> {
    row.as_ref().map(one).transpose()
}

fn damaged<T: Stored>(row: &DbRow, e: sqlx::Error) -> StoreError {
    let key: Vec<String> = T::KEY
        .iter()
        .map(|column| {
            let value = row
                .try_get::<String, _>(*column)
                .or_else(|_| row.try_get::<i64, _>(*column).map(|n| n.to_string()))
                .unwrap_or_else(|_| "?".into());
            format!("{column} {value}")
        })
        .collect();
    let detail = match e {
        sqlx::Error::ColumnDecode { index, source } => format!("column {index}: {source}"),
        other => other.to_string(),
    };
    StoreError::Damaged {
        table: T::TABLE,
        row: key.join(", "),
        detail,
    }
}
