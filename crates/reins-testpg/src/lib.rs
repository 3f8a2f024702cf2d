//! A throwaway PostgreSQL 15 cluster for tests, shared by every test in one process.
//!
//! The first call to [`Cluster::shared`] runs `initdb` in a temporary directory and starts the server
//! with `pg_ctl` on 127.0.0.1 and a free port (as the `postgres` user when running as root, since
//! PostgreSQL refuses to run as root). A watchdog process stops the server with `-m immediate` and
//! removes the directory once the test process has exited, however it exits. Each test then takes a
//! database of its own with [`database`].
//!
//! `REINS_TEST_PG_URL` (for example `postgres://postgres@127.0.0.1:5432`) points the tests at a
//! server someone else runs instead; it must let its user create databases.
//! `REINS_PG_BIN` overrides where the server binaries are (default `/usr/lib/postgresql/15/bin`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// What went wrong starting or using the cluster, in words.
#[derive(Clone, Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl From<&str> for Error {
    fn from(text: &str) -> Self {
        Self(text.to_owned())
    }
}

/// A running server tests may create databases on.
#[derive(Debug)]
pub struct Cluster {
    /// `postgres://USER@HOST:PORT`, without a database.
    server: String,
    host: String,
    port: u16,
    user: String,
    /// The data directory, when this process started the server.
    data: Option<PathBuf>,
}

static SHARED: OnceLock<Result<Cluster, String>> = OnceLock::new();

/// A new, empty database on the process's shared cluster (started on first use); its URL.
pub fn database(hint: &str) -> Result<String, Error> {
    Cluster::shared()?.database(hint)
}
static NEXT: AtomicU64 = AtomicU64::new(0);

