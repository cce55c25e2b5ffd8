//! The `dsh-host` binary: a thin shell over the `dsh_host` library.

fn main() {
    let code = dsh_host::main_with_args(std::env::args_os().collect());
    std::process::exit(code);
}
