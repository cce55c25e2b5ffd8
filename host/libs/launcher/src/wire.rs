//! A request's bytes: length-prefixed strings (little-endian `u32` lengths and counts), the
//! working directory (empty: the launcher's), the arguments, then the whole environment as
//! `NAME=VALUE` entries. No string may hold a NUL: `exec` could not pass it on.

/// What one launched process is to run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// Empty: the launcher's own directory.
    pub cwd: String,
    /// Handed to the launcher's program (which decides what they mean).
    pub args: Vec<String>,
    /// The process's whole environment, in order.
    pub env: Vec<(String, String)>,
}

/// A request that cannot be encoded or decoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    #[error("a string holds a NUL byte")]
    Nul,
    #[error("a string is longer than 4 GiB")]
    TooLong,
    #[error("the request ends early")]
    Truncated,
    #[error("a string is not UTF-8")]
    NotUtf8,
    #[error("an environment entry has no `=`")]
    NoEquals,
    #[error("{0} bytes follow the request")]
    Trailing(usize),
}

fn put(bytes: &mut Vec<u8>, text: &str) -> Result<(), WireError> {
    if text.as_bytes().contains(&0) {
        return Err(WireError::Nul);
    }
    let len = u32::try_from(text.len()).map_err(|_| WireError::TooLong)?;
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(text.as_bytes());
    Ok(())
}

fn put_count(bytes: &mut Vec<u8>, count: usize) -> Result<(), WireError> {
    let count = u32::try_from(count).map_err(|_| WireError::TooLong)?;
    bytes.extend_from_slice(&count.to_le_bytes());
    Ok(())
}

/// Reads from the front of a request's bytes.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn number(&mut self) -> Result<usize, WireError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<4>()
            .ok_or(WireError::Truncated)?;
        self.0 = rest;
        usize::try_from(u32::from_le_bytes(*head)).map_err(|_| WireError::TooLong)
    }

    fn text(&mut self) -> Result<String, WireError> {
        let len = self.number()?;
        if len > self.0.len() {
            return Err(WireError::Truncated);
        }
        let (text, rest) = self.0.split_at(len);
        self.0 = rest;
        if text.contains(&0) {
            return Err(WireError::Nul);
        }
        String::from_utf8(text.to_vec()).map_err(|_| WireError::NotUtf8)
    }

    /// A count of entries, each at least four bytes long (so a count cannot ask for more
    /// entries than the bytes left could hold).
    fn count(&mut self) -> Result<usize, WireError> {
        let count = self.number()?;
        match count <= self.0.len() / 4 {
            true => Ok(count),
            false => Err(WireError::Truncated),
        }
    }
}

impl Request {
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let mut bytes = Vec::new();
        put(&mut bytes, &self.cwd)?;
        put_count(&mut bytes, self.args.len())?;
        for arg in &self.args {
            put(&mut bytes, arg)?;
        }
        put_count(&mut bytes, self.env.len())?;
        for (name, value) in &self.env {
            if name.contains('=') {
                return Err(WireError::NoEquals);
            }
            put(&mut bytes, &format!("{name}={value}"))?;
        }
        Ok(bytes)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let mut reader = Reader(bytes);
        let cwd = reader.text()?;
        let args = (0..reader.count()?)
            .map(|_| reader.text())
            .collect::<Result<Vec<_>, _>>()?;
        let env = (0..reader.count()?)
            .map(|_| {
                let entry = reader.text()?;
                entry
                    .split_once('=')
                    .map(|(name, value)| (name.to_owned(), value.to_owned()))
                    .ok_or(WireError::NoEquals)
            })
            .collect::<Result<Vec<_>, _>>()?;
        match reader.0.len() {
            0 => Ok(Self { cwd, args, env }),
            left => Err(WireError::Trailing(left)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Request {
        Request {
            cwd: "/work".to_owned(),
            args: vec![
                "--enclave".to_owned(),
                String::new(),
                "é ünïcode".to_owned(),
            ],
            env: vec![
                ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
                ("EMPTY".to_owned(), String::new()),
                ("EQ".to_owned(), "a=b".to_owned()),
            ],
        }
    }

    #[test]
    fn a_request_survives_its_bytes() {
        let request = sample();
        let bytes = request.encode().unwrap();
        assert_eq!(Request::decode(&bytes).unwrap(), request);
    }

    #[test]
    fn every_cut_of_a_request_is_refused_not_misread() {
        let bytes = sample().encode().unwrap();
        for cut in 0..bytes.len() {
            assert!(Request::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(7);
        assert_eq!(Request::decode(&longer), Err(WireError::Trailing(1)));
    }

    #[test]
    fn what_exec_could_not_pass_is_refused_when_encoding() {
        let mut request = sample();
        request.args.push("a\0b".to_owned());
        assert_eq!(request.encode(), Err(WireError::Nul));
        let mut request = sample();
        request.env.push(("A=B".to_owned(), "c".to_owned()));
        assert_eq!(request.encode(), Err(WireError::NoEquals));
    }

    #[test]
    fn a_huge_count_is_refused_before_anything_is_allocated() {
        let mut bytes = Vec::new();
        put(&mut bytes, "").unwrap();
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Request::decode(&bytes), Err(WireError::Truncated));
    }
}
