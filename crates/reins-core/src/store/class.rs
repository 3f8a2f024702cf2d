//! What a database error means for the run that met it: the store alone knows the codes its
//! two databases speak (SQLite's result codes, PostgreSQL's SQLSTATEs).

use crate::failure::{classify_io, FailureClass};

use super::StoreError;

impl StoreError {
    /// The class of failure this is: a lost lease is a lost worker, a busy database or a
    /// connection gone away is transient, a full or damaged disk waits for a person.
    pub fn class(&self) -> FailureClass {
        match self {
            StoreError::LostLease { .. } | StoreError::StaleState { .. } => {
                FailureClass::WorkerLost
            }
            StoreError::Sqlx(sq) => sqlx_class(sq),
            _ => FailureClass::Permanent,
        }
    }

    /// Whether the database is out of reach for now (restarting, the network): wait and try again.
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Sqlx(_)) && self.class() == FailureClass::Transient
    }
}

fn sqlx_class(e: &sqlx::Error) -> FailureClass {
    match e {
        sqlx::Error::PoolTimedOut => FailureClass::Transient,
        // A database server's connection going away (a restart, the network).
        sqlx::Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::NotConnected
            ) =>
        {
            FailureClass::Transient
        }
        sqlx::Error::Io(io) => classify_io(io),
        // The shared database restarted or the network between dropped: connect again later.
        sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => FailureClass::Transient,
        sqlx::Error::Database(db)
            if db
                .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .is_some() =>
        {
            postgres_class(db.code().as_deref().unwrap_or_default())
        }
        sqlx::Error::Database(db) => {
            let code = db.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or(0);
            match code & 0xff {
                // SQLITE_BUSY, SQLITE_LOCKED (and their extended codes)
                5 | 6 => FailureClass::Transient,
                // SQLITE_IOERR, SQLITE_FULL, SQLITE_READONLY, SQLITE_CANTOPEN
                10 | 13 | 8 | 14 => FailureClass::Resource,
                // SQLITE_CORRUPT, SQLITE_NOTADB
                11 | 26 => FailureClass::Resource,
                _ => FailureClass::Permanent,
            }
        }
        _ => FailureClass::Permanent,
    }
}

/// A PostgreSQL error by its SQLSTATE.
fn postgres_class(sqlstate: &str) -> FailureClass {
    match sqlstate {
        // connection exceptions; the server shutting down or starting; serialization, deadlock, a
        // lock wait given up, a session ended idle in its transaction (each rolled back whole)
        c if c.starts_with("08") => FailureClass::Transient,
        "57P01" | "57P02" | "57P03" | "40001" | "40P01" | "53300" | "55P03" | "25P03" => {
            FailureClass::Transient
        }
        // disk full, out of memory
        c if c.starts_with("53") => FailureClass::Resource,
        // data corrupted, index corrupted
        "XX001" | "XX002" => FailureClass::Resource,
        _ => FailureClass::Permanent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_connection_going_away_is_retried() {
        let sqlx_io = |kind| StoreError::Sqlx(sqlx::Error::Io(std::io::Error::from(kind)));
        assert_eq!(
            sqlx_io(std::io::ErrorKind::ConnectionReset).class(),
            FailureClass::Transient
        );
        assert_eq!(
            sqlx_io(std::io::ErrorKind::ConnectionRefused).class(),
            FailureClass::Transient
        );
        assert_eq!(
            StoreError::Sqlx(sqlx::Error::PoolClosed).class(),
            FailureClass::Transient
        );
        assert_eq!(postgres_class("08006"), FailureClass::Transient);
        assert_eq!(postgres_class("57P01"), FailureClass::Transient);
        assert_eq!(postgres_class("53100"), FailureClass::Resource);
        assert_eq!(postgres_class("23505"), FailureClass::Permanent);
    }
}
