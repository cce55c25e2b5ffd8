//! Puts the shared standard library beside this package's binaries (see `dsh-std-beside`).

fn main() {
    dsh_std_beside::copy_std_beside_binaries();
}