fn bin(name: &str) -> PathBuf {
    let dir = std::env::var_os("REINS_PG_BIN").map_or_else(
        || PathBuf::from("/usr/lib/postgresql/15/bin"),
        PathBuf::from,
    );
    dir.join(name)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A command run as the server's owner: `postgres` when we are root, else ourselves.
fn as_owner(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(mut command: Command, what: &str) -> Result<String, String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

impl Cluster {
    /// The process's cluster, started on first use.
    pub fn shared() -> Result<&'static Cluster, Error> {
        SHARED
            .get_or_init(|| match std::env::var("REINS_TEST_PG_URL") {
                Ok(url) if !url.is_empty() => Self::external(&url),
                _ => Self::start(None, None),
            })
            .as_ref()
            .map_err(|e| Error(e.clone()))
    }

    /// A cluster of the caller's own, for a test that restarts or stops the server (it must not
    /// take the shared one from under the other tests). Stopped when the process ends.
    pub fn private() -> Result<Self, Error> {
        Ok(Self::start(None, None)?)
    }

    /// A private cluster that takes TCP connections over TLS only (`hostssl` in pg_hba.conf),
    /// presenting `cert_pem` (with its key `key_pem`).
    pub fn private_tls(cert_pem: &str, key_pem: &str) -> Result<Self, Error> {
        Ok(Self::start(
            Some((cert_pem, key_pem)),
            Some("local all all trust\nhostssl all all 127.0.0.1/32 trust\n"),
        )?)
    }

    /// A private cluster where every role but `postgres` signs in over TCP with its password
    /// (`scram-sha-256`).
    pub fn private_passwords() -> Result<Self, Error> {
        Ok(Self::start(
            None,
            Some(
                "local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n",
            ),
        )?)
    }

    fn external(url: &str) -> Result<Self, String> {
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .ok_or_else(|| format!("REINS_TEST_PG_URL={url}: not a postgres:// URL"))?;
        let rest = rest.trim_end_matches('/');
        let (user, address) = rest.split_once('@').ok_or_else(|| {
            format!("REINS_TEST_PG_URL={url}: name the user (postgres://USER@HOST:PORT)")
        })?;
        let (host, port) = address.split_once(':').unwrap_or((address, "5432"));
        let port = port
            .parse()
            .map_err(|_| format!("REINS_TEST_PG_URL={url}: the port is not a number"))?;
        Ok(Self {
            server: format!("postgres://{user}@{host}:{port}"),
            host: host.to_owned(),
            port,
            user: user.to_owned(),
            data: None,
        })
    }

    fn start(tls: Option<(&str, &str)>, hba: Option<&str>) -> Result<Self, String> {
        let initdb = bin("initdb");
        if !initdb.exists() {
            return Err(format!(
                "{} is missing: install PostgreSQL 15 (`apt-get install postgresql`, which scripts/test does) or set REINS_PG_BIN",
                initdb.display()
            ));
        }
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let root = std::env::temp_dir().join(format!("reins-pg-{}-{stamp}", std::process::id()));
        let data = root.join("data");
        std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        if is_root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.arg("postgres:postgres").arg(&root);
                    c
                },
                "chown",
            )?;
        }
        let mut init = as_owner(&initdb);
        init.arg("-D").arg(&data).args([
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ]);
        run(init, "initdb")?;
        let mut settings = String::new();
        if let Some((cert, key)) = tls {
            write_owned(&data.join("server.crt"), cert.as_bytes(), 0o644)?;
            write_owned(&data.join("server.key"), key.as_bytes(), 0o600)?;
            settings.push_str(" -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key");
        }
        if let Some(hba) = hba {
            write_owned(&data.join("pg_hba.conf"), hba.as_bytes(), 0o600)?;
        }
        let port = free_port()?;
        let mut start = as_owner(&bin("pg_ctl"));
        start
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(root.join("server.log"))
            .args(["-w", "-t", "60", "-o"])
            .arg(format!(
                "-c listen_addresses=127.0.0.1 -p {port} -k {} -c max_connections=300 -c fsync=on -c synchronous_commit=on{settings}",
                root.display()
            ))
            .arg("start");
        run(start, "pg_ctl start").map_err(|e| {
            let log = std::fs::read_to_string(root.join("server.log")).unwrap_or_default();
            format!("{e}\n{log}")
        })?;
        watch_over(&root, &data)?;
        Ok(Self {
            server: format!("postgres://postgres@127.0.0.1:{port}"),
            host: "127.0.0.1".into(),
            port,
            user: "postgres".into(),
            data: Some(data),
        })
    }

    /// A new, empty database named after `hint`; its URL.
    pub fn database(&self, hint: &str) -> Result<String, Error> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let clean: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        let name = format!("t_{clean}_{}_{n}", std::process::id());
        self.sql("postgres", &format!("CREATE DATABASE \"{name}\""))?;
        Ok(format!("{}/{name}", self.server))
    }

    /// Runs `statement` with psql on database `db`; its output.
    pub fn sql(&self, db: &str, statement: &str) -> Result<String, Error> {
        let mut psql = Command::new(bin("psql"));
        psql.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(&self.host)
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-U")
            .arg(&self.user)
            .arg("-d")
            .arg(db)
            .arg("-c")
            .arg(statement);
        Ok(run(psql, "psql")?)
    }

    /// Restarts the server as a crash would leave it (`pg_ctl restart -m immediate`): connections
    /// drop, nothing that was not committed survives. Only for a cluster this process started.
    pub fn restart_immediate(&self) -> Result<(), Error> {
        let data = self
            .data
            .as_ref()
            .ok_or("the server was not started by this process; not restarting it")?;
        let log = data.with_file_name("server.log");
        let mut restart = as_owner(&bin("pg_ctl"));
        // With its log named, the server does not hold on to our pipes (output() would wait).
        restart.arg("-D").arg(data).arg("-l").arg(&log).args([
            "-w",
            "-t",
            "60",
            "-m",
            "immediate",
            "restart",
        ]);
        run(restart, "pg_ctl restart")?;
        Ok(())
    }
}

/// Starts a detached watchdog that stops the server and removes its directory once this process is
/// gone, so a test run that panics or is killed leaves no server behind.
fn watch_over(root: &Path, data: &Path) -> Result<(), String> {
    let owner = if is_root() {
        "runuser -u postgres -- "
    } else {
        ""
    };
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {owner}'{pg_ctl}' -D '{data}' -m immediate stop >/dev/null 2>&1; rm -rf '{root}'",
        pid = std::process::id(),
        pg_ctl = bin("pg_ctl").display(),
        data = data.display(),
        root = root.display(),
    );
    Command::new("setsid")
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(|_| ())
        .map_err(|e| format!("cannot start the cluster's watchdog: {e}"))
}

/// Writes a file into the cluster's data dir, readable by the server (which runs as `postgres`
/// when the tests run as root) and with `mode`.
fn write_owned(path: &std::path::Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if is_root() {
        let mut c = Command::new("chown");
        c.arg("postgres:postgres").arg(path);
        run(c, "chown")?;
    }
    Ok(())
}
