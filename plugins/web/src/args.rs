//! The server's command line, as the host hands it over through `cmdline`.

pub(crate) const USAGE: &str = "usage: dsh-host --profile web [--] [OPTIONS]

Serves the browser app and its API.

options:
  --host H                  address to listen on (default 127.0.0.1); an address beyond
                            loopback needs DSH_ACCESS_SECRET (16 characters or more)
  --port P                  port (default 3080; the next free one when it is taken)
  --cwd DIR                 the directory new sessions work in (default: the current one)
  --no-open                 print the URL, do not open a browser
  --allow-remote-settings   with a non-loopback --host: settings and credentials may be
                            changed over the network too
  -h, --help                this text";

/// The default port, as the reference's.
pub(crate) const DEFAULT_PORT: u16 = 3080;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Args {
    pub(crate) host: String,
    /// Set when `--port` was given: then only that port is tried.
    pub(crate) port: Option<u16>,
    pub(crate) open: bool,
    pub(crate) allow_remote_settings: bool,
    pub(crate) cwd: Option<std::path::PathBuf>,
}

/// A command line the server cannot run, in words for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageError(pub(crate) String);

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    Serve(Args),
    Help,
}

pub(crate) fn parse(args: &[String]) -> Result<Parsed, UsageError> {
    let mut parsed = Args {
        host: "127.0.0.1".to_owned(),
        port: None,
        open: true,
        allow_remote_settings: false,
        cwd: None,
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |name: &str| {
            rest.next()
                .cloned()
                .ok_or_else(|| UsageError(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(Parsed::Help),
            "--host" => parsed.host = value("--host")?,
            "--port" => {
                let text = value("--port")?;
                let port = text
                    .parse::<u16>()
                    .map_err(|_| UsageError(format!("--port: `{text}` is not a port number")))?;
                parsed.port = Some(port);
            }
            "--cwd" => parsed.cwd = Some(std::path::PathBuf::from(value("--cwd")?)),
            "--no-open" => parsed.open = false,
            "--allow-remote-settings" => parsed.allow_remote_settings = true,
            other => return Err(UsageError(format!("unknown argument `{other}`"))),
        }
    }
    Ok(Parsed::Serve(parsed))
}

/// Whether `host` is a loopback address or name.
pub(crate) fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn parse_words(words: &[&str]) -> Result<Parsed, UsageError> {
        parse(
            &words
                .iter()
                .map(|word| (*word).to_owned())
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn flags_parse_and_mistakes_say_what_is_wrong() {
        let Parsed::Serve(args) = parse_words(&["--port", "4000", "--no-open"]).unwrap() else {
            panic!("expected serve");
        };
        assert_eq!(
            (args.host.as_str(), args.port, args.open),
            ("127.0.0.1", Some(4000), false)
        );
        assert_eq!(parse_words(&["--help"]).unwrap(), Parsed::Help);
        assert_eq!(
            parse_words(&["--port", "http"]).unwrap_err().0,
            "--port: `http` is not a port number"
        );
        assert_eq!(
            parse_words(&["--host"]).unwrap_err().0,
            "--host needs a value"
        );
        assert_eq!(
            parse_words(&["serve"]).unwrap_err().0,
            "unknown argument `serve`"
        );
    }

    #[test]
    fn loopback_is_told_apart() {
        for host in ["127.0.0.1", "localhost", "::1", "[::1]", "127.1.2.3"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["0.0.0.0", "192.168.1.4", "example.com", "::"] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
