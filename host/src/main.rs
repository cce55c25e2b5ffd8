//! The `dsh-host` binary: a thin shell over `dsh_host::cli`.

fn main() {
    std::process::exit(0);
}
