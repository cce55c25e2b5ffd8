//! `dsh-pg-cluster`: a throwaway PostgreSQL cluster for one test or benchmark: `initdb` into a
//! fresh folder, a server on a Unix socket beside it (no TCP), stopped and removed on drop. The server refuses to run as
//! root, so as root the cluster belongs to Debian's `postgres` user. Debian's `postgresql` is
//! installed by `cargo xtask test` where missing; without it a test says so and skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

static CLUSTERS: AtomicU64 = AtomicU64::new(0);

/// Where the server's programs are: the newest `/usr/lib/postgresql/<version>/bin`.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
}

impl Cluster {
    /// A running cluster with database `dsh`, or why there can be none here. `durable`: the
    /// server syncs its writes to the disk (for measurements); tests run without, which a
    /// crash of the server survives still (a commit is written to the OS before it is
    /// acknowledged, `synchronous_commit` on), only a crash of the machine would not.
    pub fn start(name: &str, durable: bool) -> Result<Self, String> {
        let bin = bin_dir().ok_or_else(|| {
            "PostgreSQL is not installed (Debian's `postgresql`; `cargo xtask test` installs it)"
                .to_owned()
        })?;
        let serial = CLUSTERS.fetch_add(1, Ordering::Relaxed);
        // Under the temp dir: the socket's path must stay under 108 bytes.
        let dir =
            std::env::temp_dir().join(format!("dsh-pg-{name}-{}-{serial}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let cluster = Self {
            dir,
            bin,
            as_postgres: is_root(),
        };
        if cluster.as_postgres {
            cluster.run("chown", &["-R", "postgres:postgres", cluster.path_str()])?;
        }
        let data = cluster.data();
        cluster.pg(
            "initdb",
            &[
                "-D",
                &data,
                "--auth=trust",
                "--username=postgres",
                "--no-sync",
                "--encoding=UTF8",
                "--locale=C",
            ],
        )?;
        let fsync = if durable { "on" } else { "off" };
        // Never off: with it off a commit is acknowledged before its WAL is written, and an
        // immediate stop loses acknowledged rows.
        std::fs::write(
            Path::new(&data).join("postgresql.auto.conf"),
            format!(
                "listen_addresses = ''\nunix_socket_directories = '{}'\nfsync = {fsync}\n\
                 synchronous_commit = on\nmax_connections = 200\n",
                cluster.path_str()
            ),
        )
        .map_err(|e| format!("postgresql.auto.conf: {e}"))?;
        cluster.start_server()?;
        cluster.pg(
            "createdb",
            &["-h", cluster.path_str(), "-U", "postgres", "dsh"],
        )?;
        Ok(cluster)
    }

    fn path_str(&self) -> &str {
        self.dir.to_str().unwrap_or_default()
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// The libpq connection string of database `dsh`.
    pub fn url(&self) -> String {
        format!("postgresql:///dsh?host={}&user=postgres", self.path_str())
    }

    /// Starts the server (again) and waits until it accepts connections.
    pub fn start_server(&self) -> Result<(), String> {
        let log = self.dir.join("server.log").display().to_string();
        self.pg("pg_ctl", &["-D", &self.data(), "-l", &log, "-w", "start"])
            .map(|_| ())
    }

    /// Stops the server at once, as a crash would (`immediate`: no checkpoint).
    pub fn stop_server(&self) -> Result<(), String> {
        self.pg(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        )
        .map(|_| ())
    }

    /// Runs `sql` in database `dsh` with psql; its unaligned output.
    pub fn psql(&self, sql: &str) -> Result<String, String> {
        let out = self.pg(
            "psql",
            &[
                "-h",
                self.path_str(),
                "-U",
                "postgres",
                "-d",
                "dsh",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ],
        )?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    fn pg(&self, program: &str, args: &[&str]) -> Result<Output, String> {
        let path = self.bin.join(program).display().to_string();
        match self.as_postgres {
            true => {
                let mut all = vec!["-u", "postgres", "--", path.as_str()];
                all.extend_from_slice(args);
                self.run("runuser", &all)
            }
            false => self.run(&path, args),
        }
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<Output, String> {
        let out = Command::new(program)
            .args(args)
            .current_dir(&self.dir)
            .output()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{program} {} failed: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            ));
        }
        Ok(out)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.stop_server();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
